"""Billing exports → canonical FOCUS batches → one store transaction, with the ingest promises checked.

For each file: pick the format (``--format`` or sniff the header), stream record batches, convert them,
add GPU facts from the pricebook and the partition columns, and write each (billing account, period) slice
under its idempotency key. Before commit:

- **conservation**: per currency, Σ cost in (the source's own cost column, see each format) equals Σ
  BilledCost written, to the cent; rows in = rows written;
- **one currency per billing account and period** (FOCUS: BillingCurrency is the account's one currency);

then the transaction commits atomically (or, on any error or Ctrl-C, leaves the store as it was).

Idempotency key = ``<format>-<period>-<sha256(format, billing account, period)[:12]>``: ingesting the same
export twice rewrites the same file; a corrected re-export of the period replaces it; other accounts'
files in the same ``provider/billing_period`` partition are untouched. Give all files of one export (e.g. a
CUR split into parts) in one command: a later ingest of the same account and period replaces it wholly.

Each input file is staged on its own by :func:`stage_file` (convert, write, tally) by the stager the caller
chose: in this process or worker processes (:class:`LocalStager`), or as Spark tasks
(:class:`finops_cli.spark.billing.SparkStager`): the same function everywhere. So the
second input file holding lines of a key writes ``<key>-part1`` (:func:`~finops_cli.store.store.part_key`),
and the store's bytes do not depend on how many processes converted the files.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import multiprocessing
import os
import signal
import sys
from collections import defaultdict
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from decimal import Context, Decimal
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.catalog.gpus import instance_gpu_facts
from finops_cli.cores import usable_cores
from finops_cli.errors import InputError
from finops_cli.files import content_fingerprint, file_digest

# Importing the format modules registers them.
from finops_cli.ingest.billing import aws_cur, aws_cur2, azure, focus, gcp  # noqa: F401
from finops_cli.ingest.billing.base import BILLING_FORMATS, BatchContext, BillingFormat, Converted, finish
from finops_cli.ingest.readers import (
    RowBatch,
    discover,
    first_bad_row,
    iter_batches,
    kind_of,
    map_unique,
    read_ahead,
    read_header,
)
from finops_cli.schema.billing import BILLING_SCHEMA, provider_slug
from finops_cli.schema.currency import is_iso4217
from finops_cli.store import Store, open_store
from finops_cli.store.engine import THREADS_ENV
from finops_cli.store.store import StagedWriter, Transaction, file_source_key, part_key, stage_aggregates

DATASET = "billing"
#: half a cent, in the nano-units of :func:`exact_sum`
CENT = 5_000_000
#: No billing line is this large in any currency (1e15 IDR is about 60 M USD). Bounding lines keeps every
#: sum finite, and the conservation check exact: amounts are summed as decimals with 9 places.
MAX_LINE_AMOUNT = 1e15
_EXACT = pa.decimal128(38, 9)
_NANO = Context(prec=100)
#: canonical money columns checked line by line before anything is summed or written
MONEY_COLUMNS = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost")
#: a provider becomes a partition directory (``provider=<slug>``)
MAX_PROVIDER_CHARS = 64

#: progress(file, rows_done_in_file, file_index, file_count)
Progress = Callable[[Path, int, int, int], None]


@dataclass
class FileSummary:
    path: str
    format: str
    sniffed: bool
    rows: int
    azure_export: str | None = None


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Acc:
    """Running totals for one ingest; the conservation tallies are exact decimals (see :func:`exact_sum`)."""

    cost_in: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    billed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: the format's EffectiveCost in and EffectiveCost written, per currency (the other money column the
    #: store keeps; ListCost and ContractedCost default to BilledCost, which is conserved)
    effective_in: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    effective: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    by_provider: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(_zero_totals))
    gpu: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    currency_of: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    #: where each (account, period, currency) was first seen: (file, data row), for error messages
    first_seen: dict[tuple[str, str, str], tuple[str, int]] = field(default_factory=dict)
    rows_in: int = 0
    rows_written: int = 0
    pending: dict[tuple[str, str, str], list[pa.Table]] = field(default_factory=dict)
    #: (file, currency) -> [cost in, BilledCost written] in nano-units: names the file when money is not conserved
    by_file: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(_zero_pair))
    unknown_gpu_types: dict[str, int] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the factories' lambdas: another process (a Spark task) returns its totals."""
        return {k: dict(v) if isinstance(v, defaultdict) else v for k, v in self.__dict__.items()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        fresh = _Acc()
        for k, v in state.items():
            default = getattr(fresh, k)
            if isinstance(default, defaultdict):
                default.update(v)
                v = default
            setattr(self, k, v)

    def merge(self, other: _Acc, order: dict[str, int]) -> None:
        """Add another task's totals (every tally is a sum, so the order tasks finish in does not matter).

        ``order`` ranks the input files, so "first seen" stays the first in file order, as in one process.
        """
        for c, nano in other.cost_in.items():
            self.cost_in[c] += nano
        for c, nano in other.billed.items():
            self.billed[c] += nano
        for c, nano in other.effective_in.items():
            self.effective_in[c] += nano
        for c, nano in other.effective.items():
            self.effective[c] += nano
        for pc_key, totals in other.by_provider.items():
            tot = self.by_provider[pc_key]
            for i in range(3):
                tot[i] += totals[i]
        for gpu_key, hours in other.gpu.items():
            self.gpu[gpu_key] += hours
        for key, info in other.keys.items():
            mine = self.keys.setdefault(
                key, {**info, "providers": set(), "files": set(), "rows": 0, "billed": defaultdict(float)}
            )
            mine["providers"] |= info["providers"]
            mine["files"] |= info["files"]
            mine["rows"] += info["rows"]
            for c, amount in info["billed"].items():
                mine["billed"][c] += amount
        for account_period, currencies in other.currency_of.items():
            self.currency_of[account_period] |= currencies
        for where, seen in other.first_seen.items():
            mine_seen = self.first_seen.get(where)
            if mine_seen is None or (order.get(seen[0], 0), seen[1]) < (order.get(mine_seen[0], 0), mine_seen[1]):
                self.first_seen[where] = seen
        for k, (cin, out) in other.by_file.items():
            self.by_file[k][0] += cin
            self.by_file[k][1] += out
        for name, lines in other.unknown_gpu_types.items():
            self.unknown_gpu_types[name] = self.unknown_gpu_types.get(name, 0) + lines
        self.rows_in += other.rows_in
        self.rows_written += other.rows_written


def _zero_totals() -> list[float]:
    return [0.0, 0.0, 0]


def _zero_pair() -> list[int]:
    return [0, 0]


def idempotency_key(fmt: str, billing_account: str, billing_period: str) -> str:
    """File key for one (format, billing account, billing period): same export → same key → one copy.

    Azure actual and amortized exports share the key ``azure`` (they describe the same money).
    """
    digest = hashlib.sha256(f"{fmt}\x1f{billing_account}\x1f{billing_period}".encode()).hexdigest()[:12]
    return f"{fmt}-{billing_period}-{digest}"


def ingest_billing(
    paths: Sequence[str | Path],
    fmt: str = "auto",
    store: Store | None = None,
    progress: Progress | None = None,
    stager: BillingStager | None = None,
) -> IngestSummary:
    """Ingest billing exports into ``store`` atomically; see the module docstring for the promises.

    ``stager`` stages the files (default :class:`LocalStager`: this process, or one worker per core for a
    multi-file export of at least :data:`PARALLEL_MIN_BYTES`). Either way each file goes through
    :func:`stage_file` and hands back its tallies; the checks and the commit stay here, and any aggregate not
    built while staging is built at commit on the query engine in force.
    """
    if store is None:
        store = open_store()
    stager = stager or LocalStager()
    files = discover(paths, what="billing export")
    plan: list[FileJob] = []
    for index, path in enumerate(files):
        header = read_header(path)
        entry, sniffed = BILLING_FORMATS.resolve(fmt, header, path)
        entry.obj.check_header(header, path)
        plan.append(FileJob(index, path, entry.obj.name, sniffed, header))

    acc = _Acc()
    with store.transaction() as tx:
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
        _record_sources(tx, acc, previous, store, digests)
    return _summary(store, summaries, acc, previous)


@dataclass(frozen=True)
class FileJob:
    """One input file to stage: its place in the command, path, format name, how it was chosen, header."""

    index: int
    path: Path
    format: str
    sniffed: bool
    header: list[str]


@dataclass
class FileResult:
    """What staging one file hands back to the committing process (picklable: from a worker or Spark task)."""

    index: int
    summary: FileSummary
    acc: _Acc
    #: relative paths under the staging directory, named ``<key>-file<index>`` until :func:`_adopt` names them
    staged: list[str]
    rows_staged: int
    #: SHA-1 of the file's bytes (:func:`~finops_cli.files.file_digest`), hashed while it was parsed
    digest: str
    #: the staged files' aggregates, named as they are; None: built at commit (on Spark, by Spark SQL)
    aggregates: list[str] | None = None


class BillingStager(Protocol):
    """Stages an ingest's files under a transaction: each through :func:`stage_file`, results in file order."""

    def stage(self, plan: Sequence[FileJob], tx: Transaction, progress: Progress | None) -> Iterable[FileResult]:
        """Stage ``plan``'s files under ``tx.staging``; each file's :class:`FileResult`, in ``plan``'s order."""
        ...


@dataclass(frozen=True)
class LocalStager:
    """Stage the files in this process, or in ``jobs`` worker processes (default :func:`worker_count`)."""

    jobs: int | None = None

    def __post_init__(self) -> None:
        if self.jobs is not None and self.jobs < 1:
            raise InputError(f"--jobs {self.jobs}: expected an integer >= 1")

    def stage(self, plan: Sequence[FileJob], tx: Transaction, progress: Progress | None) -> Iterator[FileResult]:
        return _run(plan, tx.staging, worker_count(self.jobs, [job.path for job in plan]), progress)


#: a file's share of a key is staged as ``<key>-file<index>``; the committing process names it (:func:`_adopt`)
_FILE = "-file"
#: exports smaller than this are staged in the calling process by default (a worker costs ~1 s to start)
PARALLEL_MIN_BYTES = 64 << 20


def worker_count(jobs: int | None, files: Sequence[Path]) -> int:
    """Processes to stage ``files`` with: ``jobs`` (at most one per file) when given; else one per usable
    core for a multi-file export of at least :data:`PARALLEL_MIN_BYTES` (below that, starting workers costs
    more than it saves), else 1."""
    if jobs is not None:
        if jobs < 1:
            raise InputError(f"--jobs {jobs}: expected an integer >= 1")
        return max(1, min(jobs, len(files)))
    if len(files) < 2 or sum(p.stat().st_size for p in files) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(usable_cores(), len(files)))


