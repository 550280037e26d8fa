"""Run the store's SQL (:mod:`finops_cli.store.queries`) on a query engine, in bounded memory.

A :class:`QueryEngine` answers a query over explicit Parquet files: :class:`DuckDBEngine` here (the default),
:class:`finops_cli.spark.sql.SparkEngine` on Spark SQL, the same text on both. The caller owns the engine: a
command opens one and puts it in force with :func:`using`, which closes it at the end; with none in force each
query opens a DuckDB connection of its own. docs/schema.md says how memory and threads are bounded.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from finops_cli.errors import InputError
from finops_cli.schema.billing import BILLING_SCHEMA
from finops_cli.schema.utilization import STORE_SCHEMA as UTILIZATION_SCHEMA
from finops_cli.store.layout import DATASETS
from finops_cli.store.queries import (
    AGGREGATES,
    BILLED_BASELINE,
    BILLED_BASELINE_HOURLY,
    BILLING_HOURLY_MATCHABLE,
    Query,
)
from finops_cli.store.schemas import partition_schema

if TYPE_CHECKING:
    from datetime import datetime

    import pandas as pd

    from finops_cli.schema.estate import Fleet
    from finops_cli.store.store import Store

MEMORY_ENV = "FINOPS_DUCKDB_MEMORY"
DEFAULT_MEMORY = "1GB"
THREADS_ENV = "FINOPS_DUCKDB_THREADS"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: the Parquet files a query reads, per dataset it names
Files = Mapping[str, Iterable[str | Path]]
#: a file's schema by path, when the caller has read it already (saves a request per file on a bucket)
Schemas = Callable[[str], pa.Schema] | None
#: the canonical schema of a detail dataset: columns an older file lacks are NULL in every engine's view
CANONICAL = {"billing": BILLING_SCHEMA, "utilization": UTILIZATION_SCHEMA}


class QueryEngine(Protocol):
    """What runs the store's SQL: both engines answer the same query text with the same columns."""

    #: the name ``--engine`` gives it (``local``, ``spark``)
    name: str

    def run_files(
        self, sql: str, files: Files, params: Mapping[str, Any] | None, filesystem: Any = None, schemas: Schemas = None
    ) -> pa.Table:
        """``sql`` (a rendered query) over explicit Parquet files per dataset (see :func:`run_files`)."""

    def run_per_file(self, sql: str, dataset: str, paths: list[Path]) -> list[pa.Table]:
        """``sql`` over each of ``paths`` on its own, in order, each summed in the file's order."""

    def close(self) -> None:
        """Release what the engine holds (a connection, a spill folder)."""


_IN_FORCE: ContextVar[QueryEngine | None] = ContextVar("finops_query_engine", default=None)


@contextmanager
def using(engine: QueryEngine) -> Iterator[QueryEngine]:
    """Run every store query of the block on ``engine`` (the commands' analyses and the ingest aggregates built at
    commit), and close it when the block ends."""
    token = _IN_FORCE.set(engine)
    try:
        yield engine
    finally:
        _IN_FORCE.reset(token)
        engine.close()


def in_force() -> QueryEngine | None:
    """The engine a :func:`using` block put in force here, if any."""
    return _IN_FORCE.get()


def current_engine() -> str:
    """The name of the engine queries run on here (``local`` where none is in force)."""
    engine = _IN_FORCE.get()
    return "local" if engine is None else engine.name


@contextmanager
def _engine() -> Iterator[QueryEngine]:
    """The engine in force, else a DuckDB engine for one query (closed after it)."""
    engine = _IN_FORCE.get()
    if engine is not None:
        yield engine
        return
    transient = DuckDBEngine()
    try:
        yield transient
    finally:
        transient.close()


