"""Hive-partitioned Parquet datasets under one root, committed by one log protocol (a directory or a bucket).

Layout (``root`` defaults to ``.finops/``; a bucket prefix holds the same ``_log/`` and ``_txn/``)::

    root/
      _log/00000000000000000007.json     generation 7: the committed state (live files, manifest, files
                                         replaced but not yet deleted)
      _txn/<txid>/billing/provider=aws/billing_period=2026-11/<key>.parquet   a file written by transaction <txid>
      _txn/<txid>/billing_hourly/…       its aggregates, beside it
      billing/provider=aws/billing_period=2026-11/<key>.parquet   directory only: hard links to the live
                                         files for tools outside finops (DuckDB, Spark globs); finops never reads them
      .lock                              directory only: the writer lock

The protocol, the same for both stores:

- a transaction writes its files under ``_txn/<txid>/`` (a directory store stages there directly; a bucket
  store stages on local disk and uploads there), a name no other transaction uses: nothing a reader uses is
  ever overwritten;
- the **commit point** is one atomic create-if-absent of the next generation ``_log/<N+1>.json`` (a
  fully-written temporary file hard-linked into place on disk; ``If-None-Match: *`` on S3), naming every
  live file and the whole manifest. Before it nothing a reader can see has changed; after it the whole
  transaction is visible at once; two writers cannot both commit ``N+1``;
- readers resolve the newest generation once per :class:`Store` object (a snapshot) and read only the files
  it names: never a directory listing, so staged and half-written files are never seen;
- a file the new generation no longer names is recorded in it as *pending* and deleted only after
  :data:`GRACE`, and old generations are kept as long, so a reader that resolved the previous generation
  can finish. Uncommitted ``_txn/`` directories (a killed writer's) are removed by the next writer.

Idempotency: each file is named by a caller-chosen *key* (e.g. a hash of the source format, billing
account and period). Writing the same key again replaces the file; ``replace_partition`` drops every
other file of a partition (a corrected re-export of a billing period replaces that period).

A store written before the log (``manifest.json`` and files in the dataset directories, perhaps a journal
of an interrupted commit) is read as it stands and converted by its next writer (:mod:`.legacy`).
"""

from __future__ import annotations

import errno
import functools
import itertools
import json
import os
import re
import shutil
import stat
import tempfile
import time
import uuid
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
from finops_cli.store.layout import (
    DATASETS,
    LOG_DIR,
    MAX_DOCUMENT_BYTES,
    TXN_DIR,
    check_manifest,
    check_rel,
    check_txid,
    generation_name,
    generation_of,
    new_txid,
    object_key,
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
_LOCK = ".lock"
#: the format tag of every log generation (the bucket store's first format: both stores share it)
FORMAT = "finops-object-store/1"
#: how long a replaced file (and the generation that named it) outlives the commit that replaced it:
#: a reader that resolved the older generation has this long to finish reading
GRACE = timedelta(hours=1)
#: the transaction id of a file read in place from a store not yet converted to the log (:mod:`.legacy`)
IN_PLACE = ""


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


def _partition_dir(dataset: str, partition: Mapping[str, str]) -> Path:
    return Path(partition_dir(dataset, partition))


@dataclass
class State:
    """One committed generation: what a reader reads, and what the next commit starts from."""

    generation: int = 0
    #: logical path (``billing/provider=aws/billing_period=2026-11/<key>.parquet``) -> txid that wrote it
    files: dict[str, str] = field(default_factory=dict)
    manifest: list[dict[str, Any]] = field(default_factory=list)
    #: files replaced by a commit and not deleted yet: (logical path, txid, when it was replaced, ISO 8601)
    pending: list[tuple[str, str, str]] = field(default_factory=list)


def parse_state(raw: bytes, generation: int, where: object) -> State:
    """The generation in ``raw`` (untrusted: every name is checked against :mod:`.layout`'s grammar)."""
    doc = read_document(raw, where, what="store state")
    try:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} state")
        if doc.get("generation") != generation:
            raise ValueError(f"its generation is {doc.get('generation')!r}, its name says {generation}")
        files = doc["files"]
        if not isinstance(files, dict):
            raise ValueError("files must map paths to transaction ids")
        for rel, txid in files.items():
            check_rel(rel)
            check_txid(txid)
        pending = doc.get("pending", [])
        if not isinstance(pending, list) or not all(isinstance(p, list) and len(p) == 3 for p in pending):
            raise ValueError("pending must list [path, transaction id, time] triples")
        for rel, txid, since in pending:
            check_rel(rel)
            check_txid(txid)
            _since(since)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"unreadable store state ({exc}); is --store a finops store?", path=where) from None
    return State(generation, files, check_manifest(doc.get("manifest"), where), [tuple(p) for p in pending])


