"""``finops pricebook refresh``: list prices of GPU instance types from the providers' price APIs, into the user
pricebook (``reference_prices.csv`` of :func:`~finops_cli.estate.pricebook.user_pricebook_dir`).

One function per provider turns what its API returns into pricebook rows (the columns of
:data:`~finops_cli.estate.pricebook.REF_COLUMNS` plus ``fetched_at``):

* **AWS** — the Price List API's ``GetProducts`` (boto3 ``pricing``), one paginated query per region for the
  instance types wanted (``instanceType`` ``ANY_OF``). Each product is a JSON string; the row keeps Linux,
  shared tenancy, no pre-installed software, ``capacitystatus = Used``, and the ``OnDemand`` term's hourly
  ``pricePerUnit.USD``.
* **GCP** — the Cloud Billing Catalog's ``list_skus`` on Compute Engine. GPU SKUs become per-GPU rows
  (``gcp/gpu-h100-80gb/on_demand``); a machine type with its ``vcpus``, ``memory_gb`` and ``gpu_sku`` in
  ``instance_types.csv`` is priced as GPUs × GPU SKU + vCPUs × family core SKU + GiB × family RAM SKU
  (``A3 Instance Core running in Americas``…), for on-demand and spot.
* **Azure** — the public Retail Prices API, ``type = Consumption``: Linux meters only (``productName`` without
  ``Windows``); ``… Spot`` SKUs are spot, ``Low Priority`` ones are skipped.

Everything is fetched before anything is written: a failure (no network, bad credentials, an answer that is
not the API's) is one :class:`InputError` line and leaves the pricebook as it was. The new table replaces the
user's rows with the same (provider, offering, term, region) and keeps every other row (hand-added ones too);
it is written atomically.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from finops_cli.errors import InputError
from finops_cli.estate.pricebook import (
    FETCHED_AT,
    REF_COLUMNS,
    REFERENCE_PRICES_FILE,
    instance_gpu_facts,
    instance_types,
    is_gpu_family,
    reference_prices,
    user_pricebook_dir,
)
from finops_cli.report.escape import one_line

PROVIDERS = ("aws", "gcp", "azure")
COLUMNS = [*REF_COLUMNS, FETCHED_AT]
#: what a refreshed row is identified by: a new fetch replaces the user's row with the same key
KEY = ["provider", "offering", "term", "region"]
#: regions refreshed when none are given and the pricebook has none for the provider
DEFAULT_REGIONS = {"aws": ["us-east-1"], "gcp": ["us-central1"], "azure": ["eastus"]}


@dataclass
class RefreshResult:
    """What a refresh wrote: the file, rows fetched per provider, and notes (types it could not price)."""

    path: Path
    rows: dict[str, int] = field(default_factory=dict)
    replaced: int = 0
    kept: int = 0
    notes: list[str] = field(default_factory=list)


def _money(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".") or "0"


#: No instance costs this much an hour; a larger "price" is a broken or hostile answer, not a list price.
MAX_USD_PER_HOUR = 1e6
#: what an API's region or instance type may look like before it becomes a pricebook key (and a CSV cell)
_API_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,79}")


def api_price(value: object, what: str, *, text: bool) -> float:
    """A price from an API answer as a finite number ≥ 0 and below :data:`MAX_USD_PER_HOUR`, else one line.

    ``text``: the API sends prices as strings (AWS ``pricePerUnit``), else as JSON numbers (Azure
    ``retailPrice``); ``true`` is not $1 and ``1e999`` (which JSON reads as infinity) is not a price.
    """
    ok_type = isinstance(value, str) if text else isinstance(value, int | float) and not isinstance(value, bool)
    try:
        price = float(value) if ok_type else math.nan  # type: ignore[arg-type]
    except ValueError:
        price = math.nan
    if not (math.isfinite(price) and 0 <= price <= MAX_USD_PER_HOUR):
        shown = one_line(repr(value), 40)
        raise InputError(f"{what}: price {shown} is not a finite number of USD between 0 and {MAX_USD_PER_HOUR:.0e}")
    return price


def _api_id(value: str, what: str, source: str) -> str:
    """A region or instance type as the API named it, refused unless it looks like one (no line ends, escapes,
    bidi controls or a leading ``=`` reach the pricebook)."""
    if not _API_ID.fullmatch(value):
        raise InputError(f"{source}: {what} {one_line(repr(value), 40)} is not a valid name; nothing written")
    return value


def _row(
    provider: str,
    offering: str,
    term: str,
    region: str,
    per_instance: float,
    gpus: int | None,
    accelerator: str | None,
    source: str,
    fetched: datetime,
) -> dict[str, str]:
    """One pricebook row: every provider's rows pass here, so every API string is checked here.

    Keys (instance type, region) must look like names or the refresh fails; the source text is made one
    printable line (control characters, line ends and bidi controls go: :func:`one_line`)."""
    api = source.split(" (", 1)[0]
    api_price(per_instance, f"{api}: {one_line(offering, 40)} in {one_line(region, 40)}", text=False)
    return {
        "provider": provider,
        "offering": _api_id(offering, "instance type", api),
        "term": term,
        "accelerator": accelerator or "",
        "gpus": str(gpus) if gpus else "",
        "usd_per_instance_hour": _money(per_instance),
        "usd_per_gpu_hour": _money(per_instance / gpus) if gpus else "",
        "unit": "",
        "usd_per_unit": "",
        "region": _api_id(region, "region", api),
        "source": one_line(source, 400),
        "read_on": fetched.date().isoformat(),
        FETCHED_AT: fetched.isoformat().replace("+00:00", "Z"),
    }


# ------------------------------------------------------------------------------------------------------- AWS
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
    from finops_cli.adapters.aws import get_products, pricing_client

    client = client or pricing_client(profile)
    rows = []
    for region in regions:
        rows.extend(aws_rows(get_products(client, aws_filters(region, types)), fetched))
    return rows


# ------------------------------------------------------------------------------------------------------- GCP
_FAMILY_SKU = re.compile(
    r"^(?P<spot>(?:spot )?preemptible )?(?P<family>[a-z]\d+[a-z]?) instance (?P<what>core|ram) running in ",
    re.IGNORECASE,
)


def gcp_rows(skus: Iterable[Any], regions: list[str], fetched: datetime) -> list[dict[str, str]]:
    """Catalog SKUs → per-GPU rows (``gpu-h100-80gb``) and whole machine types, on-demand and spot, per region.

    A machine type is priced only where its GPU SKU and its family's core and RAM SKUs all serve the region;
    ``instance_types.csv`` gives its ``vcpus``, ``memory_gb`` and ``gpu_sku`` (the GPU SKU's description stem).
    """
    from finops_cli.adapters.gcp import rate_per_hour
    from finops_cli.ingest.spot.ingest import gcp_skus_to_frame

    skus = list(skus)
    gpu = gcp_skus_to_frame(skus, regions)
    rows: list[dict[str, str]] = []
    gpu_price: dict[tuple[str, str, str], tuple[float, str]] = {}  # (description stem, term, region) → (usd, sku)
    for r in gpu.itertuples(index=False) if len(gpu) else []:
        term = "spot" if r.price_kind == "spot" else "on_demand"
        source = f"GCP Cloud Billing Catalog list_skus (Compute Engine sku {r.sku_id}: {r.product_description})"
        rows.append(
            _row("gcp", r.instance_type, term, r.region, r.usd_per_instance_hour, 1, r.accelerator, source, fetched)
        )
        stem = re.split(r"\s+(?:attached to|running in)\s+", r.product_description, maxsplit=1)[0].lower()
        gpu_price[(stem, term, r.region)] = (r.usd_per_instance_hour, r.sku_id)
    family: dict[tuple[str, str, str, str], tuple[float, str]] = {}  # (family, core|ram, term, region) → (usd, sku)
    for sku in skus:
        m = _FAMILY_SKU.match(sku.description or "")
        if m is None:
            continue
        what = m.group("what").lower()
        rate = rate_per_hour(sku, memory=what == "ram")
        if rate is None or rate[1] != "USD":
            continue
        term = "spot" if m.group("spot") else "on_demand"
        for region in sku.service_regions:
            if region in regions:
                family[(m.group("family").lower(), what, term, region)] = (rate[0], sku.sku_id)
    table = instance_types()
    machines = table[(table["provider"] == "gcp") & (table["kind"] == "instance")]
    for m in machines.itertuples(index=False):
        vcpus, memory, stem = (getattr(m, c, "") for c in ("vcpus", "memory_gb", "gpu_sku"))
        if not (vcpus and memory and stem):
            continue
        fam = m.instance_type.split("-")[0].lower()
        for term in ("on_demand", "spot"):
            for region in regions:
                g = gpu_price.get((stem.lower(), term, region))
                core, ram = family.get((fam, "core", term, region)), family.get((fam, "ram", term, region))
                if g is None or core is None or ram is None:
                    continue
                price = int(m.gpus) * g[0] + float(vcpus) * core[0] + float(memory) * ram[0]
                source = (
                    f"GCP Cloud Billing Catalog list_skus (Compute Engine skus {g[1]} × {m.gpus} GPU + {core[1]} × "
                    f"{vcpus} vCPU + {ram[1]} × {memory} GiB)"
                )
                rows.append(
                    _row("gcp", m.instance_type, term, region, price, int(m.gpus), m.accelerator, source, fetched)
                )
    return rows


def fetch_gcp(regions: list[str], fetched: datetime, *, transport: Any = None) -> list[dict[str, str]]:
    """Compute Engine's SKUs through ``CloudCatalogClient.list_skus`` (``transport``: the library's seam)."""
    from finops_cli.adapters.gcp import catalog_client, list_skus

    return gcp_rows(list_skus(catalog_client(transport=transport)), regions, fetched)


# ----------------------------------------------------------------------------------------------------- Azure
def azure_filter(region: str, types: list[str]) -> str:
    """OData ``$filter``: virtual machines' consumption meters of ``types`` in ``region``."""
    from finops_cli.adapters.azure import odata_quote

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
    from finops_cli.adapters.azure import RETAIL_PRICES_URL, retail_prices

    rows = []
    for region in regions:
        rows.extend(azure_rows(retail_prices(azure_filter(region, types), url=url or RETAIL_PRICES_URL), fetched))
    return rows