def stage_file(
    job: FileJob, staging: Path, progress: Progress | None = None, n_files: int = 1, aggregates: bool = True
) -> FileResult:
    """Convert one input file and stage its lines under ``staging``: the step every engine runs per file.

    :func:`convert_file` → :func:`_write` into a :class:`~finops_cli.store.store.StagedWriter`, with Parquet
    encoded on a second thread while the next batch parses, and the file hashed on a third (pyarrow and
    hashlib release the GIL). Memory is bounded as before: one batch converting, one writing, at most
    :data:`ROW_GROUP_ROWS` rows buffered per output file. With ``aggregates`` the staged files' hourly
    aggregates are built here too (by DuckDB, in this process: in parallel when this is a worker).
    """
    parser = BILLING_FORMATS.from_str(job.format).obj
    acc, state, rows = _Acc(), dict[str, Any](), 0
    writer = StagedWriter(staging)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="stage") as threads:
        digest = threads.submit(file_digest, job.path)
        out = WriteBehind(writer, threads)
        try:
            # closed on an error too: its read-ahead threads stop before the store is touched
            with contextlib.closing(convert_file(job.path, parser, job.header, acc, state)) as tables:
                for table in tables:
                    _write(out, table, parser.name, acc, job.path, f"{_FILE}{job.index}")
                    rows += table.num_rows
                    if progress is not None:
                        progress(job.path, rows, job.index, n_files)
            _flush(out, acc)
            out.drain()
            staged = writer.close()
        except BaseException:
            out.drain(quiet=True)
            writer.discard()
            raise
        built = [str(p) for p in stage_aggregates(staging, staged)] if aggregates else None
        summary = FileSummary(str(job.path), parser.name, job.sniffed, rows, state.get("azure_kind"))
        return FileResult(
            job.index, summary, acc, [str(p) for p in staged], writer.rows_written, digest.result(), built
        )