def _since(value: object) -> datetime:
    if not isinstance(value, str) or len(value) > 40:
        raise ValueError(f"{value!r} is not a time")
    when = datetime.fromisoformat(value)
    if when.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return when


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
                    raise InputError(f"{where}; --store expects a directory", path=self.root)
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
                legacy = self._legacy_state()
                if not self._generations():  # not converted while it was read
                    return legacy or State()
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
        """A pyarrow dataset over ``name`` (partition columns as strings), or None if empty."""
        paths = self.checked_files(name)
        if not paths:
            return None
        part = ds.partitioning(pa.schema([(c, pa.string()) for c in DATASETS[name]]), flavor="hive")
        return ds.dataset(
            [self.locate(p) for p in paths],
            filesystem=self.filesystem,
            format="parquet",
            partitioning=part,
            schema=schema,
        )

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
        return sorted(PurePath(r).stem for r in self.partition_files(_partition_dir(dataset, partition)))

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
        from finops_cli.store.queries import AGGREGATES, aggregates_of

        names = [name] if name in AGGREGATES else aggregates_of(name)
        return bool(names) and all(self._has_one_aggregate(a, columns) for a in names)

    def _has_one_aggregate(self, aggregate: str, columns: Iterable[str]) -> bool:
        from finops_cli.store.queries import AGGREGATES

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
    def transaction(self) -> Iterator[Transaction]:
        """Stage writes; commit all of them on normal exit, none on any exception (Ctrl-C included).

        A directory store's writer lock is taken first (waiting for any other writer); then the store is
        converted if it predates the log, an uncommitted transaction's files are dropped, and the newest
        generation is resolved: nothing is staged or read for merging outside the lock.
        """
        tx = Transaction(self, new_txid())
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
        return _reason(exc)

    # ------------------------------------------------- what differs between a directory and a bucket
    def _log_dir(self) -> Path:
        return _real_dir(self.root / LOG_DIR)

    def _log_where(self, generation: int) -> object:
        return self.root / LOG_DIR / generation_name(generation)

    def _generations(self) -> list[tuple[int, float | None]]:
        """Every committed generation, oldest first, with when it was written (None: unknown)."""
        try:
            entries = list(os.scandir(self._log_dir()))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise InputError(f"cannot list the store's log: {_reason(exc)}", path=self.root) from None
        gens = []
        for entry in entries:
            generation = generation_of(entry.name)
            if generation is not None:
                if not entry.is_file(follow_symlinks=False) and os.path.lexists(entry.path):
                    raise InputError("is not a regular file; is --store a finops store?", path=Path(entry.path))
                with suppress(FileNotFoundError):
                    gens.append((generation, entry.stat(follow_symlinks=False).st_mtime))
        return sorted(gens)

    def _read_log(self, generation: int) -> bytes:
        return _read_bounded(self._log_dir() / generation_name(generation))

    def _put_log(self, generation: int, body: bytes) -> bool:
        """Create ``_log/<generation>.json`` holding ``body`` unless it exists (False then): a fully written
        and synced temporary file is hard-linked into place, so the name appears complete or not at all."""
        log = self._log_dir()
        log.mkdir(exist_ok=True)
        tmp = log / f".{generation_name(generation)}.{uuid.uuid4().hex[:8]}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, log / generation_name(generation))
            except FileExistsError:
                return False
            _fsync_dir(log)
            return True
        finally:
            tmp.unlink(missing_ok=True)

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
        from finops_cli.store.legacy import legacy_state

        return legacy_state(self)

    def _begin(self) -> int | None:
        """Before a transaction: lock, convert a store that predates the log, drop uncommitted files."""
        from finops_cli.store.legacy import convert

        fd = _lock_for_writing(self.root)
        try:
            txn = _real_dir(self.root / TXN_DIR)
            self._state = None
            if not self._generations():
                convert(self)
                self._state = None
            state = self.state()
            live = {*state.files.values(), *(t for _, t, _ in state.pending)}
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
            sync_view(self)

    def _tidy(self, generation: int) -> None:
        """After a commit, best effort: drop generations whose successor is older than :data:`GRACE`.

        Ages are measured on the storage's clock (file or object times), against the generation just written, not
        against this process's clock: the two may disagree (a bucket server's clock, a skewed host)."""
        gens = self._generations()
        newest = gens[-1][1] if gens and gens[-1][1] is not None else time.time()
        cutoff = newest - GRACE.total_seconds()
        for (old, _), (_, written) in itertools.pairwise(gens):
            if old < generation and written is not None and written <= cutoff:
                with suppress(OSError):
                    self._delete_log(old)


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
    from finops_cli.schema.billing import BILLING_SCHEMA
    from finops_cli.schema.spot import SPOT_SCHEMA
    from finops_cli.schema.utilization import STORE_SCHEMA
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
    except FileNotFoundError:
        raise
    except OSError as exc:
        why = "a symlink" if exc.errno == errno.ELOOP else _reason(exc)
        raise InputError(f"unreadable store document ({why}); is --store a finops store?", path=path) from None
    try:
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


