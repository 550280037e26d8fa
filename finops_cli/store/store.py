"""Hive-partitioned Parquet datasets under one root, with atomic, idempotent writes.

Layout (``root`` defaults to ``.finops/``)::

    root/
      manifest.json                      what was ingested, from where, when
      billing/provider=aws/billing_period=2026-11/<key>.parquet
      utilization/month=2026-11/<key>.parquet
      spot_prices/provider=aws/month=2026-11/<key>.parquet
      .staging/<txid>/...                a transaction's files before commit (ignored by readers)
      .journal-<txid>.json               a committed transaction being applied

Why it is safe: a transaction writes every file under ``.staging/<txid>`` first. Commit writes a
journal (one atomic rename) that lists the moves and deletions, applies them, then removes the
journal. A crash before the journal exists leaves only staging debris, removed on the next open; a
crash after it is rolled forward on the next open. Readers (pyarrow, DuckDB, Spark) skip names that
start with ``.`` or ``_``, so they never see staged files.

Idempotency: each file is named by a caller-chosen *key* (e.g. a hash of the source format, billing
account and period). Writing the same key again replaces the file; ``replace_partition`` drops every
other file of a partition (a corrected re-export of a billing period replaces that period).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from finops_cli.atomic import note_input, write_text
from finops_cli.errors import InputError
from finops_cli.store.layout import (
    DATASETS,
    MAX_DOCUMENT_BYTES,
    check_manifest,
    new_txid,
    partition_dir,
    read_document,
)
from finops_cli.store.layout import safe_value as _safe_value

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; running one writer at a time is then the user's job
    fcntl = None  # type: ignore[assignment]

DEFAULT_STORE_DIR = ".finops"
STORE_ENV = "FINOPS_STORE"
_MANIFEST = "manifest.json"
_STAGING = ".staging"
_LOCK = ".lock"


def resolve_store_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--store`` wins, then ``$FINOPS_STORE``, then ``.finops/`` in the working directory.

    A bucket URI comes back as a :class:`Path` too (``s3:/bucket/prefix``); :func:`open_store` tells it apart.
    """
    if explicit:
        return Path(explicit)
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env)
    return Path.cwd() / DEFAULT_STORE_DIR


def open_store(root: str | os.PathLike[str] | None = None) -> Store:
    """The store at ``root`` (as :func:`resolve_store_root` resolves it): a directory, or an ``s3://``/``gs://``
    prefix (:class:`~finops_cli.store.remote.ObjectStore`)."""
    from finops_cli.uri import as_uri

    uri = as_uri(root) if root else as_uri(os.environ.get(STORE_ENV) or None)
    if uri is not None:
        from finops_cli.store.remote import ObjectStore

        return ObjectStore.open(uri)
    return Store(resolve_store_root(root))


def store_exists(root: str | os.PathLike[str] | None = None) -> bool:
    """Whether the store ``root`` names exists (a bucket URI is taken to: opening it names any problem)."""
    from finops_cli.uri import is_uri

    resolved = resolve_store_root(root)
    return is_uri(resolved) or resolved.exists()


def _partition_dir(dataset: str, partition: Mapping[str, str]) -> Path:
    return Path(partition_dir(dataset, partition))


