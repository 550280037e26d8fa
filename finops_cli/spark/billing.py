"""``ingest billing --engine spark``: the billing pipeline's own per-file step, run as Spark tasks.

One job over the input files (:func:`~finops_cli.spark.session.run_tasks`: ``mapInArrow``, one task per
file): each task runs :func:`~finops_cli.ingest.billing.executors.stage_file` on its file (the same reader,
format parser, FOCUS defaults, pricebook lookups, money checks, Parquet writes and hourly aggregates as the
local engine and its worker processes) into the transaction's staging directory, and returns the file's
tallies (money in and BilledCost written per currency, rows, GPU-hours) and the paths it staged, pickled.
No billing line crosses into the JVM.

The driver collects those results (one small row per file), names the staged parts, checks conservation and
currencies exactly as the local engine does, and commits: same store files, same rows, same manifest, the
same promises. The staging directory must be one every executor can write (:func:`~finops_cli.spark.session.
task_staging`: local mode, also for a bucket store; a shared file system on a cluster).

The aggregates are built in the task, by DuckDB from the same SQL, while the file is fresh: built instead by
one Spark SQL job at commit, they took 66 s of a 164 s ingest of 10 M lines (the JVM reading every new line
back from Parquet; docs/scale.md).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finops_cli.ingest.billing.executors import FileJob, FileResult, Progress, stage_file
from finops_cli.spark.session import get_session, run_tasks, task_staging
from finops_cli.store.engine import DuckDBEngine, using


@dataclass(frozen=True)
class SparkStager:
    """The billing pipeline's stager on Spark: one task per file (``master``: see :func:`get_session`)."""

    master: str | None = None

    def stage(self, plan: Sequence[FileJob], tx: Any, progress: Progress | None) -> list[FileResult]:
        return stage_billing(plan, tx, self.master)


def stage_billing(plan: Sequence[FileJob], tx: Any, master: str | None = None) -> list[FileResult]:
    """Stage ``plan``'s files on Spark under ``tx``'s staging directory, one task per file; results in file order."""
    spark = get_session(master)
    staging = task_staging(spark, tx)
    # largest first, so the last task to start is a short one; results come back in plan order
    order = sorted(range(len(plan)), key=lambda i: -plan[i].path.stat().st_size)
    results: list[FileResult] = run_tasks(spark, functools.partial(_stage, staging), [plan[i] for i in order])
    return sorted(results, key=lambda r: r.index)


def _stage(staging: str, job: FileJob) -> FileResult:
    """On an executor: stage one file and build its files' aggregates (DuckDB, the same SQL as at commit)."""
    with using(DuckDBEngine()):
        return stage_file(job, Path(staging), aggregates=True)
