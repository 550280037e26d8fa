"""Run the store's SQL (:mod:`finops_cli.store.queries`) on DuckDB, in bounded memory.

Each dataset a query names becomes a view over the store's Parquet files with the Hive partition columns
as strings, so filters on ``billing_period``/``month`` prune whole files before a byte is read, only the
columns a query names are decoded, and aggregation runs in DuckDB on every core. DuckDB keeps to
``memory_limit`` (``$FINOPS_DUCKDB_MEMORY``, default 1 GB) and spills to a private temporary directory
beyond it, so what reaches Python is the aggregated result, whatever the size of the month: with the
interpreter, pandas and the planner that keeps a command well under 2 GB (docs/performance.md). Threads
default to DuckDB's own (one per core); ``$FINOPS_DUCKDB_THREADS`` caps them on a shared machine. DuckDB runs
the portable text with its slow spots replaced by equivalents (:func:`duckdb_sql`: hours cut without ICU).

:func:`using` is the engine seam: inside ``with using("spark"):`` every query (the commands' analyses and
the ingest aggregates built at commit) runs the same SQL text on Spark SQL instead
(:mod:`finops_cli.spark.sql`).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from finops_cli.errors import InputError
from finops_cli.store.queries import Query
from finops_cli.store.store import DATASETS

if TYPE_CHECKING:
    from datetime import datetime

    import pandas as pd

    from finops_cli.schema.estate import Fleet
    from finops_cli.store.store import Store

MEMORY_ENV = "FINOPS_DUCKDB_MEMORY"
DEFAULT_MEMORY = "1GB"
THREADS_ENV = "FINOPS_DUCKDB_THREADS"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: the engine :func:`run_files` runs queries on ("local" = DuckDB in this process, "spark")
_ENGINE: ContextVar[str] = ContextVar("finops_store_engine", default="local")


@contextmanager
def using(engine: str = "local", master: str | None = None) -> Iterator[None]:
    """Run every store query inside the block on ``engine``; for Spark, find or start the session first,
    so a missing pyspark or Java is one line before any work is done."""
    from finops_cli.spark import ENGINES

    if engine not in ENGINES:
        raise InputError(f"--engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if engine == "spark":
        from finops_cli.spark.session import get_session

        get_session(master)
    token = _ENGINE.set(engine)
    try:
        yield
    finally:
        _ENGINE.reset(token)


def current_engine() -> str:
    """The engine queries run on here (see :func:`using`)."""
    return _ENGINE.get()


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
    """The portable text as DuckDB runs it fastest: ``date_trunc('hour', t)`` of a ``TIMESTAMPTZ`` goes through
    ICU's calendar (0.72 CPU-s per 5 M values, a fifth of the ``billing_hourly`` aggregate's CPU), while the
    hour's first microsecond since the epoch, floored (also before 1970), is the same instant, as a
    ``TIMESTAMPTZ`` too, on the UTC session every connection sets (:func:`connect`): 0.03 CPU-s. Every
    ``date_trunc('hour', …)`` of the queries is of a UTC timestamp column (``ChargePeriodStart``,
    ``timestamp``); Spark runs the text as written."""
    floor = rf"make_timestamptz(epoch_us(\1) - ((epoch_us(\1) % {_HOUR_US} + {_HOUR_US}) % {_HOUR_US}))"
    return _HOUR_TRUNC.sub(floor, sql)


def json_path(key: str) -> str:
    """The JSON path of one top-level key (``$."team"``), for ``json_extract_string(Tags, $param)``: any key
    text (dots, quotes) names exactly that key, and travels as a parameter, never spliced into SQL."""
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def column_list(columns: Iterable[str]) -> str:
    """``, "a", "b"`` for a ``{match_columns}`` slot (already-checked names)."""
    return "".join(f", {quote_identifier(c)}" for c in columns)


#: columns the grouped billing queries always carry (a fleet ``match`` on them needs no extra column)
_GROUPED = frozenset({"provider", "RegionId", "x_InstanceType", "PricingCategory", "BillingCurrency"})


def match_column_names(fleet: Fleet | None, grouped: Iterable[str] = ()) -> list[str]:
    """Billing columns the fleet's ``match`` rules name beyond the ones every grouped query carries.

    Names that are not billing columns (``host`` matches utilisation) never match a billing line, so they
    are left out.
    """
    from finops_cli.schema.billing import BILLING_SCHEMA

    if fleet is None:
        return []
    names = {c for s in fleet.substrates for c in (s.match or {})}
    return sorted((names & set(BILLING_SCHEMA.names)) - _GROUPED - set(grouped))


def match_columns(fleet: Fleet | None, grouped: Iterable[str] = ()) -> str:
    """The ``{match_columns}`` slot for ``fleet`` in a query that already groups by ``grouped`` too."""
    return column_list(match_column_names(fleet, grouped))


def baseline_groups(store: Store, fleet: Fleet, start: datetime, end: datetime) -> pd.DataFrame | None:
    """Lines charged in ``[start, end)`` summed by what matches them to ``fleet``'s substrates.

    From the ``billing_hourly`` aggregate when it covers every billing file and holds every column the
    fleet matches on (thousands of rows), else from the detail lines (:data:`BILLED_BASELINE`); both give
    the same groups. ``start``/``end`` fall on whole hours (a planning horizon's do).
    """
    from finops_cli.store.queries import BILLED_BASELINE, BILLED_BASELINE_HOURLY, BILLING_HOURLY_MATCHABLE

    extra = match_column_names(fleet)
    hourly = store.has_aggregate("billing_hourly") and set(extra) <= BILLING_HOURLY_MATCHABLE
    params = {"first_period": f"{start:%Y-%m}", "start": start, "end": end}
    return run_pandas(
        store, BILLED_BASELINE_HOURLY if hourly else BILLED_BASELINE, params, match_columns=column_list(extra)
    )


def run(
    store: Store,
    query: Query,
    params: Mapping[str, Any] | None = None,
    **slots: str,
) -> pa.Table | None:
    """Run ``query`` with ``params`` on ``store``; None when a dataset it reads is empty."""
    files: dict[str, list[str]] = {}
    schemas: dict[str, pa.Schema] = {}  # the footers the check read: not read again for the view
    for table in query.tables:
        checked = store.checked_schemas(table)
        if not checked:
            return None
        files[table] = [store.locate(p) for p in checked]
        schemas.update(zip(files[table], checked.values(), strict=True))
    return run_files(query, files, params, filesystem=store.filesystem, schemas=schemas.__getitem__, **slots)


def _run_split(store: Store, query: Query, params: Mapping[str, Any] | None, by: str, **slots: str) -> pa.Table | None:
    """:func:`run` of a one-dataset ``query`` over each value of partition column ``by`` on its own, concatenated."""
    (dataset,) = query.tables
    checked = store.checked_schemas(dataset)
    if not checked:
        return None
    parts: dict[str, list[str]] = {}
    schemas: dict[str, pa.Schema] = {}
    for path, schema in checked.items():
        value = next((part for part in path.parts if part.startswith(f"{by}=")), "")
        parts.setdefault(value, []).append(store.locate(path))
        schemas[parts[value][-1]] = schema
    return pa.concat_tables(
        run_files(query, {dataset: files}, params, filesystem=store.filesystem, schemas=schemas.__getitem__, **slots)
        for _, files in sorted(parts.items())
    )


def run_files(
    query: Query,
    files: Mapping[str, Iterable[str | Path]],
    params: Mapping[str, Any] | None = None,
    *,
    filesystem: Any = None,
    schemas: Callable[[str], pa.Schema] | None = None,
    **slots: str,
) -> pa.Table:
    """Run ``query`` over explicit Parquet files per dataset (a store's, or a transaction's staged ones).

    ``filesystem``: the pyarrow file system the files are on (a bucket); None reads them from disk.
    ``schemas``: a file's schema by path, when the caller has them (saves a request per file on a bucket).
    """
    if _ENGINE.get() == "spark":
        if filesystem is not None:
            raise InputError("--engine spark reads a store on a file system every executor shares, not a bucket store")
        from finops_cli.spark.sql import run_files as run_on_spark

        return run_on_spark(query, files, params, **slots)
    import duckdb

    sql = duckdb_sql(render(query, **slots))
    used = {k: v for k, v in (params or {}).items() if f"${k}" in sql}
    with connect() as con:
        try:
            for table, paths in files.items():
                create_view(con, table, [str(p) for p in paths], filesystem, schemas)
            result = con.sql(sql, params=used)
            # DuckDB 2 names it to_arrow_table; 1.x arrow()
            fetch = getattr(result, "to_arrow_table", None) or result.arrow
            return fetch()
        except (duckdb.IOException, OSError) as exc:
            raise InputError(f"unreadable store file ({exc}); delete it and ingest its source again") from None


#: The process's DuckDB database: ``key`` (the settings it was opened with), ``db``, ``tmp``, ``pid``, ``threads``
#: (its thread count), ``per_cursor`` (statements each new cursor runs), ``one_thread`` (:func:`_one_thread` depth).
_SHARED: dict[str, Any] = {}
_SHARED_LOCK = threading.Lock()
#: Databases inherited through ``fork``: kept referenced, never closed in the child (their threads are the parent's).
_INHERITED: list[Any] = []


def _database() -> Any:
    """The process's in-memory DuckDB database, opened on first use with :func:`_config`'s settings.

    Opening one costs ~40 ms of CPU (~50 ms wall) and ``finops demo`` ran 18 queries: each query now gets a
    cursor of this one database (~1 ms) instead. Changed ``$FINOPS_DUCKDB_MEMORY``/``$FINOPS_DUCKDB_THREADS``
    open a new one; a forked child opens its own. Call with ``_SHARED_LOCK`` held.
    """
    import duckdb

    key = (os.environ.get(MEMORY_ENV, DEFAULT_MEMORY), os.environ.get(THREADS_ENV, "").strip())
    if _SHARED.get("pid") == os.getpid() and _SHARED.get("key") == key:
        return _SHARED["db"]
    if _SHARED.get("pid") == os.getpid():
        _close_database()
    elif _SHARED:
        _INHERITED.append(_SHARED.pop("db"))
        _SHARED.clear()
    tmp = tempfile.mkdtemp(prefix="finops-duckdb-")
    try:
        db = duckdb.connect(config=_config(tmp))
    except duckdb.Error as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"${MEMORY_ENV}/${THREADS_ENV}: {str(exc).splitlines()[0]}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        threads, per_cursor = _settle(db)
    except BaseException:
        db.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _SHARED.update(key=key, db=db, tmp=tmp, pid=os.getpid(), threads=threads, per_cursor=per_cursor, one_thread=0)
    return db


def _settle(db: Any) -> tuple[int, tuple[str, ...]]:
    """Settle a new database's session defaults once: UTC (``date_trunc('hour', …)`` on UTC hours, whatever the
    machine's zone) and no Parquet prefetching (a scan prefetches the next row groups' column chunks: over a
    month's billing lines that held ~28 MB more at the peak of the per-resource query, docs/performance.md),
    for every cursor. Neither can be in :func:`_config`: both belong to extensions (ICU, parquet) not yet
    loaded when a database opens; ``SET GLOBAL`` after opening reaches every cursor. Setting them on each
    cursor instead cost ~0.7 ms a cursor, 88 cursors in ``finops demo``.

    Returns the database's thread count (for :func:`_one_thread`) and the statements each cursor still needs:
    DuckDB would draw a progress bar on stderr, inside our output, and ``enable_progress_bar`` is a
    connection's own setting (no ``SET GLOBAL``). A new cursor starts with it off (an interactive Python's
    default connection has it on, its cursors off), so the statement runs only where that does not hold.
    """
    con = db.cursor()
    try:
        con.execute("SET GLOBAL TimeZone = 'UTC'")
        con.execute("SET GLOBAL disable_parquet_prefetching = true")
        row = con.execute("SELECT current_setting('threads'), current_setting('enable_progress_bar')").fetchone()
    finally:
        con.close()
    threads, progress_bar = (int(row[0]), bool(row[1])) if row else (1, True)
    return threads, ("SET enable_progress_bar = false",) if progress_bar else ()


def _close_database() -> None:
    """Close this process's database and remove its spill directory (at exit, or when the settings change)."""
    if _SHARED.get("pid") != os.getpid():
        return
    db, tmp = _SHARED.pop("db"), _SHARED.pop("tmp")
    _SHARED.clear()
    try:
        db.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


