"""One price, one answer (issue 10): products, the window rule, plan.json's prices, currencies, the default month.

Each test here fails on the code before the fix: a feed pooled Linux and Windows prices; ``plan`` ended a
feed's window at the horizon's end while ``stack``/``netc``/``simulate dispatch`` ended it at the newest
price; a CAD fleet relabelled USD prices; ``plan`` took the latest billing month (a stray non-GPU line
decided it) while ``stack``/``netc`` took the profiles' month.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import yaml
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.estate.prices import resolve_fleet
from finops_cli.report.prices import feed_statistic
from finops_cli.schema.estate import Fleet
from finops_cli.store import Store
from tests.estate.spot_feed import AWS_PRODUCTS, messy_feed, write_feed

OCT_END = datetime(2026, 11, 1, tzinfo=UTC)
G5_FEED = {"provider": "aws", "region": "us-east-1", "instance_type": "g5.12xlarge", "gpus_per_instance": 4}


def _fleet(feed: dict, currency: str = "USD", **fleet_extra: object) -> Fleet:
    return Fleet.model_validate(
        {
            "version": 1,
            "currency": currency,
            "substrates": [
                {"id": "g5-spot", "provider": "aws", "kind": "spot", "accelerator": "A10G", "jurisdiction": "US",
                 "gpus": 64, "interruptions_per_hour": 0.02, "price_feed": feed},
            ],
            **fleet_extra,
        }
    )  # fmt: skip


# --- 1. products ---------------------------------------------------------------------------------------


def test_aws_feed_prices_linux_by_default_never_a_blend_of_products(store: Store) -> None:
    feed = messy_feed(seed=1)
    write_feed(store, feed)
    fleet, sources = resolve_fleet(_fleet(G5_FEED | {"statistic": "p90"}), store, horizon_end=OCT_END)
    linux = feed[feed["product_description"] == "Linux/UNIX"]
    expected = feed_statistic(linux.drop(columns="product_description"), "aws", "us-east-1", "g5.12xlarge", "p90",
                              30, product=None, end=OCT_END)  # fmt: skip
    price = fleet.substrate("g5-spot").price_per_gpu_hour
    assert price == pytest.approx(expected.value / 4)
    assert sources[0].product == "Linux/UNIX" and "Linux/UNIX" in sources[0].detail
    # choosing Windows gives the Windows rate (~2.5×), never the blend
    win, _ = resolve_fleet(_fleet(G5_FEED | {"statistic": "p90", "product": "Windows"}), store, horizon_end=OCT_END)
    assert win.substrate("g5-spot").price_per_gpu_hour / price == pytest.approx(2.5, rel=0.2)
    with pytest.raises(InputError, match=r"no 'Linux' prices .*products stored: Linux/UNIX, Red Hat"):
        resolve_fleet(_fleet(G5_FEED | {"product": "Linux"}), store, horizon_end=OCT_END)


def test_a_feed_with_several_products_and_no_default_must_name_one(store: Store) -> None:
    write_feed(store, messy_feed(provider="azure", region="eastus", products={"Linux": 1.0, "Windows": 2.0}))
    feed = {"provider": "azure", "region": "eastus", "instance_type": "g5.12xlarge"}
    with pytest.raises(InputError, match=r"mixes 2 products \(Linux, Windows\); choose one with product:"):
        resolve_fleet(_fleet(feed), store, horizon_end=OCT_END)
    fleet, src = resolve_fleet(_fleet(feed | {"product": "Windows"}), store, horizon_end=OCT_END)
    assert src[0].product == "Windows" and fleet.substrate("g5-spot").price_per_gpu_hour > 0


def test_prices_command_shows_the_product_in_every_format(store: Store) -> None:
    write_feed(store, messy_feed(seed=2), messy_feed(seed=3, region="us-west-2", products={"Linux/UNIX": 1.0}))
    runner = CliRunner()
    base = ["prices", "--store", str(store.root)]
    table = runner.invoke(app, base, env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in table.output  # nothing truncated to an ellipsis at 80 columns (also what a pipe gets)
    for product, rows in (("Linux/UNIX", 6), ("RHEL", 3), ("SUSE Linux", 3), ("Windows", 3)):
        assert sum(f" {product} " in line for line in lines) == rows, product  # one row per zone and product
    md = runner.invoke(app, [*base, "--format", "markdown"])
    assert md.exit_code == 0 and "| product |" in md.output.replace("Product", "product")
    assert "| Windows |" in md.output
    rows = json.loads(runner.invoke(app, [*base, "--format", "json"]).output)["rows"]
    assert {r["product_description"] for r in rows} == set(AWS_PRODUCTS)


# --- 2. one resolver, one window rule -------------------------------------------------------------------

WORKLOADS = {
    "version": 1,
    "workloads": [
        {"id": "batch", "unit": "Mimages", "interruptible": True, "deferrable": True, "demand": {"total": 3000},
         "throughput": {"A10G": 1.0}, "checkpoint": {"interval_minutes": 20}},
    ],
}  # fmt: skip


def _files(tmp_path: Path, fleet: Fleet | dict, workloads: dict = WORKLOADS) -> tuple[Path, Path]:
    f, w = tmp_path / "fleet.yaml", tmp_path / "workloads.yaml"
    data = fleet.model_dump(mode="json", exclude_defaults=True) if isinstance(fleet, Fleet) else fleet
    f.write_text(yaml.safe_dump(data | {"version": 1}))
    w.write_text(yaml.safe_dump(workloads))
    return f, w


def test_plan_stack_netc_and_dispatch_use_the_same_feed_window(store: Store, tmp_path: Path) -> None:
    # November prices are twice October's: a window ending at the newest price (Nov 15) sees them,
    # one ending at the horizon's end (Nov 1) does not.
    write_feed(store, messy_feed(seed=4, later=("2026-11-01", 2.0)))
    fleet_p, wl_p = _files(tmp_path, _fleet(G5_FEED | {"statistic": "mean"}))
    est = api.estate(fleet_p, wl_p)
    plan = api.plan(est, store, horizon="2026-10")
    used = {p.substrate: p for p in plan.document.prices}["g5-spot"]
    stack = api.stack(api.estate(fleet_p, wl_p), store=store, horizon="2026-10")
    netc = api.netc(api.estate(fleet_p, wl_p), store=store, horizon="2026-10")
    dispatch = api.simulate_dispatch(est, generate=True, requests=500, store=store, horizon="2026-10")
    assert used.window_end == "2026-11-01T00:00:00Z" and used.source == "price_feed" and used.statistic == "mean"
    assert stack.prices[0].value == netc.prices[0].value == pytest.approx(used.value, abs=1e-6)
    step = stack.stacks[0].steps[0]
    row = netc.rows[0]
    unit = {(u["workload"], u["substrate"]): u["price_per_unit"] for u in dispatch.unit_prices}
    assert row.netc / row.demand_units == pytest.approx(step.cost_per_unit, rel=1e-9)
    assert unit["batch", "g5-spot"] == pytest.approx(step.cost_per_unit, rel=1e-9)
    alloc = plan.document.allocations[0]
    assert alloc.cost / alloc.units == pytest.approx(step.cost_per_unit, rel=1e-6)
    # a horizon after the feed's newest price: the window ends at that price, for every command alike
    later = api.plan(est, store, horizon="2026-12").document.prices[0]
    assert later.window_end.startswith("2026-11-1") and later.value > used.value * 1.3
    assert api.stack(api.estate(fleet_p, wl_p), store=store, horizon="2026-12").prices[0].value == pytest.approx(
        later.value
    )


def test_one_priced_estate_reads_each_input_once(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Priced once, handed down: stack, plan and the report's supply curve parse fleet.yaml once, resolve the feed
    once and build the demand once (no process cache hides re-reads)."""
    from finops_cli import files
    from finops_cli.report import prices as report_prices

    write_feed(store, messy_feed(seed=4))
    fleet_p, wl_p = _files(tmp_path, _fleet(G5_FEED | {"statistic": "mean"}))
    parsed: list[Path] = []
    computed: list[object] = []
    real_yaml, real_stat = files._parse_yaml, report_prices.feed_statistic
    monkeypatch.setattr(files, "_parse_yaml", lambda text, path: parsed.append(path) or real_yaml(text, path))
    monkeypatch.setattr(report_prices, "feed_statistic", lambda *a, **k: computed.append(a) or real_stat(*a, **k))
    priced = api.price(api.estate(fleet_p, wl_p), store, horizon="2026-10")
    stack = api.stack(priced)
    plan = api.plan(priced)
    md = api.report(plan.document, store, estate=priced).markdown
    assert sorted(p.name for p in parsed) == ["fleet.yaml", "workloads.yaml"] and len(computed) == 1
    assert plan.document.prices[0].value == pytest.approx(stack.prices[0].value) and "supply curve" in md.lower()
    with pytest.raises(ValueError, match="already priced"):
        api.stack(priced, horizon="2026-11")


