"""AWS list prices without credentials: the Price List bulk offer file of Amazon EC2, one per region, in its CSV
form (``…/offers/v1.0/aws/AmazonEC2/current/<region>/index.csv``). The file is hundreds of MB, so it is read as
a stream, row by row, keeping only the wanted instance types' Linux on-demand hourly price (as
:mod:`~finops_cli.catalog.fetchers.aws` keeps from ``GetProducts``)."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from datetime import datetime

from finops_cli.adapters.public_http import READ_ERRORS, cut_off, text_lines
from finops_cli.catalog.fetchers.common import _row, api_price
from finops_cli.catalog.gpus import instance_gpu_facts
from finops_cli.errors import InputError
from finops_cli.text import one_line

OFFERS_URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv"
WHAT = "AWS Price List offer file"
_TIMEOUT_S = 120.0
#: offer-file columns (the CSV names of GetProducts' attributes) and the value of a plain Linux list price
LIST_PRICE = {
    "TermType": "OnDemand",
    "Unit": "Hrs",
    "Operating System": "Linux",
    "Tenancy": "Shared",
    "Pre Installed S/W": "NA",
    "CapacityStatus": "Used",
    "Currency": "USD",
}
NEEDED = ("SKU", "OfferTermCode", "EffectiveDate", "StartingRange", "PricePerUnit", "Instance Type", "Region Code",
          *LIST_PRICE)  # fmt: skip


def offer_rows(lines: Iterable[list[str]], source_url: str) -> Iterator[dict[str, str]]:
    """The offer file's data rows as dicts: the metadata lines before the ``SKU`` header are skipped (format
    version, disclaimer, publication date, version, offer code); a file without that header is refused."""
    header: list[str] | None = None
    for cells in lines:
        if header is None:
            if cells[:1] == ["SKU"]:
                header = cells
                missing = [c for c in NEEDED if c not in header]
                if missing:
                    raise InputError(f"{WHAT}: no column(s) {', '.join(missing)} ({source_url})")
            continue
        yield dict(zip(header, cells, strict=False))
    if header is None:
        raise InputError(f"{WHAT}: no SKU header line: not an offer file in CSV form ({source_url})")


def offers_rows(rows: Iterable[dict[str, str]], types: Iterable[str], fetched: datetime) -> list[dict[str, str]]:
    """Offer-file rows → one on-demand pricebook row per wanted instance type × region."""
    wanted = {t.lower() for t in types}
    out = []
    for r in rows:
        itype, region = r.get("Instance Type", ""), r.get("Region Code", "")
        if itype.lower() not in wanted or any(r.get(k) != v for k, v in LIST_PRICE.items()):
            continue
        if r.get("StartingRange", "0") not in ("0", "0.0", ""):
            continue
        price = api_price(r.get("PricePerUnit"), f"{WHAT}: {one_line(itype, 40)} in {one_line(region, 40)}", text=True)
        if not price > 0:
            continue
        facts = instance_gpu_facts("aws", itype)
        source = (
            f"AWS Price List offer file (AmazonEC2 sku {r.get('SKU', '?')}, OnDemand {r.get('OfferTermCode', '?')}, "
            f"Linux shared tenancy, effective {r.get('EffectiveDate', '?')[:10]})"
        )
        out.append(_row("aws", itype, "on_demand", region, price, facts[0] if facts else None,
                        facts[1] if facts else None, source, fetched))  # fmt: skip
    return out


def fetch_aws_offers(
    regions: list[str], types: list[str], fetched: datetime, *, url: str | None = None
) -> list[dict[str, str]]:
    """Each region's offer file, streamed (``url``: a template with ``{region}``; a local server in tests)."""
    rows = []
    for region in regions:
        where = (url or OFFERS_URL).format(region=region)
        with text_lines(where, what=WHAT, timeout=_TIMEOUT_S) as text:
            try:
                rows.extend(offers_rows(offer_rows(csv.reader(text), where), types, fetched))
            except (*READ_ERRORS, UnicodeDecodeError, csv.Error) as exc:
                raise cut_off(WHAT, where, exc) from None
    return rows
