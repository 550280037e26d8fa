"""``finops costs``: totals are the store's sums per currency, month over month, chargeback adds up exactly."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.report.costs import split_exact
from finops_cli.schema.currency import minor_units
from finops_cli.store import Store

runner = CliRunner()
DIMS = ["month", "provider", "account", "region", "instance_type", "pricing_category", "team", "workload", "env"]
COLUMN = {"month": "billing_period", "provider": "provider", "account": "BillingAccountId", "region": "RegionId",
          "instance_type": "x_InstanceType", "pricing_category": "PricingCategory"}  # fmt: skip
TEAMS = ["research", "data", "product", "ops"]


def _generate(seed: int = 7, n: int = 400) -> pd.DataFrame:
    """Messy billing: three currencies (JPY has no minor unit), two months, wide and missing tags, non-GPU lines."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        currency = rng.choice(["USD", "EUR", "JPY"], p=[0.6, 0.3, 0.1])
        tags: dict[str, str] = {}
        if rng.random() < 0.8:
            tags["team"] = str(rng.choice(TEAMS))
        if rng.random() < 0.5:
            tags["workload"] = f"w{rng.integers(0, 5)}"
        for k in range(int(rng.integers(0, 4))):  # a wide tag set
            tags[f"cost-center:{k}"] = f"cc{rng.integers(0, 3)}"
        if rng.random() < 0.3:
            tags["env"] = str(rng.choice(["prod", "dev"]))
        gpu = rng.random() < 0.8
        # a GPU machine's vCPU/RAM SKU (GCP): usage of a GPU type without GPU-hours, GPU spend all the same;
        # a refund on a GPU type: not usage, not GPU spend
        kind = "gpu" if gpu else str(rng.choice(["core", "refund", "other"], p=[0.4, 0.2, 0.4]))
        month = str(rng.choice(["2026-09", "2026-10"]))
        start = pd.Timestamp(f"{month}-01", tz="UTC") + pd.Timedelta(days=int(rng.integers(0, 28)))
        cost = float(rng.gamma(2.0, 300.0)) * (150 if currency == "JPY" else 1)
        rows.append(
            {
                "provider": str(rng.choice(["aws", "gcp", "azure"])),
                "billing_period": month,
                "BillingAccountId": str(rng.choice(["111122223333", "444455556666"])),
                "RegionId": None if rng.random() < 0.05 else str(rng.choice(["us-east-1", "europe-west4"])),
                "x_InstanceType": str(rng.choice(["p5.48xlarge", "a3-highgpu-8g"])) if kind != "other" else None,
                "x_GpuCount": 8 if kind != "other" else None,
                "ChargeCategory": "Adjustment" if kind == "refund" else "Usage",
                "PricingCategory": str(rng.choice(["Standard", "Dynamic", "Committed"])),
                "x_GpuHours": float(rng.integers(1, 200)) if gpu else (0.0 if rng.random() < 0.5 else None),
                "EffectiveCost": cost,
                "BilledCost": cost * float(rng.choice([1.0, 0.0, 1.3])),
                "BillingCurrency": currency,
                "ChargePeriodStart": start,
                "ChargePeriodEnd": start + pd.Timedelta(days=1),
                "Tags": json.dumps(tags, sort_keys=True) if tags or rng.random() < 0.5 else None,
            }
        )
    return pd.DataFrame(rows)


def _gpu_lines(frame: pd.DataFrame) -> pd.DataFrame:
    """GPU spend: lines with GPU-hours, and usage lines of a GPU instance type (a GCP machine's core and RAM)."""
    usage_of_gpu_type = (frame["x_GpuCount"].fillna(0) > 0) & (frame["ChargeCategory"] == "Usage")
    return frame[(frame["x_GpuHours"].fillna(0) > 0) | usage_of_gpu_type]


def _write(root: Path, frame: pd.DataFrame, usage: pd.DataFrame | None = None) -> Store:
    store = Store(root)
    with store.transaction() as tx:
        for (provider, period), part in frame.groupby(["provider", "billing_period"]):
            table = pa.Table.from_pandas(part.drop(columns=["provider", "billing_period"]), preserve_index=False)
            tx.write("billing", {"provider": provider, "billing_period": period}, "k", table)
        if usage is not None:
            for month, part in usage.groupby("month"):
                tx.write("utilization", {"month": month}, "u", pa.Table.from_pandas(part.drop(columns="month"),
                         preserve_index=False))  # fmt: skip
    return store


@pytest.fixture(scope="module")
def messy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, pd.DataFrame]:
    frame = _generate()
    return _write(tmp_path_factory.mktemp("costs") / "store", frame), frame


def _tag(tags: object, key: str) -> str:
    value = json.loads(tags).get(key) if isinstance(tags, str) else None
    return "(none)" if value is None else str(value)


