"""Where output goes: data to stdout (or ``--out``), diagnostics and progress to stderr.

Diagnostics (notes, warnings, errors) go through the ``finops_cli`` :mod:`logging` logger, never through
bare prints, so ``-q/--quiet`` and ``-v/--verbose`` govern all of them in one place
(:func:`configure_logging`); the CLI's handler writes each record as one line on stderr.

Colour and styles follow https://no-color.org: when ``NO_COLOR`` is set to a non-empty value there are
no escape codes at all (no colour, no bold or italic, no live progress display); when the stream is
not a terminal (a pipe, a file, CI logs) rich detects it and writes plain text too.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops_cli.atomic import write_text
from finops_cli.errors import FinopsError, spell_params
from finops_cli.text import terminal_safe

if TYPE_CHECKING:
    from rich.console import Console


def color_disabled() -> bool:
    """``NO_COLOR`` is set and not empty (https://no-color.org)."""
    return os.environ.get("NO_COLOR", "") != ""


def _console(**kwargs: Any) -> Console:
    # no_color alone keeps bold/italic/underline; color_system=None renders no style at all. emoji=False: a
    # ":name:" in data (a workload id, a tag) is printed as written, not drawn as an emoji.
    from finops_cli.cli.console import SafeConsole  # rich is imported with the first console

    off = color_disabled()
    return SafeConsole(color_system=None if off else "auto", no_color=off, highlight=False, emoji=False, **kwargs)


def stderr_console() -> Console:
    return _console(stderr=True)


def stdout_console() -> Console:
    return _console(soft_wrap=False)


def live_progress(console: Console) -> bool:
    """Whether to draw a live progress display on ``console``: a terminal, escape codes allowed, not ``--quiet``."""
    return console.is_terminal and not color_disabled() and log.isEnabledFor(logging.INFO)


#: Parameters the library's notes and warnings name in backticks (why this month or horizon, when a price is
#: stale, what to plan with): the CLI spells them as options (:func:`cli_words`).
NOTED_PARAMS = (
    "month",
    "horizon",
    "max_price_age",
    "integer_nodes",
    "max_node_rounding_pct",
    "all_lines",
    "seeds",
    "schedule",
)

#: The package's logger: library modules log under it (``logging.getLogger(__name__)``), the CLI shows it.
log = logging.getLogger("finops_cli")

_PREFIX = {
    logging.DEBUG: "[dim]debug:[/] ",
    logging.WARNING: "[yellow]warning:[/] ",
    logging.ERROR: "[bold red]error:[/] ",
    logging.CRITICAL: "[bold red]internal error:[/] ",  # a bug in finops (exit 70)
}


class StderrHandler(logging.Handler):
    """One line per record on stderr: ``warning:``/``error:``/``debug:`` prefixed (in colour on a terminal),
    notes as they are; text from the data is escaped and cannot drive the terminal (:class:`SafeConsole`)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from rich.markup import escape

            prefix = _PREFIX.get(record.levelno, "")
            message = cli_words(record.getMessage())
            stderr_console().print(prefix + escape(message), soft_wrap=True, highlight=False)
        except Exception:  # a broken stderr must not turn a diagnostic into a crash
            self.handleError(record)


def configure_logging(verbose: int = 0, quiet: bool = False) -> None:
    """``-q``: errors only; default: notes and warnings; ``-v``: also debug detail (timings, choices made).

    Python warnings (numpy's ``RuntimeWarning``, a library's ``FutureWarning``) are a developer's concern, not
    a user's: they become debug lines (:func:`_warning_to_log`), shown with ``-v`` only. finops says what a user
    must know through this logger, never through :mod:`warnings`.
    """
    import warnings

    level = logging.ERROR if quiet else logging.DEBUG if verbose > 0 else logging.INFO
    for handler in list(log.handlers):
        if isinstance(handler, StderrHandler):
            log.removeHandler(handler)
    log.addHandler(StderrHandler())
    log.setLevel(level)
    log.propagate = False
    warnings.showwarning = _warning_to_log


def _warning_to_log(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    """A library warning as one debug line (the safety net; each known source is fixed where it arises)."""
    log.debug(f"{category.__name__}: {message} ({Path(filename).name}:{lineno})")


@contextmanager
def status(message: str) -> Iterator[Callable[[str], None]]:
    """A spinner with ``message`` on stderr while a long step (the solver) runs; only on a terminal.

    Yields ``step(line)``: logs ``line`` as a note and shows it beside the spinner, so a multi-step command
    (``finops demo``) says where it is. Off a terminal (a pipe, CI), under ``NO_COLOR`` or ``--quiet``
    there is no spinner; the notes are logged all the same.
    """
    console = stderr_console()
    if not live_progress(console):
        yield log.info
        return
    from rich.markup import escape

    with console.status(escape(message), spinner="dots") as live:

        def step(line: str) -> None:
            log.info(line)
            live.update(escape(f"{message}: {line}"))

        yield step


def log_notes(horizon_note: str, warnings: list[str]) -> None:
    """A result's horizon line (which month it describes, and why) and its warnings."""
    if horizon_note:
        log.info(horizon_note)
    for w in warnings:
        log.warning(w)


def emit_text(text: str, out: Path | None = None) -> None:
    """Write a finished document: atomically to ``out`` (temp + rename), else to stdout. Either way without
    control characters from the data (:func:`~finops_cli.text.terminal_safe`): a pipe ends up in a
    terminal too (``| tee``, CI logs), and so does ``cat`` of a file."""
    text = terminal_safe(text)
    if out is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    write_text(out, text)


def emit_json(data: Any, out: Path | None = None) -> None:
    import json

    emit_text(json.dumps(data, indent=2, default=str, allow_nan=False), out)


#: API parameters whose option is not ``--`` and the name with dashes
_OPTIONS = {
    "n_accelerators": "--accelerators",
    "instance_types": "--instance-type",
    "providers": "--provider",
    "regions": "--region",
    "aws_regions": "--aws-region",
    "fmt": "--input-format",
    "files": "--file",
    "out_path": "--out",
    "store_dir": "--keep-store",
    "destination": "--to",
    "months": "--month",
}


def option_name(param: str) -> str:
    """The CLI's option for an API parameter (``window_hours`` → ``--window-hours``)."""
    return _OPTIONS.get(param, "--" + param.replace("_", "-"))


def cli_words(text: str, names: Iterable[str] = NOTED_PARAMS) -> str:
    """A library note or warning in the CLI's words: the parameters it names in backticks spelled as options."""
    return spell_params(text, option_name, names)


def error_text(exc: BaseException) -> str:
    """An error's message in the CLI's words: the API's parameter names spelled as options."""
    return exc.render(option_name) if isinstance(exc, FinopsError) else str(exc)
