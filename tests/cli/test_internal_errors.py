"""Crashes are not gate failures: an unexpected exception exits 70 with one line (the traceback with --debug),
and money that does not add up in a user's file is a data error (exit 2 naming the file and currency)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.errors import EXIT_BROKEN_PIPE, EXIT_GATE_FAILED, EXIT_INTERNAL_ERROR
from tests.conftest import SAMPLES

runner = CliRunner()


def _boom(**_: object) -> None:
    raise ZeroDivisionError("float division by zero in the waste maths")


def test_an_unexpected_exception_exits_70_with_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(api, "waste", _boom)
    monkeypatch.delenv("FINOPS_DEBUG", raising=False)
    result = runner.invoke(app, ["waste", "--store", str(tmp_path / "s")])
    assert result.exit_code == EXIT_INTERNAL_ERROR != EXIT_GATE_FAILED
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("internal error: ZeroDivisionError: float division by zero")
    assert "--debug" in lines[0] and "FINOPS_DEBUG=1" in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_shows_the_traceback(how: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(api, "waste", _boom)
    args = ["waste", "--store", str(tmp_path / "s")]
    if how == "flag":
        args = ["--debug", *args]
    else:
        monkeypatch.setenv("FINOPS_DEBUG", "1")
    result = runner.invoke(app, args)
    assert result.exit_code == EXIT_INTERNAL_ERROR
    assert "Traceback (most recent call last)" in result.output and "_boom" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["waste", "--help"],
        ["costs", "--store", "{store}"],
        ["validate", "--fleet", str(SAMPLES / "fleet.yaml"), "--workloads", str(SAMPLES / "workloads.yaml"),
         "--format", "json"],
    ],
    ids=["help", "costs", "validate-json"],
)  # fmt: skip
def test_output_into_a_closed_pipe_stops_quietly(args: list[str], tmp_path: Path) -> None:
    """``finops … | head -1``: the reader left, so finops stops with no message (it printed "internal error:
    BrokenPipeError", exit 70). The read end is closed before the child has written anything."""
    store = tmp_path / "store"
    if "{store}" in args:
        api.ingest_billing([SAMPLES / "billing" / "focus-2026-10.csv"], store=store)
    run = [sys.executable, "-c", "from finops_cli.cli.app import main; main()"]
    proc = subprocess.Popen(
        [*run, *(a.format(store=store) for a in args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE, err
    assert "internal error" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err


def test_a_broken_pipe_that_is_not_stdout_is_still_a_bug(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only stdout's closed reader is quiet: a broken socket (to S3, to Spark) stays an internal error."""

    def _broken_socket(**_: object) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(api, "waste", _broken_socket)
    result = runner.invoke(app, ["waste", "--store", str(tmp_path / "s")])
    assert result.exit_code == EXIT_INTERNAL_ERROR
    assert result.output.startswith("internal error: BrokenPipeError")


def test_usage_errors_and_help_keep_their_codes(tmp_path: Path) -> None:
    assert runner.invoke(app, ["waste", "--by", "colour", "--store", str(tmp_path)]).exit_code == 2
    assert runner.invoke(app, ["--help"]).exit_code == 0
    assert runner.invoke(app, ["no-such-verb"]).exit_code == 2


def _focus_rows(rows: list[tuple[str, str]]) -> str:
    """A FOCUS file: the sample's first line repeated with (BillingAccountId, BilledCost) replaced."""
    with (SAMPLES / "billing" / "focus-2026-10.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        template = next(reader)
        fields = reader.fieldnames
    assert fields is not None
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for account, cost in rows:
        writer.writerow({**template, "BillingAccountId": account, "BilledCost": cost, "EffectiveCost": cost})
    return out.getvalue()


def test_money_not_conserved_in_a_users_file_is_exit_2_naming_file_and_currency(tmp_path: Path) -> None:
    # 1e17 used to swallow the cents of the other account's lines when summed in float64. Issue 12: a line
    # beyond ±1e15 is refused on its own (naming file and row), and conservation sums are exact decimals.
    f = tmp_path / "absurd.csv"
    f.write_text(_focus_rows([("a", "1e17"), ("b", "0.03"), ("a", "-1e17"), ("b", "0.05")]))
    store = tmp_path / "store"
    result = runner.invoke(app, ["ingest", "billing", str(f), "--store", str(store)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert str(f) in result.output and "row 1" in result.output and "within ±1e+15" in result.output
    assert not (store / "billing").exists()  # nothing written