atexit.register(_close_database)

#: cursors of this process's database open now (:func:`release_memory` closes the database only at 0)
_OPEN = [0]


#: :func:`run_arrow`'s ``release`` closes the database only after a query over at least this much Parquet: below it
#: the query's working memory is a few MB, less than the 25-30 ms that opening the database again costs is worth
#: (``finops demo``'s idle waste, over 1 MB of files, paid it on the report's critical path).
RELEASE_MIN_BYTES = 64 << 20


def release_memory(close: bool = True) -> None:
    """Give the memory a big query worked in back to the system before pandas work starts on its result.

    After a query over a month's lines (50 M lines grouped per resource peak at ~100 MB in DuckDB) DuckDB and
    the C allocator keep the freed memory for reuse: ~90 MB stays resident until the database closes, and
    what Python allocates next comes on top of it, so a command's peak grew with the month. This closes the
    process's database when no cursor is open and ``close`` (the next query opens one: 25-40 ms) and asks glibc
    to return free pages (``malloc_trim``; a no-op where there is none).
    """
    with _SHARED_LOCK:
        if close and _OPEN[0] == 0:
            _close_database()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


@contextmanager
def system_allocator() -> Iterator[None]:
    """Arrow allocates from the C allocator inside the block, not from its default mimalloc pool.

    mimalloc keeps what an Arrow kernel freed for the next allocation, so every filter, sort and take on a
    query's result added to the resident memory: +40 MB at the peak of ``finops waste`` on a 50 M-line
    month's per-resource rows (docs/performance.md). Freed C-allocator memory is reused too, and
    :func:`release_memory`'s ``malloc_trim`` returns it. The previous pool is restored on exit.
    """
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