# ---------------------------------------------------------------------------------------------------- refresh
def provider_of(instance_type: str) -> str:
    """Which provider names an instance type this way: ``Standard_…`` Azure, ``p5.48xlarge`` AWS, else GCP."""
    if instance_type.lower().startswith("standard_"):
        return "azure"
    return "aws" if "." in instance_type else "gcp"


def _wanted(provider: str, extra: list[str]) -> list[str]:
    """The pricebook's GPU instance types of ``provider`` (shipped and user), plus those asked for."""
    table = instance_types()
    known = table[(table["provider"] == provider) & (table["kind"] == "instance")]["instance_type"].tolist()
    asked = [t for t in extra if provider_of(t) == provider]
    return list(dict.fromkeys([*known, *asked]))


def _regions(provider: str, given: list[str] | None) -> list[str]:
    if given:
        return list(dict.fromkeys(given))
    have = reference_prices()
    seen = have[(have["provider"] == provider) & (have["region"] != "")]["region"].unique().tolist()
    return sorted(seen) or DEFAULT_REGIONS[provider]


def refresh_pricebook(
    *,
    providers: Iterable[str] = PROVIDERS,
    regions: dict[str, list[str]] | None = None,
    extra_types: Iterable[str] = (),
    directory: Path | None = None,
    aws_client: Any = None,
    aws_profile: str | None = None,
    gcp_transport: Any = None,
    azure_url: str | None = None,
    now: datetime | None = None,
) -> RefreshResult:
    """Fetch list prices from each provider's API and merge them into the user pricebook, atomically.

    Parameters
    ----------
    providers
        Some of ``aws``, ``gcp``, ``azure``.
    regions
        Per provider (``{"aws": ["us-east-1"]}``); default: the regions the pricebook already prices for it.
    extra_types
        Instance types to price beyond the pricebook's instance table (each assigned by :func:`provider_of`).
    directory
        The user pricebook (default :func:`~finops_cli.estate.pricebook.user_pricebook_dir`); created if missing.
    """
    from finops_cli.atomic import check_writable

    chosen = list(dict.fromkeys(p.strip().lower() for p in providers))
    unknown = [p for p in chosen if p not in PROVIDERS]
    if unknown or not chosen:
        raise InputError(f"--provider {','.join(unknown) or '(none)'}: expected some of {', '.join(PROVIDERS)}")
    directory = directory or user_pricebook_dir()
    target = directory / REFERENCE_PRICES_FILE
    check_writable(target)
    created = not directory.exists()
    if created:  # the first refresh creates the pricebook; a failed one leaves no trace of it
        directory.mkdir(parents=True)
    try:
        return _refresh(chosen, regions, list(extra_types), directory, target, now, aws_client, aws_profile,
                        gcp_transport, azure_url)  # fmt: skip
    except BaseException:
        if created:
            with suppress(OSError):
                directory.rmdir()
        raise


