"""Reading the small files a user names (YAML, JSON, traces, small CSV tables, ``.gz`` or not): every failure is
one :class:`~finops_cli.errors.InputError` naming the file (and line and column), saying what it should be (``kind``).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import stat
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from finops_cli.atomic import note_input
from finops_cli.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    import yaml


def _yaml_loader() -> type[yaml.SafeLoader]:
    """libyaml's parser (~6x faster on a large scenario), else PyYAML's pure-Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


#: Whole-file inputs are read into memory: one larger than this decompressed is refused (a 4 MB gzip can hold
#: 4 GiB; ``/dev/zero`` never ends).
MAX_TEXT_BYTES = 256 << 20
#: Deeper nesting than this in a JSON/YAML input is refused (real documents nest a few levels).
MAX_DEPTH = 64
#: A document expanding to more values than this is refused (YAML aliases can multiply a small file).
MAX_VALUES = 50_000_000


def kind_of_path(path: Path) -> str:
    """What ``path`` is, for an error about a path that is not a regular file (a FIFO blocks, a device never ends)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc.__class__.__name__}"
    for test, what in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return f"is {what}"
    return "is not a regular file"


def _open_binary(path: Path) -> BinaryIO:
    """``path`` opened for reading bytes, decompressed if it ends in ``.gz``."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def read_bytes(path: Path, *, kind: str, missing: str = "file not found", limit: int | None = None) -> bytes:
    """The file's bytes (``.gz`` decompressed), at most ``limit`` (:data:`MAX_TEXT_BYTES`), else one clear error."""
    limit = MAX_TEXT_BYTES if limit is None else limit
    note_input(path)
    try:
        with _open_binary(path) as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise InputError(missing, path=path) from None
    except IsADirectoryError:
        raise InputError(f"is a directory; expected {kind}", path=path) from None
    except (OSError, EOFError, zlib.error) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or exc.__class__.__name__
        raise InputError(f"cannot read: {reason}", path=path) from None
    if len(data) > limit:
        raise InputError(f"larger than {limit >> 20} MiB (decompressed); expected {kind}", path=path)
    return data


def read_text(path: Path, *, kind: str = "a text file", missing: str = "file not found") -> str:
    """The file's UTF-8 text (at most :data:`MAX_TEXT_BYTES`); ``missing`` is the message when it is absent."""
    return decode_text(read_bytes(path, kind=kind, missing=missing), path, kind=kind)


def decode_text(data: bytes, path: Path, *, kind: str = "a text file") -> str:
    """``data`` as UTF-8 text, or the one-line error :func:`read_text` gives for bytes that are not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}); expected {kind}", path=path) from None


def check_depth(doc: Any, path: Path, *, limit: int = MAX_DEPTH, max_values: int | None = None) -> Any:
    """``doc`` unless it nests deeper than ``limit``, refers to itself, or expands to more than ``max_values``.

    YAML aliases make a document a graph (nine lines of ``[*a, *a, ...]`` expand to 10^9 values, ``&a [*a]`` is a
    cycle): sizes are memoised per node and the walk is iterative.
    """
    max_values = MAX_VALUES if max_values is None else max_values
    memo: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded values, depth)
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if not isinstance(node, dict | list) or (key in memo and not done):
            continue
        children = [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, dict | list)]
        if not done:
            if key in open_:
                continue
            open_.add(key)
            stack.append((node, True))
            for c in children:
                if id(c) in open_:
                    raise InputError("a value contains itself (a YAML alias cycle)", path=path)
                stack.append((c, False))
            if len(open_) > limit:
                raise InputError(f"nested more than {limit} levels deep", path=path)
            continue
        open_.discard(key)
        size = len(node) + sum(memo[id(c)][0] for c in children)
        depth = 1 + max((memo[id(c)][1] for c in children), default=0)
        if depth > limit:
            raise InputError(f"nested more than {limit} levels deep", path=path)
        if size > max_values:
            raise InputError(f"expands to more than {max_values:,} values (YAML aliases?)", path=path)
        memo[key] = (size, depth)
    return doc


def check_tree_depth(doc: Any, path: Path, *, limit: int = MAX_DEPTH, max_values: int | None = None) -> Any:
    """:func:`check_depth` for a tree such as :func:`json.loads` returns (no shared nodes): level by level, without
    the graph walk's memo (4x faster on a Prometheus response)."""
    max_values = MAX_VALUES if max_values is None else max_values
    level = [doc] if isinstance(doc, dict | list) else []
    depth = values = 0
    while level:
        depth += 1
        if depth > limit:
            raise InputError(f"nested more than {limit} levels deep", path=path)
        below: list[Any] = []
        for node in level:
            values += len(node)
            below += [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, dict | list)]
        if values > max_values:
            raise InputError(f"expands to more than {max_values:,} values", path=path)
        level = below
    return doc


def parse_json(text: str, path: Path, *, problem: str = "not valid JSON") -> Any:
    """Decode JSON text read from ``path``; a syntax error names its line and column."""
    import json  # not at the top: finops validate reads YAML only

    try:
        return check_tree_depth(json.loads(text), path)
    except json.JSONDecodeError as exc:
        raise InputError(f"{problem}: {exc.msg}", path=path, where=f"line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{problem}: nested more than {MAX_DEPTH} levels deep", path=path) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(f"{problem}: {str(exc).splitlines()[0]}", path=path) from None


def read_json(path: Path, *, kind: str = "a JSON file", problem: str = "not valid JSON") -> Any:
    """:func:`read_text` then :func:`parse_json`."""
    return parse_json(read_text(path, kind=kind), path, problem=problem)