@contextmanager
def connect() -> Iterator[Any]:
    """A DuckDB connection in bounded memory (spilling to a private directory), on UTC, closed on exit.

    It is a cursor of the process's database (:func:`_database`): its views are temporary, so they vanish
    with it and two cursors never see each other's.
    """
    with _SHARED_LOCK:
        con = _database().cursor()
        per_cursor = _SHARED["per_cursor"]
        _OPEN[0] += 1
    try:
        for statement in per_cursor:  # UTC and no prefetching are the database's already (:func:`_settle`)
            con.execute(statement)
        yield con
    finally:
        con.close()
        with _SHARED_LOCK:
            _OPEN[0] -= 1


def run_per_file(query: Query, dataset: str, paths: list[Path]) -> list[pa.Table]:
    """``query`` over each of ``paths`` on its own (one ingest aggregate per detail file), in order.

    Spark answers for all files in one job (:func:`finops_cli.spark.sql.run_per_file`); DuckDB per file.
    """
    if not paths:
        return []
    if _ENGINE.get() == "spark":
        from finops_cli.spark.sql import run_per_file as per_file_on_spark

        return per_file_on_spark(query, dataset, paths)
    with _one_thread():
        return [run_files(query, {dataset: [p]}) for p in paths]


@contextmanager
def _one_thread() -> Iterator[None]:
    """The process's DuckDB database on one thread meanwhile (the setting is the database's, not a cursor's).

    Why: on two threads DuckDB adds a file's row groups' partial sums in whichever order the threads finish, so
    the same 5 M-line detail file gave three different ``billing_hourly`` files (sums apart by up to 2.3e-13): a
    re-ingest, or ``--jobs 2`` against ``--jobs 1``, would not write the same aggregate bytes. One thread sums in
    the file's order: ≈ +1 s at 5 M lines (2.65–2.8 CPU-s single-threaded against 1.64–1.75 s wall on two).
    """
    with connect() as con:  # open throughout: the database is not released (and reopened) meanwhile
        with _SHARED_LOCK:
            _SHARED["one_thread"] += 1  # blocks running now (nested, other threads): the first sets one thread
            if _SHARED["one_thread"] == 1:
                con.execute("SET threads = 1")
        try:
            yield
        finally:
            with _SHARED_LOCK:
                _SHARED["one_thread"] -= 1
                if _SHARED["one_thread"] == 0:  # the last block out restores what the database was opened with
                    con.execute(f"SET threads = {_SHARED['threads']}")


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


