"""The CLI's rich console: control characters taken from data are never written (:mod:`finops_cli.text`).

A module of its own so that rich is imported with the first console (:func:`finops_cli.cli.output.stdout_console`
and friends), not by every command: ``finops validate`` prints one plain line.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from finops_cli.text import terminal_safe


class SafeConsole(Console):
    """A rich console that never writes a control character taken from data."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        clean = (
            Segment(terminal_safe(seg.text), seg.style, seg.control) if seg.control is None and seg.text else seg
            for seg in buffer
        )
        return super()._render_buffer(clean)