@dataclass
class Store:
    """A store root. Opening it finishes or discards any interrupted transaction."""

    root: Path
    #: the pyarrow file system the data files live on (None: the local disk, read by path)
    filesystem: ClassVar[Any] = None

    @property
    def location(self) -> str:
        """The store as the user named it (a directory, or an ``s3://`` / ``gs://`` URI), for messages."""
        return str(self.root)

    def locate(self, path: Path) -> str:
        """Where the data file listed as ``path`` (by :meth:`files`) is read from, on :attr:`filesystem`."""
        return str(path)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        note_input(self.root, tree=True)  # no --out may land inside the store
        for ancestor in (self.root, *self.root.parents):
            if ancestor.exists():
                if not ancestor.is_dir():
                    where = "is a file" if ancestor == self.root else f"{ancestor} is a file"
                    raise InputError(f"{where}; --store expects a directory", path=self.root)
                break

    # ----------------------------------------------------------------- reading
    def dataset_dir(self, name: str) -> Path:
        if name not in DATASETS:
            raise ValueError(f"unknown dataset {name!r}; known: {sorted(DATASETS)}")
        return self.root / name

    def has(self, name: str) -> bool:
        d = self.dataset_dir(name)
        return d.is_dir() and any(d.rglob("*.parquet"))

    def dataset(self, name: str, schema: pa.Schema | None = None) -> ds.Dataset | None:
        """A pyarrow dataset over ``name`` (partition columns as strings), or None if empty."""
        if not self.checked_files(name):
            return None
        part = ds.partitioning(pa.schema([(c, pa.string()) for c in DATASETS[name]]), flavor="hive")
        return ds.dataset(self.dataset_dir(name), format="parquet", partitioning=part, schema=schema)

    def read(
        self,
        name: str,
        columns: list[str] | None = None,
        filter: ds.Expression | None = None,
        schema: pa.Schema | None = None,
    ) -> pa.Table | None:
        d = self.dataset(name, schema=schema)
        if d is None:
            return None
        return d.to_table(columns=columns, filter=filter)

    def checked_files(self, name: str) -> list[Path]:
        """:meth:`files`, each footer read first: a damaged file is named here, not as a traceback mid-scan."""
        return list(self.checked_schemas(name))

    def checked_schemas(self, name: str) -> dict[Path, pa.Schema]:
        """:meth:`checked_files` with the schema each footer holds (a query's view reads its columns from them)."""
        self._check_no_interrupted_commit()
        schemas = {}
        for path in self.files(name):
            try:
                schemas[path] = self.file_schema(self.locate(path))
            except (pa.ArrowException, OSError) as exc:
                raise InputError(
                    f"damaged store file ({exc}); delete it and ingest its source again", path=path
                ) from None
            problem = schema_problem(name, schemas[path])
            if problem:
                raise InputError(f"{problem}; remove its source and ingest it again", path=path)
        return schemas

    def file_schema(self, located: str) -> pa.Schema:
        """The Arrow schema in the footer of the data file at ``located`` (:meth:`locate`)."""
        return pq.read_metadata(located, filesystem=self.filesystem).schema.to_arrow_schema()

    def files(self, name: str) -> list[Path]:
        """The dataset's data files. A symlink anywhere in it is refused by name: followed, it could read data
        from outside the store; skipped, it would drop money silently (readers and ``store remove`` alike)."""
        d = self.dataset_dir(name)
        if d.is_symlink():
            raise InputError("is a symlink; a store's datasets are real directories (nothing was read)", path=d)
        found = []
        for top, dirs, names in os.walk(d):
            for n in [*dirs, *names]:
                if os.path.islink(os.path.join(top, n)):
                    raise InputError(
                        "is a symlink; a store's partitions and files are real (nothing was read or changed)",
                        path=Path(top, n),
                    )
            found += [Path(top, n) for n in names if n.endswith(".parquet") and not n.startswith((".", "_"))]
        return sorted(found)

    def source_files(self, name: str, key: str) -> list[Path]:
        """Every file of dataset ``name`` written under idempotency key ``key`` (one per partition and part)."""
        return [p for p in self.files(name) if file_source_key(p.stem) == key]

    def partition_values(self, name: str, key: str) -> list[str]:
        """Sorted distinct values of partition column ``key`` (e.g. the months in ``utilization``), from paths."""
        d = self.dataset_dir(name)
        values = set()
        for path in self.files(name):
            for part in path.relative_to(d).parts[:-1]:
                k, _, v = part.partition("=")
                if k == key:
                    values.add(v)
        return sorted(values)

    def file_keys(self, dataset: str, partition: Mapping[str, str]) -> list[str]:
        """Keys (file names without ``.parquet``) of one partition's files."""
        pdir = self.root / _partition_dir(dataset, partition)
        if not pdir.is_dir():
            return []
        return sorted(p.stem for p in pdir.glob("*.parquet") if not p.name.startswith((".", "_")))

    def partition_files(self, partition_dir: Path) -> list[Path]:
        """Every data file of one partition directory (relative to the root), as a commit replaces them."""
        pdir = self.root / partition_dir
        return [p.relative_to(self.root) for p in pdir.glob("*.parquet")] if pdir.is_dir() else []

    def has_file(self, rel: Path) -> bool:
        """Whether the data file ``rel`` (relative to the root) is in the store."""
        return (self.root / rel).exists()

    def has_aggregate(self, name: str, columns: Iterable[str] = ()) -> bool:
        """Whether every file of the detail dataset has aggregate ``name`` (stores written before an aggregate
        existed lack it) and every file of that aggregate has ``columns`` (one written before a column was
        added lacks it). A detail dataset's name asks for all of its aggregates."""
        from finops_cli.store.queries import AGGREGATES, aggregates_of

        names = [name] if name in AGGREGATES else aggregates_of(name)
        return bool(names) and all(self._has_one_aggregate(a, columns) for a in names)

    def _has_one_aggregate(self, aggregate: str, columns: Iterable[str]) -> bool:
        from finops_cli.store.queries import AGGREGATES

        detail = AGGREGATES[aggregate][0]
        have = {p.relative_to(self.dataset_dir(detail)) for p in self.files(detail)}
        files = self.files(aggregate)
        built = {p.relative_to(self.dataset_dir(aggregate)) for p in files}
        if not have or not have <= built:
            return False
        need = set(columns)
        try:
            return not need or all(
                need <= set(pq.read_schema(self.locate(p), filesystem=self.filesystem).names) for p in files
            )
        except (pa.ArrowException, OSError):
            return False  # a damaged aggregate: the detail files answer (and name a damaged detail file)

    def manifest(self) -> list[dict[str, Any]]:
        path = self.root / _MANIFEST
        if not path.exists() and not path.is_symlink():
            return []
        return check_manifest(read_document(_read_bounded(path), path, what="store manifest"), path)

    # ----------------------------------------------------------------- writing
    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Stage writes; commit all of them on normal exit, none on any exception (Ctrl-C included).

        The writer lock is taken first (waiting for any other writer), then interrupted transactions
        are finished or discarded, so nothing is ever staged or read for merging outside the lock.
        """
        txid = new_txid()
        fd = _lock_for_writing(self.root)
        tx = Transaction(self, txid, _lock_fd=fd)
        try:
            try:
                self._recover()
                yield tx
            except BaseException:
                tx.abort()
                raise
            tx.commit()
        except OSError as exc:  # disk full, read-only file system, permissions: nothing was committed
            raise InputError(f"cannot write the store: {_reason(exc)}; nothing was written", path=self.root) from None

    # ---------------------------------------------------------------- recovery
    def _recover(self) -> None:
        """Finish committed journals and drop staging debris. Called only with the writer lock held."""
        staging = self.root / _STAGING
        if staging.is_symlink() or (staging.exists() and not staging.is_dir()):
            raise InputError(f"{_STAGING} is not a directory of this store; refusing to use the store", path=self.root)
        for journal in sorted(self.root.glob(".journal-*.json")):
            _apply_journal(self.root, journal)
        if staging.is_dir():
            shutil.rmtree(staging)

    def _check_no_interrupted_commit(self) -> None:
        """A reader must not see half of a commit nor replay it: name a journal no live writer owns."""
        journals = sorted(self.root.glob(".journal-*.json"))
        if journals and not _writer_is_live(self.root):
            raise InputError(
                f"an ingest was interrupted while committing ({journals[0].name}); "
                "the next ingest into this store finishes it (readers never replay journals)",
                path=self.root,
            )


def _family(t: pa.DataType) -> str:
    """What a query can do with a column of type ``t``: older writers' types of one family read alike."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return str(t)


