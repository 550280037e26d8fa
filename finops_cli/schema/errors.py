"""Pydantic validation errors as one line per problem, naming the file, the line and the field path."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops_cli.files import Positions, position_of

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


#: pydantic error type -> our words (``{gt}`` etc. from the error's context)
_MESSAGES = {
    "extra_forbidden": "unknown key (check the spelling)",
    "missing": "required",
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than_equal": "must be <= {le}",
    "literal_error": "must be one of {expected}",
}


def _message(err: ErrorDetails) -> str:
    template = _MESSAGES.get(err["type"])
    if template is None:
        return str(err["msg"]).removeprefix("Value error, ")
    return template.format_map(defaultdict(lambda: None, err.get("ctx") or {}))


def format_validation_error(
    path: Path | str, exc: ValidationError, positions: Positions | None = None, *, root: str = ""
) -> str:
    """``fleet.yaml: line 12, column 11: substrates[3].gpus: must be > 0``, one line per problem: ``positions``
    (:func:`~finops_cli.files.read_yaml_positions`) adds where the value starts; ``root`` names a top-level list."""
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not str(p).startswith(("function-after", "function-before")))
        where = root + _field_path(loc)
        pos = position_of(positions, loc) if positions else None
        at = f"line {pos[0]}, column {pos[1]}: " if pos else ""
        lines.append(f"{path}: {at}{where + ': ' if where else ''}{_message(err)}")
    return "\n".join(lines)
