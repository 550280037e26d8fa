"""Billing exports → canonical FOCUS batches → one store transaction, with the ingest promises checked.

Money in equals BilledCost written, per file and currency, to the cent; one currency per billing account and
period; each (format, account, period) written under its idempotency key, atomically. The stager the caller
chose runs :func:`~finops_cli.ingest.billing.executors.stage_file` per file; the store's bytes do not depend on
it. The promises for users: docs/formats.md ("Money in", "Idempotency and re-exports").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from finops_cli.errors import InputError
from finops_cli.files import content_fingerprint

# Importing the format modules registers them.
from finops_cli.ingest.billing import aws, azure, focus, gcp, oci  # noqa: F401
from finops_cli.ingest.billing.base import BILLING_FORMATS
from finops_cli.ingest.billing.contracts import ingest_contract_commitments, is_contract_commitment
from finops_cli.ingest.billing.executors import (
    _FILE,
    BillingStager,
    FileJob,
    FileResult,
    FileSummary,
    LocalStager,
    Progress,
)
from finops_cli.ingest.billing.money import _Acc, _check_conservation, _check_currencies, _units
from finops_cli.ingest.billing.write import DATASET
from finops_cli.ingest.readers.common import discover
from finops_cli.ingest.readers.stream import read_header
from finops_cli.store import Store, open_store
from finops_cli.store.engine import stage_aggregates
from finops_cli.store.layout import file_source_key, part_key


@dataclass
class IngestSummary:
    """What one ``ingest billing`` did: files, rows, periods, money per provider/currency, GPU-hours."""

    store: str
    files: list[FileSummary]
    rows: int
    billing_periods: list[str]
    #: [{provider, currency, billed_cost, effective_cost, rows}]
    cost: list[dict[str, Any]]
    #: [{accelerator, pricing_category, gpu_hours}]
    gpu_hours: list[dict[str, Any]]
    #: [{currency, cost_in, billed_cost_written, difference, effective_cost_in, effective_cost_written}]
    conservation: list[dict[str, Any]]
    #: [{key, billing_account, billing_period, format, replaced_rows, rows}]
    sources: list[dict[str, Any]] = field(default_factory=list)
    #: one line each, e.g. GPU instance types missing from the pricebook (with a count, not a list)
    warnings: list[str] = field(default_factory=list)
    #: FOCUS 1.3 Contract Commitment files given beside the bills (see :mod:`.contracts`), else None
    contract_commitments: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ingest_billing(
    paths: Sequence[str | Path],
    fmt: str = "auto",
    store: Store | None = None,
    progress: Progress | None = None,
    stager: BillingStager | None = None,
) -> IngestSummary:
    """Ingest billing exports into ``store`` atomically; ``stager`` stages the files (default
    :class:`LocalStager`); the checks and the commit stay here."""
    if store is None:
        store = open_store()
    stager = stager or LocalStager()
    files = discover(paths, what="billing export")
    headers = {path: read_header(path) for path in files}
    contract_files = [p for p in files if is_contract_commitment(headers[p])] if fmt in ("auto", "focus") else []
    contracts = ingest_contract_commitments(store, contract_files) if contract_files else None
    files = [p for p in files if p not in set(contract_files)]
    if contracts is not None and not files:  # only Contract Commitment files: nothing billed
        return IngestSummary(str(store.location), [], 0, [], [], [], [], contract_commitments=contracts.to_dict())
    plan: list[FileJob] = []
    for index, path in enumerate(files):
        header = headers[path]
        entry, sniffed = BILLING_FORMATS.resolve(fmt, header, path)
        entry.obj.check_header(header, path)
        plan.append(FileJob(index, path, entry.obj.name, sniffed, header))

    acc = _Acc()
    with store.transaction(aggregates=stage_aggregates) as tx:
        # read under the writer lock: another ingest's entries cannot change between this and the commit
        previous = {e.get("source_key"): e for e in store.manifest() if e.get("dataset") == DATASET}
        results = stager.stage(plan, tx, progress)
        summaries, digests = _adopt(results, tx, acc)
        azure_kinds: dict[str, tuple[str, str]] = {}
        for f in summaries:
            if f.format == "azure":
                _check_azure_kinds(azure_kinds, acc, Path(f.path), f.azure_export or "unknown")
        _check_conservation(acc)
        _check_currencies(acc)
        versions = {f.path: f.focus_version for f in summaries if f.focus_version}
        _record_sources(tx, acc, previous, store, digests, versions)
    summary = _summary(store, summaries, acc, previous)
    summary.contract_commitments = contracts.to_dict() if contracts is not None else None
    return summary


def _adopt(results: Iterable[FileResult], tx: Any, acc: _Acc) -> tuple[list[FileSummary], dict[str, str]]:
    """Take each file's staged parts into ``tx`` (named :func:`~finops_cli.store.layout.part_key` in file order:
    ``results`` come in file order) and add its tallies to ``acc``; the file summaries and each file's digest."""
    files_of_key: dict[str, int] = defaultdict(int)
    order: dict[str, int] = {}
    summaries: list[FileSummary] = []
    digests: dict[str, str] = {}
    for result in results:
        suffix = f"{_FILE}{result.index}"
        order[result.summary.path] = result.index
        names: dict[str, str] = {}
        for rel in map(Path, result.staged):
            key = rel.stem.removesuffix(suffix)
            if key not in names:
                names[key] = part_key(key, files_of_key[key])
                files_of_key[key] += 1

        staged = _rename(tx, result.staged, names, suffix)
        built = None if result.aggregates is None else _rename(tx, result.aggregates, names, suffix)
        tx.adopt(staged, result.rows_staged, built)
        acc.merge(result.acc, order)
        summaries.append(result.summary)
        digests[result.summary.path] = result.digest
    return summaries, digests