@functools.cache
def dataset_schema(name: str) -> pa.Schema:
    """The schema ingest writes for dataset ``name``; an aggregate's is its query's over an empty detail file."""
    from finops_cli.ingest.spot.ingest import SPOT_SCHEMA
    from finops_cli.ingest.utilization.common import STORE_SCHEMA
    from finops_cli.schema.billing import BILLING_SCHEMA
    from finops_cli.store import engine
    from finops_cli.store.queries import AGGREGATES

    details = {"billing": BILLING_SCHEMA, "utilization": STORE_SCHEMA, "spot_prices": SPOT_SCHEMA}
    if name in details:
        return details[name]
    detail, query = AGGREGATES[name]
    with tempfile.TemporaryDirectory(prefix="finops-schema-") as tmp:
        path = Path(tmp, partition_dir(detail, dict.fromkeys(DATASETS[detail], "x")), "k.parquet")
        path.parent.mkdir(parents=True)
        pq.write_table(details[detail].empty_table(), path)
        return engine.run_files(query, {detail: [path]}).schema


def schema_problem(name: str, schema: pa.Schema) -> str | None:
    """Why a file of dataset ``name`` with ``schema`` cannot be read as one (a column of another type), else None.

    A column the dataset does not know, or one an older file lacks, is fine: queries see NULL for it.
    """
    want = dataset_schema(name)
    for f in schema:
        i = want.get_field_index(f.name)
        if i >= 0 and _family(f.type) != _family(want.field(i).type):
            return f"column {f.name} is {f.type}, a {name} file holds {want.field(i).type}"
    return None


