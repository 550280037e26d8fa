"""``s3://bucket/prefix`` and ``gs://bucket/prefix`` locations, opened through :mod:`pyarrow.fs`, with a bad URI,
a missing bucket or absent credentials one clear line (exit 2) before any work starts.

S3 credentials come from botocore's chain, resolved once and handed to pyarrow and boto3 alike;
``$FINOPS_S3_ENDPOINT`` (else ``$AWS_ENDPOINT_URL_S3`` / ``$AWS_ENDPOINT_URL``) names an S3-compatible server. GCS
uses Google's default credentials. Inputs are copied to a private temporary directory before parsing
(:func:`local_inputs`), so the readers stay local and streaming.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, is_dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from finops_cli.errors import InputError

T = TypeVar("T")

#: schemes finops reads (``gcs`` is pyarrow's other spelling of ``gs``)
SCHEMES = ("s3", "gs", "gcs")
ENDPOINT_ENV = "FINOPS_S3_ENDPOINT"
_ENDPOINT_FALLBACKS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
#: ``scheme:`` then slashes: ``s3://bucket`` as typed, ``s3:/bucket`` (or ``s3:``) as :class:`pathlib.Path` keeps it
#: (typer hands options over as Paths)
_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+):(?P<slashes>/*)(?P<rest>.*)$", re.S)
#: S3 and GCS bucket names: 3-63 (GCS: up to 222 with dots) lower-case letters, digits, dots, dashes, underscores
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


def as_uri(value: str | os.PathLike[str] | None) -> str | None:
    """``value`` as a normalised ``scheme://bucket/key`` URI, or None for a local path; an unknown scheme typed
    with ``://`` is refused rather than taken as a local directory named ``ftp:``."""
    if value is None:
        return None
    text = os.fspath(value)
    m = _URI.match(text)
    if m is None:  # a plain path (a one-letter "scheme" is a Windows drive)
        return None
    scheme, slashes, rest = m["scheme"].lower(), m["slashes"], m["rest"]
    if not slashes and (rest or not isinstance(value, Path)):
        return None  # "s3:notes" is a file name
    if scheme not in SCHEMES:
        raise InputError(f"unsupported URI scheme {scheme}:// (finops reads s3://, gs:// and local paths)", path=text)
    return f"{scheme}://{rest}"


def is_uri(value: str | os.PathLike[str] | None) -> bool:
    return as_uri(value) is not None


@dataclass(frozen=True)
class Location:
    """An opened URI: its file system and the ``bucket/key`` path inside it."""

    uri: str
    fs: Any  # pyarrow.fs.FileSystem
    path: str
    bucket: str
    scheme: str

    def uri_of(self, fs_path: str) -> str:
        return f"{self.scheme}://{fs_path}"


def split_uri(uri: str) -> tuple[str, str, str]:
    """(scheme, bucket, key without surrounding slashes), or one clear error for a malformed URI."""
    norm = as_uri(uri)
    if norm is None:
        raise InputError("not an s3:// or gs:// URI", path=uri)
    scheme, _, rest = norm.partition("://")
    bucket, _, key = rest.partition("/")
    key = key.strip("/")
    if not _BUCKET.match(bucket):
        raise InputError(
            f"bucket name {bucket!r} is not valid (3-63 lower-case letters, digits, dots, dashes)", path=norm
        )
    parts = key.split("/") if key else []
    if any(p in ("", ".", "..") for p in parts) or "\0" in key or "\\" in key:
        raise InputError("the key has an empty, '.' or '..' segment", path=norm)
    return ("gs" if scheme == "gcs" else scheme), bucket, key


def open_uri(uri: str, *, must_exist: bool = True) -> Location:
    """Open ``uri``'s file system; with ``must_exist`` its bucket must exist and be visible to us."""
    scheme, bucket, key = split_uri(uri)
    shown = f"{scheme}://{bucket}/{key}".rstrip("/")
    fs = _s3(bucket, shown) if scheme == "s3" else _gcs(shown)
    loc = Location(uri=shown, fs=fs, path=f"{bucket}/{key}".rstrip("/"), bucket=bucket, scheme=scheme)
    if must_exist:
        from pyarrow.fs import FileType

        if info(loc, bucket).type == FileType.NotFound:
            raise InputError(f"bucket {bucket!r} does not exist (or these credentials cannot see it)", path=shown)
    return loc


def info(loc: Location, path: str) -> Any:
    """``get_file_info`` with network and permission failures as one line."""
    try:
        return loc.fs.get_file_info(path)
    except OSError as exc:
        raise InputError(f"cannot reach the bucket: {short(exc)}", path=loc.uri) from None


