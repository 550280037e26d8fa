"""Spark executors writing a bucket store (``s3://``/``gs://``) themselves, when the driver's disk is out of reach.

Each task stages on its executor's own disk as on any engine, then uploads its files under its own attempt's
prefix, ``_txn/<txid>/_tasks/<attempt>/`` (:func:`~finops_cli.store.layout.task_prefix`), with ``pyarrow.fs``
and the executor's own credentials and endpoint (its environment: nothing secret is in what the driver ships or
logs). A retried or speculative attempt writes under another name, so attempts never collide. The driver takes
the attempts Spark reported as successful, checks each file in one listing (size, and the MD5 the task tallied
against S3's ETag), and hands them to the transaction, which copies them inside the bucket to their committed
names before its conditional commit; the ``_tasks/`` prefix goes after the commit, or with a failed job.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from finops_cli.errors import InputError
from finops_cli.store.layout import task_prefix

T = TypeVar("T")
_CHUNK = 8 << 20
_PLAIN_ETAG = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class Uploaded:
    """What one task attempt put in the bucket: its prefix, and each staged file's (size, MD5 hex)."""

    prefix: str
    files: dict[str, tuple[int, str]]


def attempt_name() -> str:
    """This task attempt's name (unique in the application: Spark's task attempt id), else a random one."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return f"driver-{uuid.uuid4().hex[:12]}"
    return f"p{ctx.partitionId()}-a{ctx.attemptNumber()}-t{ctx.taskAttemptId()}"


def stage_and_upload(
    store_uri: str, txid: str, stage: Callable[[Path], T], files: Callable[[T], list[str]]
) -> tuple[T, Uploaded]:
    """On an executor: ``stage`` into a private directory of this executor's disk, then upload the ``files`` of
    its result under this attempt's prefix; the directory goes either way."""
    staging = Path(tempfile.mkdtemp(prefix="finops-task-"))
    try:
        result = stage(staging)
        return result, upload(store_uri, txid, staging, files(result))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def upload(store_uri: str, txid: str, staging: Path, rels: Sequence[str]) -> Uploaded:
    """On an executor: ``rels`` (under ``staging``) to this attempt's prefix of the store's transaction."""
    from pyarrow import fs as pafs

    from finops_cli.store.remote import ObjectStore

    store = ObjectStore.open(store_uri)  # credentials and endpoint: the executor's environment
    prefix = task_prefix(str(store.root), txid, attempt_name())
    files = {}
    for rel in rels:
        digest, size = hashlib.md5(usedforsecurity=False), 0
        with (staging / rel).open("rb") as src:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
        pafs.copy_files(str(staging / rel), f"{prefix}/{rel}", destination_filesystem=store.filesystem)
        files[rel] = (size, digest.hexdigest())
    return Uploaded(prefix, files)


def check_uploads(store: Any, txid: str, uploads: Sequence[Uploaded]) -> dict[Path, str]:
    """The files the successful attempts reported, each checked in the bucket (one listing): relative path ->
    object key, for :attr:`Transaction.remote`. A missing or different file is one line (nothing is committed)."""
    listed = _listing(store, task_prefix(str(store.root), txid))
    out: dict[Path, str] = {}
    for up in uploads:
        for rel, (size, md5) in up.files.items():
            key = f"{up.prefix}/{rel}"
            found = listed.get(key)
            if found is not None and found[1] is not None and found[1] != md5 and _encrypted_by_kms(store, key):
                found = (found[0], None)  # an SSE-KMS object's ETag is not its MD5: its size is what is checked
            if found is None or found[0] != size or (found[1] is not None and found[1] != md5):
                what = "missing" if found is None else "not what the task wrote"
                raise InputError(
                    f"a Spark task's staged file {rel} is {what} in the bucket; nothing was committed "
                    "(run the command again)",
                    path=store.location,
                )
            out[Path(rel)] = key
    return out


def _listing(store: Any, prefix: str) -> dict[str, tuple[int, str | None]]:
    """Every object under ``prefix``: key -> (size, MD5 when the object store says it: S3's single-part ETag)."""
    if store.loc.scheme == "s3":
        from finops_cli.uri import s3_client

        bucket, _, key = prefix.partition("/")
        found: dict[str, tuple[int, str | None]] = {}
        for page in s3_client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key + "/"):
            for obj in page.get("Contents", []):
                etag = str(obj.get("ETag", "")).strip('"')
                found[f"{bucket}/{obj['Key']}"] = (int(obj["Size"]), etag if _PLAIN_ETAG.fullmatch(etag) else None)
        return found
    from pyarrow.fs import FileSelector, FileType

    infos = store.filesystem.get_file_info(FileSelector(prefix, recursive=True, allow_not_found=True))
    return {i.path: (int(i.size), None) for i in infos if i.type == FileType.File}


def _encrypted_by_kms(store: Any, key: str) -> bool:
    """Whether an S3 object is encrypted with KMS (its ETag is then not the MD5 of its bytes)."""
    from finops_cli.uri import s3_client

    bucket, _, name = key.partition("/")
    try:
        head = s3_client().head_object(Bucket=bucket, Key=name)
    except Exception:  # unreachable or gone: the size and MD5 checks decide
        return False
    return str(head.get("ServerSideEncryption", "")).startswith("aws:kms")
