"""Every name inside a store, and the one reader of the store's JSON documents.

A store can come from anywhere (``aws s3 sync``, a CI cache), so every name read back from it is untrusted:
this module owns the grammar of datasets, partition paths, part names, transaction ids and generations, checks
each name before it becomes a path or an object key (:func:`object_key` refuses one that leaves the store), and
reads every store document through one bounded JSON reader (:func:`read_document`).
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from finops_cli.errors import InputError
from finops_cli.files import MAX_DEPTH, check_tree_depth

#: dataset name -> its Hive partition columns, outermost first.
DATASETS: dict[str, tuple[str, ...]] = {
    "billing": ("provider", "billing_period"),
    "utilization": ("month",),
    "spot_prices": ("provider", "month"),
    "contract_commitments": ("provider",),  # FOCUS 1.3 Contract Commitment rows (terms, not billed money)
    # ingest aggregates: one file per detail file, same partition and name, written at commit
    "billing_hourly": ("provider", "billing_period"),
    "utilization_hourly": ("month",),
    "utilization_devices": ("month",),
    "utilization_histogram": ("month",),
}

#: a partition value or file key (file systems allow 255 bytes per name; leave room for "provider=" and ".parquet")
MAX_NAME_BYTES = 200
#: the largest store document (a log generation, the manifest, a journal) read into memory
MAX_DOCUMENT_BYTES = 64 << 20
#: digits of a log generation's file name (``_log/00000000000000000042.json``)
GEN_DIGITS = 20
#: where each transaction's data files live, under the store's root
TXN_DIR = "_txn"
#: where each committed generation lives, under the store's root
LOG_DIR = "_log"
_TXID = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{8}")
_GENERATION_NAME = re.compile(rf"([0-9]{{{GEN_DIGITS}}})\.json")


def new_txid() -> str:
    """A transaction id: sortable by start time, unique across writers (:func:`check_txid`'s grammar)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def check_txid(value: object) -> str:
    """``value`` if it is a transaction id as :func:`new_txid` makes them, else ValueError (it becomes a key)."""
    if not isinstance(value, str) or not _TXID.fullmatch(value):
        raise ValueError(f"{_shown(value)} is not a transaction id")
    return value


def generation_of(name: str) -> int | None:
    """The generation a ``_log/`` entry's name holds (``00000000000000000042.json`` → 42), else None."""
    m = _GENERATION_NAME.fullmatch(name)
    return int(m.group(1)) if m else None


def generation_name(generation: int) -> str:
    if not 0 <= generation < 10**GEN_DIGITS:
        raise ValueError(f"generation {generation} out of range")
    return f"{generation:0{GEN_DIGITS}d}.json"


def safe_value(value: str) -> str:
    """Partition values and keys become path names: bounded, printable, visible to readers, one level."""
    if (
        not value
        or len(value.encode()) > MAX_NAME_BYTES
        or value.startswith((".", "_"))
        or any(ch in value for ch in "/\\")
        or not value.isprintable()
    ):
        raise InputError(
            f"invalid store partition value {_shown(value)} (expected up to {MAX_NAME_BYTES} bytes of printable "
            "text, no '/', '\\', leading '.' or '_')"
        )
    return value


def partition_dir(dataset: str, partition: Mapping[str, str]) -> PurePosixPath:
    """``billing/provider=aws/billing_period=2026-11`` for one partition of ``dataset`` (values checked)."""
    cols = DATASETS[dataset]
    missing = [c for c in cols if c not in partition]
    if missing:
        raise ValueError(f"partition for {dataset!r} lacks {missing}")
    return PurePosixPath(dataset, *(f"{c}={safe_value(str(partition[c]))}" for c in cols))


def file_path(dataset: str, partition: Mapping[str, str], key: str) -> PurePosixPath:
    """The logical path of data file ``key`` (a part name) of one partition."""
    return partition_dir(dataset, partition) / f"{safe_value(key)}.parquet"


#: a source written from several input files keeps one store file per input file: ``<key>``, ``<key>-part1``, …
_PART = re.compile(r"-part[1-9][0-9]*$")


def part_key(key: str, ordinal: int) -> str:
    """The store file (key) of the ``ordinal``-th input file holding lines of source ``key`` (command order): each
    input file writes its own part, so the store's bytes do not depend on how many convert in parallel."""
    return key if ordinal == 0 else f"{key}-part{ordinal}"


def file_source_key(stem: str) -> str:
    """The idempotency key a store file (its name without ``.parquet``) belongs to: the name less any part."""
    return _PART.sub("", stem)


def check_rel(rel: object) -> str:
    """``rel`` if it is a data file's logical path (:func:`file_path` of some dataset, partition and key),
    else ValueError: exactly the dataset's partition columns in order, each value and the key as
    :func:`safe_value` allows, ``.parquet`` at the end; nothing else can name a store file."""
    if not isinstance(rel, str):
        raise ValueError(f"{_shown(rel)} is not a data file of a finops store")
    parts = rel.split("/")
    cols = DATASETS.get(parts[0])
    ok = cols is not None and len(parts) == len(cols) + 2 and parts[-1].endswith(".parquet")
    try:
        if ok and cols is not None:
            values = {}
            for col, part in zip(cols, parts[1:-1], strict=True):
                name, eq, value = part.partition("=")
                ok = ok and name == col and eq == "=" and safe_value(value) == value
                values[col] = value
            ok = ok and str(file_path(parts[0], values, parts[-1][: -len(".parquet")])) == rel
    except InputError:
        ok = False
    if not ok:
        raise ValueError(f"{_shown(rel)} is not a data file of a finops store")
    return rel


def object_key(root: str, txid: str, rel: str) -> str:
    """Where the file ``rel`` written by transaction ``txid`` lives: ``<root>/_txn/<txid>/<rel>``.

    The one place a data file's key is built; both names are checked and the key must stay under ``root``.
    """
    key = f"{root}/{TXN_DIR}/{check_txid(txid)}/{check_rel(rel)}"
    if not PurePosixPath(key).is_relative_to(PurePosixPath(root)) or ".." in PurePosixPath(key).parts:
        raise ValueError(f"{_shown(key)} leads outside the store")
    return key


def task_prefix(root: str, txid: str, attempt: str | None = None) -> str:
    """Where Spark task attempts of transaction ``txid`` upload their files (``<root>/_txn/<txid>/_tasks/…``), each
    attempt under its own name; the driver publishes the chosen ones under :func:`object_key` names at commit."""
    prefix = f"{root}/{TXN_DIR}/{check_txid(txid)}/_tasks"
    if attempt is None:
        return prefix
    if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", attempt):
        raise ValueError(f"{_shown(attempt)} is not a task attempt name")
    return f"{prefix}/{attempt}"


def read_document(raw: bytes, where: object, *, what: str = "store document") -> Any:
    """The JSON in ``raw`` (at most :data:`MAX_DOCUMENT_BYTES`, nested at most 64 levels), else one clear line.

    Callers read at most ``MAX_DOCUMENT_BYTES + 1`` bytes, so a symlink to ``/dev/zero`` costs no more.
    """
    import json

    if len(raw) > MAX_DOCUMENT_BYTES:
        raise InputError(f"unreadable {what}: larger than {MAX_DOCUMENT_BYTES >> 20} MiB", path=where)
    try:
        return check_tree_depth(json.loads(raw), where)  # type: ignore[arg-type]
    except RecursionError:
        raise InputError(f"unreadable {what}: nested more than {MAX_DEPTH} levels deep", path=where) from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, a 4,300-digit integer
        raise InputError(f"unreadable {what}: {str(exc).splitlines()[0]}", path=where) from None


#: manifest fields other code reads, and the type each must have when present
_MANIFEST_FIELDS: dict[str, tuple[type, ...]] = {
    "dataset": (str,),
    "source_key": (str,),
    "source": (str,),
    "fingerprint": (str,),
    "ingested_at": (str,),
    "billing_period": (str,),
    "rows": (int,),
    "samples": (int,),
    "duplicates_dropped": (int,),
    "rows_new": (int,),
    "files": (list,),
    "providers": (list,),
    "months": (list,),
    "partitions": (list,),
    "billed_cost": (dict,),
    "sources": (dict,),
}


#: manifest fields whose values become partition values or file keys (:func:`safe_value`'s grammar)
_NAMES = ("dataset", "source_key", "billing_period", "providers", "months")


def _is_name(value: str) -> bool:
    try:
        safe_value(value)
    except InputError:
        return False
    return True


def check_manifest(doc: object, where: object) -> list[dict[str, Any]]:
    """``doc`` if it is a manifest (a list of entries whose fields have their types), else one clear line."""
    if not isinstance(doc, list) or not all(isinstance(e, dict) for e in doc):
        raise InputError("not a finops store manifest (expected a JSON list of objects)", path=where)
    for i, entry in enumerate(doc):
        for name, types in _MANIFEST_FIELDS.items():
            value = entry.get(name)
            if value is None:
                continue
            bad = not isinstance(value, types) or isinstance(value, bool)
            if not bad and isinstance(value, int):
                bad = value < 0
            if not bad and name in ("files", "providers", "months"):
                bad = not all(isinstance(v, str) for v in value)
            if not bad and name in _NAMES:  # these become partition values and file keys
                bad = not all(_is_name(v) for v in (value if isinstance(value, list) else [value]))
            if not bad and name == "partitions":
                bad = not all(isinstance(v, dict) for v in value)
            if not bad and name == "billed_cost":
                bad = not all(
                    isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value.values()
                )
            if bad:
                expected = {"billed_cost": "an object of finite amounts per currency"}.get(name, types[0].__name__)
                if name in _NAMES and isinstance(value, types):
                    expected = "names of printable text without '/', '\\', leading '.' or '_'"
                raise InputError(
                    f"manifest entry {i}: {name!r} is {_shown(value)}, expected {expected}; is `store` a finops store?",
                    mentions=("store",),
                    path=where,
                )
    return doc


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."