#: Where each value of a YAML document starts: key/index path -> (line, column), both 1-based.
Positions = dict[tuple[str | int, ...], tuple[int, int]]


def read_yaml_positions(path: Path, *, kind: str = "a YAML file") -> tuple[Any, Positions]:
    """The file's YAML document and where each value starts (:data:`Positions`), for error messages.

    A mapping with the same key twice is refused (PyYAML would silently keep the last ``gpus:``). The document is
    composed into nodes with the safe loader, the nodes checked, then constructed.
    """
    return _parse_yaml(read_text(path, kind=kind), path)


def _parse_yaml(text: str, path: Path) -> tuple[Any, Positions]:
    """:func:`read_yaml_positions` of ``text``, read from ``path`` (named in errors)."""
    import yaml

    loader: Any = None
    try:
        loader = _yaml_loader()(text)  # the reader refuses NUL and other control characters right here
        node = loader.get_single_node()
        positions: Positions = {}
        if node is None:
            return None, positions
        _walk(node, (), positions, path, set())
        return check_depth(loader.construct_document(node), path), positions
    except RecursionError:
        raise InputError(f"invalid YAML (nested more than {MAX_DEPTH} levels deep)", path=path) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(f"invalid YAML ({str(exc).splitlines()[0]})", path=path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or "invalid YAML"
        if "nesting depth" in problem:  # libyaml's own limit, in the words the pure-Python path uses
            problem = f"nested more than {MAX_DEPTH} levels deep"
        raise InputError(f"invalid YAML ({problem})", path=path, where=where) from None
    finally:
        if loader is not None:
            loader.dispose()


def _walk(node: yaml.Node, loc: tuple[str | int, ...], positions: Positions, path: Path, visited: set[int]) -> None:
    """Record each node's position under its path; refuse duplicate keys (naming both lines). Each node is
    visited once (aliases reuse nodes); :func:`check_depth` judges the expanded document."""
    if id(node) in visited:
        return
    visited.add(id(node))
    positions[loc] = (node.start_mark.line + 1, node.start_mark.column + 1)
    kind = getattr(node, "id", "")  # yaml.nodes' classes name their kind: "mapping", "sequence" or "scalar"
    if kind == "mapping":
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or getattr(key_node, "id", "") != "scalar":
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
            _walk(value_node, (*loc, key), positions, path, visited)
    elif kind == "sequence":
        for i, item in enumerate(node.value):
            _walk(item, (*loc, i), positions, path, visited)


def position_of(positions: Positions, loc: tuple[object, ...]) -> tuple[int, int] | None:
    """Line and column of the value at ``loc`` (a pydantic error location), else of its nearest parent."""
    parts = [p if isinstance(p, int) else str(p) for p in loc]
    for n in range(len(parts), -1, -1):
        hit = positions.get(tuple(parts[:n]))
        if hit is not None:
            return hit
    return None


def read_csv_rows(path: Path, *, kind: str) -> tuple[list[str], list[list[str]]]:
    """A small CSV table as text, read by :mod:`csv` (no pandas): the header (names stripped) and the data rows.

    Blank lines are skipped, a short row is padded, a row longer than the header is refused naming its line;
    callers check the values and name a bad cell with :func:`csv_line`.
    """
    data = read_bytes(path, kind=kind, missing=f"{kind} not found")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {kind} (not UTF-8 text, byte {exc.start})", path=path) from None
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
    try:
        lines = [(reader.line_num, row) for row in reader if row]
    except csv.Error as exc:
        raise InputError(f"cannot read {kind} ({exc})", path=path, where=f"line {reader.line_num}") from None
    if not lines:
        raise InputError(f"cannot read {kind} (the file is empty: expected a header line)", path=path)
    header = [name.strip() for name in lines[0][1]]
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:
        raise InputError(f"cannot read {kind} (column(s) {twice} appear twice in the header)", path=path)
    rows = []
    for line, row in lines[1:]:
        if len(row) > len(header):
            raise InputError(f"cannot read {kind} (expected {len(header)} fields, saw {len(row)})", path=path,
                             where=f"line {line}")  # fmt: skip
        rows.append(row + [""] * (len(header) - len(row)))
    return header, rows


def read_csv_text(path: Path, *, kind: str) -> pd.DataFrame:
    """:func:`read_csv_rows` as a DataFrame of strings, for callers that go on in pandas."""
    import pandas as pd

    header, rows = read_csv_rows(path, kind=kind)
    return pd.DataFrame(rows, columns=header, dtype=str)


def csv_line(row: int) -> str:
    """Where data row ``row`` (0-based) of a CSV with one header line stands: ``line row + 2``."""
    return f"line {row + 2}"


def file_digest(path: Path) -> str:
    """SHA-1 of one file's bytes (hex), read into one reused buffer: a fingerprint, not a security check."""
    h = hashlib.sha1(usedforsecurity=False)
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def content_fingerprint(paths: Iterable[Path], digests: Mapping[str, str] | None = None) -> str:
    """20 hex digits that change with the files' bytes: one file's SHA-1, else the SHA-1 of their SHA-1s in path
    order (``digests``: :func:`file_digest` by path where already computed)."""
    files = sorted(Path(p) for p in paths)
    known = digests or {}
    each = [known.get(str(p)) or file_digest(p) for p in files]
    if len(each) == 1:
        return each[0][:20]
    return hashlib.sha1("\n".join(each).encode(), usedforsecurity=False).hexdigest()[:20]
