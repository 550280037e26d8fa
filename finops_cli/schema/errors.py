"""Pydantic validation errors as one line per problem, naming the file, the line and the field path."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops_cli.files import Positions, position_of

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-after", "function-before")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


def _message(err: ErrorDetails) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown key (check the spelling)"
    if kind == "missing":
        return "required"
    if kind == "greater_than":
        return f"must be > {ctx.get('gt')}"
    if kind == "greater_than_equal":
        return f"must be >= {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"must be <= {ctx.get('le')}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def format_validation_error(
    path: Path | str, exc: ValidationError, positions: Positions | None = None, *, root: str = ""
) -> str:
    """``fleet.yaml: line 12, column 11: substrates[3].gpus: must be > 0`` — one line per problem.

    ``positions`` (from :func:`~finops_cli.files.read_yaml_positions`) adds where the offending value
    starts; a missing key points at the mapping that lacks it. ``root`` names a top-level list
    (``events`` → ``events[0].start``).
    """
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not str(p).startswith(("function-after", "function-before")))
        where = root + _field_path(loc)
        pos = position_of(positions, loc) if positions else None
        at = f"line {pos[0]}, column {pos[1]}: " if pos else ""
        lines.append(f"{path}: {at}{where + ': ' if where else ''}{_message(err)}")
    return "\n".join(lines)
