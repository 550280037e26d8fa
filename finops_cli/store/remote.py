"""The store in a bucket (``--store s3://bucket/prefix`` or ``gs://…``): the directory store's protocol on an
object store. A transaction stages locally and uploads under ``_txn/<txid>/``; there is no lock: the commit PUT
of ``_log/<N+1>.json`` carries ``If-None-Match: *`` (exists-then-PUT on GCS), uploads that never committed go once
older than :data:`ORPHAN_AGE`, and there is no hard-linked view. docs/schema.md ("What atomicity means on an
object store") states the promises and limits.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa

from finops_cli.errors import InputError
from finops_cli.store.layout import (
    LOG_DIR,
    MAX_DOCUMENT_BYTES,
    TXN_DIR,
    check_txid,
    generation_name,
    generation_of,
    task_prefix,
)
from finops_cli.store.log import State
from finops_cli.store.store import Store, Transaction
from finops_cli.uri import Location, open_uri, short

#: an uncommitted transaction's uploads older than this are debris of a killed writer
ORPHAN_AGE = timedelta(hours=6)


@dataclass
class ObjectStore(Store):
    """A store under an ``s3://`` or ``gs://`` prefix; :attr:`root` is ``bucket/prefix`` as a pure path."""

    loc: Location | None = None
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

    def file_schema(self, located: str) -> pa.Schema:
        """Cached: a committed object never changes (its name is unique), so its footer is fetched once."""
        if located not in self._schemas:
            self._schemas[located] = super().file_schema(located)
        return self._schemas[located]

    def _reason(self, exc: OSError) -> str:
        return short(exc)

    # ------------------------------------------------------------------ the protocol's primitives
    def _log_dir(self) -> str:  # type: ignore[override]
        return f"{self.root}/{LOG_DIR}"

    def _log_where(self, generation: int) -> object:
        return self.loc.uri_of(f"{self._log_dir()}/{generation_name(generation)}")  # type: ignore[union-attr]

    def _generations(self) -> list[tuple[int, float | None]]:
        from pyarrow.fs import FileSelector, FileType

        try:
            infos = self.filesystem.get_file_info(FileSelector(self._log_dir(), allow_not_found=True))
        except OSError as exc:
            raise InputError(f"cannot list the store: {short(exc)}", path=self.location) from None
        gens = []
        for info in infos:
            generation = generation_of(info.base_name)
            if generation is not None and info.type == FileType.File:
                gens.append((generation, info.mtime.timestamp() if info.mtime is not None else None))
        return sorted(gens)

    def _read_log(self, generation: int) -> bytes:
        try:
            with self.filesystem.open_input_stream(f"{self._log_dir()}/{generation_name(generation)}") as fh:
                return bytes(fh.read(MAX_DOCUMENT_BYTES + 1))
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise InputError(f"cannot read the store's state: {short(exc)}", path=self.location) from None

    def _put_log(self, generation: int, body: bytes) -> bool:
        return _put_if_absent(self, f"{self._log_dir()}/{generation_name(generation)}", body)

    def _delete_log(self, generation: int) -> None:
        self.filesystem.delete_file(f"{self._log_dir()}/{generation_name(generation)}")

    def _delete_physical(self, rel: str, txid: str) -> None:
        self.filesystem.delete_file(self.physical(rel, txid))

    def _legacy_state(self) -> State | None:
        from pyarrow.fs import FileType

        if self.filesystem.get_file_info(f"{self.root}/manifest.json").type == FileType.File:
            raise InputError(
                "holds a store copied from disk by an older finops (manifest.json, no _log/): a bucket store is "
                "written by finops itself (ingest into it), or copy it back to a directory and use `store` DIR",
                mentions=("store",),
                path=self.location,
            )
        return None

    def _begin(self) -> int | None:
        return None  # no lock: the conditional PUT decides

    def _new_staging(self, txid: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"finops-staging-{txid}-"))

    def _upload(self, tx: Transaction, staged: list[Path]) -> None:
        from pyarrow import fs as pafs

        for rel in staged:  # until the log object exists, none of them is named anywhere
            target = self.physical("/".join(rel.parts), tx.txid)
            _parent_dir(self, target)
            if rel in tx.remote:  # an executor's upload: copied inside the bucket, not through this machine
                self.filesystem.copy_file(tx.remote[rel], target)
            else:
                pafs.copy_files(str(tx.staging / rel), target, destination_filesystem=self.filesystem)

    def _discard(self, tx: Transaction) -> None:
        if tx._staging is not None:
            shutil.rmtree(tx._staging, ignore_errors=True)
        with suppress(OSError):
            self.filesystem.delete_dir(f"{self.root}/{TXN_DIR}/{check_txid(tx.txid)}")

    def _end(self, tx: Transaction) -> None:
        if tx._staging is not None:
            shutil.rmtree(tx._staging, ignore_errors=True)
        if tx.remote:  # the executors' uploads, copied to their names at commit
            with suppress(OSError):
                self.filesystem.delete_dir(task_prefix(str(self.root), tx.txid))

    def _tidy(self, generation: int) -> None:
        """Old generations (as on disk), then uploads of writers that never committed, once old enough."""
        from pyarrow.fs import FileSelector, FileType

        super()._tidy(generation)
        live = self.state().live_txids()
        cutoff = (datetime.now(UTC) - ORPHAN_AGE).strftime("%Y%m%dT%H%M%S")
        with suppress(OSError):
            for info in self.filesystem.get_file_info(FileSelector(f"{self.root}/{TXN_DIR}", allow_not_found=True)):
                txid = info.base_name
                if info.type == FileType.Directory and _is_txid(txid) and txid not in live and txid[:15] < cutoff:
                    self.filesystem.delete_dir(info.path)


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
    # no precondition API through pyarrow: exists-then-PUT (single writer assumed; docs/schema.md)
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


def _is_txid(name: str) -> bool:
    try:
        check_txid(name)
    except ValueError:
        return False
    return True
