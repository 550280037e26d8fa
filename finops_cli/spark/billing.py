"""``ingest billing --engine spark``: the billing pipeline's own per-file step, run as Spark tasks.

One ``DataFrame.mapInArrow`` over the input files: each task runs
:func:`~finops_cli.ingest.billing.pipeline.stage_file` on its file (the same reader, format parser, FOCUS
defaults, pricebook lookups, money checks and Parquet writes as the local engine and its worker processes)
into the transaction's staging directory, and returns the file's tallies (money in and BilledCost written
per currency, rows, GPU-hours) and the paths it staged, pickled in one row.

The driver collects those rows (one small row per file), names the staged parts, checks conservation and
currencies exactly as the local engine does, and commits: same store files, same rows, same manifest, the
same promises. The staging directory must be one every executor can write (local mode; a shared file
system).
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa

from finops_cli.ingest.billing.pipeline import FileJob, FileResult, stage_file
from finops_cli.spark.session import get_session, task_error

#: what a task returns: a pickled :class:`FileResult` (trusted: our own tasks), one row per file
RESULT_SCHEMA = pa.schema([pa.field("payload", pa.binary())])


def stage_billing(plan: Sequence[FileJob], staging: Path, master: str | None = None) -> list[FileResult]:
    """Stage ``plan``'s files on Spark under ``staging``, one task per file; their results in file order."""
    from pyspark.sql.pandas.types import from_arrow_schema

    spark = get_session(master)
    indices = spark.createDataFrame(
        spark.sparkContext.parallelize([(job.index,) for job in plan], len(plan)), "file_index int"
    )
    task = functools.partial(_stage_task, list(plan), str(staging))
    try:
        rows = indices.mapInArrow(task, from_arrow_schema(RESULT_SCHEMA)).collect()
    except Exception as exc:
        err = task_error(exc)
        if err is None:
            raise
        raise err from None
    return sorted((pickle.loads(row["payload"]) for row in rows), key=lambda r: r.index)


def _stage_task(plan: list[FileJob], staging: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """On an executor: stage each file this task was given; one row of its pickled result per file."""
    for batch in batches:
        for index in batch.column("file_index").to_pylist():
            result = stage_file(plan[index], Path(staging), aggregates=False)  # the driver's Spark SQL builds them
            yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(result)], pa.binary())], schema=RESULT_SCHEMA)