def quote_identifier(name: str) -> str:
    """``"name"`` for a column name from an allow-list (letters, digits, underscores only)."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a plain column name: {name!r}")
    return f'"{name}"'


def render(query: Query, **slots: str) -> str:
    """The query's SQL with its ``{slot}`` identifiers filled (empty string where a slot is not given)."""
    names = set(re.findall(r"\{(\w+)\}", query.sql))
    unknown = set(slots) - names
    if unknown:
        raise ValueError(f"query {query.name} has no slot(s) {sorted(unknown)}")
    return query.sql.format(**{n: slots.get(n, "") for n in names})


#: ``date_trunc('hour', <column>)`` in the portable SQL text (a plain or double-quoted column name)
_HOUR_TRUNC = re.compile(r"date_trunc\('hour', (\"?[A-Za-z_][A-Za-z0-9_]*\"?)\)")
_HOUR_US = 3_600_000_000


def duckdb_sql(sql: str) -> str:
    """The portable text as DuckDB runs it fastest: ``date_trunc('hour', t)`` goes through ICU's calendar (a fifth
    of the ``billing_hourly`` aggregate's CPU); the hour's first microsecond since the epoch, floored, is the same
    UTC instant (every ``date_trunc('hour', …)`` of the queries is of a UTC column). Spark runs the text as written."""
    floor = rf"make_timestamptz(epoch_us(\1) - ((epoch_us(\1) % {_HOUR_US} + {_HOUR_US}) % {_HOUR_US}))"
    return _HOUR_TRUNC.sub(floor, sql)


def json_path(key: str) -> str:
    """The JSON path of one top-level key (``$."team"``), a parameter of ``json_extract_string(Tags, $param)``:
    any key text (dots, quotes) names exactly that key."""
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def column_list(columns: Iterable[str]) -> str:
    """``, "a", "b"`` for a ``{match_columns}`` slot (already-checked names)."""
    return "".join(f", {quote_identifier(c)}" for c in columns)


#: columns the grouped billing queries always carry (a fleet ``match`` on them needs no extra column)
_GROUPED = frozenset({"provider", "RegionId", "x_InstanceType", "PricingCategory", "BillingCurrency"})


def match_column_names(fleet: Fleet | None, grouped: Iterable[str] = ()) -> list[str]:
    """Billing columns the fleet's ``match`` rules name beyond the ones every grouped query carries (``host``
    matches utilisation, never a billing line)."""
    if fleet is None:
        return []
    names = {c for s in fleet.substrates for c in (s.match or {})}
    return sorted((names & set(BILLING_SCHEMA.names)) - _GROUPED - set(grouped))


def match_columns(fleet: Fleet | None, grouped: Iterable[str] = ()) -> str:
    """The ``{match_columns}`` slot for ``fleet`` in a query that already groups by ``grouped`` too."""
    return column_list(match_column_names(fleet, grouped))


def baseline_groups(store: Store, fleet: Fleet, start: datetime, end: datetime) -> pd.DataFrame | None:
    """Lines charged in ``[start, end)`` (whole hours) summed by what matches them to ``fleet``'s substrates: from
    ``billing_hourly`` when it covers every billing file and holds every column the fleet matches on, else from
    the detail lines; both give the same groups."""
    extra = match_column_names(fleet)
    hourly = store.has_aggregate("billing_hourly") and set(extra) <= BILLING_HOURLY_MATCHABLE
    params = {"first_period": f"{start:%Y-%m}", "start": start, "end": end}
    return run_pandas(
        store, BILLED_BASELINE_HOURLY if hourly else BILLED_BASELINE, params, match_columns=column_list(extra)
    )


