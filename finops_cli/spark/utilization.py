"""``ingest utilization --engine spark``: each source is one Spark task running the pipeline's own
:func:`~finops_cli.ingest.utilization.pipeline.ingest_source` into the transaction's staging directory, with its
files' aggregates built beside them. A source's files are named by its own key, so no two tasks write the same
file; the driver adopts them, records each source, checks overlaps and commits, as the local engine does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finops_cli.errors import InputError
from finops_cli.ingest.utilization.pipeline import SourceDone, SourceOptions, ingest_source
from finops_cli.spark import bucket
from finops_cli.spark.session import get_session, run_tasks, writes_bucket
from finops_cli.store.engine import DuckDBEngine, stage_aggregates, using
from finops_cli.store.staging import StagedWriter


@dataclass(frozen=True)
class SparkStager:
    """The utilisation pipeline's stager on Spark: one task per source (``master``: see :func:`get_session`)."""

    master: str | None = None

    def stage(
        self, sources: Sequence[Path], options: SourceOptions, tx: Any, on_rows: Callable[[int], None] | None
    ) -> list[SourceDone]:
        """Ingest ``sources`` into ``tx``'s staging directory and adopt their files; their results."""
        spark = get_session(self.master)
        jobs = [(i, str(src)) for i, src in enumerate(sources)]
        if writes_bucket(spark, tx):  # executors upload into the bucket themselves (finops_cli.spark.bucket)
            pairs = run_tasks(spark, functools.partial(_ingest_to_bucket, tx.store.location, tx.txid, options), jobs)
            tx.remote.update(bucket.check_uploads(tx.store, tx.txid, [up for _, up in pairs]))
            done: list[SourceDone] = [d for d, _ in pairs]
        else:
            done = run_tasks(spark, functools.partial(_ingest, str(tx.staging), options), jobs)
        for d in done:
            missing = [
                r for r in [*d.staged, *d.aggregates] if Path(r) not in tx.remote and not (tx.staging / r).is_file()
            ]
            if missing:
                raise InputError(
                    f"Spark tasks wrote {missing[0]} where this driver cannot see it; the store must be on storage "
                    "every executor shares (docs/scale.md)",
                    path=tx.staging,
                )
            tx.adopt([Path(r) for r in d.staged], d.rows, [Path(a) for a in d.aggregates])
        return done


def _ingest(staging: str, options: SourceOptions, job: tuple[int, str]) -> SourceDone:
    """Task, on an executor: one source into its own staged files, and their aggregates (DuckDB, in the task)."""
    index, src = job
    writer = StagedWriter(Path(staging))
    try:
        done = ingest_source(writer, index, Path(src), options, Path(staging))
        written = writer.close()
        with using(DuckDBEngine()):
            built = stage_aggregates(Path(staging), written)
        done.staged, done.aggregates = [str(p) for p in written], [str(p) for p in built]
    except BaseException:
        writer.discard()
        raise
    done.rows = writer.rows_written
    return done


def _ingest_to_bucket(
    store_uri: str, txid: str, options: SourceOptions, job: tuple[int, str]
) -> tuple[SourceDone, bucket.Uploaded]:
    """Task: one source staged on this executor's disk, then uploaded under this attempt's prefix."""
    return bucket.stage_and_upload(
        store_uri, txid, lambda staging: _ingest(str(staging), options, job), lambda d: [*d.staged, *d.aggregates]
    )
