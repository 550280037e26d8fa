"""Hive-partitioned Parquet datasets under one root (a directory or a bucket), committed through one log.

A transaction writes its files under ``_txn/<txid>/``; its commit point is the create-if-absent of the next
generation ``_log/<N+1>.json`` (:mod:`.log`), naming every live file and the manifest. Readers resolve the
newest generation once per :class:`Store` object and read only the files it names; a replaced file goes only
after :data:`GRACE`. docs/schema.md describes the layout and the promises for users; :mod:`.remote` is the bucket.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePath
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from finops_cli.atomic import note_input
from finops_cli.errors import InputError
from finops_cli.store import legacy
from finops_cli.store.layout import (
    DATASETS,
    LOG_DIR,
    TXN_DIR,
    check_rel,
    file_path,
    file_source_key,
    generation_name,
    generation_of,
    new_txid,
    object_key,
    partition_dir,
)
from finops_cli.store.log import (
    IN_PLACE,
    State,
    create_if_absent,
    lock_for_writing,
    parse_state,
    parse_time,
    read_bounded,
    real_dir,
    reason,
    sync_view,
)
from finops_cli.store.queries import AGGREGATES, aggregates_of
from finops_cli.store.schemas import current_schema, partition_schema, schema_problem
from finops_cli.store.staging import StagedWriter

DEFAULT_STORE_DIR = ".finops"
STORE_ENV = "FINOPS_STORE"
#: how long a replaced file (and the generation that named it) outlives the commit that replaced it:
#: a reader that resolved the older generation has this long to finish reading
GRACE = timedelta(hours=1)

#: builds the aggregates of staged detail files beside them: (staging directory, their relative paths) -> the
#: aggregates' relative paths (:func:`finops_cli.store.engine.stage_aggregates`, on the caller's engine)
AggregateBuilder = Callable[[Path, list[Path]], list[Path]]


def resolve_store_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--store`` wins, then ``$FINOPS_STORE``, then ``.finops/`` in the working directory.

    A bucket URI comes back as a :class:`Path` too (``s3:/bucket/prefix``); ``open_store`` tells it apart.
    """
    if explicit:
        return Path(explicit)
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env)
    return Path.cwd() / DEFAULT_STORE_DIR


def store_exists(root: str | os.PathLike[str] | None = None) -> bool:
    """Whether the store ``root`` names exists (a bucket URI is taken to: opening it names any problem)."""
    from finops_cli.uri import is_uri

    resolved = resolve_store_root(root)
    return is_uri(resolved) or resolved.exists()


