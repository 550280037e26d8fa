"""The store's log: a committed generation (:class:`State`) as a document, and the disk primitives of a directory
store (bounded reads that refuse symlinks, create-if-absent, the writer lock, the hard-linked view).

The protocol is described for users in docs/schema.md ("What a commit means").
"""

from __future__ import annotations

import errno
import json
import os
import stat
import uuid
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from finops_cli.errors import InputError
from finops_cli.store.layout import (
    DATASETS,
    MAX_DOCUMENT_BYTES,
    check_manifest,
    check_rel,
    check_txid,
    object_key,
    read_document,
)

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; running one writer at a time is then the user's job
    fcntl = None  # type: ignore[assignment]

#: the format tag of every log generation (both stores share it)
FORMAT = "finops-object-store/1"
#: the transaction id of a file read in place from a store not yet converted to the log (:mod:`.legacy`)
IN_PLACE = ""
LOCK = ".lock"


@dataclass
class State:
    """One committed generation: what a reader reads, and what the next commit starts from."""

    generation: int = 0
    #: logical path (``billing/provider=aws/billing_period=2026-11/<key>.parquet``) -> txid that wrote it
    files: dict[str, str] = field(default_factory=dict)
    manifest: list[dict[str, Any]] = field(default_factory=list)
    #: files replaced by a commit and not deleted yet: (logical path, txid, when it was replaced, ISO 8601)
    pending: list[tuple[str, str, str]] = field(default_factory=list)

    def live_txids(self) -> set[str]:
        """The transactions whose files this generation still names (live or pending)."""
        return {*self.files.values(), *(t for _, t, _ in self.pending)}

    def document(self, txid: str, now: datetime) -> bytes:
        """This generation as the log stores it, committed by ``txid`` at ``now``."""
        doc = {
            "format": FORMAT,
            "generation": self.generation,
            "txid": txid,
            "committed_at": now.isoformat(),
            "files": dict(sorted(self.files.items())),
            "manifest": self.manifest,
            "pending": [list(p) for p in self.pending],
        }
        return json.dumps(doc, indent=1, default=str).encode()


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
            parse_time(since)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"unreadable store state ({exc}); is `store` a finops store?", mentions=("store",), path=where
        ) from None
    return State(generation, files, check_manifest(doc.get("manifest"), where), [tuple(p) for p in pending])


def parse_time(value: object) -> datetime:
    if not isinstance(value, str) or len(value) > 40:
        raise ValueError(f"{value!r} is not a time")
    when = datetime.fromisoformat(value)
    if when.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return when


def read_bounded(path: Path) -> bytes:
    """At most :data:`MAX_DOCUMENT_BYTES` + 1 bytes of a store document: a regular file, never a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        why = "a symlink" if exc.errno == errno.ELOOP else reason(exc)
        raise InputError(
            f"unreadable store document ({why}); is `store` a finops store?", mentions=("store",), path=path
        ) from None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise InputError("not a regular file; is `store` a finops store?", mentions=("store",), path=path)
            return fh.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        why = "a symlink" if exc.errno == errno.ELOOP else reason(exc)
        raise InputError(
            f"unreadable store document ({why}); is `store` a finops store?", mentions=("store",), path=path
        ) from None


def create_if_absent(path: Path, body: bytes) -> bool:
    """Create ``path`` holding ``body`` unless it exists (False then): a fully written and synced temporary file
    is hard-linked into place, so the name appears complete or not at all."""
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        with suppress(OSError):
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return exc.strerror or str(exc) or exc.__class__.__name__


def lock_for_writing(root: Path) -> int | None:
    """Create the store if needed, open its ``.lock`` and hold it exclusively (waiting for other writers)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        if fcntl is None:
            return None
        path = root / LOCK
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise InputError(
                f"{LOCK} is not a regular file; is `store` a finops store?", mentions=("store",), path=root
            )
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise InputError(f"cannot write the store: {reason(exc)}", path=root) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        os.close(fd)
        raise InputError(f"cannot lock the store: {reason(exc)}", path=root) from None
    return fd


def writer_is_live(root: Path) -> bool:
    """Whether a transaction holds the store's lock now (read-only probe: works on a read-only store)."""
    path = root / LOCK
    if fcntl is None or not path.is_file():
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


def real_dir(path: Path) -> Path:
    """``path`` unless it exists as something other than a real directory (a symlink could lead outside)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise InputError(f"{path.name} is not a directory of this store; refusing to use the store", path=path.parent)
    return path


def sync_view(root: Path, live: dict[str, str]) -> None:
    """Make a directory store's dataset directories hard links to exactly its ``live`` files (under the writer
    lock), for tools outside finops that glob ``billing/*/*/*.parquet`` (finops never reads them; such a reader
    can see a commit half-applied). A symlink found there is removed (the link, never its target)."""
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
        src, dst = Path(object_key(str(root), txid, rel)), root / rel
        with suppress(FileNotFoundError):
            if os.path.samestat(os.lstat(src), os.lstat(dst)):
                continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.{txid}.link")
        tmp.unlink(missing_ok=True)
        os.link(src, tmp)
        os.replace(tmp, dst)
