"""The store's SQL on Spark SQL: sqlglot parses the DuckDB text, binds its ``$name`` parameters as typed literals
in the syntax tree (never by pasting text) and writes Spark SQL, over views of the same Parquet files and schema.

A directory store's views are Spark's own Parquet reader over the files' paths (every executor sees the same file
system). A bucket store's views are Spark tasks that read the objects the committed log names with ``pyarrow.fs``,
each with its executor's own credentials and endpoint: the driver ships the object keys and the schema it read
from their footers, never its file system (which holds its credentials), and no prefix is listed, so a staged,
uncommitted object is never read.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from finops_cli.errors import InputError
from finops_cli.ingest.readers.values import map_unique
from finops_cli.spark.session import get_session
from finops_cli.store.engine import CANONICAL, Files, Schemas, hive_partitioning, united_schema
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
            value = params[name]
            if isinstance(node.parent, exp.JSONExtract | exp.JSONExtractScalar) and isinstance(value, str):
                value = _spark_json_path(value)
            return _literal(value)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "json_valid" and len(node.expressions) == 1:
            # Spark has no JSON_VALID: text that is not JSON has no root
            root = exp.Anonymous(this="GET_JSON_OBJECT", expressions=[node.expressions[0], exp.Literal.string("$")])
            return exp.Paren(this=exp.not_(root.is_(exp.null())))
        return node

    tree = sqlglot.parse_one(sql, read="duckdb").transform(bind)
    if missing:
        raise ValueError(f"no value for parameter(s) {sorted(set(missing))}")
    return tree.sql(dialect="spark")


#: one top-level key as :func:`~finops_cli.store.engine.json_path` writes it (``$."team"``)
_QUOTED_KEY = re.compile(r'\$\."((?:[^"\\]|\\.)*)"')


def _spark_json_path(path: str) -> str:
    """A JSON path as Spark's ``GET_JSON_OBJECT`` reads it: a quoted key ``$."a.b"`` becomes ``$['a.b']`` (Spark
    answers NULL for the quoted form); a key Spark's brackets cannot hold is one line."""
    m = _QUOTED_KEY.fullmatch(path)
    if m is None:
        return path
    key = re.sub(r"\\(.)", r"\1", m.group(1))
    if "'" in key or "]" in key:
        raise InputError(
            f"tag key {key!r} holds ' or ], which Spark SQL cannot read; the local engine can", param="engine"
        )
    return f"$['{key}']"


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
        spark = get_session()
        text = to_spark_sql(sql, params)
        for table, paths in files.items():
            if filesystem is None:
                _create_view(spark, table, [Path(p) for p in paths])
            else:
                _create_bucket_view(spark, table, [str(p) for p in paths], filesystem, schemas, _columns(text))
        return _to_arrow(spark.sql(text))

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


def _columns(sql: str) -> set[str] | None:
    """The column names (lower case) Spark SQL ``sql`` mentions, None if it selects ``*``: a bucket view reads only
    those (a superset is harmless: a name that is an alias elsewhere reads one column more)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="spark")
    if any(not isinstance(star.parent, exp.Count) for star in tree.find_all(exp.Star)):
        return None
    return {c.name.lower() for c in tree.find_all(exp.Column)}


def _create_bucket_view(
    spark: Any, table: str, paths: list[str], filesystem: Any, schemas: Schemas, columns: set[str] | None
) -> None:
    """Temporary view ``table`` over the bucket objects ``paths`` (the committed files, ``bucket/key``): one task per
    object reads it with ``pyarrow.fs`` on its executor, in the schema the DuckDB view has (files' columns united by
    name, partition columns as text, canonical columns an older file lacks as NULL), only the ``columns`` it needs."""
    from pyspark.sql.pandas.types import from_arrow_schema

    read = schemas or (lambda p: pq.read_schema(p, filesystem=filesystem))
    schema = united_schema(table, [read(p) for p in paths])
    schema = pa.unify_schemas([schema, pa.schema([f for f in CANONICAL.get(table, []) if f.name not in schema.names])])
    keep = [f for f in schema if columns is None or f.name.lower() in columns] or [schema.field(schema.names[-1])]
    wanted = pa.schema([(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type) for f in keep])
    scheme = "gs" if filesystem.type_name == "gcs" else filesystem.type_name
    bucket = f"{scheme}://{paths[0].partition('/')[0]}"  # no credentials: each executor has its own
    read_task = functools.partial(_read_objects, bucket, table, schema, wanted, paths)
    n = len(paths)
    spark.range(0, n, 1, n).mapInArrow(read_task, from_arrow_schema(wanted)).createOrReplaceTempView(table)


def _read_objects(
    bucket: str, table: str, schema: pa.Schema, wanted: pa.Schema, paths: list[str], ids: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """On an executor: the objects this partition names (one, by construction), in batches of ``wanted``'s columns;
    the bucket opened with this executor's credentials and endpoint."""
    import pyarrow.dataset as ds

    from finops_cli.uri import open_uri

    fs = open_uri(bucket, must_exist=False).fs
    for batch in ids:
        for i in batch.column(0).to_pylist():
            try:
                data = ds.dataset(
                    [paths[i]], filesystem=fs, format="parquet", partitioning=hive_partitioning(table), schema=schema
                )
                for part in data.to_batches(columns=wanted.names):
                    yield part.cast(wanted)
            except (pa.ArrowException, OSError) as exc:
                raise InputError(
                    f"unreadable store file {paths[i]} ({exc}); delete it and ingest its source again"
                ) from None


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