class WriteBehind:
    """A :class:`~finops_cli.store.store.StagedWriter` whose :meth:`write` encodes and compresses Parquet on
    another thread while the caller converts the next batch: one write in flight at a time, in order, so
    memory stays bounded and the files' bytes are those of writing inline. :meth:`drain` before closing."""

    def __init__(self, writer: StagedWriter, threads: ThreadPoolExecutor) -> None:
        self.writer, self.threads = writer, threads
        self.pending: Future[Path] | None = None

    def write(self, dataset: str, partition: dict[str, str], key: str, data: pa.Table) -> None:
        self.drain()
        self.pending = self.threads.submit(self.writer.write, dataset, partition, key, data)

    def drain(self, quiet: bool = False) -> None:
        """Wait for the write in flight; raise its error (e.g. a full disk) unless ``quiet`` (already failing)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            try:
                pending.result()
            except Exception:
                if not quiet:
                    raise


def _run(plan: Sequence[FileJob], staging: Path, workers: int, progress: Progress | None) -> Iterator[FileResult]:
    """Stage every file (in a pool of ``workers`` spawned processes when more than one); results in file order."""
    if workers <= 1:
        for job in plan:
            yield stage_file(job, staging, progress, len(plan))
        return

    pool = _pool(workers)
    try:
        futures = [pool.submit(stage_file, job, staging) for job in plan]
        for job, future in zip(plan, futures, strict=True):
            try:
                result = future.result()
            except BrokenProcessPool:
                raise InputError(
                    f"a worker process died (killed, or out of memory?) while {workers} converted the export's "
                    "files; nothing was written (run it again, or with --jobs 1)",
                    path=job.path,
                ) from None
            if progress is not None:
                progress(job.path, result.summary.rows, job.index, len(plan))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # no worker writes into staging after an abort


#: multiprocessing's resource tracker warns when it removes the pool's semaphores after a killed (SIGKILL) parent
_TRACKER_QUIET = "ignore::UserWarning:multiprocessing.resource_tracker"


def _pool(workers: int) -> ProcessPoolExecutor:
    """The worker pool of a ``--jobs N`` ingest: spawned processes that die with this one.

    spawn, not fork: a forked child would inherit pyarrow's and DuckDB's thread pools mid-flight. The pool's
    queues hold named semaphores registered with multiprocessing's resource tracker, a process of its own
    that outlives a parent killed with SIGKILL, removes them (as it should) and then printed a "leaked
    semaphore objects" UserWarning on the user's terminal. The tracker takes its warning options from this
    process's ``sys.warnoptions`` when it starts: it is started here with that one warning ignored.
    """
    if _TRACKER_QUIET not in sys.warnoptions:
        sys.warnoptions.append(_TRACKER_QUIET)
    resource_tracker.ensure_running()
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(os.getpid(), max(1, usable_cores() // workers)),
    )


def _start_worker(parent: int, threads: int) -> None:
    """Worker start: die with the parent; pyarrow's and DuckDB's thread pools sized to this worker's share of
    the cores (``$FINOPS_DUCKDB_THREADS`` still wins), so N workers on N cores do not run N² threads."""
    _die_with_parent(parent)
    pa.set_cpu_count(threads)
    os.environ.setdefault(THREADS_ENV, str(threads))


def _die_with_parent(parent: int) -> None:
    """Be killed with the committing process (Linux), so a killed ingest leaves no writer behind."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the line above ran
        os._exit(1)


