"""The store in a bucket (``--store s3://bucket/prefix`` or ``gs://…``): same datasets, another commit protocol.

An object store has no rename and no ``flock``, so the local journal-and-rename commit cannot work. Here:

- every committed state is one JSON object, ``<prefix>/_log/<generation>.json`` (20-digit, zero-padded),
  naming each live data file and the manifest. Readers LIST ``_log/``, GET the highest generation and read
  **only the files it names**; nothing else under the prefix is ever read;
- a transaction stages its Parquet files in a private local directory (aggregates are built there, as on
  disk), uploads them under ``<prefix>/_txn/<txid>/`` (a name no other transaction uses), then PUTs the
  next generation with ``If-None-Match: *``. That single PUT is the commit point: before it, nothing a
  reader can see has changed (a killed ingest leaves only unreferenced objects under ``_txn/``); after
  it, the whole transaction is visible at once;
- two writers racing for the same generation: S3 (and S3-compatible servers that implement conditional
  writes) accept exactly one PUT and answer the other ``412 Precondition Failed``; the loser deletes its
  uploads and stops with exit 2 ("run it again"). Without conditional writes (GCS through pyarrow, which
  has no precondition API) the check is exists-then-PUT: one writer at a time is then the user's job;
- after a commit, the objects the new generation no longer names (replaced files) are deleted, log
  objects older than :data:`KEEP_GENERATIONS` are dropped, and ``_txn/`` directories of transactions that
  never committed are removed once older than :data:`ORPHAN_AGE`.

See docs/store.md ("What atomicity means on an object store").
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from finops_cli.errors import InputError
from finops_cli.store.layout import (
    DATASETS,
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
from finops_cli.store.store import Store, Transaction
from finops_cli.uri import Location, open_uri, short

FORMAT = "finops-object-store/1"
_LOG = "_log"
_TXN = TXN_DIR
#: log objects kept behind the newest (history for a manual look; readers only need the newest)
KEEP_GENERATIONS = 20
#: an uncommitted transaction's uploads older than this are debris of a killed writer
ORPHAN_AGE = timedelta(hours=6)


@dataclass
class _State:
    generation: int = 0
    #: logical path (``billing/provider=aws/billing_period=2026-11/<key>.parquet``) -> txid that wrote it
    files: dict[str, str] = field(default_factory=dict)
    manifest: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ObjectStore(Store):
    """A store under an ``s3://`` or ``gs://`` prefix; :attr:`root` is ``bucket/prefix`` as a pure path."""

    loc: Location | None = None
    _state: _State | None = None
    _schemas: dict[str, pa.Schema] = field(default_factory=dict)

    @classmethod
    def open(cls, uri: str) -> ObjectStore:
        loc = open_uri(uri)
        return cls(root=PurePosixPath(loc.path), loc=loc)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        if self.loc is None:
            raise ValueError("use ObjectStore.open(uri)")
        if "=" in self.loc.path:
            raise InputError("a store prefix may not contain '=' (it would read as a partition)", path=self.loc.uri)
        self.root = PurePosixPath(self.loc.path)  # type: ignore[assignment]

    @property
    def filesystem(self) -> Any:
        return self.loc.fs  # type: ignore[union-attr]

    @property
    def location(self) -> str:
        return self.loc.uri  # type: ignore[union-attr]

    # ------------------------------------------------------------------ the committed state
    def state(self) -> _State:
        """The newest committed generation (read once per store object; a transaction re-reads it)."""
        if self._state is None:
            self._state = self._read_state()
        return self._state

    def _log_dir(self) -> str:
        return f"{self.root}/{_LOG}"

    def _generations(self) -> list[int]:
        from pyarrow.fs import FileSelector, FileType

        try:
            infos = self.filesystem.get_file_info(FileSelector(self._log_dir(), allow_not_found=True))
        except OSError as exc:
            raise InputError(f"cannot list the store: {short(exc)}", path=self.location) from None
        gens = [generation_of(i.base_name) for i in infos if i.type == FileType.File]
        return sorted(g for g in gens if g is not None)

    def _log_path(self, generation: int) -> str:
        return f"{self._log_dir()}/{generation_name(generation)}"

    def _read_state(self) -> _State:
        gens = self._generations()
        if not gens:
            from pyarrow.fs import FileType

            if self.filesystem.get_file_info(f"{self.root}/manifest.json").type == FileType.File:
                raise InputError(
                    "holds a store copied from disk (manifest.json, no _log/): a bucket store is written by finops "
                    "itself (ingest into it), or copy it back to a directory and use --store DIR",
                    path=self.location,
                )
            return _State()
        path = self._log_path(gens[-1])
        where = self.loc.uri_of(path)  # type: ignore[union-attr]
        try:
            with self.filesystem.open_input_stream(path) as fh:
                raw = fh.read(MAX_DOCUMENT_BYTES + 1)
        except OSError as exc:
            raise InputError(f"cannot read the store's state: {short(exc)}", path=self.location) from None
        doc = read_document(raw, where, what="store state")
        try:
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} state")
            if doc.get("generation") != gens[-1]:
                raise ValueError(f"its generation is {doc.get('generation')!r}, its name says {gens[-1]}")
            files = doc["files"]
            if not isinstance(files, dict):
                raise ValueError("files must map paths to transaction ids")
            for rel, txid in files.items():
                check_rel(rel)
                check_txid(txid)
        except (ValueError, KeyError) as exc:
            raise InputError(f"unreadable store state ({exc}); is --store a finops store?", path=where) from None
        return _State(gens[-1], files, check_manifest(doc.get("manifest"), where))

    # ------------------------------------------------------------------------------ reading
    def physical(self, rel: str, txid: str) -> str:
        return object_key(str(self.root), txid, rel)

    def locate(self, path: Path) -> str:
        rel = str(PurePosixPath(path).relative_to(self.root))
        return self.physical(rel, self.state().files[rel])

    def files(self, name: str) -> list[Path]:
        if name not in DATASETS:
            raise ValueError(f"unknown dataset {name!r}; known: {sorted(DATASETS)}")
        return sorted(self.root / rel for rel in self.state().files if rel.startswith(name + "/"))

    def has(self, name: str) -> bool:
        return bool(self.files(name))

    def file_keys(self, dataset: str, partition: Any) -> list[str]:
        pdir = str(partition_dir(dataset, partition))
        return sorted(PurePosixPath(r).stem for r in self.state().files if str(PurePosixPath(r).parent) == pdir)

    def partition_files(self, partition_dir: Path) -> list[Path]:
        pdir = str(partition_dir)
        return [Path(r) for r in self.state().files if str(PurePosixPath(r).parent) == pdir]

    def has_file(self, rel: Path) -> bool:
        return str(rel) in self.state().files

    def manifest(self) -> list[dict[str, Any]]:
        return self.state().manifest

    def _check_no_interrupted_commit(self) -> None:
        """Nothing to replay on an object store: an uncommitted transaction is invisible by construction."""

    def dataset(self, name: str, schema: pa.Schema | None = None) -> ds.Dataset | None:
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

    def file_schema(self, located: str) -> pa.Schema:
        """Cached: a committed object never changes (its name is unique), so its footer is fetched once."""
        if located not in self._schemas:
            self._schemas[located] = super().file_schema(located)
        return self._schemas[located]

    # ------------------------------------------------------------------------------ writing
    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Stage locally, upload under a fresh ``_txn/<txid>/``, commit by one conditional PUT (module docstring)."""
        self._state = None  # commit against the newest generation
        base = self.state()
        tx = ObjectTransaction(self, new_txid(), base=base)
        try:
            try:
                yield tx
            except BaseException:
                tx.abort()
                raise
            tx.commit()
        except OSError as exc:
            raise InputError(
                f"cannot write the store: {short(exc)}; nothing was committed", path=self.location
            ) from None


@dataclass
class ObjectTransaction(Transaction):
    """A transaction on an :class:`ObjectStore`: staged on local disk, published by one PUT."""

    base: _State | None = None
    _local: Path | None = None

    @property
    def staging(self) -> Path:
        if self._local is None:
            self._local = Path(tempfile.mkdtemp(prefix=f"finops-staging-{self.txid}-"))
        return self._local

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.discard()
        if self._local is not None:
            shutil.rmtree(self._local, ignore_errors=True)

    def _commit(self) -> None:
        store: ObjectStore = self.store  # type: ignore[assignment]
        try:
            planned = self._plan()
            if planned is None:
                return
            staged, deleted, manifest = planned
            self._publish(store, staged, deleted, manifest)
        finally:
            if self._local is not None:
                shutil.rmtree(self._local, ignore_errors=True)

    def _publish(self, store: ObjectStore, staged: list[Path], deleted: list[Path], manifest: list[dict]) -> None:
        from pyarrow import fs as pafs

        base = self.base or _State()
        files = dict(base.files)
        for rel in deleted:
            files.pop(str(rel), None)
        for rel in staged:  # uploads first: until the log object exists, none of them is named anywhere
            target = store.physical(str(rel), self.txid)
            _parent_dir(store, target)
            pafs.copy_files(str(self.staging / rel), target, destination_filesystem=store.filesystem)
            files[str(rel)] = self.txid
        generation = base.generation + 1
        doc = {
            "format": FORMAT,
            "generation": generation,
            "txid": self.txid,
            "committed_at": datetime.now(UTC).isoformat(),
            "files": dict(sorted(files.items())),
            "manifest": manifest,
        }
        body = json.dumps(doc, indent=1, default=str).encode()
        if not _put_if_absent(store, store._log_path(generation), body):
            self._discard_uploads(store)
            raise InputError(
                f"another writer committed generation {generation} while this one ran; nothing was committed "
                "(run the command again)",
                path=store.location,
            )
        store._state = _State(generation, files, manifest)
        _tidy(store, base, files, generation)

    def _discard_uploads(self, store: ObjectStore) -> None:
        with suppress(OSError):
            store.filesystem.delete_dir(f"{store.root}/{_TXN}/{self.txid}")


def _put_if_absent(store: ObjectStore, path: str, body: bytes) -> bool:
    """PUT ``body`` at ``path`` unless an object is there; False if one is. Conditional where the store can."""
    from pyarrow.fs import FileType

    if store.loc is not None and store.loc.scheme == "s3":
        import botocore.exceptions

        from finops_cli.uri import s3_client

        bucket, _, key = path.partition("/")
        try:
            s3_client().put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*", ContentType="application/json")
        except botocore.exceptions.ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                return False
            raise InputError(f"cannot commit to the store: {short(exc)}", path=store.location) from None
        except botocore.exceptions.BotoCoreError as exc:
            raise InputError(f"cannot commit to the store: {short(exc)}", path=store.location) from None
        return True
    # no precondition API through pyarrow: exists-then-PUT (single writer assumed; docs/store.md)
    if store.filesystem.get_file_info(path).type != FileType.NotFound:
        return False
    _parent_dir(store, path)
    with store.filesystem.open_output_stream(path) as out:
        out.write(body)
    return True


def _parent_dir(store: ObjectStore, path: str) -> None:
    """Directories exist only on a local file system (a bucket has none; creating one writes a marker)."""
    if store.filesystem.type_name == "local":
        store.filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)


def _tidy(store: ObjectStore, base: _State, files: dict[str, str], generation: int) -> None:
    """Best effort after a commit: delete replaced objects, old log objects and killed writers' uploads.

    Each step on its own: a failure (a permission to delete withheld) leaves debris, never a wrong state.
    """
    from pyarrow.fs import FileSelector, FileType

    fs = store.filesystem
    for rel, txid in base.files.items():
        if files.get(rel) != txid:
            with suppress(OSError):
                fs.delete_file(store.physical(rel, txid))
    with suppress(OSError):
        for gen in store._generations():
            if gen <= generation - KEEP_GENERATIONS:
                fs.delete_file(store._log_path(gen))
    live = set(files.values())
    cutoff = (datetime.now(UTC) - ORPHAN_AGE).strftime("%Y%m%dT%H%M%S")
    with suppress(OSError):
        for info in fs.get_file_info(FileSelector(f"{store.root}/{_TXN}", allow_not_found=True)):
            txid = info.base_name
            if info.type == FileType.Directory and _is_txid(txid) and txid not in live and txid[:15] < cutoff:
                fs.delete_dir(info.path)


def _is_txid(name: str) -> bool:
    try:
        check_txid(name)
    except ValueError:
        return False
    return True
