"""What every reader shares: the file names understood, discovery of input files, the batch type, limits."""

from __future__ import annotations

import gzip
import io
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from finops_cli.atomic import note_input
from finops_cli.errors import InputError
from finops_cli.files import kind_of_path

#: File name endings the readers understand, longest first.
SUFFIXES: tuple[str, ...] = (
    ".csv.gz",
    ".jsonl.gz",
    ".ndjson.gz",
    ".json.gz",
    ".csv",
    ".parquet",
    ".jsonl",
    ".ndjson",
    ".json",
)

NULL_VALUES = ["", "NULL", "null", "None", "NaN", "nan", "N/A"]

#: Rows per batch for CSV (via the block size) and Parquet/JSONL; large enough to amortise per-batch work.
CSV_BLOCK_BYTES = 8 << 20
BATCH_ROWS = 65_536
#: Longest header line or JSON Lines record read (decompressed): a 3 MB gzip can hold a 3 GiB line.
MAX_LINE_BYTES = 64 << 20
READ_ERRORS = (pa.ArrowException, OSError, EOFError, UnicodeDecodeError, ValueError, gzip.BadGzipFile)


@dataclass(frozen=True)
class RowBatch:
    """A record batch and the 1-based data-row number of its first row (header not counted)."""

    batch: pa.RecordBatch
    first_row: int


def kind_of(path: Path) -> str:
    """``csv`` | ``parquet`` | ``jsonl`` from the file name (``.gz`` allowed for text formats)."""
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")):
        return "jsonl"
    raise InputError(f"unsupported file type; expected one of {', '.join(SUFFIXES)}", path=path)


def discover(paths: Iterable[str | Path], what: str = "export", suffixes: Collection[str] = SUFFIXES) -> list[Path]:
    """Expand files and directories (recursively, see :func:`files_in`) into a de-duplicated list of files."""
    found: dict[Path, Path] = {}
    for raw in paths:
        p = existing_path(raw)
        if p.is_dir():
            inside = files_in(p, suffixes)
            if not inside:
                raise InputError(f"directory holds no {what} files ({', '.join(suffixes)})", path=p)
        else:
            kind_of(p)
            inside = [p]
        for f in inside:
            found.setdefault(f.resolve(), f)
    if not found:
        raise InputError(f"no {what} files given")
    return list(found.values())


def existing_path(raw: str | Path) -> Path:
    """``raw`` as a path that exists and is a directory or a regular file (a FIFO would block or never end)."""
    p = Path(raw)
    if not p.exists():
        raise InputError("no such file or directory", path=p)
    if not p.is_dir() and not p.is_file():
        raise InputError(f"{kind_of_path(p)}; expected a regular file", path=p)
    return p


def files_in(directory: Path, suffixes: Collection[str]) -> list[Path]:
    """The files under ``directory`` named with one of ``suffixes``, sorted; hidden (``.x``) and ``_``-named
    files and directories (``_SUCCESS``) are skipped."""
    note_input(directory, tree=True)
    return sorted(
        f
        for f in directory.rglob("*")
        if f.is_file()
        and f.name.lower().endswith(tuple(suffixes))
        and not any(part.startswith((".", "_")) for part in f.relative_to(directory).parts)
    )


def open_text(path: Path) -> io.TextIOBase:
    raw = gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")  # noqa: SIM115
    return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")


def short_message(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg[:300]