def test_plan_json_records_every_price_used(store: Store, tmp_path: Path) -> None:
    write_feed(store, messy_feed(seed=5))
    fleet = {
        "version": 1,
        "substrates": [
            {"id": "g5-spot", "provider": "aws", "kind": "spot", "accelerator": "A10G", "jurisdiction": "US",
             "gpus": 64, "interruptions_per_hour": 0.02, "price_feed": G5_FEED | {"statistic": "p50"}},
            {"id": "g5-od", "provider": "aws", "kind": "on_demand", "accelerator": "A10G", "jurisdiction": "US",
             "price_ref": "aws/g5.12xlarge/on_demand"},
            {"id": "own", "provider": "onprem", "kind": "owned", "accelerator": "A10G", "jurisdiction": "US",
             "gpus": 4, "price_per_gpu_hour": 0.4},
        ],
    }  # fmt: skip
    fleet_p, wl_p = _files(tmp_path, fleet)
    doc = api.plan(api.estate(fleet_p, wl_p), store, horizon="2026-10").document
    prices = {p.substrate: p for p in doc.prices}
    spot, od, own = prices["g5-spot"], prices["g5-od"], prices["own"]
    assert (spot.source, spot.statistic, spot.product, spot.currency) == ("price_feed", "p50", "Linux/UNIX", "USD")
    assert spot.window_start == "2026-10-02T00:00:00Z" and spot.window_end == "2026-11-01T00:00:00Z"
    assert spot.samples and spot.samples > 50 and spot.age_days is not None
    assert (od.source, od.value, od.currency) == ("price_ref", 1.418, "USD") and od.age_days is not None
    assert (own.source, own.value) == ("fleet", 0.4)
    # the report prints the same table
    md = api.report(doc, store=store).markdown
    assert "## Prices used" in md
    assert f"| g5-spot | price feed | {spot.value:,.4f} | USD | p50 |" in md
    assert "| Linux/UNIX |" in md


