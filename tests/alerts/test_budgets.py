"""budgets.yaml and ``finops budget check``: validation, the published schema, thresholds, forecasts, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from finops_cli.alerts.budgets import Budgets, check_budgets, json_schema_text
from finops_cli.alerts.forecast import MIN_HISTORY_DAYS, forecast_total
from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.estate.load import load_model
from finops_cli.store import open_store

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

BUDGETS = """\
version: 1
currency: USD
budgets:
  - name: data-team
    scope: {team: data}
    amount: 20000
  - name: research-gpu
    scope: {team: research}
    amount: 60000
    thresholds: [{spend: actual, percent: 100}, {spend: forecast, percent: 100}]
  - name: new-team
    scope: {tag:team: newteam}
    amount: 50000
  - name: q3-all
    period: {start: 2026-07-01, end: 2026-09-30}
    amount: 500000
    thresholds: [{spend: actual, percent: 90}]
"""


def _write(tmp_path: Path, text: str = BUDGETS) -> Path:
    path = tmp_path / "budgets.yaml"
    path.write_text(text)
    return path


def test_published_schema_equals_the_model_and_validates_the_docs_example(tmp_path: Path) -> None:
    path = REPO / "docs" / "budgets.schema.json"
    assert path.read_text(encoding="utf-8") == json_schema_text(), (
        "regenerate: python -m finops_cli.alerts.budgets > docs/budgets.schema.json"
    )
    schema = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    doc = (REPO / "docs" / "alerts.md").read_text(encoding="utf-8")
    text = doc.split("```yaml\n# budgets.yaml\n", 1)[1].split("```", 1)[0]
    load_model(_write(tmp_path, text), Budgets)  # the example is a valid file
    example = json.loads(json.dumps(yaml.safe_load(text), default=str))  # dates as an editor sees them: text
    jsonschema.validate(example, schema)
    example["budgets"][0]["ammount"] = 1  # a typo an editor must flag
    with pytest.raises(jsonschema.ValidationError, match="ammount"):
        jsonschema.validate(example, schema)


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("amount: 20000", "amount: -5", "line 6, column 13: budgets[0].amount: must be > 0"),
        ("amount: 20000", "amount: 20000\n    colour: red", "budgets[0].colour: unknown key"),
        ("{spend: actual, percent: 100}", "{spend: actuals, percent: 100}", "budgets[1].thresholds[0].spend"),
        ("end: 2026-09-30", "end: 2026-06-30", "is before start"),
        ("name: q3-all", "name: data-team", "duplicate name 'data-team'"),
    ],
)
def test_bad_budgets_name_the_line_and_field(tmp_path: Path, old: str, new: str, says: str) -> None:
    with pytest.raises(InputError, match=None) as err:
        load_model(_write(tmp_path, BUDGETS.replace(old, new)), Budgets)
    assert says in str(err.value)


def test_check_on_the_generated_company(company_store: Path, tmp_path: Path) -> None:
    doc = check_budgets(open_store(company_store), load_model(_write(tmp_path), Budgets))
    rows = {r["name"]: r for r in doc["budgets"]}
    assert doc["as_of"].startswith("2026-10-20T13:00")
    data = rows["data-team"]  # doubled from 2026-10-05: the forecast crosses before the actual does
    assert data["period"] == {"start": "2026-10-01", "end": "2026-10-31"}
    f = data["forecast"]
    assert f["remaining_days"] == 12 and f["low"] < f["expected"] < f["high"]
    assert {"spend": "forecast", "percent": 100.0} in [{k: c[k] for k in ("spend", "percent")} for c in data["crossed"]]
    assert data["actual"] < 20000 < f["expected"]
    assert any("partial period" in n for n in data["notes"])
    research = rows["research-gpu"]
    assert research["crossed"] == [] and research["status"] == "ok"
    new = rows["new-team"]  # seven days of spend: no guess
    assert new["forecast"]["expected"] is None and f"needs {MIN_HISTORY_DAYS}" in new["forecast"]["reason"]
    q3 = rows["q3-all"]  # a closed custom period: the forecast is the actual
    assert q3["period"] == {"start": "2026-07-01", "end": "2026-09-30"} and q3["forecast"]["remaining_days"] == 0
    assert not doc["passed"]
    assert check_budgets(open_store(company_store), load_model(_write(tmp_path), Budgets)) == doc  # same store, same


def test_as_of_and_month_move_the_evaluation(company_store: Path, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    budgets = load_model(_write(tmp_path), Budgets)
    early = check_budgets(open_store(company_store), budgets, as_of=datetime(2026, 10, 3, tzinfo=UTC))
    data = next(r for r in early["budgets"] if r["name"] == "data-team")
    assert data["forecast"]["remaining_days"] == 29 and data["crossed"] == []  # before the overrun
    september = check_budgets(open_store(company_store), budgets, month="2026-09")
    assert all(r["period"]["start"] in ("2026-09-01", "2026-07-01") for r in september["budgets"])


def test_cli_exit_codes(company_store: Path, tmp_path: Path) -> None:
    args = ["budget", "check", "--store", str(company_store), "--budgets"]
    crossed = runner.invoke(app, [*args, str(_write(tmp_path))])
    assert crossed.exit_code == 1, crossed.output
    assert "data-team" in crossed.stdout and "forecast 100 %" in crossed.stdout
    within = _write(tmp_path, "version: 1\nbudgets:\n  - name: big\n    amount: 10000000\n")
    ok = runner.invoke(app, [*args, str(within), "--format", "json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["passed"] is True
    bad = runner.invoke(app, [*args, str(_write(tmp_path, "version: 2\nbudgets: []\n"))])
    assert bad.exit_code == 2 and "version" in bad.output and "Traceback" not in bad.output
    missing = runner.invoke(app, [*args, str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2


def _weekly(days: int, seed: int, level: float = 1000.0) -> pd.Series:
    rng = np.random.default_rng(seed)
    season = np.array([1.2, 1.2, 1.2, 1.2, 1.2, 0.6, 0.6])
    return pd.Series(level * season[np.arange(days) % 7] * rng.normal(1, 0.03, days))


def test_forecast_covers_the_truth_and_follows_the_weekday_season() -> None:
    covered = 0
    for seed in range(8):
        full = _weekly(60, seed)
        got = forecast_total(full[:45], float(full[:45].sum()), 15)
        truth = float(full.sum())
        assert got.expected == pytest.approx(truth, rel=0.02)
        covered += got.low <= truth <= got.high  # type: ignore[operator]
    assert covered >= 6  # a 90 % interval covers the truth in most trials (not a band of nothing)


def test_forecast_refuses_to_guess_on_short_history() -> None:
    got = forecast_total(_weekly(MIN_HISTORY_DAYS - 1, 0), 5000.0, 10)
    assert got.expected is None and "too little history" in (got.reason or "")
    flat = forecast_total(pd.Series([100.0] * 20), 2000.0, 5)
    assert flat.expected == flat.low == flat.high == 2500.0


def test_budget_check_and_anomalies_run_on_the_sample_company(sample_store: Path, tmp_path: Path) -> None:
    from finops_cli.alerts.anomalies import detect_anomalies

    text = "version: 1\nbudgets:\n  - name: research\n    scope: {team: research}\n    amount: 200000\n"
    doc = check_budgets(open_store(sample_store), load_model(_write(tmp_path, text), Budgets))
    (row,) = doc["budgets"]
    assert row["actual"] == pytest.approx(175796.80, abs=0.005)  # = finops costs --where team=research
    assert row["forecast"]["remaining_days"] == 0 and [c["percent"] for c in row["crossed"]] == [50.0, 80.0]
    found = detect_anomalies(open_store(sample_store), ["team"])
    assert found["window"]["end"] == "2026-10-31" and isinstance(found["anomalies"], list)
