"""What went into the store, source by source: list it, remove one atomically, check it all (``finops store``).

A *source* is one manifest entry: a billing (format, account, period) slice, a utilisation trace, or one
spot-price ingest. Billing and utilisation sources own the files named by their key, so removing one deletes
exactly those files and the entry in one commit. Spot prices are merged per (provider, month) as they arrive:
a spot-price ingest owns no file of its own and cannot be removed alone.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from finops_cli.errors import InputError
from finops_cli.store.engine import current_engine, stage_aggregates
from finops_cli.store.layout import DATASETS, file_source_key
from finops_cli.store.queries import AGGREGATES, aggregates_of
from finops_cli.store.schemas import schema_problem
from finops_cli.store.store import Store

#: datasets whose manifest entries own the files named by their key
OWNING = ("billing", "utilization")
CENT = 0.005


@dataclass
class SourceInfo:
    """One manifest entry as ``finops store list`` shows it."""

    dataset: str
    key: str
    files: list[str]
    fingerprint: str | None  # content fingerprint of the ingested file(s), where the ingest recorded one
    rows: int | None
    period: list[str]  # billing period, utilisation months, or spot provider/month partitions
    money: dict[str, float]  # BilledCost per currency (billing only)
    ingested_at: str | None
    stored_files: int  # data files in the store under this key

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _describe(entry: dict[str, Any], stored: dict[str, int]) -> SourceInfo:
    dataset = str(entry.get("dataset", "?"))
    key = str(entry.get("source_key", "?"))
    if dataset == "billing":
        files = [str(f) for f in entry.get("files", [])]
        rows = entry.get("rows")
        period = [str(entry.get("billing_period", ""))]
        money = {str(c): float(v) for c, v in (entry.get("billed_cost") or {}).items()}
    elif dataset == "utilization":
        files = [str(entry.get("source", ""))]
        samples = entry.get("samples")
        rows = None if samples is None else int(samples) - int(entry.get("duplicates_dropped", 0))
        period = [str(m) for m in entry.get("months", [])]
        money = {}
    else:
        files = [str(f) for f in (entry.get("sources") or {})]
        rows = entry.get("rows_new")
        period = [f"{p.get('provider')}/{p.get('month')}" for p in entry.get("partitions", []) if isinstance(p, dict)]
        money = {}
    return SourceInfo(
        dataset=dataset,
        key=key,
        files=files,
        fingerprint=entry.get("fingerprint"),
        rows=None if rows is None else int(rows),
        period=period,
        money=money,
        ingested_at=entry.get("ingested_at"),
        stored_files=stored.get(key, 0) if dataset in OWNING else 0,
    )


def _stored_counts(store: Store) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for dataset in OWNING:
        for path in store.files(dataset):
            counts[file_source_key(path.stem)] += 1
    return counts


def list_sources(store: Store) -> list[SourceInfo]:
    """Every source in the store's manifest, in ingest order."""
    stored = _stored_counts(store)
    return [_describe(e, stored) for e in store.manifest()]


def find_sources(store: Store, ref: str) -> list[dict[str, Any]]:
    """Manifest entries named by ``ref``: a source key, a unique key prefix, or a file they were ingested from."""
    entries = store.manifest()
    exact = [e for e in entries if e.get("source_key") == ref]
    if exact:
        return exact
    prefixed = [e for e in entries if str(e.get("source_key", "")).startswith(ref)]
    if len(prefixed) == 1:
        return prefixed
    if len(prefixed) > 1:
        keys = ", ".join(str(e.get("source_key")) for e in prefixed[:5])
        raise InputError(f"source {ref!r} is ambiguous: it starts {len(prefixed)} keys ({keys}, …); give more of it")
    target = str(Path(ref).resolve()) if ref else ref
    by_file = [e for e in entries if target in {str(Path(f).resolve()) for f in _describe(e, {}).files if f}]
    if by_file:
        return by_file
    raise InputError(f"no source {ref!r} in the store; `finops store list` shows the keys")


@dataclass
class RemoveResult:
    """What ``finops store remove`` deleted."""

    sources: list[SourceInfo]
    files_removed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"sources": [s.to_dict() for s in self.sources], "files_removed": self.files_removed}


def remove_source(store: Store, ref: str) -> RemoveResult:
    """Delete the source(s) ``ref`` names (their files and manifest entries) in one atomic transaction."""
    entries = find_sources(store, ref)
    merged = [e for e in entries if e.get("dataset") not in OWNING]
    if merged:
        raise InputError(
            f"source {merged[0].get('source_key')} is a {merged[0].get('dataset')} ingest: spot prices are merged "
            "per provider and month and cannot be removed one ingest at a time"
        )
    stored = _stored_counts(store)
    infos = [_describe(e, stored) for e in entries]
    removed: list[str] = []
    with store.transaction() as tx:
        for e in entries:
            files = tx.remove_source(str(e["dataset"]), str(e["source_key"]))
            removed += [str(p.relative_to(store.root)) for p in files]
    return RemoveResult(infos, sorted(removed))