@dataclass
class Store:
    """A store in a directory. Readers see the newest committed generation as of their first read."""

    root: Path
    #: the pyarrow file system the data files live on (None: the local disk, read by path)
    filesystem: ClassVar[Any] = None
    _state: State | None = field(default=None, repr=False, compare=False)

    @property
    def location(self) -> str:
        """The store as the user named it (a directory, or an ``s3://`` / ``gs://`` URI), for messages."""
        return str(self.root)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        note_input(self.root, tree=True)  # no --out may land inside the store
        for ancestor in (self.root, *self.root.parents):
            if ancestor.exists():
                if not ancestor.is_dir():
                    where = "is a file" if ancestor == self.root else f"{ancestor} is a file"
                    raise InputError(f"{where}; `store` expects a directory", mentions=("store",), path=self.root)
                break

    # ------------------------------------------------------------------ the committed state
    def state(self) -> State:
        """The newest committed generation, resolved once per store object (a transaction re-resolves it)."""
        if self._state is None:
            self._state = self._resolve()
        return self._state

    def _resolve(self) -> State:
        for _ in range(10):
            gens = self._generations()
            if not gens:
                before_log = self._legacy_state()
                if not self._generations():  # not converted while it was read
                    return before_log or State()
                continue
            generation = gens[-1][0]
            try:
                raw = self._read_log(generation)
            except FileNotFoundError:  # dropped after its grace period between the listing and the read
                continue
            return parse_state(raw, generation, self._log_where(generation))
        raise InputError("the store's log changed under every read; run the command again", path=self.location)

    def physical(self, rel: str, txid: str) -> str:
        """Where the file ``rel`` written by transaction ``txid`` lives (on :attr:`filesystem`)."""
        if txid == IN_PLACE:
            return str(Path(self.root, check_rel(rel)))
        return object_key(str(self.root), txid, rel)

    def locate(self, path: PurePath) -> str:
        """Where the data file listed as ``path`` (by :meth:`files`) is read from, on :attr:`filesystem`."""
        rel = "/".join(PurePath(path).relative_to(self.root).parts)
        located = self.physical(rel, self.state().files[rel])
        if self.filesystem is None and os.path.realpath(located) != os.path.join(
            os.path.realpath(self.root), *(PurePath(located).relative_to(self.root).parts)
        ):
            raise InputError("is or passes through a symlink; a store's files are real (nothing was read)", path=path)
        return located

    # ----------------------------------------------------------------- reading
    def dataset_dir(self, name: str) -> Path:
        if name not in DATASETS:
            raise ValueError(f"unknown dataset {name!r}; known: {sorted(DATASETS)}")
        return self.root / name

    def files(self, name: str) -> list[Path]:
        """The dataset's data files in the snapshot, as logical paths (``root/billing/…``: :meth:`locate`)."""
        self.dataset_dir(name)
        return sorted(self.root / rel for rel in self.state().files if rel.startswith(name + "/"))

    def has(self, name: str) -> bool:
        return bool(self.files(name))

    def dataset(self, name: str, schema: pa.Schema | None = None) -> ds.Dataset | None:
        """A pyarrow dataset over ``name`` (partition columns as strings), or None if empty; ``billing`` reads as
        its current schema whatever its files' age (:func:`~finops_cli.store.schemas.current_schema`)."""
        footers = self.checked_schemas(name)
        paths = list(footers)
        if not paths:
            return None
        partitions = partition_schema(name)
        if schema is None and name == "billing":
            schema = current_schema(name, footers.values(), partitions)
        part = ds.partitioning(partitions, flavor="hive")
        located = [self.locate(p) for p in paths]
        return ds.dataset(located, filesystem=self.filesystem, format="parquet", partitioning=part, schema=schema)

    def read(
        self,
        name: str,
        columns: list[str] | None = None,
        filter: ds.Expression | None = None,
        schema: pa.Schema | None = None,
    ) -> pa.Table | None:
        d = self.dataset(name, schema=schema)
        return None if d is None else d.to_table(columns=columns, filter=filter)

    def checked_files(self, name: str) -> list[Path]:
        """:meth:`files`, each footer read first: a damaged file is named here, not as a traceback mid-scan."""
        return list(self.checked_schemas(name))

    def checked_schemas(self, name: str) -> dict[Path, pa.Schema]:
        """:meth:`checked_files` with the schema each footer holds (a query's view reads its columns from them)."""
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

    def source_files(self, name: str, key: str) -> list[Path]:
        """Every file of dataset ``name`` written under idempotency key ``key`` (one per partition and part)."""
        return [p for p in self.files(name) if file_source_key(p.stem) == key]

    def partition_values(self, name: str, key: str) -> list[str]:
        """Sorted distinct values of partition column ``key`` (e.g. the months in ``utilization``), from paths."""
        values = set()
        for path in self.files(name):
            for part in PurePath(path).relative_to(self.root).parts[1:-1]:
                k, _, v = part.partition("=")
                if k == key:
                    values.add(v)
        return sorted(values)

    def file_keys(self, dataset: str, partition: Mapping[str, str]) -> list[str]:
        """Keys (file names without ``.parquet``) of one partition's files."""
        return sorted(PurePath(r).stem for r in self.partition_files(Path(partition_dir(dataset, partition))))

    def partition_files(self, partition_dir: PurePath) -> list[Path]:
        """Every data file of one partition (relative to the root), as a commit replaces them."""
        pdir = "/".join(PurePath(partition_dir).parts)
        return [Path(r) for r in self.state().files if r.rsplit("/", 1)[0] == pdir]

    def has_file(self, rel: PurePath) -> bool:
        """Whether the data file ``rel`` (relative to the root) is in the store."""
        return "/".join(PurePath(rel).parts) in self.state().files

    def has_aggregate(self, name: str, columns: Iterable[str] = ()) -> bool:
        """Whether every file of the detail dataset has aggregate ``name`` (stores written before an aggregate
        existed lack it) and every file of that aggregate has ``columns`` (one written before a column was
        added lacks it). A detail dataset's name asks for all of its aggregates."""
        names = [name] if name in AGGREGATES else aggregates_of(name)
        return bool(names) and all(self._has_one_aggregate(a, columns) for a in names)

    def _has_one_aggregate(self, aggregate: str, columns: Iterable[str]) -> bool:
        detail = AGGREGATES[aggregate][0]
        have = {PurePath(p).relative_to(self.dataset_dir(detail)) for p in self.files(detail)}
        files = self.files(aggregate)
        built = {PurePath(p).relative_to(self.dataset_dir(aggregate)) for p in files}
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
        return self.state().manifest

    # ----------------------------------------------------------------- writing
    @contextmanager
    def transaction(self, aggregates: AggregateBuilder | None = None) -> Iterator[Transaction]:
        """Stage writes; commit all of them on normal exit, none on any exception (Ctrl-C included).

        ``aggregates`` builds the staged detail files' aggregates at commit (without it they get none, and
        queries read the detail files). A directory store's writer lock is taken first; then a store that
        predates the log is converted, uncommitted files are dropped and the newest generation resolved.
        """
        tx = Transaction(self, new_txid(), aggregates=aggregates)
        try:
            try:
                tx._lock_fd = self._begin()
                self._state = None  # commit against the newest generation
                tx.base = self.state()
                yield tx
            except BaseException:
                tx.abort()
                raise
            tx.commit()
        except OSError as exc:  # disk full, read-only file system, permissions: nothing was committed
            raise InputError(
                f"cannot write the store: {self._reason(exc)}; nothing was written", path=self.location
            ) from None

    def _reason(self, exc: OSError) -> str:
        return reason(exc)

    # ------------------------------------------------- what differs between a directory and a bucket
    def _log_dir(self) -> Path:
        return real_dir(self.root / LOG_DIR)

    def _log_where(self, generation: int) -> object:
        return self.root / LOG_DIR / generation_name(generation)

    def _generations(self) -> list[tuple[int, float | None]]:
        """Every committed generation, oldest first, with when it was written (None: unknown)."""
        try:
            entries = list(os.scandir(self._log_dir()))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise InputError(f"cannot list the store's log: {reason(exc)}", path=self.root) from None
        gens = []
        for entry in entries:
            generation = generation_of(entry.name)
            if generation is not None:
                if not entry.is_file(follow_symlinks=False) and os.path.lexists(entry.path):
                    raise InputError(
                        "is not a regular file; is `store` a finops store?", mentions=("store",), path=Path(entry.path)
                    )
                with suppress(FileNotFoundError):
                    gens.append((generation, entry.stat(follow_symlinks=False).st_mtime))
        return sorted(gens)

    def _read_log(self, generation: int) -> bytes:
        return read_bounded(self._log_dir() / generation_name(generation))

    def _put_log(self, generation: int, body: bytes) -> bool:
        return create_if_absent(self._log_dir() / generation_name(generation), body)

    def _delete_log(self, generation: int) -> None:
        (self._log_dir() / generation_name(generation)).unlink(missing_ok=True)

    def _delete_physical(self, rel: str, txid: str) -> None:
        path = Path(self.physical(rel, txid))
        if os.path.realpath(path.parent) != os.path.join(
            os.path.realpath(self.root), *path.parent.relative_to(self.root).parts
        ):
            return  # through a symlink: the file it reaches is not the store's to delete
        path.unlink(missing_ok=True)
        top = self.root / TXN_DIR
        for parent in path.parents:  # drop directories the deletion emptied, up to _txn/<txid>
            if parent == top or not parent.is_relative_to(top):
                break
            with suppress(OSError):
                parent.rmdir()

    def _legacy_state(self) -> State | None:
        return legacy.legacy_state(self.root)

    def _begin(self) -> int | None:
        """Before a transaction: lock, convert a store that predates the log, drop uncommitted files."""
        fd = lock_for_writing(self.root)
        try:
            txn = real_dir(self.root / TXN_DIR)
            if not self._generations():
                legacy.convert(self.root)
            self._state = None
            live = self.state().live_txids()
            if txn.is_dir():
                for entry in os.scandir(txn):
                    if entry.name not in live:  # a killed writer's: no generation names it
                        if entry.is_dir(follow_symlinks=False):
                            shutil.rmtree(entry.path)
                        else:
                            os.unlink(entry.path)
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        return fd

    def _new_staging(self, txid: str) -> Path:
        return self.root / TXN_DIR / txid

    def _upload(self, tx: Transaction, staged: list[Path]) -> None:
        """Staged in place: keep exactly the staged files (a utilisation ingest's spill buckets go), each a
        regular file (a symlink could publish data from outside the store)."""
        staging = tx.staging
        keep = {os.path.join(staging, rel) for rel in staged}
        for top, dirs, names in os.walk(staging):
            for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(top, d)))]:
                path = os.path.join(top, name)
                if path not in keep or os.path.islink(path):
                    os.unlink(path)
        for rel in staged:
            if not stat.S_ISREG(os.lstat(staging / rel).st_mode):
                raise InputError("a staged file is not a regular file; nothing was committed", path=staging / rel)

    def _discard(self, tx: Transaction) -> None:
        """Drop what ``tx`` staged (it was not committed)."""
        if tx._staging is not None:
            shutil.rmtree(tx._staging, ignore_errors=True)

    def _end(self, tx: Transaction) -> None:
        """After a transaction (committed or not): refresh the hard-linked view for tools outside finops."""
        with suppress(OSError, InputError):
            sync_view(self.root, self.state().files)

    def _tidy(self, generation: int) -> None:
        """After a commit, best effort: drop generations whose successor is older than :data:`GRACE`, on the
        storage's clock (file or object times, against the generation just written), not this process's."""
        gens = self._generations()
        newest = gens[-1][1] if gens and gens[-1][1] is not None else time.time()
        cutoff = newest - GRACE.total_seconds()
        for (old, _), (_, written) in itertools.pairwise(gens):
            if old < generation and written is not None and written <= cutoff:
                with suppress(OSError):
                    self._delete_log(old)


