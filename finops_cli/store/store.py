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

import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from finops_cli.atomic import write_text
from finops_cli.errors import InputError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; running one writer at a time is then the user's job
    fcntl = None  # type: ignore[assignment]

#: dataset name -> its Hive partition columns, outermost first.
DATASETS: dict[str, tuple[str, ...]] = {
    "billing": ("provider", "billing_period"),
    "utilization": ("month",),
    "spot_prices": ("provider", "month"),
}

DEFAULT_STORE_DIR = ".finops"
STORE_ENV = "FINOPS_STORE"
_MANIFEST = "manifest.json"
_STAGING = ".staging"
_LOCK = ".lock"


def resolve_store_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--store`` wins, then ``$FINOPS_STORE``, then ``.finops/`` in the working directory."""
    if explicit:
        return Path(explicit)
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env)
    return Path.cwd() / DEFAULT_STORE_DIR


def _partition_dir(dataset: str, partition: Mapping[str, str]) -> Path:
    cols = DATASETS[dataset]
    missing = [c for c in cols if c not in partition]
    if missing:
        raise ValueError(f"partition for {dataset!r} lacks {missing}")
    parts = [f"{c}={_safe_value(str(partition[c]))}" for c in cols]
    return Path(dataset, *parts)


def _safe_value(value: str) -> str:
    """Partition values become directory names: keep them to a safe alphabet."""
    if not value or any(ch in value for ch in "/\\\0") or value in {".", ".."}:
        raise InputError(f"invalid partition value {value!r}")
    return value


@dataclass
class Store:
    """A store root. Opening it finishes or discards any interrupted transaction."""

    root: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        for ancestor in (self.root, *self.root.parents):
            if ancestor.exists():
                if not ancestor.is_dir():
                    where = "is a file" if ancestor == self.root else f"{ancestor} is a file"
                    raise InputError(f"{where}; --store expects a directory", path=self.root)
                break
        if self.root.exists():
            self._recover()

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
        if not self.has(name):
            return None
        for path in self.files(name):  # footers only: a damaged file is named here, not as a traceback mid-scan
            try:
                pq.read_metadata(path)
            except (pa.ArrowException, OSError) as exc:
                raise InputError(
                    f"damaged store file ({exc}); delete it and ingest its source again", path=path
                ) from None
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

    def files(self, name: str) -> list[Path]:
        d = self.dataset_dir(name)
        return sorted(p for p in d.rglob("*.parquet") if not p.name.startswith((".", "_"))) if d.is_dir() else []

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

    def manifest(self) -> list[dict[str, Any]]:
        path = self.root / _MANIFEST
        if not path.exists():
            return []
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"unreadable store manifest ({exc}); is --store a finops store?", path=path) from None
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise InputError("not a finops store manifest (expected a JSON list of objects)", path=path)
        return entries

    # ----------------------------------------------------------------- writing
    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Stage writes; commit all of them on normal exit, none on any exception (Ctrl-C included)."""
        txid = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        tx = Transaction(self, txid)
        try:
            yield tx
        except BaseException:
            tx.abort()
            raise
        tx.commit()

    # ---------------------------------------------------------------- recovery
    def _recover(self) -> None:
        """Finish committed journals and drop staging debris, unless another process is writing right now."""
        fd = _open_lock(self.root, create=False)
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a live transaction elsewhere owns .staging: leave it alone
                os.close(fd)
                return
        try:
            for journal in sorted(self.root.glob(".journal-*.json")):
                _apply_journal(self.root, journal)
            staging = self.root / _STAGING
            if staging.is_dir():
                shutil.rmtree(staging, ignore_errors=True)
        finally:
            if fd is not None:
                os.close(fd)  # closing the descriptor releases the lock


def _open_lock(root: Path, *, create: bool) -> int | None:
    """The store's writer lock file (``.lock``), opened; None where advisory locks are unavailable."""
    if fcntl is None:
        return None
    path = root / _LOCK
    if not create and not path.exists():
        return None
    root.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def _apply_journal(root: Path, journal: Path) -> None:
    """Roll a committed transaction forward; every step is idempotent."""
    try:
        plan = json.loads(journal.read_text(encoding="utf-8"))
        if not isinstance(plan, dict) or not {"deletes", "moves", "staging"} <= plan.keys():
            raise TypeError("expected {deletes, moves, staging}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(
            f"unreadable transaction journal ({exc!r}); the store needs a manual look", path=journal
        ) from None
    for rel in plan["deletes"]:
        (root / rel).unlink(missing_ok=True)
    for src, dst in plan["moves"]:
        s, d = root / src, root / dst
        if s.exists():
            d.parent.mkdir(parents=True, exist_ok=True)
            os.replace(s, d)
    shutil.rmtree(root / plan["staging"], ignore_errors=True)
    journal.unlink(missing_ok=True)