@dataclass
class Problem:
    """One thing ``finops store check`` found wrong: where, and what."""

    where: str
    problem: str

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}"


@dataclass
class CheckResult:
    """``finops store check``: files read, rows read, and every problem found (empty = healthy)."""

    store: str
    files: int = 0
    rows: int = 0
    sources: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "ok": self.ok, **{k: v for k, v in asdict(self).items() if k != "store"}}


def check_store(store: Store) -> CheckResult:
    """Re-read every file end to end and compare it with the manifest: each owning entry's files hold its rows and
    its billed money per currency (to the cent), and every file belongs to an entry."""
    result = CheckResult(store=store.location)
    entries = store.manifest()  # an unreadable manifest is one line (every file would belong to no source)
    result.sources = len(entries)
    # per key: rows and BilledCost per currency actually in the files
    rows: dict[str, int] = defaultdict(int)
    money: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    owners = {str(e.get("source_key")) for e in entries if e.get("dataset") in OWNING}
    for dataset in DATASETS:
        for path in store.files(dataset):
            rel = str(path.relative_to(store.root))
            result.files += 1
            try:
                # every page decoded: a footer-only read would miss a damaged column chunk
                table = pq.read_table(store.locate(path), filesystem=store.filesystem)
            except (pa.ArrowException, OSError) as exc:
                result.problems.append(Problem(rel, f"unreadable ({exc}); remove its source and ingest it again"))
                continue
            result.rows += table.num_rows
            problem = schema_problem(dataset, table.schema)
            if problem:
                result.problems.append(Problem(rel, f"{problem}; remove its source and ingest it again"))
                continue
            if dataset not in OWNING:
                continue
            key = file_source_key(path.stem)
            if key not in owners:
                result.problems.append(Problem(rel, "belongs to no source in the manifest"))
                continue
            rows[key] += table.num_rows
            if dataset == "billing" and {"BilledCost", "BillingCurrency"} <= set(table.column_names):
                sums = table.group_by("BillingCurrency").aggregate([("BilledCost", "sum")])
                for c, v in zip(sums["BillingCurrency"].to_pylist(), sums["BilledCost_sum"].to_pylist(), strict=True):
                    money[key][str(c)].append(float(v or 0.0))
    for e in entries:
        if e.get("dataset") not in OWNING:
            continue
        key = str(e.get("source_key"))
        info = _describe(e, {})
        where = f"source {key}"
        if info.rows is not None and rows.get(key, 0) != info.rows:
            result.problems.append(
                Problem(where, f"manifest says {info.rows:,} rows, its files hold {rows.get(key, 0):,}")
            )
        for currency in sorted(set(info.money) | set(money.get(key, {}))):
            want = info.money.get(currency, 0.0)
            have = math.fsum(money.get(key, {}).get(currency, []))
            if abs(want - have) >= CENT:
                result.problems.append(
                    Problem(where, f"BilledCost {currency} {have:,.2f} in its files, {want:,.2f} in the manifest")
                )
    return result


@dataclass
class AggregateResult:
    """What ``finops store aggregate`` built: per detail dataset, the files whose aggregate was (re)built."""

    store: str
    engine: str
    built: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_aggregates(store: Store, *, rebuild: bool = False) -> AggregateResult:
    """Build the ingest aggregates that detail files lack (every one with ``rebuild``) in one transaction, on the
    engine in force; a file lacking any of its aggregates has all of them rebuilt."""
    if store.filesystem is not None:
        raise InputError("store aggregate builds a directory store's aggregates; a bucket store's are built at ingest")
    built: dict[str, int] = {}
    with store.transaction() as tx:
        for detail in dict.fromkeys(source for source, _ in AGGREGATES.values()):
            names = aggregates_of(detail)
            have = [{p.relative_to(store.root / a) for p in store.files(a)} for a in names]
            todo = [
                p.relative_to(store.root)
                for p in store.checked_files(detail)
                if rebuild or any(p.relative_to(store.root / detail) not in h for h in have)
            ]
            tx.adopt(stage_aggregates(tx.staging, todo, read_from=lambda rel: Path(store.locate(store.root / rel))))
            built[detail] = len(todo)
    return AggregateResult(str(store.root), current_engine(), built)