def _rename(tx: Any, rels: list[str], names: dict[str, str], suffix: str) -> list[Path]:
    """Staged files ``<key><suffix>.parquet`` renamed ``<names[key]>.parquet``; their new relative paths."""
    out = []
    for rel in map(Path, rels):
        new = rel.with_name(f"{names[rel.stem.removesuffix(suffix)]}.parquet")
        if not tx.move_staged(rel, new):
            raise InputError(
                f"staged file {rel} is not where this process can see it; the store must be on storage "
                "every worker shares (see docs/scale.md)",
                path=tx.staging,
            )
        out.append(new)
    return out


def _record_sources(
    tx: Any,
    acc: _Acc,
    previous: dict[Any, dict[str, Any]],
    store: Store,
    digests: dict[str, str],
    versions: dict[str, str] | None = None,
) -> None:
    """One manifest entry per idempotency key written; drop every earlier file of the key not rewritten."""
    for key, info in acc.keys.items():
        # The parts of an earlier export with more files, and the partitions of a re-export that lost a
        # provider, go; files this transaction writes are kept (Transaction.remove).
        old = previous.get(key)
        for prov in info["providers"] | set(old.get("providers", []) if old is not None else []):
            partition = {"provider": prov, "billing_period": info["billing_period"]}
            for stem in store.file_keys(DATASET, partition):
                if file_source_key(stem) == key:
                    tx.remove(DATASET, partition, stem)
        tx.forget_source(key)
        tx.record(
            {
                "dataset": DATASET,
                "source_key": key,
                "format": info["format"],
                "billing_account": info["billing_account"],
                "billing_period": info["billing_period"],
                "providers": sorted(info["providers"]),
                "files": sorted(info["files"]),
                "rows": info["rows"],
                "billed_cost": {c: round(v, 6) for c, v in info["billed"].items()},
                "fingerprint": content_fingerprint((Path(f) for f in info["files"]), digests),
                **_focus_versions(info["files"], versions or {}),
            }
        )


def _focus_versions(files: Iterable[str], versions: dict[str, str]) -> dict[str, str]:
    """``{"focus_version": "1.2"}`` for a FOCUS source (the newest its files show), else nothing."""
    found = sorted({versions[f] for f in files if f in versions}, key=lambda v: tuple(map(int, v.split("."))))
    return {"focus_version": found[-1]} if found else {}


def _unknown_gpu_warning(unknown: dict[str, int]) -> list[str]:
    """One line for every GPU-family type the pricebook lacks: a count and a few examples, never the whole list."""
    if not unknown:
        return []
    names = sorted(unknown, key=lambda k: (-unknown[k], k))
    examples = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
    return [
        f"{len(names)} GPU instance type(s) on {sum(unknown.values()):,} lines are not in "
        f"pricebooks/instance_types.csv ({examples}); those lines have no GPU-hours until a row is added"
    ]


def _check_azure_kinds(kinds: dict[str, tuple[str, str]], acc: _Acc, path: Path, kind: str) -> None:
    for key, info in acc.keys.items():
        if info["format"] != "azure" or str(path) not in info["files"]:
            continue
        seen = kinds.get(key)
        if seen and seen[0] != kind and "unknown" not in (seen[0], kind):
            raise InputError(
                f"both an {seen[0]} ({seen[1]}) and an {kind} Azure export of account {info['billing_account']} "
                f"for {info['billing_period']}: they describe the same charges; ingest one (amortized for baselines)",
                path=path,
            )
        kinds.setdefault(key, (kind, str(path)))


def _summary(store: Store, files: list[FileSummary], acc: _Acc, previous: dict[Any, Any]) -> IngestSummary:
    periods = sorted({i["billing_period"] for i in acc.keys.values()})
    cost = [
        {"provider": p, "currency": c, "billed_cost": round(v[0], 6), "effective_cost": round(v[1], 6), "rows": v[2]}
        for (p, c), v in sorted(acc.by_provider.items())
    ]
    gpu = [
        {"accelerator": a, "pricing_category": pcat, "gpu_hours": round(h, 3)}
        for (a, pcat), h in sorted(acc.gpu.items())
    ]
    conservation = []
    for currency in sorted(acc.billed):
        cin, out = acc.cost_in.get(currency, 0), acc.billed[currency]
        conservation.append(
            {
                "currency": currency,
                "cost_in": round(float(_units(cin)), 6),
                "billed_cost_written": round(float(_units(out)), 6),
                "difference": round(float(_units(out - cin)), 6),
                "effective_cost_in": round(float(_units(acc.effective_in.get(currency, 0))), 6),
                "effective_cost_written": round(float(_units(acc.effective.get(currency, 0))), 6),
            }
        )
    sources = [
        {
            "key": k,
            "format": i["format"],
            "billing_account": i["billing_account"],
            "billing_period": i["billing_period"],
            "rows": i["rows"],
            "replaced_rows": previous[k].get("rows") if k in previous else None,
        }
        for k, i in sorted(acc.keys.items())
    ]
    return IngestSummary(
        warnings=_unknown_gpu_warning(acc.unknown_gpu_types),
        store=store.location,
        files=files,
        rows=sum(f.rows for f in files),
        billing_periods=periods,
        cost=cost,
        gpu_hours=gpu,
        conservation=conservation,
        sources=sources,
    )
