"""Spot-price feeds (the AWS CLI's ``describe-spot-price-history`` JSON, CSV/TSV feeds with AWS's column names,
the AWS API, the GCP catalog) → normalised records merged into the store, idempotent per price change."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

from finops_cli.adapters.aws import fetch_spot_prices
from finops_cli.adapters.gcp import catalog_client, list_skus
from finops_cli.catalog.fetchers.gcp import gcp_skus_to_frame
from finops_cli.catalog.gpus import CPU_ONLY, GPU_UNLISTED, classify_instance_type, instance_gpu_facts
from finops_cli.errors import InputError
from finops_cli.files import read_json
from finops_cli.ingest.readers.common import NULL_VALUES
from finops_cli.ingest.readers.stream import iter_batches, read_header
from finops_cli.schema.spot import SPOT_SCHEMA
from finops_cli.store import Store

DATASET = "spot_prices"
_KEY = "prices"  # one file per (provider, month): merged, de-duplicated, replaced as a whole

#: a price change is identified by these; re-ingesting one replaces it
IDENTITY = ["timestamp", "region", "zone", "instance_type", "product_description", "price_kind"]

# AvailabilityZoneId prefixes → region (ids are stable across accounts, names are not).
_AZ_ID_PREFIX = {
    "use1": "us-east-1",
    "use2": "us-east-2",
    "usw1": "us-west-1",
    "usw2": "us-west-2",
    "cac1": "ca-central-1",
    "euw1": "eu-west-1",
    "euw2": "eu-west-2",
    "euw3": "eu-west-3",
    "euc1": "eu-central-1",
    "eun1": "eu-north-1",
    "aps1": "ap-south-1",
    "apne1": "ap-northeast-1",
    "apne2": "ap-northeast-2",
    "apse1": "ap-southeast-1",
    "apse2": "ap-southeast-2",
    "sae1": "sa-east-1",
}
_REGION_RE = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+-\d+)")


def region_of_zone(zone: str | None, zone_id: str | None = None) -> str | None:
    """``us-east-1a`` → ``us-east-1``; ``use1-az4`` → ``us-east-1``; else None."""
    if zone:
        m = _REGION_RE.match(zone)
        if m:
            return m.group(1)
    if zone_id:
        return _AZ_ID_PREFIX.get(zone_id.split("-")[0])
    return None


@dataclass
class SpotIngest:
    """What an ingest added: rows per (provider, month), per source, failures (region → reason)."""

    rows_in: int = 0
    rows_new: int = 0
    partitions: list[dict[str, str]] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    #: types neither counted by the pricebook nor known CPU-only (``provider/type``); GPU families first
    unknown_instance_types: list[str] = field(default_factory=list)
    #: of those, the ones in a GPU family: a pricebook row would price them per GPU-hour
    unlisted_gpu_types: list[str] = field(default_factory=list)
    #: instance types recognised as CPU-only (kept, never reported)
    cpu_only_types: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


REQUIRED = ("InstanceType", "SpotPrice", "Timestamp")


def read_aws_cli_json(path: Path) -> list[dict[str, Any]]:
    doc = read_json(path, kind="AWS CLI describe-spot-price-history JSON", problem="not JSON")
    pages = (
        doc if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "SpotPriceHistory" in doc[0] else [doc]
    )
    records: list[dict[str, Any]] = []
    for page in pages:
        recs = page.get("SpotPriceHistory") if isinstance(page, dict) else page
        if not isinstance(recs, list):
            raise InputError(
                'expected the AWS CLI\'s describe-spot-price-history output ({"SpotPriceHistory": [...]})',
                path=path,
            )
        records.extend(recs)
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise InputError("expected an object", path=path, where=f"SpotPriceHistory[{i}]")
        missing = [c for c in REQUIRED if c not in r]
        if missing:
            raise InputError(f"missing {', '.join(missing)}", path=path, where=f"SpotPriceHistory[{i}]")
        if "AvailabilityZone" not in r and "AvailabilityZoneId" not in r:
            raise InputError("missing AvailabilityZone", path=path, where=f"SpotPriceHistory[{i}]")
    return records


def read_table_feed(path: Path) -> tuple[list[dict[str, Any]], int]:
    """CSV (through the shared readers) or TSV (``.tsv``/``.tsv.gz``) → records, first data row number."""
    name = path.name.lower()
    if name.endswith((".tsv", ".tsv.gz")):
        try:
            table = pacsv.read_csv(
                path,
                parse_options=pacsv.ParseOptions(delimiter="\t"),
                convert_options=pacsv.ConvertOptions(
                    column_types={}, strings_can_be_null=True, null_values=NULL_VALUES, auto_dict_encode=False
                ),
                read_options=pacsv.ReadOptions(use_threads=False),
            )
        except (pa.ArrowException, OSError, EOFError) as exc:
            raise InputError(f"unreadable TSV: {str(exc).splitlines()[0]}", path=path) from None
        table = table.cast(pa.schema([(f.name, pa.string()) for f in table.schema]))
        header = table.column_names
        rows = table.to_pylist()
    else:
        header = read_header(path)
        rows = []
        for rb in iter_batches(path):
            rows.extend(rb.batch.to_pylist())
    missing = [c for c in REQUIRED if c not in header]
    if "AvailabilityZone" not in header and "AvailabilityZoneId" not in header:
        missing.append("AvailabilityZone (or AvailabilityZoneId)")
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}; columns: {', '.join(header)}", path=path)
    return rows, 1


def aws_records_to_frame(records: list[dict[str, Any]], source: str, path: object = None) -> pd.DataFrame:
    """AWS-named records (API, CLI JSON or CSV) → the store's columns (without provider/month)."""
    if not records:
        return pd.DataFrame(columns=[f.name for f in SPOT_SCHEMA] + ["provider"])
    df = pd.DataFrame.from_records(records)

    def refuse(bad: pd.Series, column: str, expected: str) -> None:
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            where = f"row {i + 1}" if source == "csv" else f"SpotPriceHistory[{i}]"
            raise InputError(f"{column} {df[column].iloc[i]!r}: {expected}", path=path, where=where)

    for name in ("InstanceType", "ProductDescription", "AvailabilityZone", "AvailabilityZoneId"):
        if name in df:  # JSON may hold a list or a number where AWS writes text
            text = df[name].map(lambda v: v is None or isinstance(v, str) or (isinstance(v, float) and v != v))
            refuse(~text, name, "expected text")
    ts = pd.to_datetime(df["Timestamp"], utc=True, errors="coerce", format="ISO8601")
    refuse(ts.isna(), "Timestamp", "expected ISO-8601 such as 2026-10-01T06:12:44+00:00")
    price = pd.to_numeric(df["SpotPrice"], errors="coerce")
    bad_price = price.isna() | (price < 0) | (price == float("inf"))  # an infinite price would poison every p90
    refuse(bad_price, "SpotPrice", "expected a non-negative number (USD per instance-hour)")
    zone = df["AvailabilityZone"] if "AvailabilityZone" in df else pd.Series([None] * len(df))
    zone_id = df["AvailabilityZoneId"] if "AvailabilityZoneId" in df else pd.Series([None] * len(df))
    zone = zone.where(zone.notna(), zone_id)
    given_region = df["Region"] if "Region" in df else pd.Series([None] * len(df))
    region = [
        r
        if isinstance(r, str) and r
        else region_of_zone(z if isinstance(z, str) else None, zid if isinstance(zid, str) else None)
        for r, z, zid in zip(given_region, df.get("AvailabilityZone", zone), zone_id, strict=True)
    ]
    provider = df["Provider"].fillna("aws").str.lower() if "Provider" in df else pd.Series(["aws"] * len(df))
    return pd.DataFrame(
        {
            "provider": provider.to_numpy(),
            "timestamp": ts.to_numpy(),
            "region": region,
            "zone": zone.to_numpy(),
            "instance_type": df["InstanceType"].astype(str).to_numpy(),
            "product_description": (
                df["ProductDescription"] if "ProductDescription" in df else pd.Series([None] * len(df))
            ).to_numpy(),
            "price_kind": "spot",
            "usd_per_instance_hour": price.to_numpy(dtype=float),
            "source": source,
            "sku_id": None,
        }
    )