def _aggregates_of(rel: Path) -> list[Path]:
    """``billing/p=…/k.parquet`` → ``[billing_hourly/p=…/k.parquet]`` (empty for datasets without aggregates)."""
    return [Path(a, *rel.parts[1:]) for a in aggregates_of(rel.parts[0])] if rel.parts else []


@dataclass
class Transaction:
    """Files staged for one atomic commit. Obtain one from :meth:`Store.transaction`."""

    store: Store
    txid: str
    #: the generation this transaction started from (resolved under the writer lock on disk)
    base: State = field(default_factory=State)
    aggregates: AggregateBuilder | None = None
    _writer: StagedWriter | None = None
    _adopted: list[Path] = field(default_factory=list)
    #: files another process staged together with their aggregates (both listed)
    _adopted_aggregates: list[Path] = field(default_factory=list)
    _replace: set[Path] = field(default_factory=set)
    _manifest_entries: list[dict[str, Any]] = field(default_factory=list)
    _drop_sources: set[str] = field(default_factory=set)
    _remove: set[Path] = field(default_factory=set)
    _lock_fd: int | None = None
    _staging: Path | None = None
    rows_written: int = 0
    #: staged files Spark executors wrote straight into a bucket store (relative path -> object key), checked by
    #: the driver; published by a copy inside the bucket at commit (:meth:`ObjectStore._upload`)
    remote: dict[Path, str] = field(default_factory=dict)

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @property
    def staging(self) -> Path:
        """Where this transaction's files are written: ``_txn/<txid>/`` of a directory store (committed in
        place), a private local directory for a bucket store (uploaded at commit)."""
        if self._staging is None:
            self._staging = self.store._new_staging(self.txid)
        return self._staging

    def write(self, dataset: str, partition: Mapping[str, str], key: str, data: pa.Table | pa.RecordBatch) -> None:
        """Append ``data`` (without partition columns) to file ``key`` of one partition."""
        if self._writer is None:
            self._writer = StagedWriter(self.staging)
        before = self._writer.rows_written
        self._writer.write(dataset, partition, key, data)
        self.rows_written += self._writer.rows_written - before

    def adopt(self, rel_paths: Iterable[Path], rows: int = 0, aggregates: Iterable[Path] | None = None) -> None:
        """Commit files another process wrote under :attr:`staging` (while this transaction holds the lock).

        ``aggregates``: the aggregates that process built for them; None: built at commit.
        """
        rels = [Path(r) for r in rel_paths]
        built = None if aggregates is None else [Path(a) for a in aggregates]
        for rel in [*rels, *(built or [])]:
            if rel not in self.remote and not (self.staging / rel).is_file():
                raise RuntimeError(f"staged file {rel} is missing")
        if built is None:
            self._adopted += rels
        else:
            self._adopted_aggregates += [*rels, *built]
        self.rows_written += rows

    def move_staged(self, rel: Path, new: Path) -> bool:
        """Rename a staged file (one in the bucket only in :attr:`remote`); False if no such file is staged."""
        if rel in self.remote:
            self.remote[new] = self.remote.pop(rel)
            return True
        if not (self.staging / rel).is_file():
            return False
        os.replace(self.staging / rel, self.staging / new)
        return True

    def write_partitioned(self, dataset: str, data: pa.Table | pa.RecordBatch, key: str) -> list[dict[str, str]]:
        """Split ``data`` by its partition columns, write each part under ``key``; return the partitions."""
        cols = list(DATASETS[dataset])
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.num_rows == 0:
            return []
        keys: list[dict[str, str]] = table.select(cols).group_by(cols).aggregate([]).to_pylist()
        body_cols = [c for c in table.column_names if c not in cols]
        for part in keys:
            mask = functools.reduce(pc.and_, [pc.equal(table[c], part[c]) for c in cols])
            self.write(dataset, part, key, table.filter(mask).select(body_cols))
        return keys

    def replace_partition(self, dataset: str, partition: Mapping[str, str]) -> None:
        """On commit, remove every existing file of this partition that this transaction does not write."""
        self._replace.add(Path(partition_dir(dataset, partition)))

    def remove(self, dataset: str, partition: Mapping[str, str], key: str) -> None:
        """On commit, delete file ``key`` of one partition (unless this transaction writes it)."""
        self._remove.add(Path(file_path(dataset, partition, key)))

    def remove_source(self, dataset: str, key: str) -> list[Path]:
        """On commit, delete every file of ``dataset`` written under ``key`` and its manifest entries."""
        files = self.store.source_files(dataset, key)
        for path in files:  # a symlinked file or partition is refused by name, as readers refuse it
            self.store.locate(path)
        self._remove.update(Path(p.relative_to(self.store.root)) for p in files)
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
        self.store._discard(self)
        self._release_lock()

    def commit(self) -> None:
        try:
            self._commit()
        finally:
            try:
                self.store._end(self)
            finally:
                self._release_lock()

    def _plan(self) -> tuple[list[Path], list[Path], list[dict[str, Any]]] | None:
        """Close the staged files and work out the commit: (files to publish, files to delete, new manifest),
        all relative to the store root; None when the transaction changes nothing."""
        staged = (self._writer.close() if self._writer is not None else []) + self._adopted
        if self.aggregates is not None:
            staged += self.aggregates(self.staging, staged)
        staged += self._adopted_aggregates
        self._adopted, self._adopted_aggregates = [], []
        if not (staged or self._manifest_entries or self._replace or self._remove or self._drop_sources):
            return None
        written = set(staged)
        deletes: list[Path] = []
        for part in self._replace:
            deletes += [rel for rel in self.store.partition_files(part) if rel not in written]
        deletes += [rel for rel in self._remove if rel not in written and self.store.has_file(rel)]
        # a deleted detail file takes its aggregates along; one rewritten without them loses its old ones
        deletes += [a for d in [*deletes, *staged] for a in _aggregates_of(d) if a not in written]
        manifest = [
            e for e in self.store.manifest() if e.get("source_key") not in self._drop_sources
        ] + self._manifest_entries
        return staged, deletes, manifest

    def _commit(self) -> None:
        planned = self._plan()
        if planned is None:
            self.store._discard(self)
            return
        staged, deleted, manifest = planned
        store, base = self.store, self.base
        files = dict(base.files)
        replaced = [(rel, files.pop(rel)) for rel in dict.fromkeys("/".join(d.parts) for d in deleted) if rel in files]
        store._upload(self, staged)  # before the log names them
        for rel in dict.fromkeys("/".join(s.parts) for s in staged):
            old = files.get(check_rel(rel))
            if old is not None and old != self.txid:
                replaced.append((rel, old))
            files[rel] = self.txid
        now = datetime.now(UTC)
        due = [p for p in base.pending if parse_time(p[2]) <= now - GRACE]
        for rel, txid, _ in due:  # no generation a reader may still hold names them
            with suppress(OSError):
                store._delete_physical(rel, txid)
        pending = [p for p in base.pending if p not in due] + [(r, t, now.isoformat()) for r, t in replaced]
        state = State(base.generation + 1, files, manifest, pending)
        if not store._put_log(state.generation, state.document(self.txid, now)):
            store._discard(self)
            raise InputError(
                f"another writer committed generation {state.generation} while this one ran; nothing was committed "
                "(run the command again)",
                path=store.location,
            )
        store._state = state
        with suppress(OSError, InputError):
            store._tidy(state.generation)