def short(exc: BaseException) -> str:
    """An object-store error on one line (the AWS SDK's messages run to several)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def s3_endpoint() -> str | None:
    """The S3-compatible server to talk to, if one is named in the environment."""
    return next((os.environ[name] for name in (ENDPOINT_ENV, *_ENDPOINT_FALLBACKS) if os.environ.get(name)), None)


def s3_session() -> Any:
    """A botocore-backed boto3 session with credentials, or one clear error saying where they are looked for."""
    import boto3
    import botocore.exceptions

    try:
        session = boto3.Session()
        creds = session.get_credentials()
    except botocore.exceptions.BotoCoreError as exc:  # a named AWS_PROFILE that does not exist, a bad config
        raise InputError(f"AWS credentials: {short(exc)}") from None
    if creds is None:
        raise InputError(
            "no AWS credentials found (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, "
            "or an instance role); set them to use s3:// locations"
        )
    return session


def s3_client() -> Any:
    """A boto3 S3 client for the same identity and endpoint as :func:`open_uri` (used for conditional PUTs)."""
    session = s3_session()
    return session.client("s3", endpoint_url=s3_endpoint(), region_name=session.region_name or "us-east-1")


def _s3(bucket: str, shown: str) -> Any:
    from pyarrow import fs

    session = s3_session()
    frozen = session.get_credentials().get_frozen_credentials()
    endpoint = s3_endpoint()
    region = session.region_name
    if region is None and endpoint is None:
        try:
            region = fs.resolve_s3_region(bucket)
        except OSError as exc:
            raise InputError(f"cannot find the bucket's region ({short(exc)}); set AWS_REGION", path=shown) from None
    kwargs: dict[str, Any] = {
        "access_key": frozen.access_key,
        "secret_key": frozen.secret_key,
        "session_token": frozen.token,
        "region": region or "us-east-1",
        "connect_timeout": 10,
        "request_timeout": 60,
    }
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        kwargs["endpoint_override"] = host or endpoint
        kwargs["scheme"] = scheme or "https"
    try:
        return fs.S3FileSystem(**kwargs)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot open S3: {short(exc)}", path=shown) from None


def _gcs(shown: str) -> Any:
    from pyarrow import fs

    if not hasattr(fs, "GcsFileSystem"):
        raise InputError("this pyarrow build has no GCS support; use s3:// or a local path", path=shown)
    try:
        return fs.GcsFileSystem(retry_time_limit=timedelta(seconds=30))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot open GCS: {short(exc)}", path=shown) from None


# ------------------------------------------------------------------------------------------ inputs
#: local copy (a file or a directory) -> the URI it was copied from, for the running command
_ORIGINS: ContextVar[dict[str, str] | None] = ContextVar("finops_uri_origins", default=None)


def origin(value: Any) -> Any:
    """``value`` with every local copy made by :func:`local_inputs` named by its URI (strings, lists, dicts)."""
    origins = _ORIGINS.get()
    if not origins:
        return value
    if isinstance(value, str):
        for local, uri in origins.items():
            if value == local or value.startswith(local + os.sep):
                return uri + value[len(local) :].replace(os.sep, "/")
        return value
    if isinstance(value, list):
        return [origin(v) for v in value]
    if isinstance(value, dict):
        return {origin(k): origin(v) for k, v in value.items()}
    return value


def origin_fields(obj: T) -> T:
    """``obj`` (a result dataclass) with :func:`origin` applied to its fields, nested ones included, in place."""
    if not _ORIGINS.get():
        return obj
    if is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, str | dict):
                setattr(obj, f.name, origin(value))
            elif isinstance(value, list):
                setattr(obj, f.name, [origin_fields(v) if is_dataclass(v) else origin(v) for v in value])
            elif is_dataclass(value):
                origin_fields(value)
    return obj


@contextmanager
def local_inputs(paths: Sequence[str | os.PathLike[str]]) -> Iterator[list[str | Path]]:
    """``paths`` with each URI replaced by a private local copy (an object, or every object under a prefix), named
    as the original (formats are told apart by suffix) and removed on exit, whatever happens."""
    if not any(is_uri(p) for p in paths):
        yield [p if isinstance(p, str) else Path(p) for p in paths]
        return
    from pyarrow import fs as pafs

    tmp = Path(tempfile.mkdtemp(prefix="finops-inputs-"))
    origins = dict(_ORIGINS.get() or {})
    token = _ORIGINS.set(origins)
    try:
        out: list[str | Path] = []
        for i, p in enumerate(paths):
            uri = as_uri(p)
            if uri is None:
                out.append(p if isinstance(p, str) else Path(p))
                continue
            loc = open_uri(uri)
            found = info(loc, loc.path)
            if found.type == pafs.FileType.NotFound:
                raise InputError("no such object or prefix in the bucket", path=loc.uri)
            name = loc.path.rsplit("/", 1)[-1]
            local = tmp / str(i) / name
            _download(loc, found, local)
            origins[str(local)] = loc.uri
            out.append(local)
        yield out
    finally:
        _ORIGINS.reset(token)
        shutil.rmtree(tmp, ignore_errors=True)


def _download(loc: Location, found: Any, local: Path) -> None:
    """Copy the object ``found`` (or every object under the prefix) to ``local``, streaming."""
    from pyarrow import fs as pafs

    try:
        if found.type == pafs.FileType.File:
            pairs = [(loc.path, local)]
        else:
            listed = loc.fs.get_file_info(pafs.FileSelector(loc.path, recursive=True))
            pairs = [
                (i.path, local / i.path[len(loc.path) :].lstrip("/")) for i in listed if i.type == pafs.FileType.File
            ]
        for src, dst in pairs:
            dst.parent.mkdir(parents=True, exist_ok=True)
            pafs.copy_files(src, str(dst), source_filesystem=loc.fs, destination_filesystem=pafs.LocalFileSystem())
    except OSError as exc:
        raise InputError(f"cannot download: {short(exc)}", path=loc.uri) from None
