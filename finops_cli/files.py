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


#: Where each value of a YAML document starts: key/index path -> (line, column), both 1-based.
Positions = dict[tuple[str | int, ...], tuple[int, int]]


def read_yaml(path: Path, *, kind: str = "a YAML file") -> Any:
    """The file's YAML document; a syntax error or a duplicate key names its line and column."""
    return read_yaml_positions(path, kind=kind)[0]


def read_yaml_positions(path: Path, *, kind: str = "a YAML file") -> tuple[Any, Positions]:
    """The file's YAML document and where each value starts (:data:`Positions`), for error messages.

    A mapping with the same key twice is refused (YAML 1.2 says keys are unique; PyYAML would silently
    keep the last one, so a second ``gpus:`` would win unseen).
    """
    text = read_text(path, kind=kind)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        positions: Positions = {}
        if node is None:
            return None, positions
        _walk(node, (), positions, path, set())
        return loader.construct_document(node), positions
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(f"invalid YAML ({problem})", path=path, where=where) from None
    finally:
        loader.dispose()


def _walk(node: yaml.Node, loc: tuple[str | int, ...], positions: Positions, path: Path, active: set[int]) -> None:
    """Record each node's position under its path; refuse duplicate keys (naming both lines)."""
    if id(node) in active:  # a recursive alias (``&a [*a]``): the construction step reports it, if at all
        return
    active = active | {id(node)}
    positions[loc] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise InputError(
                    f"duplicate key {key!r} (first at line {seen[key]}); each key may appear once in a mapping",
                    path=path,
                    where=f"line {line}, column {key_node.start_mark.column + 1}",
                )
            seen[key] = line
            _walk(value_node, (*loc, key), positions, path, active)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*loc, i), positions, path, active)


def position_of(positions: Positions, loc: tuple[object, ...]) -> tuple[int, int] | None:
    """Line and column of the value at ``loc`` (a pydantic error location), else of its nearest parent."""
    parts = [p if isinstance(p, int) else str(p) for p in loc]
    for n in range(len(parts), -1, -1):
        hit = positions.get(tuple(parts[:n]))
        if hit is not None:
            return hit
    return None


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
