"""``--help`` text: docstrings reflowed into paragraphs, so the terminal wraps them at its own width.

Docstrings are wrapped at the source's line length; typer keeps those line breaks in every paragraph but
the first, so a narrow terminal showed a sentence cut at the source's margin and again at its own. Each
paragraph becomes one line here (a paragraph starting with ``\\b`` stays verbatim, as in click), and rich
wraps it between words at the terminal's width. Epilogs (each command's ``Example:``) are left as written:
their lines are commands to copy.
"""

from __future__ import annotations

import inspect
from typing import Any

#: What starts every command's epilog: ``finops COMMAND --help`` ends with a command line to copy.
EXAMPLE = "Example:"


def reflow(text: str | None) -> str | None:
    """``text`` with the line breaks inside each paragraph turned into spaces (``\\b`` paragraphs verbatim)."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def walk(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command under ``command`` (a click command or group), with its name path, the root first."""
    found = [(path, command)]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found += walk(sub, (*path, name))
    return found


def reflow_help(root: Any) -> None:
    """Reflow the help of ``root`` and every command under it (idempotent: ``main`` may run many times)."""
    for _, command in walk(root):
        command.help = reflow(command.help)
        for param in command.params:
            if getattr(param, "help", None):
                param.help = reflow(param.help)


def example(*commands: str) -> str:
    """A command's epilog: ``Example:`` and the command lines to copy, one per line (rich markup escaped)."""
    from rich.markup import escape

    return EXAMPLE + "\n" + "\n".join(f"  {escape(c)}" for c in commands)