# --- 5. currencies ----------------------------------------------------------------------------------------


def _cad_fleet(**extra: object) -> dict:
    return {
        "version": 1,
        "currency": "CAD",
        "substrates": [
            {"id": "g5-od", "provider": "aws", "kind": "on_demand", "accelerator": "A10G", "jurisdiction": "US",
             "price_ref": "aws/g5.12xlarge/on_demand"},
            {"id": "own", "provider": "onprem", "kind": "owned", "accelerator": "A10G", "jurisdiction": "US",
             "gpus": 4, "price_per_gpu_hour": 0.9},
        ],
        **extra,
    }  # fmt: skip


def test_a_cad_fleet_never_relabels_usd_prices(tmp_path: Path) -> None:
    fleet_p, wl_p = _files(tmp_path, _cad_fleet())
    runner = CliRunner()
    for cmd in (["plan", "--horizon", "2026-10"], ["stack"], ["netc"]):
        res = runner.invoke(app, [*cmd, "--fleet", str(fleet_p), "--workloads", str(wl_p)])
        assert res.exit_code == 2, (cmd, res.output)
        assert "substrate g5-od: price_ref aws/g5.12xlarge/on_demand is in USD but the fleet's currency is CAD" in (
            " ".join(res.output.split())
        )
    with pytest.raises(InputError, match=r"substrate g5-od: .* is in USD but the fleet's currency is CAD"):
        api.plan(api.estate(fleet_p, wl_p), None, horizon="2026-10")