def _read_bounded(path: Path) -> bytes:
    """At most :data:`MAX_DOCUMENT_BYTES` + 1 bytes of a store document: a regular file, never a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise InputError("not a regular file; is --store a finops store?", path=path)
            return fh.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        why = "a symlink" if exc.errno == errno.ELOOP else _reason(exc)
        raise InputError(f"unreadable store document ({why}); is --store a finops store?", path=path) from None


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return exc.strerror or str(exc) or exc.__class__.__name__


def _lock_for_writing(root: Path) -> int | None:
    """Create the store if needed, open its ``.lock`` and hold it exclusively (waiting for other writers)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        if fcntl is None:
            return None
        path = root / _LOCK
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise InputError(f"{_LOCK} is not a regular file; is --store a finops store?", path=root)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise InputError(f"cannot write the store: {_reason(exc)}", path=root) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        os.close(fd)
        raise InputError(f"cannot lock the store: {_reason(exc)}", path=root) from None
    return fd


def _writer_is_live(root: Path) -> bool:
    """Whether a transaction holds the store's lock now (read-only probe: works on a read-only store)."""
    if fcntl is None:
        return False
    path = root / _LOCK
    if not path.is_file():
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _inside(root: Path, rel: object, *, under: tuple[str, ...], what: str, journal: Path) -> Path:
    """``root / rel`` if ``rel`` is a relative path below one of ``under`` that stays inside the store."""
    bad = InputError(
        f"{what} {rel!r} leads outside the store's data; the store needs a manual look (nothing was changed)",
        path=journal,
    )
    if not isinstance(rel, str) or not rel or "\0" in rel or "\\" in rel:
        raise bad
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or any(p in ("..", ".", "") for p in parts) or parts[0] not in under:
        raise bad
    real_root = os.path.realpath(root)
    real_parent = os.path.realpath(root / Path(rel).parent)
    if os.path.commonpath([real_root, real_parent]) != real_root:
        raise bad
    return root / rel


def _read_journal(root: Path, journal: Path) -> tuple[list[Path], list[tuple[Path, Path]], Path]:
    """A journal's deletes, moves and staging directory, each checked to stay inside the store."""
    plan = read_document(_read_bounded(journal), journal, what="transaction journal; the store needs a manual look")
    return _checked_plan(root, plan, journal)


def _checked_plan(root: Path, plan: object, journal: Path) -> tuple[list[Path], list[tuple[Path, Path]], Path]:
    """Refuse a plan (before anything is touched) unless it has the writer's shape and stays in the store."""

    def refuse(problem: str) -> InputError:
        return InputError(f"{problem}; the store needs a manual look (nothing was changed)", path=journal)

    if not isinstance(plan, dict) or set(plan) != {"deletes", "moves", "staging"}:
        raise refuse("not a transaction journal (expected {deletes, moves, staging})")
    if not isinstance(plan["deletes"], list) or not isinstance(plan["moves"], list):
        raise refuse("not a transaction journal (deletes and moves must be lists)")
    if not all(isinstance(m, list) and len(m) == 2 for m in plan["moves"]):
        raise refuse("not a transaction journal (each move must be [source, destination])")
    staging = _inside(root, plan["staging"], under=(_STAGING,), what="staging", journal=journal)
    if len(Path(plan["staging"]).parts) != 2:
        raise refuse(f"staging {plan['staging']!r} is not a transaction directory")
    data = tuple(DATASETS)
    deletes = [_inside(root, d, under=data, what="deleted file", journal=journal) for d in plan["deletes"]]
    moves = []
    for src, dst in plan["moves"]:
        s = _inside(root, src, under=(_STAGING,), what="staged file", journal=journal)
        if os.path.realpath(s) != os.path.join(os.path.realpath(root), src):
            raise refuse(f"staged file {src!r} is or passes through a symlink")
        if Path(src).parts[:2] != Path(plan["staging"]).parts:
            raise refuse(f"staged file {src!r} is not in the journal's staging directory")
        d = (
            root / _MANIFEST
            if dst == _MANIFEST
            else _inside(root, dst, under=data, what="destination", journal=journal)
        )
        moves.append((s, d))
    for p in [*deletes, *(d for _, d in moves)]:
        if p != root / _MANIFEST and not p.name.endswith(".parquet"):
            raise refuse(f"{p.relative_to(root)} is not a data file of a finops store")
    return deletes, moves, staging