def run(
    store: Store, query: Query, params: Mapping[str, Any] | None = None, *, split_by: str | None = None, **slots: str
) -> pa.Table | None:
    """Run ``query`` with ``params`` on ``store``; None when a dataset it reads is empty.

    ``split_by``: a partition column a one-dataset query groups by (``provider``): the query runs over each
    value's files on its own (no group spans two values) and the answers are concatenated, a lower peak.
    """
    groups: dict[str, dict[str, list[str]]] = {}
    schemas: dict[str, pa.Schema] = {}  # the footers the check read: not read again for the view
    for table in query.tables:
        checked = store.checked_schemas(table)
        if not checked:
            return None
        for path, schema in checked.items():
            value = next((p for p in path.parts if p.startswith(f"{split_by}=")), "") if split_by else ""
            located = store.locate(path)
            groups.setdefault(value, {}).setdefault(table, []).append(located)
            schemas[located] = schema
    return pa.concat_tables(
        run_files(query, files, params, filesystem=store.filesystem, schemas=schemas.__getitem__, **slots)
        for _, files in sorted(groups.items())
    )


def run_files(
    query: Query,
    files: Files,
    params: Mapping[str, Any] | None = None,
    *,
    filesystem: Any = None,
    schemas: Schemas = None,
    **slots: str,
) -> pa.Table:
    """Run ``query`` over explicit Parquet files per dataset (a store's, or staged ones) on the engine in force;
    ``filesystem``: the pyarrow file system they are on (None: the local disk)."""
    with _engine() as engine:
        return engine.run_files(render(query, **slots), files, params, filesystem, schemas)


def run_per_file(query: Query, dataset: str, paths: list[Path]) -> list[pa.Table]:
    """``query`` over each of ``paths`` on its own (one ingest aggregate per detail file), in order, on the engine
    in force (Spark answers for all files in one job)."""
    if not paths:
        return []
    with _engine() as engine:
        return engine.run_per_file(render(query), dataset, paths)


def stage_aggregates(staging: Path, staged: list[Path], read_from: Callable[[Path], Path] | None = None) -> list[Path]:
    """Build each staged detail file's aggregates (:data:`~finops_cli.store.queries.AGGREGATES`) beside it under
    ``staging``, on the engine in force; the aggregates' relative paths. ``read_from``: where detail file ``rel``
    is read (default ``staging / rel``). The store's aggregate builder: computed from exactly the staged file and
    committed with it, an aggregate never disagrees with its file."""
    built: list[Path] = []
    for aggregate, (dataset, query) in AGGREGATES.items():
        rels = [rel for rel in staged if rel.parts and rel.parts[0] == dataset]
        tables = run_per_file(query, dataset, [read_from(rel) if read_from else staging / rel for rel in rels])
        for rel, table in zip(rels, tables, strict=True):
            target = Path(aggregate, *rel.parts[1:])
            path = staging / target
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path, compression="zstd")
            built.append(target)
    return built