def test_fx_from_fleet_yaml_or_the_command_line_is_applied_and_recorded(tmp_path: Path) -> None:
    fleet_p, wl_p = _files(tmp_path, _cad_fleet(fx={"USD:CAD": 1.37}))
    doc = api.plan(api.estate(fleet_p, wl_p), None, horizon="2026-10").document
    od = {p.substrate: p for p in doc.prices}["g5-od"]
    assert od.value == pytest.approx(1.418 * 1.37) and (od.quoted, od.quoted_currency, od.fx_rate) == (
        1.418,
        "USD",
        1.37,
    )
    assert doc.currency == "CAD" and doc.fx == {"USD:CAD": 1.37}
    md = api.report(doc).markdown
    assert "1 USD = 1.37 CAD" in md and "1.4180 USD × 1.37" in md
    # --fx overrides the file's rate; a rate into another currency is exit 2
    fleet2, _ = _files(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path, _cad_fleet())
    runner = CliRunner()
    args = ["plan", "--fleet", str(fleet2), "--workloads", str(wl_p), "--horizon", "2026-10", "--format", "json"]
    res = runner.invoke(app, [*args, "--fx", "USD:CAD=1.40"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["fx"] == {"USD:CAD": 1.4}
    assert {p["substrate"]: p["value"] for p in out["prices"]}["g5-od"] == pytest.approx(1.418 * 1.4)
    for bad, msg in ((["--fx", "USD:EUR=0.9"], "converts into EUR"), (["--fx", "USD=1.3"], "expected FROM:TO=RATE")):
        res = runner.invoke(app, [*args, *bad])
        assert res.exit_code == 2 and msg in res.output, res.output
    stack = runner.invoke(app, ["stack", "--fleet", str(fleet2), "--workloads", str(wl_p), "--fx", "USD:CAD=1.4"])
    assert stack.exit_code == 0, stack.output


def test_fx_in_fleet_yaml_must_convert_into_the_fleet_currency() -> None:
    with pytest.raises(ValueError, match="converts into EUR, but the fleet's currency is CAD"):
        Fleet.model_validate(_cad_fleet(fx={"USD:EUR": 0.9}))


# --- 6. the default month -------------------------------------------------------------------------------


def _billing(store: Store) -> None:
    """October GPU lines, and one stray November storage line ($0.24, no GPU-hours)."""
    oct_ts = pd.date_range("2026-10-01", periods=48, freq="h", tz="UTC")
    rows = [("aws", "2026-10", t, 8.0, 11.0) for t in oct_ts]
    rows.append(("aws", "2026-11", pd.Timestamp("2026-11-02", tz="UTC"), 0.0, 0.24))
    frame = pd.DataFrame(
        rows, columns=["provider", "billing_period", "ChargePeriodStart", "x_GpuHours", "EffectiveCost"]
    ).assign(BillingCurrency="USD", RegionId="us-east-1", x_InstanceType="g5.12xlarge", PricingCategory="Standard")
    with store.transaction() as tx:
        tx.write_partitioned("billing", pa.Table.from_pandas(frame, preserve_index=False), "t")


def test_every_command_defaults_to_the_latest_month_with_gpu_usage(store: Store, tmp_path: Path) -> None:
    _billing(store)
    fleet = {"version": 1, "substrates": [
        {"id": "own", "provider": "onprem", "kind": "owned", "accelerator": "A10G", "jurisdiction": "US",
         "gpus": 64, "price_per_gpu_hour": 0.4}]}  # fmt: skip
    fleet_p, wl_p = _files(tmp_path, fleet)
    est = api.estate(fleet_p, wl_p)
    oct1 = datetime(2026, 10, 1, tzinfo=UTC)
    assert api.plan(est, store).horizon.start == oct1
    assert api.stack(api.estate(fleet_p, wl_p), store=store).horizon.start == oct1
    assert api.netc(api.estate(fleet_p, wl_p), store=store).horizon.start == oct1
    runner = CliRunner()
    common = ["--fleet", str(fleet_p), "--workloads", str(wl_p), "--store", str(store.root)]
    for cmd in (["plan"], ["stack"], ["netc"], ["simulate", "dispatch", "--generate", "--requests", "100"]):
        res = runner.invoke(app, [*cmd, *common])
        assert res.exit_code == 0, (cmd, res.output)
        assert "horizon: 2026-10-01 + 744 h: latest month with GPU usage in the store" in res.stderr, cmd


def test_months_that_disagree_are_warned_about(store: Store, tmp_path: Path) -> None:
    _billing(store)
    util = pd.DataFrame({"month": ["2026-09"], "timestamp": [pd.Timestamp("2026-09-03", tz="UTC")],
                         "device": ["gpu0"], "util": [0.5]})  # fmt: skip
    with store.transaction() as tx:
        tx.write_partitioned("utilization", pa.Table.from_pandas(util, preserve_index=False), "t")
    fleet = {"version": 1, "substrates": [
        {"id": "own", "provider": "onprem", "kind": "owned", "accelerator": "A10G", "jurisdiction": "US",
         "gpus": 64, "price_per_gpu_hour": 0.4}]}  # fmt: skip
    fleet_p, wl_p = _files(tmp_path, fleet)
    res = CliRunner().invoke(app, ["stack", "--fleet", str(fleet_p), "--workloads", str(wl_p), "--store",
                                   str(store.root), "--horizon", "2026-12"])  # fmt: skip
    assert res.exit_code == 0, res.output
    said = " ".join(res.stderr.split())
    assert "different months: horizon 2026-12, billing (GPU-hours) 2026-10, utilisation 2026-09" in said
