"""Escape untrusted strings (tag values, team names, resource ids) for GitHub markdown and chart labels.

Whoever created a resource wrote its tags, and they reach a leadership report and a pull-request comment: they
must not break a table, start emphasis, code or a link, inject HTML, render maths, ping people or turn into URLs.
CommonMark lets any ASCII punctuation be backslash-escaped, and a zero-width space (``&#8203;``) after ``@`` and
inside ``://`` / ``www.`` defuses GitHub's mention and URL autolinking, which work on the rendered text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from finops_cli.text import DEFAULT_MAX_LEN, one_line

#: Inline-significant markdown punctuation (CommonMark + GFM tables, strikethrough, maths).
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>#|~$&]|(?<![^\W_])_|_(?![^\W_]))")
_ZWSP = "&#8203;"


def md_text(value: object, max_len: int | None = DEFAULT_MAX_LEN) -> str:
    """Escape an untrusted string for inline GitHub markdown (prose or a table cell).

    The result renders as exactly the (one-lined, possibly shortened) original text: no HTML, no
    emphasis, no links, no table break, no mention.
    """
    text = _MD_SPECIAL.sub(r"\\\1", one_line(value, max_len))
    text = text.replace("@", "@" + _ZWSP)
    text = re.sub(r"(?i)(\w)://", lambda m: m.group(1) + ":" + _ZWSP + "//", text)
    text = re.sub(r"(?i)\bwww\.", "www" + _ZWSP + ".", text)
    return text


def plot_label(value: object, max_len: int | None = 40) -> str:
    """Make an untrusted string safe as a matplotlib label (``$`` would start mathtext)."""
    return one_line(value, max_len).replace("$", r"\$")


Align = Literal["left", "right", "center"]
_ALIGN_MARK = {"left": ":---", "right": "---:", "center": ":---:"}


def left_then_right(left: int, right: int) -> list[Align]:
    """Alignment for the usual table shape: ``left`` label columns, then ``right`` number columns."""
    labels: list[Align] = ["left"] * left
    numbers: list[Align] = ["right"] * right
    return labels + numbers


def md_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    align: Sequence[Align] | None = None,
    *,
    trusted: Sequence[bool] | bool | None = None,
    max_len: int | None = DEFAULT_MAX_LEN,
) -> str:
    """A GFM table; cells are escaped with :func:`md_text` unless ``trusted[i]`` marks column ``i``
    as already-safe markdown (e.g. numbers we formatted ourselves); ``trusted=True`` marks every column.

    Headers are escaped too. Returns the table without a trailing newline.
    """
    n = len(headers)
    align = list(align or ["left"] * n)
    trusted = [trusted] * n if isinstance(trusted, bool) else list(trusted or [False] * n)
    if len(align) != n or len(trusted) != n:
        raise ValueError("headers, align and trusted must have the same length")
    lines = [
        "| " + " | ".join(md_text(h, None) for h in headers) + " |",
        "| " + " | ".join(_ALIGN_MARK[a] for a in align) + " |",
    ]
    for row in rows:
        if len(row) != n:
            raise ValueError(f"row has {len(row)} cells, expected {n}")
        cells = [
            one_line(cell, None).replace("|", r"\|") if trusted[i] else md_text(cell, max_len)
            for i, cell in enumerate(row)
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