class DuckDBEngine:
    """DuckDB in this process: one connection, opened at the first query and closed by :meth:`close`.

    Bounded memory (:func:`_config`) spilling to a private folder, UTC hours whatever the machine's zone, no
    Parquet prefetching (it held ~28 MB more at the peak of the per-resource query), no progress bar on stderr.
    Each query runs on a cursor of its own, so its views vanish with it.
    """

    name = "local"

    def __init__(self) -> None:
        self._con: Any = None
        self._tmp: str | None = None
        self._threads = 0

    def _connection(self) -> Any:
        if self._con is not None:
            return self._con
        tmp = tempfile.mkdtemp(prefix="finops-duckdb-")
        try:
            con = duckdb.connect(config=_config(tmp))
        except duckdb.Error as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise InputError(f"${MEMORY_ENV}/${THREADS_ENV}: {str(exc).splitlines()[0]}") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            # extension settings (ICU, parquet): not in the config a connection opens with; GLOBAL reaches cursors
            con.execute("SET GLOBAL TimeZone = 'UTC'")
            con.execute("SET GLOBAL disable_parquet_prefetching = true")
            row = con.execute("SELECT current_setting('threads')").fetchone()
        except BaseException:
            con.close()
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._con, self._tmp, self._threads = con, tmp, int(row[0]) if row else 1
        return con

    def close(self) -> None:
        """Close the connection and remove its spill folder (a later query opens a new one)."""
        con, tmp = self._con, self._tmp
        self._con = self._tmp = None
        try:
            if con is not None:
                con.close()
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def run_files(
        self, sql: str, files: Files, params: Mapping[str, Any] | None, filesystem: Any = None, schemas: Schemas = None
    ) -> pa.Table:
        return self._run(duckdb_sql(sql), files, params, filesystem, schemas)

    def _run(
        self,
        sql: str,
        files: Files,
        params: Mapping[str, Any] | None,
        filesystem: Any = None,
        schemas: Schemas = None,
        threads: int | None = None,
    ) -> pa.Table:
        """``sql`` over views of ``files``; ``threads``: on that many threads (the engine's own after)."""
        used = {k: v for k, v in (params or {}).items() if f"${k}" in sql}
        con = self._connection().cursor()
        try:
            con.execute("SET enable_progress_bar = false")
            if threads is not None:
                con.execute(f"SET threads = {int(threads)}")
            for table, paths in files.items():
                create_view(con, table, [str(p) for p in paths], filesystem, schemas)
            result = con.sql(sql, params=used)
            # DuckDB 2 names it to_arrow_table; 1.x arrow()
            fetch = getattr(result, "to_arrow_table", None) or result.arrow
            return fetch()
        except (duckdb.IOException, OSError) as exc:
            raise InputError(f"unreadable store file ({exc}); delete it and ingest its source again") from None
        finally:
            if threads is not None:
                con.execute(f"SET threads = {self._threads}")
            con.close()

    def run_per_file(self, sql: str, dataset: str, paths: list[Path]) -> list[pa.Table]:
        """Each file's answer on one thread: on more, partial sums add in whichever order threads finish, and a
        re-ingest (or ``--jobs 2`` against ``--jobs 1``) would not write the same aggregate bytes."""
        sql = duckdb_sql(sql)
        return [self._run(sql, {dataset: [p]}, None, threads=1) for p in paths]


@contextmanager
def system_allocator() -> Iterator[None]:
    """Arrow allocates from the C allocator inside the block: its default mimalloc pool keeps what a kernel freed,
    so every filter, sort and take on a query's result added to the resident memory (+40 MB at ``waste``'s peak)."""
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def _config(tmp: str) -> dict[str, Any]:
    """DuckDB settings: bounded memory spilling to ``tmp``, threads capped by ``$FINOPS_DUCKDB_THREADS`` if set."""
    config: dict[str, Any] = {
        "memory_limit": os.environ.get(MEMORY_ENV, DEFAULT_MEMORY),
        "temp_directory": tmp,
        "preserve_insertion_order": False,
    }
    threads = os.environ.get(THREADS_ENV, "").strip()
    if threads:
        if not threads.isdigit() or int(threads) < 1:
            raise InputError(f"${THREADS_ENV}={threads!r}: expected a whole number of threads >= 1")
        config["threads"] = int(threads)
    return config


def create_view(con: Any, table: str, paths: list[str], filesystem: Any = None, schemas: Schemas = None) -> None:
    """View ``table`` over ``paths``: partition columns as strings, files' columns united by name, and
    canonical columns an older file lacks as NULL (so every query sees one schema).

    On a bucket DuckDB scans a pyarrow dataset over the files (its own S3 reader is downloaded on first use,
    which an offline machine cannot do); it pushes column selection and filters into the scan.
    """
    canonical = CANONICAL.get(table)
    if filesystem is None:
        types = ", ".join(f"'{c}': 'VARCHAR'" for c in DATASETS[table])
        listed = ", ".join(_literal(p) for p in paths)
        read = schemas or pq.read_schema
        # one file and no canonical columns to check: nothing to read
        footers = [read(p) for p in paths] if canonical is not None or len(paths) > 1 else []
        union = "union_by_name = true, " if _differ(footers) else ""
        source = f"read_parquet([{listed}], hive_partitioning = true, {union}hive_types = {{{types}}})"
        have = _view_columns(paths, footers)
    else:
        source = f"__{table}_arrow"
        dataset = _arrow_dataset(table, paths, filesystem, schemas)
        con.register(source, dataset)
        have = set(dataset.schema.names)
    extra = ""
    if canonical is not None:
        extra = "".join(
            f", CAST(NULL AS {_duckdb_type(f.type)}) AS {quote_identifier(f.name)}"
            for f in canonical
            if f.name not in have
        )
    con.execute(f"CREATE TEMP VIEW {table} AS SELECT *{extra} FROM {source}")