def _attach_gpus(df: pd.DataFrame, unknown: set[str], unlisted: set[str], cpu_only: set[str]) -> pd.DataFrame:
    if "gpus" not in df:
        df["gpus"] = None
    if "accelerator" not in df:
        df["accelerator"] = None
    for (provider, itype), idx in df.groupby(["provider", "instance_type"]).groups.items():
        if df.loc[idx, "gpus"].notna().all():
            continue
        facts = instance_gpu_facts(provider, itype)
        if facts is None:
            kind = classify_instance_type(provider, itype)
            if kind == CPU_ONLY:
                cpu_only.add(f"{provider}/{itype}")
            else:
                (unlisted if kind == GPU_UNLISTED else unknown).add(f"{provider}/{itype}")
            continue
        df.loc[idx, "gpus"] = facts[0]
        df.loc[idx, "accelerator"] = facts[1]
    gpus = pd.to_numeric(df["gpus"], errors="coerce")
    df["gpus"] = gpus.astype("Int32")
    df["usd_per_gpu_hour"] = df["usd_per_instance_hour"] / gpus
    return df


def write_prices(store: Store, frames: list[pd.DataFrame], result: SpotIngest) -> SpotIngest:
    """Merge new rows into each (provider, month) partition: union, drop duplicate changes, replace."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return result
    df = pd.concat(frames, ignore_index=True)
    unknown: set[str] = set()
    unlisted: set[str] = set()
    cpu_only: set[str] = set()
    df = _attach_gpus(df, unknown, unlisted, cpu_only)
    result.unlisted_gpu_types = sorted(unlisted)
    result.unknown_instance_types = [*result.unlisted_gpu_types, *sorted(unknown)]
    result.cpu_only_types = len(cpu_only)
    df["timestamp"] = pd.to_datetime(df["timestamp"], utc=True)
    df["month"] = df["timestamp"].dt.strftime("%Y-%m")
    result.rows_in += len(df)
    with store.transaction() as tx:
        for (provider, month), part in df.groupby(["provider", "month"], sort=True):
            existing = store.read(DATASET, filter=(ds.field("provider") == provider) & (ds.field("month") == month))
            new = pa.Table.from_pandas(part[[f.name for f in SPOT_SCHEMA]], schema=SPOT_SCHEMA, preserve_index=False)
            if existing is not None and existing.num_rows:
                old = existing.select([f.name for f in SPOT_SCHEMA]).cast(SPOT_SCHEMA)
                merged = pa.concat_tables([old, new]).to_pandas()
                before = len(old)
            else:
                merged = new.to_pandas()
                before = 0
            merged = merged.loc[~merged.duplicated(subset=IDENTITY, keep="last")]
            merged = merged.sort_values(["instance_type", "zone", "timestamp"], na_position="first")
            result.rows_new += len(merged) - before
            table = pa.Table.from_pandas(merged, schema=SPOT_SCHEMA, preserve_index=False)
            part_key = {"provider": str(provider), "month": str(month)}
            tx.write(DATASET, part_key, _KEY, table)
            tx.replace_partition(DATASET, part_key)
            result.partitions.append(part_key)
        tx.record({"dataset": DATASET, "source_key": f"spot:{datetime.now(UTC).isoformat()}", **result.to_dict()})
    return result


def ingest_spot_prices(
    store: Store,
    *,
    files: list[str | Path] | None = None,
    aws_regions: list[str] | None = None,
    instance_types: list[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    product_descriptions: list[str] | None = None,
    aws_profile: str | None = None,
    gcp: bool = False,
    gcp_regions: list[str] | None = None,
    aws_client_factory: Any = None,
    gcp_transport: Any = None,
) -> SpotIngest:
    """Fetch or read spot prices (files, AWS regions, the GCP catalog) and merge them into the store."""
    result = SpotIngest()
    frames: list[pd.DataFrame] = []
    for f in files or []:
        path = Path(f)
        if not path.is_file():
            from finops_cli.files import kind_of_path

            raise InputError(f"{kind_of_path(path)}; `files` expects a regular file", path=path, mentions=("files",))
        name = path.name.lower()
        if name.endswith((".json", ".json.gz")):
            df = aws_records_to_frame(read_aws_cli_json(path), "aws-cli-json", path)
        elif name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")):
            rows, _ = read_table_feed(path)
            df = aws_records_to_frame(rows, "csv", path)
        else:
            raise InputError("expected .json (AWS CLI output), .csv or .tsv", path=path)
        if len(df) == 0:  # like the other datasets: a file with nothing in it is a mistake, not "0 rows added"
            raise InputError("has no spot prices (a header but no rows)", path=path)
        result.sources[str(path)] = len(df)
        frames.append(df)
    if aws_regions:
        if not instance_types:
            raise InputError(
                "needs at least one `instance_types` (e.g. p5.48xlarge)",
                param="aws_regions",
                mentions=("instance_types",),
            )
        got = fetch_spot_prices(
            aws_regions,
            instance_types,
            start_time=since,
            end_time=until,
            product_descriptions=product_descriptions if product_descriptions is not None else ["Linux/UNIX"],
            profile=aws_profile,
            client_factory=aws_client_factory,
        )
        result.failures.update({f"aws:{r}": msg for r, msg in got.failures.items()})
        for region, n in got.per_region.items():
            result.sources[f"aws:{region}"] = n
        frames.append(aws_records_to_frame(got.records, "aws-api"))
    if gcp:
        client = catalog_client(transport=gcp_transport)
        df = gcp_skus_to_frame(list_skus(client), gcp_regions)
        if instance_types:
            df = df[df["instance_type"].isin(instance_types)] if len(df) else df
        result.sources["gcp:catalog"] = len(df)
        frames.append(df)
    if not frames:
        raise InputError(
            "nothing to ingest: give `files`, `aws_regions` with `instance_types`, or `gcp`",
            mentions=("files", "aws_regions", "instance_types", "gcp"),
        )
    if all(len(f) == 0 for f in frames) and result.failures:
        raise InputError("every source failed: " + "; ".join(f"{k}: {v}" for k, v in result.failures.items()))
    return write_prices(store, frames, result)