def _adopt(results: Iterable[FileResult], tx: Any, acc: _Acc) -> tuple[list[FileSummary], dict[str, str]]:
    """Take each file's staged parts into ``tx`` (named :func:`~finops_cli.store.store.part_key` in file order:
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

        staged = _rename(tx.staging, result.staged, names, suffix)
        built = None if result.aggregates is None else _rename(tx.staging, result.aggregates, names, suffix)
        tx.adopt(staged, result.rows_staged, built)
        acc.merge(result.acc, order)
        summaries.append(result.summary)
        digests[result.summary.path] = result.digest
    return summaries, digests


def _rename(staging: Path, rels: list[str], names: dict[str, str], suffix: str) -> list[Path]:
    """Staged files ``<key><suffix>.parquet`` renamed ``<names[key]>.parquet``; their new relative paths."""
    out = []
    for rel in map(Path, rels):
        if not (staging / rel).is_file():
            raise InputError(
                f"staged file {rel} is not where this process can see it; the store must be on storage "
                "every worker shares (see docs/scale.md)",
                path=staging,
            )
        new = rel.with_name(f"{names[rel.stem.removesuffix(suffix)]}.parquet")
        os.replace(staging / rel, staging / new)
        out.append(new)
    return out


def convert_file(
    path: Path, parser: BillingFormat, header: list[str], acc: _Acc, state: dict[str, Any]
) -> Generator[pa.Table]:
    """One file's canonical tables, batch by batch, with its money in tallied in ``acc`` (every engine's step)."""
    rows = 0

    def parsed(batches: Iterator[RowBatch]) -> Iterator[tuple[pa.RecordBatch, BatchContext, Converted]]:
        for rb in batches:
            ctx = BatchContext(path, rb.first_row, state)
            yield rb.batch, ctx, parser.convert(rb.batch, ctx)

    # a three-stage pipeline: the format's own conversion of the next batch runs on a thread (Arrow
    # releases the GIL) while this thread finishes this one and stage_file's writes the one before; in
    # order, one batch in flight, so tallies, errors and memory are as when run one after the other. On
    # an error the thread is joined, then the reader closed (its own threads and files with it).
    with contextlib.ExitStack() as stack:
        batches = stack.enter_context(
            contextlib.closing(
                iter_batches(
                    path,
                    columns=parser.columns(header, every_known=kind_of(path) == "jsonl"),
                    types=parser.types_for(header),
                    newlines_in_values=parser.newlines_in_values,
                    nested=parser.nested,
                )
            )
        )
        for batch, ctx, conv in read_ahead(parsed(batches), stack):
            table = _convert(parser, batch, ctx, acc, conv)
            rows += table.num_rows
            yield table
    if rows == 0:
        raise InputError("has a header but no billing lines", path=path)
    for name, lines in state.get("unknown_gpu_types", {}).items():
        acc.unknown_gpu_types[name] = acc.unknown_gpu_types.get(name, 0) + lines


def _record_sources(
    tx: Any, acc: _Acc, previous: dict[Any, dict[str, Any]], store: Store, digests: dict[str, str]
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
            }
        )


def exact_sum(values: pa.Array | pa.ChunkedArray) -> int:
    """Σ values, exactly, in nano-units (each value rounded to 9 decimal places, then summed as decimals).

    Float sums lose cents above ~10^13 and overflow to inf; decimals do neither. Callers bound each
    value to ±:data:`MAX_LINE_AMOUNT` first, so a batch's decimal128 sum cannot overflow.
    """
    total = pc.sum(pc.cast(values, _EXACT, safe=False)).as_py()
    return 0 if total is None else int(_NANO.scaleb(total, 9))


def _units(nano: int) -> Decimal:
    return _NANO.scaleb(Decimal(nano), -9)


def check_money(values: pa.Array | pa.ChunkedArray, name: str, ctx: BatchContext) -> None:
    """Refuse a NaN, an infinity or an absurd amount (naming file and row) before it is summed or stored."""
    x = pc.cast(values, pa.float64())
    ok = pc.and_(pc.is_finite(x), pc.less_equal(pc.abs(x), MAX_LINE_AMOUNT))
    i = first_bad_row(pc.invert(pc.fill_null(ok, True)))
    if i is not None:
        raise InputError(
            f"{name} is {x[i].as_py()!r}: expected a finite amount of money within ±{MAX_LINE_AMOUNT:.0e}",
            path=ctx.path,
            where=f"row {ctx.first_row + i}",
        )


def _cost_in(conv: Converted, ctx: BatchContext, acc: _Acc) -> None:
    """Add the source's own money (per currency, before any mapping or splitting) to the conservation tally,
    and the format's EffectiveCost to its own: an empty one is refused, never summed as nothing."""
    currency = conv.columns.get("BillingCurrency")
    amounts = pc.cast(conv.cost_in, pa.float64())
    if currency is None:
        raise InputError("no billing currency column", path=ctx.path)
    check_money(amounts, "the line's cost", ctx)
    effective = conv.columns.get("EffectiveCost")
    effective = amounts if effective is None else pc.cast(effective, pa.float64())
    # FOCUS: "EffectiveCost MUST NOT be null"; a silent null would drop money from every amortized report.
    # (Where BilledCost is empty too, the check of required columns names BilledCost.)
    i = first_bad_row(pc.and_(pc.is_null(effective), pc.is_valid(amounts)))
    if i is not None:
        raise InputError(
            "EffectiveCost is empty or not a number (FOCUS: it must not be null; write BilledCost "
            "where nothing is amortized)",
            path=ctx.path,
            where=f"row {ctx.first_row + i}, column 'EffectiveCost'",
        )
    check_money(effective, "EffectiveCost", ctx)
    distinct = pc.unique(currency).to_pylist()
    for c in distinct:  # a currency is printed next to every amount: only ISO 4217 codes enter the store
        if c is not None and not is_iso4217(c):
            i = pc.index(currency, c).as_py()
            raise InputError(
                f"BillingCurrency {str(c)[:40]!r} is not an ISO 4217 code (such as USD, EUR, JPY)",
                path=ctx.path,
                where=f"row {ctx.first_row + i}",
            )
    for c in distinct:
        if len(distinct) == 1:
            cost, eff = exact_sum(amounts), exact_sum(effective)
        else:
            mask = pc.is_null(currency) if c is None else pc.fill_null(pc.equal(currency, c), False)
            cost, eff = exact_sum(pc.filter(amounts, mask)), exact_sum(pc.filter(effective, mask))
        acc.cost_in[c] += cost
        acc.by_file[(str(ctx.path), c)][0] += cost
        acc.effective_in[c] += eff