def _apply_journal(root: Path, journal: Path) -> None:
    """Roll a committed transaction forward; every step is idempotent. The whole journal is checked first."""
    deletes, moves, staging = _read_journal(root, journal)
    for path in deletes:
        path.unlink(missing_ok=True)
    for s, d in moves:
        if s.exists():
            d.parent.mkdir(parents=True, exist_ok=True)
            os.replace(s, d)
    shutil.rmtree(staging, ignore_errors=True)
    journal.unlink(missing_ok=True)


def _aggregates_of(rel: Path) -> list[Path]:
    """``billing/p=…/k.parquet`` → ``[billing_hourly/p=…/k.parquet]`` (empty for datasets without aggregates)."""
    from finops_cli.store.queries import aggregates_of

    return [Path(a, *rel.parts[1:]) for a in aggregates_of(rel.parts[0])] if rel.parts else []


#: a source written from several input files keeps one store file per input file: ``<key>``, ``<key>-part1``, …
PART_SEPARATOR = "-part"
_PART = re.compile(rf"{PART_SEPARATOR}[1-9][0-9]*$")


def part_key(key: str, ordinal: int) -> str:
    """The store file (key) of the ``ordinal``-th input file holding lines of source ``key`` (command order).

    Each input file writes its own part, so the files of one export convert in parallel (worker processes
    or Spark tasks) and the store's bytes do not depend on how many; a source from one file keeps ``key``.
    """
    return key if ordinal == 0 else f"{key}{PART_SEPARATOR}{ordinal}"


def file_source_key(stem: str) -> str:
    """The idempotency key a store file (its name without ``.parquet``) belongs to: the name less any part."""
    return _PART.sub("", stem)


def stage_aggregates(staging: Path, staged: list[Path], source: Path | None = None) -> list[Path]:
    """Build each staged detail file's aggregate (:data:`~finops_cli.store.queries.AGGREGATES`) beside it,
    under ``staging`` (detail files read from ``source``, default ``staging``); the aggregates' paths.

    The aggregate is computed from exactly the staged file and committed with it, so the two never
    disagree; a file deleted on commit takes its aggregate with it. The query runs on the engine in
    force (:func:`finops_cli.store.engine.using`). A transaction calls it at commit for the files it wrote;
    a worker process of a parallel ingest for its own (handed over with :meth:`Transaction.adopt`).
    """
    from finops_cli.store import engine
    from finops_cli.store.queries import AGGREGATES

    built: list[Path] = []
    for aggregate, (dataset, query) in AGGREGATES.items():
        rels = [rel for rel in staged if rel.parts and rel.parts[0] == dataset]
        tables = engine.run_per_file(query, dataset, [(source or staging) / rel for rel in rels])
        for rel, table in zip(rels, tables, strict=True):
            target = Path(aggregate, *rel.parts[1:])
            path = staging / target
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path, compression="zstd")
            built.append(target)
    return built


def _remove_if_empty(directory: Path) -> None:
    """Drop ``.staging`` once no transaction uses it, so a refused ingest leaves the store byte-identical."""
    with suppress(OSError):
        directory.rmdir()


