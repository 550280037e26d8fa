"""Where output goes: data to stdout (or ``--out``), logs and progress to stderr.

Colour and styles follow https://no-color.org: when ``NO_COLOR`` is set to a non-empty value there are
no escape codes at all (no colour, no bold or italic, no live progress display); when the stream is
not a terminal (a pipe, a file, CI logs) rich detects it and writes plain text too.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from finops_cli.atomic import write_text
from finops_cli.cli.terminal import SafeConsole, terminal_safe


def color_disabled() -> bool:
    """``NO_COLOR`` is set and not empty (https://no-color.org)."""
    return os.environ.get("NO_COLOR", "") != ""


def _console(**kwargs: Any) -> Console:
    # no_color alone keeps bold/italic/underline; color_system=None renders no style at all.
    off = color_disabled()
    return SafeConsole(color_system=None if off else "auto", no_color=off, highlight=False, **kwargs)


def stderr_console() -> Console:
    return _console(stderr=True)


def stdout_console() -> Console:
    return _console(soft_wrap=False)


def live_progress(console: Console) -> bool:
    """Whether to draw a live progress display on ``console``: a terminal, and escape codes allowed."""
    return console.is_terminal and not color_disabled()


def emit_text(text: str, out: Path | None = None) -> None:
    """Write a finished document: atomically to ``out`` (temp + rename), else to stdout (a terminal gets
    no control characters from the data: :func:`~finops_cli.cli.terminal.terminal_safe`)."""
    if out is None:
        if sys.stdout.isatty():
            text = terminal_safe(text)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    write_text(out, text)


def emit_json(data: Any, out: Path | None = None) -> None:
    emit_text(json.dumps(data, indent=2, default=str, allow_nan=False), out)
