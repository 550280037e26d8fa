"""AWS through boto3 (its standard credential chain, or ``--aws-profile``): the only module that imports it.
Errors carry the region and error code, never a credential."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from finops_cli.errors import InputError

_INSTALL_HINT = "boto3 is needed for AWS spot prices: pip install boto3"


def _boto3() -> Any:
    try:
        import boto3
    except ImportError:  # pragma: no cover - boto3 is a declared dependency
        raise InputError(_INSTALL_HINT) from None
    return boto3


def ec2_client(region: str, profile: str | None = None) -> Any:
    """An EC2 client for ``region`` from the standard credential chain (or ``profile``)."""
    return _client("ec2", region, profile)


#: the Price List API has endpoints in a few regions only; us-east-1 answers for every region's prices
PRICING_REGION = "us-east-1"


def pricing_client(profile: str | None = None) -> Any:
    """A Price List (``pricing``) client from the standard credential chain (or ``profile``)."""
    return _client("pricing", PRICING_REGION, profile)


def _client(service: str, region: str, profile: str | None) -> Any:
    boto3 = _boto3()
    from botocore.exceptions import ProfileNotFound

    try:
        session = boto3.Session(profile_name=profile, region_name=region)
    except ProfileNotFound:
        msg = f"AWS profile {profile!r} is not configured (see ~/.aws/config)"
        raise InputError(f": {msg}", param="aws_profile") from None
    try:
        return session.client(service, region_name=region)
    except ValueError as exc:  # an invalid endpoint URL (AWS_ENDPOINT_URL): named, without its credentials
        raise InputError(f"cannot create the {service} client: {redact(str(exc))}") from None


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it removed (``https://user:secret@host`` → ``https://***@host``).

    botocore echoes the endpoint URL in its errors; an endpoint configured with userinfo must not leak it.
    """
    return _USERINFO.sub(r"\1***@", text)


def spot_price_history(
    client: Any,
    instance_types: Iterable[str],
    *,
    start_time: datetime | None = None,
    end_time: datetime | None = None,
    product_descriptions: Iterable[str] | None = ("Linux/UNIX",),
) -> Iterator[dict[str, Any]]:
    """Every ``SpotPriceHistory`` record of ``describe_spot_price_history``, following the paginator."""
    kwargs: dict[str, Any] = {"InstanceTypes": list(instance_types)}
    if start_time is not None:
        kwargs["StartTime"] = start_time
    if end_time is not None:
        kwargs["EndTime"] = end_time
    if product_descriptions:
        kwargs["ProductDescriptions"] = list(product_descriptions)
    paginator = client.get_paginator("describe_spot_price_history")
    for page in paginator.paginate(**kwargs):
        yield from page.get("SpotPriceHistory", [])


@dataclass
class RegionResults:
    """Records fetched per region, and the regions that failed (region → one-line reason)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    per_region: dict[str, int] = field(default_factory=dict)


def fetch_spot_prices(
    regions: Iterable[str],
    instance_types: Iterable[str],
    *,
    start_time: datetime | None = None,
    end_time: datetime | None = None,
    product_descriptions: Iterable[str] | None = ("Linux/UNIX",),
    profile: str | None = None,
    client_factory: Callable[[str], Any] | None = None,
) -> RegionResults:
    """Spot-price history for several regions; a failing region is reported and the rest kept."""
    _boto3()
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    factory = client_factory or (lambda region: ec2_client(region, profile))
    out = RegionResults()
    types = list(instance_types)
    for region in regions:
        try:
            client = factory(region)
            recs = list(
                spot_price_history(
                    client,
                    types,
                    start_time=start_time,
                    end_time=end_time,
                    product_descriptions=product_descriptions,
                )
            )
        except (BotoCoreError, ClientError, ResponseParserError) as exc:
            out.failures[region] = error_line(exc)
            continue
        for r in recs:
            r.setdefault("Region", region)
        out.records.extend(recs)
        out.per_region[region] = len(recs)
    return out


def error_line(exc: Exception) -> str:
    """One line for a botocore failure: no credentials, the service's error code and message, or the transport
    error's name (unreachable endpoint, non-XML answer). Never a credential or an endpoint's userinfo."""
    from botocore.exceptions import ClientError, NoCredentialsError

    if isinstance(exc, NoCredentialsError):
        return "no AWS credentials found (configure a profile or environment credentials)"
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return redact(f"{err.get('Code', 'ClientError')}: {err.get('Message', '')}".strip())
    detail = f": {' '.join(str(exc).split())[:200]}" if "credential" not in str(exc).lower() else ""
    return redact(type(exc).__name__ + detail)


def get_products(
    client: Any, filters: list[dict[str, str]], service_code: str = "AmazonEC2"
) -> Iterator[dict[str, Any]]:
    """Every product of the Price List API's ``GetProducts`` matching ``filters``, parsed.

    The API returns each product as a JSON *string* in ``PriceList`` (``product.attributes``, ``terms.OnDemand``
    …); the paginator follows ``NextToken``. Any failure is an :class:`InputError` with one line
    (:func:`error_line`), so a caller writes nothing.
    """
    _boto3()
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    paginator = client.get_paginator("get_products")
    pages = paginator.paginate(
        ServiceCode=service_code, Filters=filters, FormatVersion="aws_v1", PaginationConfig={"PageSize": 100}
    )
    try:
        for page in pages:
            for text in page.get("PriceList", []):
                try:
                    yield json.loads(text)
                except (TypeError, ValueError, RecursionError):  # RecursionError: nested thousands deep
                    raise InputError("AWS Price List: a PriceList item is not JSON") from None
    except (BotoCoreError, ClientError, ResponseParserError) as exc:
        raise InputError(f"AWS Price List GetProducts: {error_line(exc)}") from None
