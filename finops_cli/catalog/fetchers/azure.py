"""Azure list prices: the public Retail Prices API, ``type = Consumption``: Linux meters only (``productName``
without ``Windows``); ``… Spot`` SKUs are spot, ``Low Priority`` ones are skipped."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from finops_cli.adapters.azure import RETAIL_PRICES_URL, odata_quote, retail_prices
from finops_cli.catalog.fetchers.common import _row, api_price
from finops_cli.catalog.gpus import instance_gpu_facts
from finops_cli.errors import InputError
from finops_cli.text import one_line


def azure_filter(region: str, types: list[str]) -> str:
    """OData ``$filter``: virtual machines' consumption meters of ``types`` in ``region``."""
    sizes = " or ".join(f"armSkuName eq {odata_quote(t)}" for t in types)
    return (
        f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq {odata_quote(region)}"
        + (f" and ({sizes})" if sizes else "")
    )


def azure_rows(items: Iterable[dict[str, Any]], fetched: datetime) -> list[dict[str, str]]:
    """Retail price items → on-demand and spot rows for Linux meters billed per hour in USD."""
    rows = []
    for item in items:
        size, region = item.get("armSkuName"), item.get("armRegionName")
        sku_name, product = str(item.get("skuName", "")), str(item.get("productName", ""))
        if not isinstance(size, str) or not isinstance(region, str):
            continue
        if not size or not region or item.get("type") != "Consumption" or item.get("unitOfMeasure") != "1 Hour":
            continue
        if "windows" in product.lower() or "low priority" in sku_name.lower():
            continue
        if item.get("currencyCode", "USD") != "USD":
            raise InputError(f"Azure Retail Prices returned {item.get('currencyCode')} prices; only USD is supported")
        where = f"Azure Retail Prices: {one_line(size, 40)} in {one_line(region, 40)}: retailPrice"
        price = api_price(item.get("retailPrice"), where, text=False)
        if not price > 0:
            continue
        term = "spot" if sku_name.lower().endswith(" spot") else "on_demand"
        facts = instance_gpu_facts("azure", size)
        source = (
            f"Azure Retail Prices API (meter {item.get('meterId', '?')}, {sku_name}, {product}, effective "
            f"{str(item.get('effectiveStartDate', '?'))[:10]})"
        )
        rows.append(
            _row(
                "azure",
                size,
                term,
                region,
                price,
                facts[0] if facts else None,
                facts[1] if facts else None,
                source,
                fetched,
            )
        )
    return rows


def fetch_azure(
    regions: list[str], types: list[str], fetched: datetime, *, url: str | None = None
) -> list[dict[str, str]]:
    """Each region's retail prices for ``types`` (``url``: the API's address; a local server in tests)."""
    rows = []
    for region in regions:
        rows.extend(azure_rows(retail_prices(azure_filter(region, types), url=url or RETAIL_PRICES_URL), fetched))
    return rows
