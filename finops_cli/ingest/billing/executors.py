"""Where an ingest's files are staged: each file through :func:`stage_file`, in this process or in worker processes
(:class:`LocalStager`), or as Spark tasks (:class:`finops_cli.spark.billing.SparkStager`), behind one
:class:`BillingStager` interface that the caller chooses."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from finops_cli.errors import InputError
from finops_cli.files import file_digest

# Importing the format modules registers them.
from finops_cli.ingest.billing import aws, azure, focus, gcp, oci  # noqa: F401
from finops_cli.ingest.billing.base import BILLING_FORMATS
from finops_cli.ingest.billing.focus import focus_version
from finops_cli.ingest.billing.money import _Acc
from finops_cli.ingest.billing.normalise import convert_file
from finops_cli.ingest.billing.write import _flush, _write
from finops_cli.processes import die_with_parent, spawn_pool, usable_cores
from finops_cli.store.engine import THREADS_ENV, stage_aggregates
from finops_cli.store.staging import StagedWriter
from finops_cli.store.store import Transaction

#: progress(file, rows_done_in_file, file_index, file_count)
Progress = Callable[[Path, int, int, int], None]


@dataclass
class FileSummary:
    path: str
    format: str
    sniffed: bool
    rows: int
    azure_export: str | None = None
    #: FOCUS files: the version their columns show (1.0 … 1.3)
    focus_version: str | None = None


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


#: exports smaller than this are staged in the calling process by default (a worker costs ~1 s to start)
PARALLEL_MIN_BYTES = 64 << 20


@dataclass(frozen=True)
class LocalStager:
    """Stage the files in this process, or in ``jobs`` worker processes (at most one per file). Without ``jobs``,
    a multi-file export of at least :data:`PARALLEL_MIN_BYTES` gets one worker per usable core."""

    jobs: int | None = None

    def __post_init__(self) -> None:
        if self.jobs is not None and self.jobs < 1:
            raise InputError(f"{self.jobs}: expected an integer >= 1", param="jobs")

    def stage(self, plan: Sequence[FileJob], tx: Transaction, progress: Progress | None) -> Iterator[FileResult]:
        big = len(plan) > 1 and sum(job.path.stat().st_size for job in plan) >= PARALLEL_MIN_BYTES
        wanted = self.jobs if self.jobs is not None else usable_cores() if big else 1
        return _run(plan, tx.staging, max(1, min(wanted, len(plan))), progress)


#: a file's share of a key is staged as ``<key>-file<index>``; the committing process names it (:func:`_adopt`)
_FILE = "-file"


def stage_file(
    job: FileJob, staging: Path, progress: Progress | None = None, n_files: int = 1, aggregates: bool = True
) -> FileResult:
    """Convert one input file and stage its lines under ``staging``: the step every engine runs per file.

    The file is hashed on a thread while it converts. With ``aggregates`` the staged files' hourly
    aggregates are built here too (in parallel when this is a worker).
    """
    parser = BILLING_FORMATS.from_str(job.format).obj
    acc, state, rows = _Acc(), dict[str, Any](), 0
    writer = StagedWriter(staging)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="digest") as threads:
        digest = threads.submit(file_digest, job.path)
        try:
            # closed on an error too: its read-ahead thread stops before the store is touched
            with contextlib.closing(convert_file(job.path, parser, job.header, acc, state)) as tables:
                for table in tables:
                    _write(writer, table, parser.name, acc, job.path, f"{_FILE}{job.index}")
                    rows += table.num_rows
                    if progress is not None:
                        progress(job.path, rows, job.index, n_files)
            _flush(writer, acc)
            staged = writer.close()
        except BaseException:
            writer.discard()
            raise
        built = [str(p) for p in stage_aggregates(staging, staged)] if aggregates else None
        version = focus_version(job.header) if parser.name == "focus" else None
        summary = FileSummary(str(job.path), parser.name, job.sniffed, rows, state.get("azure_kind"), version)
        return FileResult(
            job.index, summary, acc, [str(p) for p in staged], writer.rows_written, digest.result(), built
        )


def _run(plan: Sequence[FileJob], staging: Path, workers: int, progress: Progress | None) -> Iterator[FileResult]:
    """Stage every file (in a pool of ``workers`` spawned processes when more than one); results in file order."""
    if workers <= 1:
        for job in plan:
            yield stage_file(job, staging, progress, len(plan))
        return

    # spawned workers that die with this process; their thread pools sized to their share of the cores
    pool = spawn_pool(workers, _start_worker, (os.getpid(), max(1, usable_cores() // workers)))
    try:
        futures = [pool.submit(stage_file, job, staging) for job in plan]
        for job, future in zip(plan, futures, strict=True):
            try:
                result = future.result()
            except BrokenProcessPool:
                raise InputError(
                    f"a worker process died (killed, or out of memory?) while {workers} converted the export's "
                    "files; nothing was written (run it again, or with `jobs` 1)",
                    path=job.path,
                    mentions=("jobs",),
                ) from None
            if progress is not None:
                progress(job.path, result.summary.rows, job.index, len(plan))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # no worker writes into staging after an abort


def _start_worker(parent: int, threads: int) -> None:
    """Worker start: die with the parent; pyarrow's and DuckDB's thread pools sized to this worker's share of
    the cores (``$FINOPS_DUCKDB_THREADS`` still wins), so N workers on N cores do not run N² threads."""
    die_with_parent(parent)
    pa.set_cpu_count(threads)
    os.environ.setdefault(THREADS_ENV, str(threads))
