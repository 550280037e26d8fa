"""AWS list prices: the Price List API's ``GetProducts`` (boto3 ``pricing``), one paginated query per region for
the instance types wanted (``instanceType`` ``ANY_OF``). Each product is a JSON string; the row keeps Linux, shared
tenancy, no pre-installed software, ``capacitystatus = Used``, and the ``OnDemand`` term's hourly
``pricePerUnit.USD``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from finops_cli.adapters.aws import get_products, pricing_client
from finops_cli.catalog.fetchers.common import _row, api_price
from finops_cli.catalog.gpus import instance_gpu_facts
from finops_cli.text import one_line

#: the product attributes of the plain list price: Linux, shared tenancy, nothing pre-installed, a running instance
AWS_LIST_PRICE = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}


def aws_filters(region: str, types: list[str]) -> list[dict[str, str]]:
    """``GetProducts`` filters: the region and the instance types (``ANY_OF`` takes a comma-separated list)."""
    return [
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        {"Type": "ANY_OF", "Field": "instanceType", "Value": ",".join(types)},
    ]


def aws_rows(products: Iterable[dict[str, Any]], fetched: datetime) -> list[dict[str, str]]:
    """Price List products (parsed ``PriceList`` items) → on-demand rows, one per instance type × region.

    Only products whose attributes match :data:`AWS_LIST_PRICE`; the ``OnDemand`` term's dimension with unit
    ``Hrs`` and ``beginRange`` 0; a zero price (a reservation's placeholder) is skipped. GPUs and accelerator
    come from the pricebook's instance table, else the product's ``gpu`` attribute (accelerator unknown).
    """
    rows = []
    for product in products:
        attrs = (product.get("product") or {}).get("attributes") or {}
        itype, region = attrs.get("instanceType"), attrs.get("regionCode")
        if not isinstance(itype, str) or not isinstance(region, str):
            continue
        if not itype or not region or any(attrs.get(k) != v for k, v in AWS_LIST_PRICE.items()):
            continue
        for term in ((product.get("terms") or {}).get("OnDemand") or {}).values():
            for dim in (term.get("priceDimensions") or {}).values():
                usd = (dim.get("pricePerUnit") or {}).get("USD")
                if dim.get("unit") != "Hrs" or str(dim.get("beginRange", "0")) != "0" or usd is None:
                    continue
                where = f"AWS Price List: {one_line(itype, 40)} in {one_line(region, 40)}"
                price = api_price(usd, where, text=True)
                if not price > 0:
                    continue
                facts = instance_gpu_facts("aws", itype)
                gpus = facts[0] if facts else _int(attrs.get("gpu"))
                source = (
                    f"AWS Price List API GetProducts (AmazonEC2 sku {product['product'].get('sku', '?')}, OnDemand "
                    f"{term.get('offerTermCode', '?')}, Linux shared tenancy, effective "
                    f"{str(term.get('effectiveDate', '?'))[:10]})"
                )
                rows.append(
                    _row("aws", itype, "on_demand", region, price, gpus, facts[1] if facts else None, source, fetched)
                )
    return rows


def _int(text: object) -> int | None:
    try:
        n = int(str(text))
    except ValueError:
        return None
    return n if n > 0 else None


def fetch_aws(
    regions: list[str], types: list[str], fetched: datetime, *, client: Any = None, profile: str | None = None
) -> list[dict[str, str]]:
    """Every region's on-demand list prices for ``types`` through ``GetProducts`` (``client``: a boto3 pricing
    client, e.g. under botocore's Stubber; default: one from the standard credential chain)."""
    client = client or pricing_client(profile)
    rows = []
    for region in regions:
        rows.extend(aws_rows(get_products(client, aws_filters(region, types)), fetched))
    return rows
