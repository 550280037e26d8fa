"""Terminal safety: data printed to a terminal cannot drive it.

Tags, ids and names come from other people's files; a team tag holding ``ESC[2J`` clears the screen,
an OSC sequence retitles the window or writes to the clipboard, ``\\r`` overwrites what was printed.
Every rich console of the CLI is a :class:`~finops_cli.cli.console.SafeConsole`, which replaces control
characters in the text it renders (its own styling and cursor codes are separate segments and untouched);
plain text written to a terminal goes through :func:`terminal_safe`. Files and pipes get the data unchanged.

This module does not import rich (the console does, when the first one is made): ``finops validate`` prints
one plain line and need not load it.
"""

from __future__ import annotations

import re

#: C0 controls except tab and newline, DEL, C1 controls (8-bit CSI/OSC), bidi overrides/isolates
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
REPLACEMENT = "\ufffd"


def terminal_safe(text: str) -> str:
    """``text`` with every control character (but tab and newline) shown as U+FFFD."""
    return _CONTROL.sub(REPLACEMENT, text) if _CONTROL.search(text) else text