def _value(frame: pd.DataFrame, dim: str) -> pd.Series:
    if dim in COLUMN:
        return frame[COLUMN[dim]].fillna("(none)").astype(str)
    return frame["Tags"].map(lambda t: _tag(t, dim))


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    by=st.lists(st.sampled_from(DIMS), min_size=0, max_size=3, unique=True),
    cost=st.sampled_from(["billed", "effective"]),
    all_lines=st.booleans(),
    where=st.one_of(st.none(), st.tuples(st.sampled_from(DIMS), st.integers(0, 3))),
)
def test_totals_are_the_stores_sums_per_currency(messy, by, cost, all_lines, where) -> None:
    store, frame = messy
    lines = frame if all_lines else _gpu_lines(frame)
    filters = None
    if where is not None:
        dim, pick = where
        values = sorted(_value(lines, dim).unique())
        value = values[pick % len(values)]
        filters = [f"{dim}={value}"]
        lines = lines[_value(lines, dim) == value]
    result = api.costs(store=store, by=by, where=filters, cost=cost, all_lines=all_lines)
    col = "BilledCost" if cost == "billed" else "EffectiveCost"
    expected = lines.groupby("BillingCurrency")[col].sum().to_dict()
    assert result.totals.keys() == expected.keys()
    for currency, total in expected.items():
        assert result.totals[currency] == pytest.approx(total, rel=1e-12, abs=1e-6)
        rows = [r for r in result.rows if r["currency"] == currency]
        assert math.fsum(r["cost"] for r in rows) == pytest.approx(total, rel=1e-12, abs=1e-6)
        # one row per distinct group, each one the sum of its lines
        part = lines[lines["BillingCurrency"] == currency]
        keys = [_value(part, d) for d in by]
        grouped = part.groupby(keys)[col].sum() if by else pd.Series({(): part[col].sum()})
        assert len(rows) == len(grouped)
        for r in rows[:3]:
            key = tuple(r[d] for d in by)
            assert r["cost"] == pytest.approx(grouped[key if len(by) != 1 else key[0]], abs=1e-6)


def test_compare_month_over_month_largest_movers_first(messy) -> None:
    store, frame = messy
    result = api.costs(store=store, by=["team"], month="2026-10", compare="2026-09", cost="effective")
    assert result.mode == "compare"
    gpu = _gpu_lines(frame)
    moves = [abs(r["delta"]) for r in result.rows]
    assert moves == sorted(moves, reverse=True)
    for currency in ("USD", "EUR", "JPY"):
        rows = [r for r in result.rows if r["currency"] == currency]
        for month, key in (("2026-10", "cost"), ("2026-09", "previous")):
            want = gpu[(gpu["billing_period"] == month) & (gpu["BillingCurrency"] == currency)]["EffectiveCost"].sum()
            assert math.fsum(r[key] for r in rows) == pytest.approx(want, abs=1e-6)
        for r in rows:
            assert r["delta"] == pytest.approx(r["cost"] - r["previous"])
            if r["previous"]:
                assert r["delta_pct"] == pytest.approx(r["delta"] / r["previous"])
            else:
                assert r["delta_pct"] is None


def _minor(value: float, currency: str) -> int:
    return round(value * 10 ** minor_units(currency))


@pytest.mark.parametrize("rule", ["proportional", "even"])
def test_chargeback_sums_to_the_bill_exactly_without_utilisation(messy, rule) -> None:
    store, frame = messy
    result = api.costs(store=store, chargeback=rule, month="2026-10")
    gpu = _gpu_lines(frame[frame["billing_period"] == "2026-10"])
    for currency, bill in gpu.groupby("BillingCurrency")["EffectiveCost"].sum().items():
        rows = [r for r in result.rows if r["currency"] == currency]
        assert sum(_minor(r["total"], currency) for r in rows) == _minor(bill, currency)
        assert {r["team"] for r in rows} <= set(TEAMS)  # untagged cost is shared out, never its own row
        if rule == "even":
            shares = {round(r["shared_share"], 6) for r in rows}
            assert len(shares) == 1
        else:  # proportional to usage (here: direct cost, no utilisation)
            ratio = {round(r["shared_share"] / r["usage"], 9) for r in rows if r["usage"]}
            assert len(ratio) == 1
    assert any("no utilisation" in n for n in result.notes)