@dataclass
class StagedWriter:
    """Parquet files appended under a transaction's staging directory, one writer per file.

    A transaction writes through one; a worker process of a parallel ingest writes through its own (given
    :attr:`Transaction.staging`) and hands the relative paths back for :meth:`Transaction.adopt`.
    """

    staging: Path
    _writers: dict[Path, pq.ParquetWriter] = field(default_factory=dict)
    rows_written: int = 0

    def write(self, dataset: str, partition: Mapping[str, str], key: str, data: pa.Table | pa.RecordBatch) -> Path:
        """Append ``data`` (without partition columns) to file ``key`` of one partition; its relative path."""
        rel = _partition_dir(dataset, partition) / f"{_safe_value(key)}.parquet"
        writer = self._writers.get(rel)
        if writer is None:
            path = self.staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = pq.ParquetWriter(path, data.schema, compression="zstd")
            self._writers[rel] = writer
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        writer.write_table(data)
        self.rows_written += data.num_rows
        return rel

    def close(self) -> list[Path]:
        """Close every file; the relative paths written."""
        written = list(self._writers)
        for w in self._writers.values():
            w.close()
        self._writers.clear()
        return written

    def discard(self) -> None:
        for w in self._writers.values():
            with suppress(Exception):
                w.close()
        self._writers.clear()


