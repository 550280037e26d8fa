"""Azure Retail Prices API over HTTPS (public, no credentials): the only module that calls it."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

from finops_cli.adapters.public_http import UNTOUCHED, read_body, short_url
from finops_cli.errors import InputError

RETAIL_PRICES_URL = "https://prices.azure.com/api/retail/prices"
#: pages followed at most (the API serves 1,000 items a page; GPU sizes of a few regions take a handful)
MAX_PAGES = 500
_TIMEOUT_S = 60.0
MAX_PAGE_BYTES = 64 << 20


def retail_prices(
    odata_filter: str, *, url: str = RETAIL_PRICES_URL, timeout: float = _TIMEOUT_S
) -> Iterator[dict[str, Any]]:
    """Every item the Retail Prices API returns for ``odata_filter``, following ``NextPageLink``.

    A failure (unreachable, an HTTP error, a page that is not the API's JSON) is an :class:`InputError` with one
    line, so a caller writes nothing.
    """
    page_url: str | None = f"{url}?{urllib.parse.urlencode({'$filter': odata_filter})}"
    seen = 0
    while page_url:
        seen += 1
        if seen > MAX_PAGES:
            raise InputError(
                f"Azure Retail Prices: more than {MAX_PAGES} pages; narrow `regions`/`instance_types`",
                mentions=("regions", "instance_types"),
            )
        page = _get_json(page_url, timeout)
        items = page.get("Items")
        if not isinstance(items, list):
            raise InputError(f"Azure Retail Prices: a page without Items ({_short(page_url)})")
        yield from (i for i in items if isinstance(i, dict))
        nxt = page.get("NextPageLink")
        # the link may come back with its $filter unencoded (spaces, quotes): re-quote what a URL cannot carry
        page_url = urllib.parse.quote(nxt, safe="!#$%&'()*+,/:;=?@[]~") if isinstance(nxt, str) and nxt else None
        if page_url and not _same_origin(page_url, url):  # only ever follow the API itself (never file://, …)
            raise InputError(f"Azure Retail Prices: NextPageLink leaves the API ({_short(page_url)})")


def _get_json(url: str, timeout: float) -> dict[str, Any]:
    body = read_body(url, what="Azure Retail Prices", timeout=timeout, limit=MAX_PAGE_BYTES)
    try:
        page = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        raise InputError(f"Azure Retail Prices: the answer is not JSON ({_short(url)}); {UNTOUCHED}") from None
    if not isinstance(page, dict):
        raise InputError(f"Azure Retail Prices: the answer is not a JSON object ({_short(url)})")
    return page


def _same_origin(a: str, b: str) -> bool:
    pa, pb = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
    return pa.scheme in ("https", "http") and (pa.scheme, pa.hostname) == (pb.scheme, pb.hostname)


_short = short_url


def odata_quote(value: str) -> str:
    """``value`` as an OData string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"
