"""Where output goes: data to stdout (or ``--out``), logs and progress to stderr; NO_COLOR honoured."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from finops_cli.atomic import write_text


def stderr_console() -> Console:
    return Console(stderr=True, no_color="NO_COLOR" in os.environ, highlight=False)


def stdout_console() -> Console:
    return Console(no_color="NO_COLOR" in os.environ, highlight=False, soft_wrap=False)


def emit_text(text: str, out: Path | None = None) -> None:
    """Write a finished document: atomically to ``out`` (temp + rename), else to stdout."""
    if out is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    write_text(out, text)


def emit_json(data: Any, out: Path | None = None) -> None:
    emit_text(json.dumps(data, indent=2, default=str, allow_nan=False), out)
