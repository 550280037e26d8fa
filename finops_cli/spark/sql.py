"""The store's SQL on Spark SQL: sqlglot parses the DuckDB text, binds its ``$name`` parameters as typed literals
in the syntax tree (never by pasting text) and writes Spark SQL, over views of the same Parquet files and schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from finops_cli.errors import InputError
from finops_cli.ingest.readers.values import map_unique
from finops_cli.spark.session import get_session
from finops_cli.store.engine import CANONICAL, Files, Schemas
from finops_cli.store.layout import DATASETS

if TYPE_CHECKING:
    from sqlglot import exp


def to_spark_sql(sql: str, params: Mapping[str, Any] | None = None) -> str:
    """``sql`` (DuckDB dialect, ``$name`` parameters) as Spark SQL with ``params`` bound as literals."""
    import sqlglot
    from sqlglot import exp

    params = dict(params or {})
    missing: list[str] = []

    def bind(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Parameter | exp.Placeholder):
            name = node.name
            if name not in params:
                missing.append(name)
                return node
            return _literal(params[name])
        return node

    tree = sqlglot.parse_one(sql, read="duckdb").transform(bind)
    if missing:
        raise ValueError(f"no value for parameter(s) {sorted(set(missing))}")
    return tree.sql(dialect="spark")


def _literal(value: Any) -> exp.Expression:
    """A typed SQL literal for one parameter value (text is a string literal, so it cannot become SQL)."""
    from sqlglot import exp

    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(repr(value))
    if isinstance(value, datetime):  # pandas Timestamps too; the session's zone is UTC
        utc = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return exp.cast(exp.Literal.string(utc.isoformat(sep=" ")), exp.DataType.build("timestamp"))
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.build("date"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    raise TypeError(f"cannot bind a {type(value).__name__} as a SQL parameter")


class SparkEngine:
    """The store's query engine on Spark SQL (``--engine spark``): the session is found or started at once
    (``master``: see :func:`~finops_cli.spark.session.get_session`), so a missing pyspark or Java is one line
    before any work is done. Closing leaves the session running (the command's process ends it)."""

    name = "spark"

    def __init__(self, master: str | None = None) -> None:
        get_session(master)

    def run_files(
        self, sql: str, files: Files, params: Mapping[str, Any] | None, filesystem: Any = None, schemas: Schemas = None
    ) -> pa.Table:
        if filesystem is not None:
            raise InputError(
                "spark reads a store on a file system every executor shares, not a bucket store", param="engine"
            )
        spark = get_session()
        for table, paths in files.items():
            _create_view(spark, table, [Path(p) for p in paths])
        return _to_arrow(spark.sql(to_spark_sql(sql, params)))

    def run_per_file(self, sql: str, dataset: str, paths: list[Path]) -> list[pa.Table]:
        """In one Spark job (a job per file costs seconds): the query's syntax tree also selects and groups by each
        row's file, and the answer is split back by file."""
        import pyarrow.compute as pc
        import sqlglot

        spark = get_session()
        _create_view(spark, dataset, paths, file_column=True)
        tree = sqlglot.parse_one(to_spark_sql(sql), read="spark")
        if not isinstance(tree, sqlglot.exp.Select) or tree.args.get("group") is None:
            raise ValueError("the query does not group: it cannot answer per file")
        tree = tree.select(_FILE, copy=False).group_by(_FILE, copy=False)
        result = _to_arrow(spark.sql(tree.sql(dialect="spark")))
        wanted = {p.resolve(): i for i, p in enumerate(paths)}
        named = pc.unique(result[_FILE]).to_pylist()
        codes = {n: wanted[Path(unquote(urlparse(n).path)).resolve()] for n in named}
        index = map_unique(result[_FILE], codes.__getitem__, pa.int64())
        body = result.drop_columns([_FILE])
        return [body.filter(pc.equal(index, i)) for i in range(len(paths))]

    def close(self) -> None:
        pass


#: the column that names each row's file when one job answers for many files
_FILE = "_finops_file"


def _create_view(spark: Any, table: str, paths: list[Path], file_column: bool = False) -> None:
    """Temporary view ``table`` over ``paths``: partition columns from the directory names (as text), files'
    columns merged by name, canonical columns an older file lacks as NULL (as the DuckDB views do)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type

    base = paths[0].parents[len(DATASETS[table])]  # <dataset>/<col>=<value>/…/<key>.parquet
    df = spark.read.option("basePath", str(base)).option("mergeSchema", "true").parquet(*map(str, paths))
    for f in CANONICAL.get(table, []):
        if f.name not in df.columns:
            t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
            df = df.withColumn(f.name, F.lit(None).cast(from_arrow_type(t)))
    if file_column:
        df = df.withColumn(_FILE, F.col("_metadata.file_path"))
    df.createOrReplaceTempView(table)


def _to_arrow(df: Any) -> pa.Table:
    """A (small, aggregated) result as Arrow; timestamps come back in UTC, as DuckDB's do."""
    if hasattr(df, "toArrow"):  # PySpark 4
        table = df.toArrow()
    else:
        from pyspark.sql.pandas.types import to_arrow_schema

        batches = df._collect_as_arrow()  # PySpark 3.5
        table = pa.Table.from_batches(batches, schema=to_arrow_schema(df.schema))
    # Spark marks some results NOT NULL (count(*)); DuckDB does not: one schema whoever wrote a file
    return table.cast(pa.schema([f.with_nullable(True) for f in table.schema]))