def _convert(parser: BillingFormat, batch: pa.RecordBatch, ctx: BatchContext, acc: _Acc, conv: Converted) -> pa.Table:
    """Source batch → canonical table with GPU facts, provenance and partition columns (``conv``: the
    format's conversion of ``batch``, done on the read-ahead thread)."""
    n = batch.num_rows
    _cost_in(conv, ctx, acc)
    acc.rows_in += n
    cols = dict(conv.columns)
    if cols.get("BillingAccountId") is None or cols.get("BillingPeriodStart") is None:
        raise InputError("lines without a billing account or billing period", path=ctx.path)
    cols["x_SourceFormat"] = pa.repeat(pa.scalar(parser.name), n)
    cols["x_SourceFile"] = pa.repeat(pa.scalar(ctx.path.name), n)
    cols["x_SourceRow"] = pa.array(np.arange(ctx.first_row, ctx.first_row + n, dtype=np.int64))
    table = _focus_defaults(finish(cols, n))
    _require(table, ctx, ["BilledCost", "BillingCurrency", "BillingAccountId", "BillingPeriodStart"])
    for name in MONEY_COLUMNS:
        check_money(table[name], name, ctx)

    if conv.provider is not None:  # one provider per format (AWS, GCP, Azure): no per-row work
        provider = pa.repeat(pa.scalar(conv.provider), n)
    else:
        provider = pc.fill_null(map_unique(table["ProviderName"], provider_slug, pa.string()), "unknown")
        too_long = pc.greater(pc.utf8_length(provider), MAX_PROVIDER_CHARS)
        if pc.any(too_long).as_py():  # it names a store directory: bounded, and the row is named here
            i = pc.index(too_long, True).as_py()
            raise InputError(
                f"ProviderName of more than {MAX_PROVIDER_CHARS} characters "
                f"({table['ProviderName'][i].as_py()[:40]!r}...)",
                path=ctx.path,
                where=f"row {ctx.first_row + i}",
            )
    # GPU facts: the file's own (FOCUS x_ columns, GCP GPU SKUs) win; else the pricebook by instance type.
    key = pc.binary_join_element_wise(provider, pc.fill_null(table["x_InstanceType"], ""), "\x1f")
    if isinstance(key, pa.ChunkedArray):
        key = key.combine_chunks()
    enc = pc.dictionary_encode(key)  # distinct (provider, instance type) pairs: looked up once each
    facts = [_facts(k) for k in enc.dictionary.to_pylist()]
    gpus_pb = pc.take(pa.array([f and f[0] for f in facts], pa.int32()), enc.indices)
    acc_pb = pc.take(pa.array([f and f[1] for f in facts], pa.string()), enc.indices)
    gpus = pc.coalesce(table["x_GpuCount"], gpus_pb)
    accel = pc.coalesce(table["x_AcceleratorType"], acc_pb)
    # GPU-hours: the file's own where it states them, else usage hours × GPUs per instance
    gpu_hours = table["x_GpuHours"]
    if conv.usage_hours is not None:
        derived = pc.multiply(pc.fill_null(conv.usage_hours, 0.0), pc.cast(pc.fill_null(gpus, 0), pa.float64()))
        gpu_hours = pc.coalesce(gpu_hours, derived)
    gpu_hours = pc.fill_null(gpu_hours, 0.0)
    for name, values in (("x_GpuCount", gpus), ("x_AcceleratorType", accel), ("x_GpuHours", gpu_hours)):
        table = _set(table, name, values)
    period = map_unique(table["BillingPeriodStart"], lambda ts: ts.strftime("%Y-%m"), pa.string())
    return table.append_column("provider", provider).append_column("billing_period", period)