def _differ(footers: list[pa.Schema]) -> bool:
    """Whether these files' schemas differ (an older file lacks a newer column): only then does the view unite
    them by name, which keeps a reader per file open (~25 MB more over a 50 M-line month's 101 files)."""
    return any(not f.equals(footers[0]) for f in footers[1:])


def _view_columns(paths: list[str], footers: list[pa.Schema]) -> set[str]:
    """The columns ``read_parquet(paths, hive_partitioning = true)`` has: the footers' (united by name) and one per
    ``key=value`` directory of the paths; what ``DESCRIBE`` would answer, from footers the store's check read."""
    names = {name for footer in footers for name in footer.names}
    for path in paths:
        names.update(part.partition("=")[0] for part in Path(path).parent.parts if "=" in part)
    return names


_DUCKDB_TYPES = {
    "string": "VARCHAR",
    "double": "DOUBLE",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "timestamp[us, tz=UTC]": "TIMESTAMPTZ",
}


def _arrow_dataset(table: str, paths: list[str], filesystem: Any, schemas: Schemas = None) -> Any:
    """A pyarrow dataset over ``paths`` with Hive partition columns as strings and the files' schemas
    united by name (what ``union_by_name`` does for the local files)."""
    read = schemas or (lambda p: pq.read_schema(p, filesystem=filesystem))
    return ds.dataset(
        paths,
        filesystem=filesystem,
        format="parquet",
        partitioning=hive_partitioning(table),
        schema=united_schema(table, [read(p) for p in paths]),
    )


def hive_partitioning(table: str) -> Any:
    """Dataset ``table``'s partition columns, read as text from the ``key=value`` directories of each path."""
    return ds.partitioning(partition_schema(table), flavor="hive")


def united_schema(table: str, footers: Iterable[pa.Schema]) -> pa.Schema:
    """The files' columns united by name, then the partition columns as text: one schema over every file."""
    partitions = partition_schema(table)
    body = pa.unify_schemas([pa.schema([f for f in s if f.name not in partitions.names]) for s in footers])
    return pa.unify_schemas([body, partitions])


def _duckdb_type(t: pa.DataType) -> str:
    return _DUCKDB_TYPES[str(t.value_type if pa.types.is_dictionary(t) else t)]


def _literal(text: str) -> str:
    """A SQL string literal (views cannot take parameters)."""
    return "'" + text.replace("'", "''") + "'"


def run_arrow(
    store: Store,
    query: Query,
    params: Mapping[str, Any] | None = None,
    *,
    categories: Iterable[str] = (),
    split_by: str | None = None,
    **slots: str,
) -> pa.Table | None:
    """:func:`run`, with ``categories`` (string columns that repeat a few values over many rows: a resource's
    provider, region, team) dictionary-encoded, so 67,000 resources hold a few dozen strings."""
    table = run(store, query, params, split_by=split_by, **slots)
    if table is None:
        return None
    for name in categories:
        i = table.schema.get_field_index(name)
        if i >= 0 and pa.types.is_string(table.schema.field(i).type):
            table = table.set_column(i, name, table.column(i).dictionary_encode())
    return table


def run_pandas(
    store: Store,
    query: Query,
    params: Mapping[str, Any] | None = None,
    *,
    categories: Iterable[str] = (),
    **slots: str,
) -> pd.DataFrame | None:
    """:func:`run_arrow`, as a DataFrame (the result is one row per group: small)."""
    table = run_arrow(store, query, params, categories=categories, **slots)
    return None if table is None else table.to_pandas()
