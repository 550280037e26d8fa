"""Terminal safety: data printed to a terminal cannot drive it.

Tags, ids and names come from other people's files; a team tag holding ``ESC[2J`` clears the screen,
an OSC sequence retitles the window or writes to the clipboard, ``\\r`` overwrites what was printed.
Every rich console of the CLI is a :class:`SafeConsole`, which replaces control characters in the text
it renders (its own styling and cursor codes are separate segments and untouched); plain text written to
a terminal goes through :func:`terminal_safe`. Files and pipes get the data unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

#: C0 controls except tab and newline, DEL, C1 controls (8-bit CSI/OSC), bidi overrides/isolates
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
REPLACEMENT = "\ufffd"


def terminal_safe(text: str) -> str:
    """``text`` with every control character (but tab and newline) shown as U+FFFD."""
    return _CONTROL.sub(REPLACEMENT, text) if _CONTROL.search(text) else text


class SafeConsole(Console):
    """A rich console that never writes a control character taken from data."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        clean = (
            Segment(terminal_safe(seg.text), seg.style, seg.control) if seg.control is None and seg.text else seg
            for seg in buffer
        )
        return super()._render_buffer(clean)