def create_view(
    con: Any, table: str, paths: list[str], filesystem: Any = None, schemas: Callable[[str], pa.Schema] | None = None
) -> None:
    """View ``table`` over ``paths``: partition columns as strings, files' columns united by name, and
    canonical billing columns an older file lacks as NULL (so every query sees one schema).

    On a bucket (``filesystem`` given) DuckDB scans a pyarrow dataset over the files: DuckDB's own S3
    reader (the httpfs extension) is downloaded on first use, which an offline machine cannot do. DuckDB
    pushes its column selection and filters into the pyarrow scan, so partitions are still pruned.
    """
    from finops_cli.ingest.utilization.common import STORE_SCHEMA as UTILIZATION_SCHEMA
    from finops_cli.schema.billing import BILLING_SCHEMA

    canonical = {"billing": BILLING_SCHEMA, "utilization": UTILIZATION_SCHEMA}.get(table)
    if filesystem is None:
        types = ", ".join(f"'{c}': 'VARCHAR'" for c in DATASETS[table])
        listed = ", ".join(_literal(p) for p in paths)
        read = schemas or _read_schema
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


def _read_schema(path: str) -> pa.Schema:
    import pyarrow.parquet as pq

    return pq.read_schema(path)


def _differ(footers: list[pa.Schema]) -> bool:
    """Whether these files' schemas differ (an older file lacks a newer column).

    Only then does the view unite them by name: ``union_by_name`` keeps a reader per file open while the query
    binds and runs, ~25 MB more at the peak of a query over a 50 M-line month's 101 files (docs/performance.md).
    Same-schema files (everything one version of ingest wrote) are read by position, as DuckDB does by default.
    """
    return any(not f.equals(footers[0]) for f in footers[1:])


