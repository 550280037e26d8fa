"""``finops pricebook refresh``: list prices from the providers' price APIs into the user pricebook.

Everything is fetched before anything is written: a failure is one InputError line and leaves the pricebook as
it was. Fetched rows replace the user's rows with the same key; the file is written atomically.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from finops_cli.atomic import check_writable, write_text
from finops_cli.catalog.fetchers.aws import fetch_aws
from finops_cli.catalog.fetchers.aws_offers import fetch_aws_offers
from finops_cli.catalog.fetchers.azure import fetch_azure
from finops_cli.catalog.fetchers.gcp import fetch_gcp
from finops_cli.catalog.gpus import instance_types, is_gpu_family
from finops_cli.catalog.pricebook import FETCHED_AT, REF_COLUMNS, REFERENCE_PRICES_FILE, user_pricebook_dir
from finops_cli.catalog.prices import reference_prices
from finops_cli.errors import InputError

PROVIDERS = ("aws", "gcp", "azure")
#: where AWS list prices come from: the Price List API (credentials) or the public bulk offer files (none)
AWS_SOURCES = ("api", "offers")
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
    aws_source: str = "api",
    aws_offers_url: str | None = None,
    now: datetime | None = None,
) -> RefreshResult:
    """Fetch list prices from each provider's API and merge them into the user pricebook, atomically.

    ``regions`` per provider default to those the pricebook already prices; ``extra_types`` are priced beyond the
    pricebook's instance table; ``directory`` (default :func:`~finops_cli.catalog.pricebook.user_pricebook_dir`)
    is created if missing. ``aws_source``: ``api`` (GetProducts, AWS credentials) or ``offers`` (the public bulk
    offer files, no credentials)."""
    if aws_source not in AWS_SOURCES:
        raise InputError(f"{aws_source!r}: expected {' or '.join(AWS_SOURCES)}", param="aws_source")
    chosen = list(dict.fromkeys(p.strip().lower() for p in providers))
    unknown = [p for p in chosen if p not in PROVIDERS]
    if unknown or not chosen:
        raise InputError(f"{','.join(unknown) or '(none)'}: expected some of {', '.join(PROVIDERS)}", param="providers")
    directory = directory or user_pricebook_dir()
    target = directory / REFERENCE_PRICES_FILE
    check_writable(target)
    created = not directory.exists()
    if created:  # the first refresh creates the pricebook; a failed one leaves no trace of it
        directory.mkdir(parents=True)
    extra = list(extra_types)
    try:
        for t in extra:  # after the directory exists: the GPU families are read from the pricebook it overlays
            if provider_of(t) in ("aws", "azure") and not is_gpu_family(t):
                raise InputError(
                    f"{t}: not a GPU instance type (see the pricebook's gpu_families.csv)", param="instance_types"
                )
        fetched = (now or datetime.now(UTC)).replace(microsecond=0)
        result = RefreshResult(target)
        fresh: list[dict[str, str]] = []
        for provider in chosen:
            where = _regions(provider, (regions or {}).get(provider))
            if provider == "aws" and aws_source == "offers":
                rows = fetch_aws_offers(where, _wanted("aws", extra), fetched, url=aws_offers_url)
            elif provider == "aws":
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
                    f"{provider}: {', '.join(unknown_gpus)} not in instance_types.csv: add a row (gpus, "
                    f"accelerator) to {directory / 'instance_types.csv'} so plans know the accelerator"
                )
        new = pd.DataFrame(fresh, columns=COLUMNS).drop_duplicates(KEY, keep="last")
        old = reference_prices(target) if target.is_file() else pd.DataFrame(columns=COLUMNS)
        old = old.reindex(columns=COLUMNS, fill_value="").fillna("")
        stale = old.set_index(KEY).index.isin(new.set_index(KEY).index)
        result.replaced, result.kept = int(stale.sum()), int((~stale).sum())
        table = pd.concat([old[~stale], new], ignore_index=True).sort_values(KEY, kind="stable")
        write_text(target, table.to_csv(index=False, lineterminator="\n").rstrip("\n"))
        return result
    except BaseException:
        if created:
            with suppress(OSError):
                directory.rmdir()
        raise
