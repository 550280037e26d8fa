"""Issue 26 item 3: one default month everywhere. On an export with GPU lines in one month and a stray non-GPU line
in the next billing period, every command that picks a month picks the same one, by one rule, and says which
and why on stderr; ``estate draft`` → ``validate`` → ``plan`` runs with no edits and no ``--month``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.estate.horizon import default_month
from finops_cli.store import Store
from tests.estate.focus_month import Month, write_focus_month

runner = CliRunner()
PICKED = re.compile(r"^(?:month: (\d{4}-\d{2})|horizon: (\d{4}-\d{2})-01 \+ \d+ h): (.*)$", re.M)


def _run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def stray(tmp_path_factory: pytest.TempPathFactory) -> tuple[Month, Path]:
    root = tmp_path_factory.mktemp("stray")
    month = write_focus_month(root / "focus.csv")
    store = root / "store"
    for _ in range(2):  # a re-ingest of the same export leaves one copy
        code, _, err = _run("ingest", "billing", month.path, "--store", store)
        assert code == 0, err
    return month, store


def _picked(stderr: str) -> set[tuple[str, str]]:
    return {(m or h, why) for m, h, why in PICKED.findall(stderr)}


def test_every_command_picks_the_month_with_gpu_usage_and_says_why(stray: tuple[Month, Path], tmp_path: Path) -> None:
    month, store = stray
    assert (month.gpu_month, month.stray_month) == ("2024-09", "2024-10")
    assert default_month(Store(store)).month == month.gpu_month
    out = tmp_path / "estate"
    said: list[set[tuple[str, str]]] = []
    code, _, err = _run("estate", "draft", "--store", store, "--out", out)
    assert code == 0, err
    said.append(_picked(err))
    fleet, workloads = out / "fleet.yaml", out / "workloads.yaml"
    code, _, err = _run("validate", "--fleet", fleet, "--workloads", workloads)
    assert code == 0, err
    plan = tmp_path / "plan.json"
    for args in (
        ("plan", "--fleet", fleet, "--workloads", workloads, "--store", store, "--out", plan),
        ("stack", "--fleet", fleet, "--workloads", workloads, "--store", store),
        ("waste", "--store", store),
        ("costs", "--store", store, "--chargeback", "proportional", "--format", "json"),
    ):
        code, stdout, err = _run(*args)
        assert code == 0, (args, err)
        said.append(_picked(err))
    # one month, one reason, named by every command; the stray period is named as skipped
    assert all(len(s) == 1 for s in said), said
    assert {s.pop() for s in said} == {
        (
            "2024-09",
            "latest month with GPU usage in the store (GPU billing 2024-09; later billing periods without GPU "
            "lines: 2024-10)",
        )
    }
    doc = json.loads(plan.read_text())
    assert doc["horizon"]["start"].startswith("2024-09-01")
    assert doc["totals"]["baseline_cost"] == pytest.approx(month.gpu_cost, abs=0.005)
    chargeback = json.loads(stdout)
    assert chargeback["months"] == ["2024-09"]
    assert chargeback["totals"]["USD"] == pytest.approx(month.gpu_cost, abs=0.005)


def test_compare_names_partial_months_and_refuses_a_month_against_itself(stray: tuple[Month, Path]) -> None:
    _, store = stray
    code, _, err = _run("costs", "--store", store, "--compare", "2024-09")
    assert code == 2 and "is the month itself" in err and "--month" in err and "Traceback" not in err
    code, stdout, err = _run("costs", "--store", store, "--month", "2024-10", "--compare", "2024-09", "--format",
                             "json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(stdout)
    assert "2024-10 is a partial month: it has no GPU lines" in doc["notes"]
    start = "2024-09 is a partial month: its GPU lines start on 2 of its 30 days"
    assert any(n.startswith(start) for n in doc["notes"])
    assert "warning: 2024-10 is a partial month" in err


def test_compare_far_fewer_lines_than_the_month_before(tmp_path: Path) -> None:
    """A month whose export was cut short: every day present in the earlier month, a third of the lines in the
    later one (days all present, so only the line count tells)."""
    import pandas as pd

    from finops_cli.report.costs import partial_month_notes

    coverage = pd.DataFrame(
        {
            "month": ["2026-09", "2026-10"],
            "lines": [900, 300],
            "days": [30, 31],
            "first_start": pd.to_datetime(["2026-09-01", "2026-10-01"], utc=True),
            "last_end": pd.to_datetime(["2026-10-01", "2026-11-01"], utc=True),
        }
    )
    notes = partial_month_notes(coverage, ["2026-10", "2026-09"])
    assert notes == ["2026-10 has far fewer GPU lines than 2026-09 (300 against 900): it may be a partial export"]
    assert partial_month_notes(coverage.assign(lines=[900, 800]), ["2026-10", "2026-09"]) == []


def test_draft_says_when_utilisation_is_later_than_any_bill(stray: tuple[Month, Path], tmp_path: Path) -> None:
    """Utilisation in 2024-11 makes 2024-11 the month (the rule plan uses): draft says it has no bill, exit 2."""
    _, store = stray
    import shutil

    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    trace = tmp_path / "util.csv"
    trace.write_text("timestamp,host,gpu,utilization\n2024-11-03T00:00:00Z,h1,0,0.5\n2024-11-03T00:01:00Z,h1,0,0.7\n")
    code, _, err = _run("ingest", "utilization", trace, "--store", copy)
    assert code == 0, err
    code, _, err = _run("estate", "draft", "--store", copy, "--out", tmp_path / "d")
    assert code == 2 and "month 2024-11" in err and "2024-09, 2024-10" in err and "--month" in err
    code, _, err = _run("estate", "draft", "--store", copy, "--out", tmp_path / "d", "--month", "2024-09")
    assert code == 0 and "month: 2024-09: --month" in err