_FREQUENCY = {"Usage": "Usage-Based", "Purchase": "One-Time", "Tax": "One-Time", "Credit": "One-Time"}


def _focus_defaults(table: pa.Table) -> pa.Table:
    """Fill FOCUS columns the source leaves empty with documented defaults (docs/formats.md).

    ListCost and ContractedCost (FOCUS: not null) fall back to BilledCost; PricingQuantity/Unit to the
    consumed ones; ChargeFrequency from ChargeCategory; CommitmentDiscountCategory is Spend for savings plans
    and Usage for other commitments; CommitmentDiscountStatus is Used on usage lines under a commitment.
    """

    def setcol(name: str, values: pa.Array) -> None:
        nonlocal table
        table = _set(table, name, values)

    billed = table["BilledCost"]
    setcol("ListCost", pc.coalesce(table["ListCost"], billed))
    setcol("ContractedCost", pc.coalesce(table["ContractedCost"], billed))
    setcol("PricingQuantity", pc.coalesce(table["PricingQuantity"], table["ConsumedQuantity"]))
    setcol("PricingUnit", pc.coalesce(table["PricingUnit"], table["ConsumedUnit"]))
    frequency = map_unique(table["ChargeCategory"], lambda c: _FREQUENCY.get(c, "One-Time"), pa.string())
    setcol("ChargeFrequency", pc.coalesce(table["ChargeFrequency"], frequency))
    commitment = table["CommitmentDiscountId"]
    if commitment.null_count < len(commitment):
        spend = map_unique(
            commitment, lambda c: "Spend" if "savingsplan" in c.lower().replace(" ", "") else "Usage", pa.string()
        )
        setcol("CommitmentDiscountCategory", pc.coalesce(table["CommitmentDiscountCategory"], spend))
        used = pc.if_else(
            pc.and_(pc.is_valid(commitment), pc.equal(table["ChargeCategory"], "Usage")),
            pa.scalar("Used"),
            pa.scalar(None, pa.string()),
        )
        setcol("CommitmentDiscountStatus", pc.coalesce(table["CommitmentDiscountStatus"], used))
    return table


