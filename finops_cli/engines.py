"""The engines a command runs on, chosen at the edge (``--engine``, ``--spark-master``, ``--jobs``): a query engine
for the store's SQL (DuckDB, or Spark) and a stager per ingest. The store and the pipelines never ask which engine
they were given; Spark's modules are imported only when it is chosen.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from finops_cli.errors import InputError
from finops_cli.ingest.billing.executors import BillingStager, LocalStager
from finops_cli.ingest.utilization.pipeline import InProcessStager, UtilizationStager
from finops_cli.store.engine import DuckDBEngine, QueryEngine, in_force, using

#: the engines a command's ``--engine`` accepts
ENGINES = ("local", "spark")


def _check(engine: str) -> None:
    if engine not in ENGINES:
        raise InputError(f"{engine!r}: expected one of {', '.join(ENGINES)}", param="engine")


@contextmanager
def query_engine(engine: str = "local", master: str | None = None) -> Iterator[QueryEngine]:
    """Every store query of the block on ``engine``: ``local`` keeps the engine already in force (the command's)
    or opens DuckDB for the block; ``spark`` finds or starts the Spark session first, so a missing pyspark or
    Java is one line before any work is done."""
    _check(engine)
    current = in_force()
    if engine == "local" and current is not None:
        yield current
        return
    if engine == "spark":
        from finops_cli.spark.sql import SparkEngine

        chosen: QueryEngine = SparkEngine(master)
    else:
        chosen = DuckDBEngine()
    with using(chosen):
        yield chosen


def billing_stager(engine: str = "local", master: str | None = None, jobs: int | None = None) -> BillingStager:
    """How ``ingest billing`` stages each file: here or in ``jobs`` worker processes, or as Spark tasks."""
    _check(engine)
    if engine == "spark":
        if jobs is not None:
            raise InputError(
                f"applies to `engine` local; `engine` {engine} runs one task per file",
                param="jobs",
                mentions=("engine",),
            )
        from finops_cli.spark.billing import SparkStager

        return SparkStager(master)
    return LocalStager(jobs)


def utilization_stager(engine: str = "local", master: str | None = None) -> UtilizationStager:
    """How ``ingest utilization`` reads each source: in this process, or as one Spark task each."""
    _check(engine)
    if engine == "spark":
        from finops_cli.spark.utilization import SparkStager

        return SparkStager(master)
    return InProcessStager()
