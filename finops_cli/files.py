"""Reading the small files a user names (YAML, plan JSON, traces, JSON feeds, small CSV tables) with one
clear error each.

Every failure is an :class:`~finops_cli.errors.InputError` that names the file and, for a syntax error,
the line and column; the caller says what the file should have been (``kind``). ``.gz`` files are
decompressed transparently. Large tabular inputs go through :mod:`finops_cli.ingest.readers` instead.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from finops_cli.errors import InputError


def read_text(path: Path, *, kind: str = "a text file", missing: str = "file not found") -> str:
    """The file's UTF-8 text; ``missing`` is the message when it does not exist."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                return fh.read()
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(missing, path=path) from None
    except IsADirectoryError:
        raise InputError(f"is a directory; expected {kind}", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}); expected {kind}", path=path) from None
    except (OSError, EOFError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or exc.__class__.__name__
        raise InputError(f"cannot read: {reason}", path=path) from None


def parse_json(text: str, path: Path, *, problem: str = "not valid JSON") -> Any:
    """Decode JSON text read from ``path``; a syntax error names its line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{problem}: {exc.msg}", path=path, where=f"line {exc.lineno}, column {exc.colno}") from None


def read_json(path: Path, *, kind: str = "a JSON file", problem: str = "not valid JSON") -> Any:
    """:func:`read_text` then :func:`parse_json`."""
    return parse_json(read_text(path, kind=kind), path, problem=problem)


def read_yaml(path: Path, *, kind: str = "a YAML file") -> Any:
    """The file's YAML document; a syntax error names its line and column."""
    text = read_text(path, kind=kind)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(f"invalid YAML ({problem})", path=path, where=where) from None


def read_csv_text(path: Path, *, kind: str) -> pd.DataFrame:
    """A small CSV table with every cell as text (no NA guessing) and header names stripped.

    Callers check the columns and values themselves and name a bad cell with :func:`csv_line`.
    """
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except FileNotFoundError:
        raise InputError(f"{kind} not found", path=path) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, IsADirectoryError) as exc:
        raise InputError(f"cannot read {kind} ({str(exc).splitlines()[0]})", path=path) from None
    raw.columns = [str(c).strip() for c in raw.columns]
    return raw


def csv_line(row: int) -> str:
    """Where data row ``row`` (0-based) of a CSV with one header line stands: ``line row + 2``."""
    return f"line {row + 2}"
