"""Canonical billing lines → the store's Parquet files, one per idempotency key, with what is written tallied."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.ingest.billing.money import _Acc, exact_sum
from finops_cli.schema.billing import BILLING_SCHEMA

DATASET = "billing"


def idempotency_key(fmt: str, billing_account: str, billing_period: str) -> str:
    """File key for one (format, billing account, billing period): same export → same key → one copy.

    Azure actual and amortized exports share the key ``azure`` (they describe the same money).
    """
    digest = hashlib.sha256(f"{fmt}\x1f{billing_account}\x1f{billing_period}".encode()).hexdigest()[:12]
    return f"{fmt}-{billing_period}-{digest}"


def _write(tx: Any, table: pa.Table, fmt: str, acc: _Acc, path: Path, suffix: str = "") -> None:
    """Buffer ``table``'s lines for their store files (idempotency key + ``suffix``); tally what is written."""
    body = BILLING_SCHEMA.names
    # use_threads=False: a batch is one chunk, so threads add only their start-up (≈ 20 % of the group-by's
    # CPU); rows are summed in order, as before
    groups = table.group_by(
        ["provider", "billing_period", "BillingAccountId", "BillingCurrency"], use_threads=False
    ).aggregate([("BilledCost", "sum"), ("EffectiveCost", "sum"), ("BilledCost", "count")])
    for g in groups.to_pylist():
        prov, period, account, currency = (
            g["provider"],
            g["billing_period"],
            g["BillingAccountId"],
            g["BillingCurrency"],
        )
        key = idempotency_key(fmt, account, period)
        mask = pc.and_(
            pc.and_(pc.equal(table["provider"], prov), pc.equal(table["billing_period"], period)),
            pc.and_(pc.equal(table["BillingAccountId"], account), pc.equal(table["BillingCurrency"], currency)),
        )
        part = table.filter(mask) if len(groups) > 1 else table
        _buffer(tx, acc, (prov, period, key + suffix), part.select(body))
        info = acc.keys.setdefault(
            key,
            {
                "format": fmt,
                "billing_account": account,
                "billing_period": period,
                "providers": set(),
                "files": set(),
                "rows": 0,
                "billed": defaultdict(float),
            },
        )
        info["providers"].add(prov)
        info["files"].add(str(path))
        info["rows"] += g["BilledCost_count"]
        info["billed"][currency] += g["BilledCost_sum"]
        # What actually goes to the store (not the group's aggregate): the conservation check's "out".
        written = exact_sum(part["BilledCost"])
        acc.billed[currency] += written
        acc.effective[currency] += exact_sum(part["EffectiveCost"])
        acc.by_file[(str(path), currency)][1] += written
        acc.rows_written += part.num_rows
        acc.currency_of[(account, period)].add(currency)
        acc.first_seen.setdefault((account, period, currency), (str(path), pc.min(part["x_SourceRow"]).as_py()))
        tot = acc.by_provider[(prov, currency)]
        tot[0] += g["BilledCost_sum"]
        tot[1] += g["EffectiveCost_sum"]
        tot[2] += g["BilledCost_count"]
    if not pc.any(pc.greater(table["x_GpuHours"], 0.0)).as_py():
        return
    gpu = table.group_by(["x_AcceleratorType", "PricingCategory"], use_threads=False).aggregate([("x_GpuHours", "sum")])
    for g in gpu.to_pylist():
        if g["x_GpuHours_sum"]:
            acc.gpu[(g["x_AcceleratorType"] or "none", g["PricingCategory"] or "-")] += g["x_GpuHours_sum"]


#: Rows gathered per output file before a write: each write is one Parquet row group, and readers
#: (DuckDB, Spark) prefer row groups of ~10^5 rows over one per CSV block.
ROW_GROUP_ROWS = 131_072


def _buffer(tx: Any, acc: _Acc, target: tuple[str, str, str], part: pa.Table) -> None:
    pending = acc.pending.setdefault(target, [])
    pending.append(part)
    if sum(t.num_rows for t in pending) >= ROW_GROUP_ROWS:
        _flush(tx, acc, target)


def _flush(tx: Any, acc: _Acc, only: tuple[str, str, str] | None = None) -> None:
    for target in [only] if only else list(acc.pending):
        parts = acc.pending.pop(target, [])
        if parts:
            prov, period, key = target
            tx.write(DATASET, {"provider": prov, "billing_period": period}, key, pa.concat_tables(parts))
