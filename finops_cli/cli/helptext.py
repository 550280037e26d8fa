"""``--help`` text: docstrings reflowed into paragraphs, so the terminal wraps them at its own width.

Docstrings are wrapped at the source's line length; typer keeps those line breaks in every paragraph but
the first, so a narrow terminal showed a sentence cut at the source's margin and again at its own. Each
paragraph becomes one line here (a paragraph starting with ``\\b`` stays verbatim, as in click), and rich
wraps it between words at the terminal's width. Epilogs (each command's ``Example:``) are left as written:
their lines are commands to copy.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
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
    """A command's epilog: ``Example:`` and the command lines to copy, one per line (rich markup escaped).

    Every command module builds its epilogs when it is imported, also to run the command: rich's ``escape`` (and
    rich with it, ~20 ms) is only imported for a line it can change, one with a ``[`` or ending in a backslash.
    """
    lines = []
    for c in commands:
        if "[" in c or c.endswith("\\"):
            from rich.markup import escape

            c = escape(c)
        lines.append(f"  {c}")
    return EXAMPLE + "\n" + "\n".join(lines)


#: What typer's help module imports but never uses with ``rich_markup_mode="rich"`` and pretty exceptions off:
#: markdown (markdown-it), pretty tracebacks (pygments, rich.pretty, attrs): ~0.1 s of a ~0.3 s ``--help``.
_UNUSED_BY_HELP = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


class _Deferred(type):
    """A stand-in for a rich class: the real module is imported the first time the class is used."""

    def _real(cls) -> Any:
        return getattr(importlib.import_module(cls.__module__), cls.__name__)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._real(), name)


def typer_help() -> Any:
    """typer's help renderer (``typer.rich_utils``), imported without markdown and pretty tracebacks.

    ``typer.rich_utils`` imports ``rich.markdown`` and ``rich.traceback`` at the top for two modes finops does
    not use (markdown help, pretty exceptions). While it imports, those two modules are placeholders holding a
    :class:`_Deferred` stand-in for the one class it takes from each; the placeholders are gone from
    ``sys.modules`` afterwards, so any later import gets the real module, and so does the stand-in if it is
    ever called. If a typer version takes more from them, the plain import runs instead.
    """
    if "typer.rich_utils" in sys.modules:
        return sys.modules["typer.rich_utils"]
    placeholders = {}
    for name, cls in _UNUSED_BY_HELP.items():
        if name not in sys.modules:
            module = placeholders[name] = types.ModuleType(name)
            setattr(module, cls, _Deferred(cls, (), {"__module__": name}))
            sys.modules[name] = module
    try:
        import typer.rich_utils
    except ImportError:
        sys.modules.pop("typer.rich_utils", None)
        for name in placeholders:
            sys.modules.pop(name, None)
        placeholders = {}
        import typer.rich_utils
    finally:
        for name, module in placeholders.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    return typer.rich_utils
