"""Anomaly detection: recall and false-positive rate on generated series with planted spikes, and the planted
anomalies of the generated company found with their causes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from alerts_company import NEW_TEAM_FROM, OVERRUN_FROM, PLANTED
from typer.testing import CliRunner

from finops_cli.alerts.anomalies import detect_anomalies, flagged
from finops_cli.cli.app import app
from finops_cli.store import open_store

runner = CliRunner()
WARMUP = 14


def _series(seed: int, days: int = 92) -> tuple[pd.Series, set[int]]:
    """Three months of daily spend: a level, a weekday season, a slow drift, 4 % noise; three to five spikes of
    +25 % to +80 % of the level planted after the warm-up."""
    rng = np.random.default_rng(seed)
    level = rng.uniform(500, 20_000)
    weekend = rng.uniform(0.3, 1.0)
    season = np.where(np.arange(days) % 7 >= 5, weekend, 1.0)
    drift = 1 + rng.uniform(-0.15, 0.15) * np.arange(days) / days
    values = level * season * drift * rng.normal(1, 0.04, days)
    planted = set(rng.choice(np.arange(WARMUP, days), size=int(rng.integers(3, 6)), replace=False).tolist())
    for i in planted:
        values[i] += level * rng.uniform(0.25, 0.8)
    return pd.Series(values), planted


def test_recall_and_false_positive_rate_on_planted_series() -> None:
    found = planted_total = false = clean_days = 0
    for seed in range(60):
        series, planted = _series(seed)
        hits = {i for i, *_ in flagged(series, min_impact=50.0, warmup_days=WARMUP)}
        found += len(hits & planted)
        planted_total += len(planted)
        false += len(hits - planted)
        clean_days += len(series) - WARMUP - len(planted)
    recall, fpr = found / planted_total, false / clean_days
    print(f"recall {recall:.3f} ({found}/{planted_total}), false-positive rate {fpr:.4f} ({false}/{clean_days})")
    assert recall >= 0.95
    assert fpr <= 0.01


def test_no_alert_in_a_new_scopes_first_days_nor_below_the_minimum_impact() -> None:
    series, _ = _series(3)
    assert not flagged(series[:WARMUP], warmup_days=WARMUP)
    early = series.copy()
    early.iloc[5] *= 3  # a spike inside the warm-up
    assert 5 not in {i for i, *_ in flagged(early, warmup_days=WARMUP)}
    impacts = [impact for *_, impact, _ in flagged(series, min_impact=0.0, warmup_days=WARMUP)]
    biggest = max(impacts)
    assert not flagged(series, min_impact=biggest + 1, warmup_days=WARMUP)


def test_generated_company_anomalies_are_found_with_their_causes(company_store: Path) -> None:
    doc = detect_anomalies(open_store(company_store), ["team"], days=90)
    got = {(a["day"], a["team"]): a for a in doc["anomalies"]}
    for day, team, _hours in PLANTED:
        a = got[(day.isoformat(), team)]
        causes = {(c["dimension"], c["value"]) for c in a["contributors"]}
        assert ("instance_type", "g6.12xlarge") in causes and ("service", "Amazon SageMaker") in causes
        assert ("account", "acct-444") in causes
        assert a["impact"] >= 400 and a["expected"] < a["actual"]
    explained = {(d.isoformat(), t) for d, t, _ in PLANTED}
    for (day, team), a in got.items():  # everything else is the planted overrun, caused by the p4d that doubled
        if (day, team) in explained:
            continue
        assert team == "data" and day >= OVERRUN_FROM.isoformat(), (day, team)
        assert a["contributors"][0]["value"] in ("Amazon EC2", "p4d.24xlarge", "acct-333")
    assert not any(a["team"] == "newteam" for a in doc["anomalies"])
    assert any("newteam" in n and "not alerted" in n for n in doc["notes"])
    assert any("partial day is left out" in n for n in doc["notes"])
    assert NEW_TEAM_FROM.isoformat() <= doc["window"]["end"]


def test_cli_anomalies(company_store: Path) -> None:
    args = ["anomalies", "--store", str(company_store), "--by", "team", "--days", "90"]
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "g6.12xlarge" in table.stdout and "team=research" in table.stdout
    doc = json.loads(runner.invoke(app, [*args, "--format", "json"]).stdout)
    assert doc["kind"] == "finops.anomalies" and len(doc["anomalies"]) >= len(PLANTED)
    failing = runner.invoke(app, [*args, "--fail-on-anomaly"])
    assert failing.exit_code == 1
    bad = runner.invoke(app, ["anomalies", "--store", str(company_store), "--direction", "sideways"])
    assert bad.exit_code == 2 and "--direction" in bad.output


def test_hourly_anomalies_on_hourly_lines(tmp_path: Path) -> None:
    """Three weeks of hourly lines with a daily shape (busy 08:00-20:00); one runaway hour is planted."""
    import csv
    from datetime import UTC, datetime, timedelta

    from alerts_company import FLEET, HEADER, RUNAWAY, _row

    from finops_cli import api

    start = datetime(2026, 10, 1, tzinfo=UTC)
    spike = datetime(2026, 10, 19, 14, tzinfo=UTC)
    rows = []
    for h in range(21 * 24):
        at = start + timedelta(hours=h)
        busy = 3.0 if 8 <= at.hour < 20 else 1.0
        rows.append(_row(FLEET[2], at, 1.0, "product", 1.0 + 0.02 * ((h * 7919) % 5 - 2), busy))
        if at == spike:
            rows.append(_row(RUNAWAY, at, 1.0, "product", 1.0, 40.0))
    path = tmp_path / "hourly.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=HEADER)
        writer.writeheader()
        writer.writerows(rows)
    store = tmp_path / "store"
    api.ingest_billing([path], store=store)
    doc = detect_anomalies(open_store(store), ["team"], days=7, hourly=True, min_impact=50)
    assert doc["parameters"]["granularity"] == "hour"
    (a,) = doc["anomalies"]
    assert a["day"] == spike.isoformat() and a["impact"] == pytest.approx(40 * 4.6016, rel=0.1)
    assert a["contributors"][0]["value"] in ("Amazon SageMaker", "g6.12xlarge", "acct-444")
    daily = detect_anomalies(open_store(store), ["team"], days=7, min_impact=50)
    assert all(x["day"] != spike.date().isoformat() for x in daily["anomalies"])  # lost in the day's total