def _set(table: pa.Table, name: str, values: pa.Array | pa.ChunkedArray) -> pa.Table:
    """``table`` with its billing column ``name`` replaced."""
    return table.set_column(BILLING_SCHEMA.get_field_index(name), name, values)


def _facts(key: str) -> tuple[int, str] | None:
    """``provider\x1finstance_type`` → (GPUs, accelerator) from the pricebook (called once per distinct key)."""
    provider, _, instance = key.partition("\x1f")
    return instance_gpu_facts(provider, instance) if instance else None


def _require(table: pa.Table, ctx: BatchContext, names: Iterable[str]) -> None:
    for name in names:
        c = table[name]
        if c.null_count:
            idx = pc.index(pc.is_null(c), True).as_py()
            raise InputError(f"{name} is empty", path=ctx.path, where=f"row {ctx.first_row + idx}")


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


def _check_conservation(acc: _Acc) -> None:
    """Per file and currency, then per currency overall: the source's money in equals BilledCost written.

    A mismatch is the file's fault (amounts so large or so many orders of magnitude apart that their
    sum loses cents in float64, or values that are not numbers): exit 2 naming the file and currency.
    """
    if acc.rows_in != acc.rows_written:
        raise RuntimeError(f"{acc.rows_in} lines read but {acc.rows_written} written; nothing written")
    for (path, currency), (cost_in, written) in sorted(acc.by_file.items()):
        _conserved(cost_in, written, currency, path)
    for currency in sorted(set(acc.cost_in) | set(acc.billed)):
        _conserved(acc.cost_in.get(currency, 0), acc.billed.get(currency, 0), currency, None)
    for currency in sorted(set(acc.effective_in) | set(acc.effective)):
        _conserved(acc.effective_in.get(currency, 0), acc.effective.get(currency, 0), currency, None, "EffectiveCost")


def _conserved(cin: int, out: int, currency: str, path: str | None, what: str = "cost") -> None:
    """``cin`` and ``out`` are exact nano-unit sums (:func:`exact_sum`): no NaN, inf or lost cent."""
    if abs(cin - out) < CENT:
        return
    raise InputError(
        f"money not conserved in {currency}: the {what} in the file{'' if path else 's'} sums to {_units(cin):,.2f} "
        f"but {_units(out):,.2f} would be written; nothing written",
        path=path,
    )


def _check_currencies(acc: _Acc) -> None:
    for (account, period), currencies in acc.currency_of.items():
        if len(currencies) > 1:
            first, *others = sorted(currencies, key=lambda c: acc.first_seen[(account, period, c)])
            path, row = acc.first_seen[(account, period, others[0])]
            seen, seen_row = acc.first_seen[(account, period, first)]
            raise InputError(
                f"billing account {account} is billed in {others[0]} here but in {first} at {seen} row {seen_row} "
                f"(period {period}); FOCUS requires one BillingCurrency per billing account",
                path=path,
                where=f"row {row}",
            )


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
