"""Domain errors and the exit codes the CLI maps them to.

Every error a user can cause is one of these; the CLI prints ``str(err)`` on one line (no traceback)
and exits with ``err.exit_code``. Library callers catch them like any exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_INVALID_INPUT = 2
EXIT_INFEASIBLE = 3
#: A bug in finops, not the user's input (``EX_SOFTWARE`` in BSD ``sysexits.h``).
EXIT_INTERNAL_ERROR = 70
#: stdout's reader left early (``finops … | head``): no message, and the status rich and click already exit
#: with when their own output meets the closed pipe (so every path through the CLI agrees).
EXIT_BROKEN_PIPE = 1


class FinopsError(Exception):
    """Base class: a problem the user can act on, with the exit code it deserves. ``mentions`` are the
    parameters the message names in backticks; the CLI renders them as its option names (:meth:`render`)."""

    exit_code: int = EXIT_INVALID_INPUT
    mentions: tuple[str, ...] = ()

    def render(self, spell: Callable[[str], str]) -> str:
        """The message with each parameter name spelled by ``spell`` (the CLI: ``--option``)."""
        return spell_params(str(self), spell, self.mentions)


class InputError(FinopsError):
    """Invalid input or usage: a bad file, column, value or parameter (exit code 2).

    The message names the file, the row or column or field path, and what was expected. ``param`` is the
    parameter the error is about (the message follows its name), rendered as the CLI's option name too.
    """

    exit_code = EXIT_INVALID_INPUT

    def __init__(
        self,
        message: str,
        *,
        path: object | None = None,
        where: str | None = None,
        param: str | None = None,
        mentions: tuple[str, ...] = (),
    ) -> None:
        self.prefix = (f"{path}: " if path is not None else "") + (f"{where}: " if where else "")
        self.param = param
        self.message = message
        self.mentions = mentions
        super().__init__(self._text(param, message))

    def render(self, spell: Callable[[str], str]) -> str:
        return self._text(self.param and spell(self.param), spell_params(self.message, spell, self.mentions))

    def _text(self, name: str | None, message: str) -> str:
        if not name:
            return self.prefix + message
        return self.prefix + name + ("" if message[:1] in ":;," else " ") + message


def spell_params(text: str, spell: Callable[[str], str], names: Iterable[str]) -> str:
    """``text`` with each of ``names`` written in backticks spelled by ``spell`` (the CLI: ``--option``)."""
    for name in names:
        text = text.replace(f"`{name}`", spell(name))
    return text


class InfeasibleError(FinopsError):
    """No compliant destination, or demand above compliant capacity with no overflow (exit code 3)."""

    exit_code = EXIT_INFEASIBLE

    def __init__(self, message: str, *, mentions: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.mentions = mentions


class GateFailed(FinopsError):
    """A cost-gate rule was crossed (exit code 1)."""

    exit_code = EXIT_GATE_FAILED