@dataclass
class Transaction:
    """Files staged for one atomic commit. Obtain one from :meth:`Store.transaction`."""

    store: Store
    txid: str
    _writer: StagedWriter | None = None
    _adopted: list[Path] = field(default_factory=list)
    #: files another process staged together with their aggregates (both listed)
    _adopted_aggregates: list[Path] = field(default_factory=list)
    _replace: set[Path] = field(default_factory=set)
    _manifest_entries: list[dict[str, Any]] = field(default_factory=list)
    _drop_sources: set[str] = field(default_factory=set)
    _remove: set[Path] = field(default_factory=set)
    _lock_fd: int | None = None
    rows_written: int = 0

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @property
    def staging(self) -> Path:
        return self.store.root / _STAGING / self.txid

    def write(self, dataset: str, partition: Mapping[str, str], key: str, data: pa.Table | pa.RecordBatch) -> None:
        """Append ``data`` (without partition columns) to file ``key`` of one partition."""
        if self._writer is None:
            self._writer = StagedWriter(self.staging)
        before = self._writer.rows_written
        self._writer.write(dataset, partition, key, data)
        self.rows_written += self._writer.rows_written - before

    def lock(self) -> None:
        """The writer lock is held from the transaction's start; kept so callers say where it must be held."""

    def adopt(self, rel_paths: Iterable[Path], rows: int = 0, aggregates: Iterable[Path] | None = None) -> None:
        """Commit files another process wrote under :attr:`staging` (call :meth:`lock` before it starts).

        ``aggregates``: the aggregates that process built for them (:func:`stage_aggregates`); None: built
        here at commit.
        """
        rels = [Path(r) for r in rel_paths]
        built = None if aggregates is None else [Path(a) for a in aggregates]
        for rel in [*rels, *(built or [])]:
            if not (self.staging / rel).is_file():
                raise RuntimeError(f"staged file {rel} is missing")
        if built is None:
            self._adopted += rels
        else:
            self._adopted_aggregates += [*rels, *built]
        self.rows_written += rows

    def write_partitioned(self, dataset: str, data: pa.Table | pa.RecordBatch, key: str) -> list[dict[str, str]]:
        """Split ``data`` by its partition columns, write each part under ``key``; return the partitions."""
        cols = DATASETS[dataset]
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.num_rows == 0:
            return []
        keys = table.select(list(cols)).group_by(list(cols)).aggregate([]).to_pylist()
        body_cols = [c for c in table.column_names if c not in cols]
        for part in keys:
            mask = None
            for c in cols:
                cond = pc.equal(table[c], part[c])
                mask = cond if mask is None else pc.and_(mask, cond)
            self.write(dataset, part, key, table.filter(mask).select(body_cols))
        return keys

    def replace_partition(self, dataset: str, partition: Mapping[str, str]) -> None:
        """On commit, remove every existing file of this partition that this transaction does not write."""
        self._replace.add(_partition_dir(dataset, partition))

    def remove(self, dataset: str, partition: Mapping[str, str], key: str) -> None:
        """On commit, delete file ``key`` of one partition (unless this transaction writes it)."""
        self._remove.add(_partition_dir(dataset, partition) / f"{_safe_value(key)}.parquet")

    def remove_source(self, dataset: str, key: str) -> list[Path]:
        """On commit, delete every file of ``dataset`` written under ``key`` and its manifest entries."""
        files = self.store.source_files(dataset, key)
        self._remove.update(p.relative_to(self.store.root) for p in files)
        self.forget_source(key)
        return files

    def record(self, entry: Mapping[str, Any]) -> None:
        """Add a manifest entry (what was ingested, from where); committed with the data.

        Inputs downloaded from a bucket are named by their URI, not by the temporary copy that was parsed.
        """
        from finops_cli.uri import origin

        self._manifest_entries.append(
            {"ingested_at": datetime.now(UTC).isoformat(), "txid": self.txid, **origin(dict(entry))}
        )

    def forget_source(self, source_key: str) -> None:
        """Drop earlier manifest entries with this ``source_key`` (a re-ingest replaces them)."""
        self._drop_sources.add(source_key)

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.discard()
        shutil.rmtree(self.staging, ignore_errors=True)
        _remove_if_empty(self.staging.parent)
        self._release_lock()

    def commit(self) -> None:
        try:
            self._commit()
        finally:
            self._release_lock()

    def rebuild_aggregates(self, detail: Iterable[Path]) -> list[Path]:
        """Stage the aggregates of committed detail files (relative paths), replacing theirs on commit.

        For stores written before the aggregates existed, or to rebuild them on another engine.
        """
        built = self._stage_aggregates(list(detail), source=self.store.root)
        self._adopted += built
        return built

    def _stage_aggregates(self, staged: list[Path], source: Path | None = None) -> list[Path]:
        """Build each staged detail file's aggregate beside it (:func:`stage_aggregates`)."""
        return stage_aggregates(self.staging, staged, source)

    def _plan(self) -> tuple[list[Path], list[Path], list[dict[str, Any]]] | None:
        """Close the staged files and work out the commit: (files to publish, files to delete, new manifest),
        all relative to the store root; None when the transaction changes nothing."""
        staged = (self._writer.close() if self._writer is not None else []) + self._adopted
        self._adopted = []
        staged += self._stage_aggregates(staged) + self._adopted_aggregates
        self._adopted_aggregates = []
        if not (staged or self._manifest_entries or self._replace or self._remove or self._drop_sources):
            return None
        written = set(staged)
        deletes: list[Path] = []
        for part in self._replace:
            deletes += [rel for rel in self.store.partition_files(part) if rel not in written]
        deletes += [rel for rel in self._remove if rel not in written and self.store.has_file(rel)]
        deletes += [a for d in deletes for a in _aggregates_of(d) if a not in written]
        manifest = [
            e for e in self.store.manifest() if e.get("source_key") not in self._drop_sources
        ] + self._manifest_entries
        return staged, deletes, manifest

    def _commit(self) -> None:
        planned = self._plan()
        if planned is None:
            shutil.rmtree(self.staging, ignore_errors=True)
            _remove_if_empty(self.staging.parent)
            return
        staged, deleted, manifest = planned
        root = self.store.root
        staging_rel = self.staging.relative_to(root)
        moves = [[str(staging_rel / rel), str(rel)] for rel in staged]
        deletes = [str(rel) for rel in deleted]
        self.staging.mkdir(parents=True, exist_ok=True)
        (self.staging / _MANIFEST).write_text(json.dumps(manifest, indent=1, default=str), encoding="utf-8")
        moves.append([str(staging_rel / _MANIFEST), _MANIFEST])
        journal = root / f".journal-{self.txid}.json"
        plan = {"moves": moves, "deletes": deletes, "staging": str(staging_rel)}
        _checked_plan(root, plan, journal)  # a symlinked dataset directory is refused before the journal exists
        write_text(journal, json.dumps(plan), output=False)
        _apply_journal(root, journal)
        _remove_if_empty(self.staging.parent)
        # Empty partition directories left by deletions would confuse nobody, but tidy them.
        for part in {*self._replace, *(rel.parent for rel in self._remove)}:
            pdir = root / part
            if pdir.is_dir() and not any(pdir.iterdir()):
                pdir.rmdir()
