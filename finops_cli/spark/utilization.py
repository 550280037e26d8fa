"""``ingest utilization --engine spark``: each source is one Spark task running the pipeline's own
:func:`~finops_cli.ingest.utilization.pipeline.ingest_source` (parse, spill by device, intervals, per-month
files), writing through a :class:`~finops_cli.store.staging.StagedWriter` into the transaction's staging
directory, and building those files' hourly aggregates beside them. A source's files are named by its own
key, so no two tasks write the same file and nothing is merged: the driver adopts the staged files, records
each source, checks that no device's time is counted twice (against the store and between the sources) and
commits, as the local engine does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finops_cli.ingest.utilization.pipeline import SourceDone, SourceOptions, ingest_source
from finops_cli.spark.session import adopt, close_and_aggregate, get_session, run_tasks, task_staging
from finops_cli.store.staging import StagedWriter


@dataclass(frozen=True)
class SparkStager:
    """The utilisation pipeline's stager on Spark: one task per source (``master``: see :func:`get_session`)."""

    master: str | None = None

    def stage(
        self, sources: Sequence[Path], options: SourceOptions, tx: Any, on_rows: Callable[[int], None] | None
    ) -> list[SourceDone]:
        return stage_utilization(sources, options, tx, self.master)


def stage_utilization(
    sources: Sequence[Path], options: SourceOptions, tx: Any, master: str | None = None
) -> list[SourceDone]:
    """Ingest ``sources`` as Spark tasks into ``tx``'s staging directory; adopt their files; their results."""
    spark = get_session(master)
    jobs = [(i, str(src)) for i, src in enumerate(sources)]
    done: list[SourceDone] = run_tasks(spark, functools.partial(_ingest, task_staging(spark, tx), options), jobs)
    for d in done:
        adopt(tx, d.staged, d.rows, d.aggregates)
    return done


def _ingest(staging: str, options: SourceOptions, job: tuple[int, str]) -> SourceDone:
    """Task, on an executor: one source into its own staged files."""
    index, src = job
    writer = StagedWriter(Path(staging))
    try:
        done = ingest_source(writer, index, Path(src), options, Path(staging))
        done.staged, done.aggregates = close_and_aggregate(writer, staging)
    except BaseException:
        writer.discard()
        raise
    done.rows = writer.rows_written
    return done
