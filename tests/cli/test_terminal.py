"""Data cannot drive the terminal (issue 12 item 12).

A team tag holding ``ESC[2J`` cleared the screen when ``finops waste`` printed its table; an OSC
sequence can retitle the window. With ``NO_COLOR`` rich writes no escape code of its own, so any
control character in the output below could only have come from the data.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.cli.output import emit_text, stderr_console, stdout_console
from finops_cli.cli.render import table_text

ENV = {"NO_COLOR": "1", "COLUMNS": "200", "FINOPS_STORE": ""}
EVIL = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZWNobyBoaQ==\x07\rteam\x9b31m"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_a_hostile_team_tag_reaches_the_table_inert(tmp_path: Path) -> None:
    trace = tmp_path / "util.csv"
    with open(trace, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["timestamp", "device_id", "host", "team", "utilization"])
        for m in range(20):
            for d in range(4):
                team = EVIL.replace("\r", "") if d % 2 else "ml"
                w.writerow([f"2026-10-01T00:{m:02d}:00Z", f"GPU-{d}", f"h{d}", team, (m * d) % 100])
    api.ingest_utilization([trace], store=tmp_path / "s")
    result = CliRunner().invoke(
        app, ["waste", "--store", str(tmp_path / "s"), "--by", "team", "--price-per-gpu-hour", "2"], env=ENV
    )
    assert result.exit_code == 0, result.stderr
    assert "team" in result.stdout and "pwned" in result.stdout  # the text is shown ...
    assert not CONTROL.search(result.stdout), repr(result.stdout)  # ... but cannot act


def test_every_console_is_cleaned() -> None:
    for console in (stdout_console(), stderr_console()):
        console.file = buf = io.StringIO()
        console.print(f"value: {EVIL}", markup=False)
        assert not CONTROL.search(buf.getvalue()), repr(buf.getvalue())


def test_emoji_codes_in_data_are_printed_as_written() -> None:
    """A workload id or tag such as ``:fire:ops`` is data: rich would have drawn 🔥 in its place."""
    from rich.table import Table

    for console in (stdout_console(), stderr_console()):
        console.file = buf = io.StringIO()
        table = Table("workload")
        table.add_row(":fire:ops")
        console.print(table)
        console.print("gate: :fire:ops over budget")
        assert buf.getvalue().count(":fire:ops") == 2, repr(buf.getvalue())
    assert ":fire:ops" in table_text(table)  # the same table written to --out


def test_plain_text_to_a_terminal_is_cleaned(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", tty := Tty())
    emit_text(f"a\tb\n{EVIL}\n")
    assert tty.getvalue().startswith("a\tb\n") and not CONTROL.search(
        tty.getvalue().replace("\t", "").replace("\n", "")
    )

    monkeypatch.setattr(sys, "stdout", pipe := io.StringIO())
    emit_text(f"a\tb\n{EVIL}")
    # a pipe ends up on a terminal too (| tee, CI logs): cleaned the same (issue 27 item 10)
    assert pipe.getvalue() == tty.getvalue()


def test_an_error_message_carrying_data_is_cleaned(tmp_path: Path) -> None:
    bad = tmp_path / f"x{EVIL.replace('/', '')[:8]}.csv"
    result = CliRunner().invoke(app, ["ingest", "billing", str(bad), "--store", str(tmp_path / "s")], env=ENV)
    assert result.exit_code == 2
    assert not CONTROL.search(result.stderr.replace("\n", "")), repr(result.stderr)