def _real_dir(path: Path) -> Path:
    """``path`` unless it exists as something other than a real directory (a symlink could lead outside)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise InputError(f"{path.name} is not a directory of this store; refusing to use the store", path=path.parent)
    return path


def _fsync_dir(path: Path) -> None:
    with suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def sync_view(store: Store) -> None:
    """Make a directory store's dataset directories hard links to exactly its live files (under the writer
    lock), for tools outside finops that glob ``billing/*/*/*.parquet``. finops never reads them; each link
    is replaced atomically, but such a reader can still see a commit half-applied (only the log is a snapshot).
    A symlink found there is removed (the link, never its target) so nothing is written through it."""
    root = store.root
    live = store.state().files
    for dataset in DATASETS:
        top_dir = root / dataset
        if top_dir.is_symlink():
            top_dir.unlink()
        if not top_dir.is_dir():
            continue
        for top, dirs, names in os.walk(top_dir, topdown=False):
            for name in [*names, *dirs]:
                path = Path(top, name)
                rel = path.relative_to(root).as_posix()
                if path.is_symlink() or (name in names and rel not in live and name.endswith(".parquet")):
                    path.unlink()
                elif name in dirs:
                    with suppress(OSError):
                        path.rmdir()  # empty once its files went
    for rel, txid in live.items():
        if txid == IN_PLACE:
            continue
        src, dst = Path(store.physical(rel, txid)), root / rel
        with suppress(FileNotFoundError):
            if os.path.samestat(os.lstat(src), os.lstat(dst)):
                continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.{txid}.link")
        tmp.unlink(missing_ok=True)
        os.link(src, tmp)
        os.replace(tmp, dst)


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


def stage_aggregates(staging: Path, staged: list[Path], read_from: Callable[[Path], Path] | None = None) -> list[Path]:
    """Build each staged detail file's aggregate (:data:`~finops_cli.store.queries.AGGREGATES`) beside it,
    under ``staging`` (detail file ``rel`` read from ``read_from(rel)``,
    default ``staging / rel``); the aggregates' paths.

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
        tables = engine.run_per_file(query, dataset, [read_from(rel) if read_from else staging / rel for rel in rels])
        for rel, table in zip(rels, tables, strict=True):
            target = Path(aggregate, *rel.parts[1:])
            path = staging / target
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path, compression="zstd")
            built.append(target)
    return built


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
    #: the generation this transaction started from (resolved under the writer lock on disk)
    base: State = field(default_factory=State)
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

    def rebuild_aggregates(self, detail: Iterable[Path]) -> list[Path]:
        """Stage the aggregates of committed detail files (relative paths), replacing theirs on commit.

        For stores written before the aggregates existed, or to rebuild them on another engine.
        """
        built = stage_aggregates(
            self.staging, list(detail), read_from=lambda rel: Path(self.store.locate(self.store.root / rel))
        )
        self._adopted += built
        return built

    def _plan(self) -> tuple[list[Path], list[Path], list[dict[str, Any]]] | None:
        """Close the staged files and work out the commit: (files to publish, files to delete, new manifest),
        all relative to the store root; None when the transaction changes nothing."""
        staged = (self._writer.close() if self._writer is not None else []) + self._adopted
        self._adopted = []
        staged += stage_aggregates(self.staging, staged) + self._adopted_aggregates
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
        due = [p for p in base.pending if _since(p[2]) <= now - GRACE]
        for rel, txid, _ in due:  # no generation a reader may still hold names them
            with suppress(OSError):
                store._delete_physical(rel, txid)
        pending = [p for p in base.pending if p not in due] + [(r, t, now.isoformat()) for r, t in replaced]
        generation = base.generation + 1
        doc = {
            "format": FORMAT,
            "generation": generation,
            "txid": self.txid,
            "committed_at": now.isoformat(),
            "files": dict(sorted(files.items())),
            "manifest": manifest,
            "pending": [list(p) for p in pending],
        }
        if not store._put_log(generation, json.dumps(doc, indent=1, default=str).encode()):
            store._discard(self)
            raise InputError(
                f"another writer committed generation {generation} while this one ran; nothing was committed "
                "(run the command again)",
                path=store.location,
            )
        store._state = State(generation, files, manifest, pending)
        with suppress(OSError, InputError):
            store._tidy(generation)
