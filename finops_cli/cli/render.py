"""Small shared rich helpers for terminal tables: money, percentages, and a money-table builder.

Used by ``plan``, ``waste``, ``stack``, ``report`` and ``gate`` so every money column looks the same:
right-aligned, thousands separators, a totals row, green for savings and red for increases. Signs and
words carry the meaning too, so the tables still read correctly with ``NO_COLOR`` or when piped.

API (keep it small)::

    money(1234.5, "USD")            -> "$1,234.50"
    money(-20, "USD", signed=True)  -> "-$20.00"
    pct(0.125)                      -> "12.5%"      (takes a fraction)
    money_table("Plan", [Col("Workload"), Col("Cost", "money")], rows, totals=True, currency="USD")
    table_text(table)               -> plain text (no colour), e.g. for ``--out``
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from finops_cli.report.format import compact_money, money, number, pct
from finops_cli.text import cell_safe

__all__ = ["Col", "compact_money", "money", "money_table", "number", "pct", "table_text"]

ColumnKind = Literal["text", "money", "delta", "saving", "pct", "delta_pct", "number"]

#: Rich styles: ``delta`` is an increase-is-bad column (cost change), ``saving`` an increase-is-good one.
GOOD = "green"
BAD = "red"
#: Like ``box.SIMPLE_HEAD`` but with a rule above the totals section.
_BOX = box.Box("    \n    \n ── \n    \n ── \n ── \n    \n    \n", ascii=False)


@dataclass(frozen=True)
class Col:
    """A column of :func:`money_table`.

    ``kind``: ``text`` (left-aligned), ``money``, ``number`` (right-aligned), ``delta`` (money change:
    increase red, decrease green), ``saving`` (money saved: positive green, negative red), ``pct``
    (a fraction), ``delta_pct`` (a signed fraction, coloured like ``delta``).
    """

    header: str
    kind: ColumnKind = "text"
    decimals: int | None = None


def _style_for(kind: ColumnKind, value: Any) -> str | None:
    if value is None or not isinstance(value, int | float) or value == 0:
        return None
    if kind in ("delta", "delta_pct"):
        return BAD if value > 0 else GOOD
    if kind == "saving":
        return GOOD if value > 0 else BAD
    return None


def _cell(col: Col, value: Any, currency: str) -> Text:
    if isinstance(value, Text):
        return value
    if col.kind == "text" or isinstance(value, str):
        return Text(cell_safe(value))  # a line end in data must not forge a row
    decimals = col.decimals
    if col.kind in ("money", "delta", "saving"):
        text = money(value, currency, signed=col.kind == "delta", decimals=decimals)
    elif col.kind in ("pct", "delta_pct"):
        text = pct(value, signed=col.kind == "delta_pct", decimals=1 if decimals is None else decimals)
    else:
        text = number(value, 0 if decimals is None else decimals)
    return Text(text, style=_style_for(col.kind, value) or "")


def money_table(
    title: str | None,
    columns: Sequence[Col | str],
    rows: Iterable[Sequence[Any]],
    *,
    totals: Sequence[Any] | bool | None = None,
    currency: str = "USD",
    caption: str | None = None,
) -> Table:
    """Build a rich table with aligned money columns and an optional bold totals row.

    Parameters
    ----------
    columns
        :class:`Col` specs (a bare string is a text column).
    rows
        Raw values (floats stay floats; the column kind formats them).
    totals
        ``True``: sum every money/delta/saving/number column, label the first column "Total";
        a sequence: that row as given; ``None``/``False``: no totals row.
    """
    cols = [c if isinstance(c, Col) else Col(c) for c in columns]
    table = Table(title=title, caption=caption, box=_BOX, title_justify="left", header_style="bold")
    for col in cols:
        table.add_column(col.header, justify="left" if col.kind == "text" else "right", no_wrap=col.kind != "text")
    materialised = [list(r) for r in rows]
    for row in materialised:
        table.add_row(*(_cell(col, value, currency) for col, value in zip(cols, row, strict=True)))
    if totals is True:
        total_row: list[Any] = []
        for i, col in enumerate(cols):
            if col.kind in ("money", "delta", "saving", "number"):
                total_row.append(sum(float(r[i]) for r in materialised if isinstance(r[i], int | float)))
            else:
                total_row.append("")
        if total_row and cols[0].kind == "text":
            total_row[0] = "Total"
        totals = total_row
    if totals:
        table.add_section()
        cells = [_cell(col, value, currency) for col, value in zip(cols, totals, strict=True)]
        for cell in cells:
            cell.stylize("bold")
        table.add_row(*cells)
    return table


def table_text(renderable: RenderableType, width: int = 120) -> str:
    """Render a rich renderable to plain text (no colour codes, no control characters from the data), e.g. for
    ``--out`` or tests."""
    from finops_cli.cli.console import SafeConsole

    buffer = io.StringIO()
    console = SafeConsole(
        file=buffer, width=width, no_color=True, color_system=None, highlight=False, soft_wrap=False, emoji=False
    )
    console.print(renderable)
    return buffer.getvalue()