def _view_columns(paths: list[str], footers: list[pa.Schema]) -> set[str]:
    """The columns ``read_parquet(paths, hive_partitioning = true)`` has, from the files' footers: theirs (united
    by name) and a Hive partition column per ``key=value`` directory of the paths (DuckDB takes every one, the
    file name aside). What ``DESCRIBE`` of the view's source answers (1.3 ms a view, 28 views in ``finops
    demo``) from footers the store's check has read already."""
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


def _arrow_dataset(
    table: str, paths: list[str], filesystem: Any, schemas: Callable[[str], pa.Schema] | None = None
) -> Any:
    """A pyarrow dataset over ``paths`` with Hive partition columns as strings and the files' schemas
    united by name (what ``union_by_name`` does for the local files)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    partitions = pa.schema([(c, pa.string()) for c in DATASETS[table]])
    read = schemas or (lambda p: pq.read_schema(p, filesystem=filesystem))
    body = pa.unify_schemas([pa.schema([f for f in read(p) if f.name not in partitions.names]) for p in paths])
    schema = pa.unify_schemas([body, partitions])
    return ds.dataset(
        paths,
        filesystem=filesystem,
        format="parquet",
        partitioning=ds.partitioning(partitions, flavor="hive"),
        schema=schema,
    )


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
    release: bool = False,
    split_by: str | None = None,
    **slots: str,
) -> pa.Table | None:
    """:func:`run`, with ``categories`` dictionary-encoded and the engine's memory released.

    ``categories``: string columns that repeat a few values over many rows (a resource's provider, region,
    team) become dictionaries (pandas categoricals), so 67,000 resources hold a few dozen strings, not
    67,000 of each. ``release``: :func:`release_memory` once the result is fetched (for a query over a
    month's lines, whose working memory would otherwise sit under the work on its result).
    ``split_by``: a partition column the query groups by (``provider``): the query runs over each value's
    files on its own and the results are concatenated, the same groups (none spans two values), each run
    over a fraction of the files and groups (a 50 M-line month's per-resource query: 15 MB lower peak).
    """
    if split_by is None:
        table = run(store, query, params, **slots)
    else:
        table = _run_split(store, query, params, split_by, **slots)
    if release:
        release_memory(close=_input_bytes(store, query) >= RELEASE_MIN_BYTES)
    if table is None:
        return None
    for name in categories:
        i = table.schema.get_field_index(name)
        if i >= 0 and pa.types.is_string(table.schema.field(i).type):
            table = table.set_column(i, name, table.column(i).dictionary_encode())
    return table


def _input_bytes(store: Store, query: Query) -> float:
    """The size of the Parquet files ``query`` reads (infinite on a bucket: not asked file by file)."""
    if store.filesystem is not None:
        return float("inf")
    total = 0
    for dataset in query.tables:
        for path in store.files(dataset):
            with suppress(OSError):  # gone since the query: it counted for nothing
                total += os.stat(store.locate(path)).st_size
    return total


def run_pandas(
    store: Store,
    query: Query,
    params: Mapping[str, Any] | None = None,
    *,
    categories: Iterable[str] = (),
    release: bool = False,
    **slots: str,
) -> pd.DataFrame | None:
    """:func:`run_arrow`, as a DataFrame (the result is one row per group: small)."""
    table = run_arrow(store, query, params, categories=categories, release=release, **slots)
    return None if table is None else table.to_pandas()
