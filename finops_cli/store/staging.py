"""Parquet files written under a transaction's staging directory (by the transaction, a worker process or a
Spark task), named by :func:`~finops_cli.store.layout.file_path`."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from finops_cli.store.layout import file_path


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
        rel = Path(file_path(dataset, partition, key))
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
