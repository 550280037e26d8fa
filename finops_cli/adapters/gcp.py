"""GCP Cloud Billing Catalog through google-cloud-billing (Application Default Credentials): the only module
that imports it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from finops_cli.errors import InputError

COMPUTE_ENGINE_SERVICE = "services/6F81-5844-456A"
_INSTALL_HINT = "google-cloud-billing is needed for GCP prices: pip install google-cloud-billing"


def _billing() -> Any:
    try:
        from google.cloud import billing_v1
    except ImportError:  # pragma: no cover - a declared dependency
        raise InputError(_INSTALL_HINT) from None
    return billing_v1


def catalog_client(transport: Any = None) -> Any:
    """A ``CloudCatalogClient`` (Application Default Credentials unless ``transport`` is given)."""
    billing_v1 = _billing()
    if transport is not None:
        return billing_v1.CloudCatalogClient(transport=transport)
    from google.auth.exceptions import DefaultCredentialsError

    try:
        return billing_v1.CloudCatalogClient()
    except DefaultCredentialsError as exc:
        named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        if named:  # the user pointed at a file: say what is wrong with that file, not "no credentials"
            problem = "does not exist" if not os.path.isfile(named) else "is not a valid credentials JSON file"
            detail = " ".join(str(exc).split())[:200]
            raise InputError(
                f"GOOGLE_APPLICATION_CREDENTIALS names a file that {problem} ({detail})", path=named
            ) from None
        raise InputError(
            "no Google Cloud credentials found: run 'gcloud auth application-default login' "
            "or set GOOGLE_APPLICATION_CREDENTIALS"
        ) from None


def list_skus(client: Any, service: str = COMPUTE_ENGINE_SERVICE) -> Iterator[Any]:
    """Every SKU of ``service``; the client's pager follows ``next_page_token``."""
    from google.api_core import exceptions as gexc

    try:
        yield from client.list_skus(parent=service)
    except gexc.GoogleAPICallError as exc:
        raise InputError(f"Cloud Billing Catalog: {type(exc).__name__}: {exc.message}") from None


def base_rate(sku: Any) -> tuple[float, str, str, Any] | None:
    """(price per usage unit from the base tier, usage unit, currency, effective time) of a SKU's first pricing
    info, or None when it has none.

    Money is ``units + nanos·1e-9``; the base tier is the one starting at usage 0. ``usage_unit`` is the
    catalog's (``h`` for GPUs and cores, ``GiBy.h`` for memory, ``min``, ``s``).
    """
    if not sku.pricing_info:
        return None
    info = sku.pricing_info[0]
    expr = info.pricing_expression
    tiers = sorted(expr.tiered_rates, key=lambda t: t.start_usage_amount)
    if not tiers:
        return None
    price = tiers[0].unit_price
    value = float(price.units) + float(price.nanos) * 1e-9
    return value, expr.usage_unit, price.currency_code or "USD", info.effective_time


#: seconds in one of the catalog's time units: a price per unit × this / 3600 is per hour
_PER_HOUR = {"h": 1.0, "hour": 1.0, "min": 60.0, "s": 3600.0, "GiBy.h": 1.0}


def rate_per_hour(sku: Any, *, memory: bool = False) -> tuple[float, str, Any] | None:
    """(price per usage hour from the base tier, currency, effective time) of a SKU's first pricing info.

    Usage units of seconds or minutes are converted to hours; memory SKUs (``GiBy.h``: per GiB-hour) only when
    ``memory``; other units return None.
    """
    rate = base_rate(sku)
    if rate is None:
        return None
    value, unit, currency, effective = rate
    if unit == "GiBy.h" and not memory:
        return None
    per = _PER_HOUR.get(unit)
    if per is None:
        return None
    return value * per, currency, effective
