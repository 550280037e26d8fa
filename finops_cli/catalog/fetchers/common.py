"""What every price fetcher shares: one pricebook row per API answer, every API string checked on the way in."""

from __future__ import annotations

import math
import re
from datetime import datetime

from finops_cli.catalog.pricebook import FETCHED_AT
from finops_cli.errors import InputError
from finops_cli.text import one_line


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