def _refresh(
    chosen: list[str],
    regions: dict[str, list[str]] | None,
    extra: list[str],
    directory: Path,
    target: Path,
    now: datetime | None,
    aws_client: Any,
    aws_profile: str | None,
    gcp_transport: Any,
    azure_url: str | None,
) -> RefreshResult:
    from finops_cli.atomic import write_text

    for t in extra:  # after the directory exists: the GPU families are read from the pricebook it overlays
        if provider_of(t) in ("aws", "azure") and not is_gpu_family(t):
            raise InputError(f"--instance-type {t}: not a GPU instance type (see the pricebook's gpu_families.csv)")
    fetched = (now or datetime.now(UTC)).replace(microsecond=0)
    result = RefreshResult(target)
    fresh: list[dict[str, str]] = []
    for provider in chosen:
        where = _regions(provider, (regions or {}).get(provider))
        if provider == "aws":
            rows = fetch_aws(where, _wanted("aws", extra), fetched, client=aws_client, profile=aws_profile)
        elif provider == "gcp":
            rows = fetch_gcp(where, fetched, transport=gcp_transport)
        else:
            rows = fetch_azure(where, _wanted("azure", extra), fetched, url=azure_url)
        result.rows[provider] = len(rows)
        fresh.extend(rows)
        missing = [t for t in extra if provider_of(t) == provider and not any(r["offering"] == t for r in rows)]
        if missing:
            result.notes.append(f"{provider}: no list price found for {', '.join(missing)} in {', '.join(where)}")
        unknown_gpus = sorted({r["offering"] for r in rows if not r["accelerator"]})
        if unknown_gpus:
            result.notes.append(
                f"{provider}: {', '.join(unknown_gpus)} not in instance_types.csv: add a row (gpus, accelerator) to "
                f"{directory / 'instance_types.csv'} so plans know the accelerator"
            )
    new = pd.DataFrame(fresh, columns=COLUMNS).drop_duplicates(KEY, keep="last")
    old = reference_prices(target) if target.is_file() else pd.DataFrame(columns=COLUMNS)
    old = old.reindex(columns=COLUMNS, fill_value="").fillna("")
    stale = old.set_index(KEY).index.isin(new.set_index(KEY).index)
    result.replaced, result.kept = int(stale.sum()), int((~stale).sum())
    table = pd.concat([old[~stale], new], ignore_index=True).sort_values(KEY, kind="stable")
    write_text(target, table.to_csv(index=False, lineterminator="\n").rstrip("\n"))
    return result
