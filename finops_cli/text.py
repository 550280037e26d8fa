"""The one sanitiser for text: data finops prints or writes cannot drive a terminal or forge lines.

Tags, ids and names come from other people's files: an escape sequence clears the screen or writes the clipboard,
``\\r`` overwrites what was printed, a bidi override reads backwards, a newline in a cell forges a row. Every text
output goes through :func:`terminal_safe` (whole documents) or :func:`cell_safe` (one table cell), on a terminal,
a pipe or ``--out``; the CLI's consoles apply it to all they render.
"""

from __future__ import annotations

import re
import unicodedata

#: bidi embeddings, overrides, isolates and marks: "evil\u202eexe.txt" displays reversed (Trojan Source)
BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: C0 controls except tab and newline, DEL, C1 controls (8-bit CSI/OSC), Unicode line/paragraph separators
CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029"
_CONTROL = re.compile(f"[{CONTROLS}{BIDI}]")
_CELL = re.compile(f"[\t\n{CONTROLS}{BIDI}]")
REPLACEMENT = "\ufffd"
_BIDI_RE = re.compile(f"[{BIDI}]")
DEFAULT_MAX_LEN = 80


def terminal_safe(text: str) -> str:
    """``text`` with every control character (but tab and newline) and bidi control shown as U+FFFD."""
    return _CONTROL.sub(REPLACEMENT, text) if _CONTROL.search(text) else text


def cell_safe(value: object) -> str:
    """One value on one line: also tab and newline become U+FFFD, so a value cannot start a forged row."""
    text = "" if value is None else str(value)
    return _CELL.sub(REPLACEMENT, text) if _CELL.search(text) else text


def one_line(value: object, max_len: int | None = DEFAULT_MAX_LEN) -> str:
    """Make ``value`` a single printable line: control characters and line breaks become spaces,
    runs of whitespace collapse, bidi overrides are dropped, and long strings are shortened in the
    middle (``head…tail``) so two long ids stay distinguishable."""
    text = "" if value is None else str(value)
    if not (text.isprintable() and "  " not in text and text == text.strip()):  # fast path: already one clean line
        text = _BIDI_RE.sub("", text)
        text = "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in text)
        text = " ".join(text.split())
    if max_len is not None and len(text) > max_len:
        keep = max(max_len - 1, 2)
        head = (keep + 1) // 2
        tail = keep - head
        text = text[:head] + "…" + (text[-tail:] if tail else "")
    return text
