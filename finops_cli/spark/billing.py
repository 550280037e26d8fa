"""``ingest billing --engine spark``: the billing pipeline's own per-file step, run as Spark tasks.

Each task runs :func:`~finops_cli.ingest.billing.executors.stage_file` on one input file (the same parsing,
money checks, Parquet writes and aggregates, by DuckDB while the file is fresh) into the transaction's staging
directory, or, for a bucket store on a cluster, into its executor's disk and then the bucket
(:mod:`finops_cli.spark.bucket`), and returns the file's tallies, pickled: no billing line crosses into the JVM.
The driver checks and commits exactly as the local engine does (docs/scale.md).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finops_cli.ingest.billing.executors import FileJob, FileResult, Progress, stage_file
from finops_cli.spark import bucket
from finops_cli.spark.session import get_session, run_tasks, writes_bucket
from finops_cli.store.engine import DuckDBEngine, using


@dataclass(frozen=True)
class SparkStager:
    """The billing pipeline's stager on Spark: one task per file (``master``: see :func:`get_session`)."""

    master: str | None = None

    def stage(self, plan: Sequence[FileJob], tx: Any, progress: Progress | None) -> list[FileResult]:
        """Stage ``plan``'s files under ``tx``'s staging directory (or its bucket); the results in file order."""
        spark = get_session(self.master)
        # largest first, so the last task to start is a short one
        order = sorted(range(len(plan)), key=lambda i: -plan[i].path.stat().st_size)
        jobs = [plan[i] for i in order]
        if writes_bucket(spark, tx):
            done = run_tasks(spark, functools.partial(_stage_to_bucket, tx.store.location, tx.txid), jobs)
            tx.remote.update(bucket.check_uploads(tx.store, tx.txid, [up for _, up in done]))
            results: list[FileResult] = [r for r, _ in done]
        else:
            results = run_tasks(spark, functools.partial(_stage, str(tx.staging)), jobs)
        return sorted(results, key=lambda r: r.index)


def _stage(staging: str, job: FileJob) -> FileResult:
    """On an executor: stage one file and build its files' aggregates."""
    with using(DuckDBEngine()):
        return stage_file(job, Path(staging), aggregates=True)


def _stage_to_bucket(store_uri: str, txid: str, job: FileJob) -> tuple[FileResult, bucket.Uploaded]:
    """On an executor: stage one file on this executor's disk, then upload its files under this attempt's prefix."""
    return bucket.stage_and_upload(
        store_uri, txid, lambda staging: _stage(str(staging), job), lambda r: [*r.staged, *(r.aggregates or [])]
    )