def _remove_if_empty(directory: Path) -> None:
    """Drop ``.staging`` once no transaction uses it, so a refused ingest leaves the store byte-identical."""
    with suppress(OSError):
        directory.rmdir()


@dataclass
class Transaction:
    """Files staged for one atomic commit. Obtain one from :meth:`Store.transaction`."""

    store: Store
    txid: str
    _writers: dict[Path, pq.ParquetWriter] = field(default_factory=dict)
    _replace: set[Path] = field(default_factory=set)
    _manifest_entries: list[dict[str, Any]] = field(default_factory=list)
    _drop_sources: set[str] = field(default_factory=set)
    _remove: set[Path] = field(default_factory=set)
    _lock_fd: int | None = None
    rows_written: int = 0

    def _hold_lock(self) -> None:
        """Serialise writers: wait for any other transaction on this store, then hold its lock until the end."""
        if self._lock_fd is None and fcntl is not None:
            fd = _open_lock(self.store.root, create=True)
            assert fd is not None
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @property
    def staging(self) -> Path:
        return self.store.root / _STAGING / self.txid

    def write(self, dataset: str, partition: Mapping[str, str], key: str, data: pa.Table | pa.RecordBatch) -> None:
        """Append ``data`` (without partition columns) to file ``key`` of one partition."""
        rel = _partition_dir(dataset, partition) / f"{_safe_value(key)}.parquet"
        writer = self._writers.get(rel)
        if writer is None:
            self._hold_lock()
            path = self.staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = pq.ParquetWriter(path, data.schema, compression="zstd")
            self._writers[rel] = writer
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        writer.write_table(data)
        self.rows_written += data.num_rows

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

    def record(self, entry: Mapping[str, Any]) -> None:
        """Add a manifest entry (what was ingested, from where); committed with the data."""
        self._manifest_entries.append({"ingested_at": datetime.now(UTC).isoformat(), "txid": self.txid, **entry})

    def forget_source(self, source_key: str) -> None:
        """Drop earlier manifest entries with this ``source_key`` (a re-ingest replaces them)."""
        self._drop_sources.add(source_key)

    def abort(self) -> None:
        for w in self._writers.values():
            with suppress(Exception):
                w.close()
        self._writers.clear()
        shutil.rmtree(self.staging, ignore_errors=True)
        _remove_if_empty(self.staging.parent)
        self._release_lock()

    def commit(self) -> None:
        try:
            self._commit()
        finally:
            self._release_lock()

    def _commit(self) -> None:
        for w in self._writers.values():
            w.close()
        root = self.store.root
        staged = list(self._writers)
        self._writers.clear()
        if not staged and not self._manifest_entries and not self._replace and not self._remove:
            shutil.rmtree(self.staging, ignore_errors=True)
            _remove_if_empty(self.staging.parent)
            return
        self._hold_lock()  # the manifest is read, merged and replaced under the lock
        staging_rel = self.staging.relative_to(root)
        moves = [[str(staging_rel / rel), str(rel)] for rel in staged]
        deletes: list[str] = []
        written = {root / rel for rel in staged}
        for part in self._replace:
            pdir = root / part
            if pdir.is_dir():
                deletes += [str(p.relative_to(root)) for p in pdir.glob("*.parquet") if p not in written]
        deletes += [str(rel) for rel in self._remove if root / rel not in written and (root / rel).exists()]
        manifest = [
            e for e in self.store.manifest() if e.get("source_key") not in self._drop_sources
        ] + self._manifest_entries
        self.staging.mkdir(parents=True, exist_ok=True)
        (self.staging / _MANIFEST).write_text(json.dumps(manifest, indent=1, default=str), encoding="utf-8")
        moves.append([str(staging_rel / _MANIFEST), _MANIFEST])
        journal = root / f".journal-{self.txid}.json"
        write_text(journal, json.dumps({"moves": moves, "deletes": deletes, "staging": str(staging_rel)}))
        _apply_journal(root, journal)
        _remove_if_empty(self.staging.parent)
        # Empty partition directories left by deletions would confuse nobody, but tidy them.
        for part in self._replace:
            pdir = root / part
            if pdir.is_dir() and not any(pdir.iterdir()):
                pdir.rmdir()