def test_chargeback_with_utilisation_moves_idle_to_the_busy(tmp_path: Path) -> None:
    t = pd.Timestamp("2026-10-01", tz="UTC")
    lines = pd.DataFrame(
        [
            {"provider": "aws", "billing_period": "2026-10", "BillingAccountId": "1", "RegionId": "us-east-1",
             "x_InstanceType": "p5.48xlarge", "PricingCategory": "Standard", "x_GpuHours": 100.0, "x_GpuCount": 8,
             "ChargeCategory": "Usage", "EffectiveCost": cost, "BilledCost": cost, "BillingCurrency": "USD",
             "ChargePeriodStart": t, "ChargePeriodEnd": t + pd.Timedelta(days=1), "Tags": tags}
            for cost, tags in ((1000.0, '{"team":"a"}'), (1000.0, '{"team":"b"}'), (300.01, None))
        ]
    )  # fmt: skip
    usage = pd.DataFrame(
        {
            "month": ["2026-10"] * 4,
            "team": ["a", "a", "b", "b"],
            "utilization": [1.0, 1.0, 0.5, 0.0],  # a fully busy; b busy 25 %
            "interval_s": [3600.0] * 4,
            "timestamp": [t] * 4,
        }
    )
    store = _write(tmp_path / "s", lines, usage)
    result = api.costs(store=store, chargeback="proportional")
    rows = {r["team"]: r for r in result.rows}
    assert rows["a"]["own_idle"] == 0 and rows["b"]["own_idle"] == pytest.approx(750.0)
    # the idle pool (750) and the untagged 300.01 go 1000 : 250 to a and b
    assert rows["a"]["idle_share"] == pytest.approx(600.0) and rows["b"]["idle_share"] == pytest.approx(150.0)
    assert rows["a"]["total"] + rows["b"]["total"] == pytest.approx(2300.01, abs=1e-9)
    assert _minor(rows["a"]["total"], "USD") + _minor(rows["b"]["total"], "USD") == 230001
    even = {r["team"]: r for r in api.costs(store=store, chargeback="even").rows}
    assert even["a"]["idle_share"] == pytest.approx(375.0) and even["b"]["shared_share"] == pytest.approx(150.005)


@settings(max_examples=examples(200), deadline=None)
@given(
    amounts=st.lists(st.floats(0, 1e7, allow_nan=False), min_size=1, max_size=8),
    currency=st.sampled_from(["USD", "JPY", "KWD"]),
)
def test_split_exact_adds_up_in_minor_units(amounts, currency) -> None:
    parts = {f"t{i}": a for i, a in enumerate(amounts)}
    out = split_exact(parts, math.fsum(amounts), currency)
    assert sum(_minor(v, currency) for v in out.values()) == _minor(math.fsum(amounts), currency)
    unit = 10 ** -minor_units(currency)
    for k, v in out.items():
        assert abs(v - parts[k]) <= unit * 1.000001 + 1e-9 * abs(parts[k])


def _run(*args: object) -> tuple[int, str, str]:
    r = runner.invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def test_cli_formats_and_bad_input(messy) -> None:
    store, frame = messy
    code, out, err = _run("costs", "--store", store.root, "--by", "team,month", "--format", "csv")
    assert code == 0, err
    csv = pd.read_csv(io.StringIO(out))
    assert list(csv.columns[:3]) == ["team", "month", "currency"]
    gpu = _gpu_lines(frame)
    assert csv.groupby("currency")["cost"].sum()["EUR"] == pytest.approx(
        gpu[gpu["BillingCurrency"] == "EUR"]["EffectiveCost"].sum(), abs=1e-3
    )
    code, out, _ = _run(
        "costs", "--store", store.root, "--by", "provider", "--month", "2026-10", "--format", "markdown"
    )
    assert code == 0 and out.startswith("### GPU spend, 2026-10") and "| provider |" in out
    code, out, _ = _run("costs", "--store", store.root, "--compare", "2026-09", "--where", "provider=aws")
    assert code == 0 and "2026-10 vs 2026-09" in out
    for args, says in (
        (["--where", "team"], "NAME=VALUE"),
        (["--month", "2026-1"], "YYYY-MM"),
        (["--compare", "2025-01"], "no billing for it"),
        (["--by", "substrate"], "--fleet"),
        (["--by", "team,team"], "twice"),
        (["--cost", "list"], "billed or effective"),
        (["--chargeback", "fair"], "proportional or even"),
        (["--chargeback", "even", "--compare", "2026-09"], "give one"),
    ):
        code, _, err = _run("costs", "--store", store.root, *args)
        assert code == 2 and says in err and "Traceback" not in err, (args, err)
    code, _, err = _run("costs", "--store", store.root.parent / "nothing")
    assert code == 2 and "ingest billing" in err


def test_by_is_capped_and_a_repeat_is_named_briefly(messy) -> None:
    """Issue 27 items 13, 17: 1,000 dimensions took 12.5 s (3,000 did not finish in 60 s); a repeated
    dimension's error quoted the whole argument (tens of kB)."""
    from finops_cli.report.costs import MAX_COST_DIMENSIONS

    store, _ = messy
    many = ",".join(f"tag{i}" for i in range(3000))
    code, _, err = _run("costs", "--store", store.root, "--by", many)
    assert code == 2 and "3,000 dimensions" in err and f"at most {MAX_COST_DIMENSIONS}" in err and len(err) < 300
    dims = ",".join(f"tag{i}" for i in range(MAX_COST_DIMENSIONS))
    code, _, err = _run("costs", "--store", store.root, "--by", dims, "--format", "json")
    assert code == 0, err
    long = "x" * 20_000
    code, _, err = _run("costs", "--store", store.root, "--by", f"{long},team,{long}")
    assert code == 2 and "named twice" in err and len(err) < 300, err[:300]
