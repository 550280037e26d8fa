"""Idle waste: exact idle fraction and dollars for a known trace, the pricing order, unobserved capacity."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.ingest.utilization import ingest_utilization
from finops_cli.report.waste import USAGE_COLUMNS, UtilHistogram, to_markdown, waste_reports_by
from finops_cli.schema.billing import BILLING_WRITE_SCHEMA
from finops_cli.store import Store


def _trace(path: Path, devices: dict[str, tuple[str, str, list[float]]]) -> Path:
    """Hourly CSV: device -> (resource_id, team, utilisation per hour from 2026-10-01T00:00Z)."""
    lines = ["timestamp,device_id,utilization,resource_id,team"]
    for dev, (res, team, utils) in devices.items():
        lines += [f"2026-10-01T{h:02d}:00:00Z,{dev},{u},{res},{team}" for h, u in enumerate(utils)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _billing(store: Store, lines: list[dict]) -> None:
    """Write billing lines (only the columns waste reads; the rest null) for October 2026."""
    base = {name: None for name in BILLING_WRITE_SCHEMA.names}
    rows = [
        {**base, "BillingCurrency": "USD", "ChargeCategory": "Usage", "provider": "aws", "billing_period": "2026-10",
         "ChargePeriodStart": pd.Timestamp("2026-10-01", tz="UTC"), **line}
        for line in lines
    ]  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=BILLING_WRITE_SCHEMA)
    with store.transaction() as tx:
        tx.write_partitioned("billing", table, "test")


def test_known_utilisation_gives_exact_idle_fraction_and_dollars(tmp_path: Path, store: Store) -> None:
    # two GPUs at exactly 25 % for 10 hours: 20 GPU-hours, 5 busy, 15 idle; at $4/GPU-h idle costs $60
    f = _trace(tmp_path / "t.csv", {"g0": ("n1", "ml", [0.25] * 10), "g1": ("n1", "ml", [0.25] * 10)})
    ingest_utilization(store, [f])
    report = api.waste(store=store, price_per_gpu_hour=4.0)
    t = report.totals
    assert (t["device_hours"], t["busy_hours"], t["idle_hours"]) == (20.0, 5.0, 15.0)
    assert t["idle_fraction"] == 0.75
    assert t["idle_cost"] == 60.0
    assert report.priced_by["flag"] == 20.0
    assert report.groups == [
        {"key": "ml", "devices": 2, "device_hours": 20.0, "busy_hours": 5.0, "idle_hours": 15.0,
         "idle_fraction": 0.75, "idle_cost": 60.0, "cost": 80.0}
    ]  # fmt: skip


def test_billing_prices_devices_and_unobserved_capacity_is_separate(tmp_path: Path, store: Store) -> None:
    # i-1: 8 GPUs billed 10 h for $200 → $2.50/GPU-h; the trace sees 2 of its GPUs (idle half the time).
    # i-2: billed $90 for 4 GPUs × 10 h, never sampled → unobserved, not idle.
    f = _trace(tmp_path / "t.csv", {"i-1/gpu0": ("i-1", "ml", [0.0, 1.0] * 5), "i-1/gpu1": ("i-1", "ml", [0.5] * 10)})
    ingest_utilization(store, [f])
    _billing(
        store,
        [
            {"ResourceId": "i-1", "EffectiveCost": 150.0, "x_GpuHours": 60.0, "x_InstanceType": "p5.48xlarge"},
            {"ResourceId": "i-1", "EffectiveCost": 50.0, "x_GpuHours": 20.0, "x_InstanceType": "p5.48xlarge"},
            {"ResourceId": "i-1", "EffectiveCost": -0.0, "x_GpuHours": 0.0, "ChargeCategory": "Credit"},
            {
                "ResourceId": "i-2",
                "EffectiveCost": 90.0,
                "x_GpuHours": 40.0,
                "x_InstanceType": "g6.12xlarge",
                "Tags": json.dumps({"team": "data"}),
            },
        ],
    )
    report = api.waste(store=store, by="instance_type", price_per_gpu_hour=99.0)
    t = report.totals
    assert t["device_hours"] == 20.0 and t["busy_hours"] == 10.0
    assert t["idle_cost"] == pytest.approx(10.0 * 2.5)  # billing beats the flag
    assert report.priced_by == {"billing": 20.0, "fleet": 0.0, "flag": 0.0, "none": 0.0}
    assert report.unobserved == [{"key": "g6.12xlarge", "resources": 1, "gpu_hours": 40.0, "cost": 90.0}]
    assert t["unobserved_gpu_hours"] == 40.0 and t["unobserved_cost"] == 90.0
    assert t["coverage"] == pytest.approx(20.0 / 120.0)  # observed ÷ billed GPU-hours
    assert [g["key"] for g in report.groups] == ["p5.48xlarge"]
    md = to_markdown(report)
    assert "(unobserved)" in md and "Philly" in md and "$25.00" in md


@pytest.mark.parametrize("by", ["team", "device"])
def test_unobserved_capacity_is_summed_per_group_costliest_first(tmp_path: Path, store: Store, by: str) -> None:
    """Resources the trace never saw are summed per group (a 50 M-line month bills ~67,000 of them: one entry
    each would grow the report with the month); ``--by device`` keeps one entry per resource."""
    f = _trace(tmp_path / "t.csv", {"i-1/gpu0": ("i-1", "ml", [0.5] * 10)})
    ingest_utilization(store, [f])
    tag = {"data": json.dumps({"team": "data"}), "ml": json.dumps({"team": "ml"}), "none": json.dumps({})}
    _billing(
        store,
        [
            {"ResourceId": "i-1", "EffectiveCost": 20.0, "x_GpuHours": 10.0, "Tags": tag["ml"]},
            {"ResourceId": "i-2", "EffectiveCost": 30.0, "x_GpuHours": 10.0, "Tags": tag["data"]},
            {"ResourceId": "i-3", "EffectiveCost": 12.5, "x_GpuHours": 5.0, "Tags": tag["data"]},
            {"ResourceId": "i-3", "EffectiveCost": 2.5, "x_GpuHours": 1.0, "Tags": tag["data"]},
            {"ResourceId": "i-4", "EffectiveCost": 100.0, "x_GpuHours": 8.0, "Tags": tag["none"]},
            {"ResourceId": "i-5", "EffectiveCost": 9.0, "x_GpuHours": 3.0, "Tags": tag["ml"]},
        ],
    )
    report = api.waste(store=store, by=by)
    if by == "team":
        assert report.unobserved == [
            {"key": "(unknown)", "resources": 1, "gpu_hours": 8.0, "cost": 100.0},
            {"key": "data", "resources": 2, "gpu_hours": 16.0, "cost": 45.0},
            {"key": "ml", "resources": 1, "gpu_hours": 3.0, "cost": 9.0},
        ]
    else:
        assert [(u["key"], u["resources"], u["cost"]) for u in report.unobserved] == [
            ("i-4", 1, 100.0), ("i-2", 1, 30.0), ("i-3", 1, 15.0), ("i-5", 1, 9.0)
        ]  # fmt: skip
    assert report.totals["unobserved_gpu_hours"] == 27.0 and report.totals["unobserved_cost"] == 154.0
    text = CliRunner().invoke(app, ["waste", "--store", str(store.root), "--by", by, "--format", "table"]).output
    assert "resources" in text and "(unobserved)" in text


FLEET = """
version: 1
currency: USD
substrates:
  - id: onprem-h100
    provider: onprem
    kind: owned
    accelerator: H100
    region: us-east
    jurisdiction: US
    gpus: 16
    price_per_gpu_hour: 1.0
    committed_per_gpu_hour: 0.5
    match: {ResourceId: "node-*"}
"""


def test_fleet_price_when_billing_has_none(tmp_path: Path, store: Store) -> None:
    f = _trace(tmp_path / "t.csv", {"node-1/gpu0": ("node-1", "ml", [0.0] * 4), "x/gpu0": ("x", "ml", [0.0] * 4)})
    ingest_utilization(store, [f])
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    report = api.waste(store=store, fleet=fleet, by="substrate")
    by_key = {g["key"]: g for g in report.groups}
    assert by_key["onprem-h100"]["idle_cost"] == 4 * 1.5  # price + committed per GPU-hour
    assert by_key["(unknown)"]["idle_cost"] is None  # nothing prices it: hours shown, dollars not
    assert report.totals["unpriced_device_hours"] == 4.0
    assert report.priced_by["fleet"] == 4.0 and report.priced_by["none"] == 4.0


def test_distribution_share_at_zero_and_deciles(tmp_path: Path, store: Store) -> None:
    utils = [0.0] * 6 + [0.9] * 4
    ingest_utilization(store, [_trace(tmp_path / "t.csv", {"g": ("r", "t", utils)})])
    d = api.waste(store=store).distribution
    assert d["share_at_zero"] == 0.6
    assert d["deciles"][:6] == [0.0] * 6 and d["deciles"][6:] == [0.9, 0.9, 0.9]


def test_waste_errors(tmp_path: Path, store: Store) -> None:
    with pytest.raises(InputError, match="ingest utilization"):
        api.waste(store=store)
    ingest_utilization(store, [_trace(tmp_path / "t.csv", {"g": ("r", "t", [0.5])})])
    with pytest.raises(InputError, match="month 2026-09"):
        api.waste(store=store, month="2026-09")
    with pytest.raises(InputError, match="by must be one of"):
        api.waste(store=store, by="colour")


def test_histogram_deciles() -> None:
    bins = pd.DataFrame({"bin": [i * 10 for i in range(100)], "samples": 1, "zeros": [1] + [0] * 99})
    h = UtilHistogram.from_bins(bins)  # samples at 0, 0.01 … 0.99 (bin = ⌊u × 1000⌋)
    assert h.n == 100 and h.share_at_zero() == 0.01
    assert h.deciles() == pytest.approx([0.09, 0.19, 0.29, 0.39, 0.49, 0.59, 0.69, 0.79, 0.89], abs=0.0011)


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.floats(0.01, 100), st.floats(0, 1), st.floats(0, 10)),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["team", "device", "substrate", "instance_type"]),
)
def test_groups_add_up_to_totals(rows: list[tuple[str, float, float, float]], by: str) -> None:
    usage = pd.DataFrame(
        [
            {"device_id": f"d{i}", "resource_id": f"r{i}", "host": None, "team": team, "workload": None,
             "accelerator": "H100", "samples": 1, "zero_samples": 0, "device_hours": h, "busy_hours": h * u}
            for i, (team, h, u, _) in enumerate(rows)
        ],
        columns=USAGE_COLUMNS,
    )  # fmt: skip
    report = waste_reports_by(usage, [by], price_per_gpu_hour=3.0)[by]  # type: ignore[list-item]
    t = report.totals
    assert sum(g["device_hours"] for g in report.groups) == pytest.approx(t["device_hours"])
    assert sum(g["idle_cost"] for g in report.groups) == pytest.approx(t["idle_cost"])
    assert t["idle_hours"] == pytest.approx(t["device_hours"] - t["busy_hours"])
    assert 0 <= t["idle_fraction"] <= 1 + 1e-12
    assert t["idle_cost"] == pytest.approx(3.0 * t["idle_hours"])


def test_cli_waste_formats(tmp_path: Path) -> None:
    runner = CliRunner()
    store = str(tmp_path / "s")
    trace = _trace(tmp_path / "t.csv", {"g0": ("n1", "ml", [0.25] * 10), "g1": ("n2", "ops", [1.0] * 10)})
    res = runner.invoke(app, ["ingest", "utilization", str(trace), "--store", store])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["waste", "--store", store, "--price-per-gpu-hour", "2", "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc["totals"]) >= {"device_hours", "busy_hours", "idle_hours", "idle_fraction", "idle_cost", "coverage"}
    assert {g["key"]: g["idle_cost"] for g in doc["groups"]} == {"ml": 15.0, "ops": 0.0}
    for g in doc["groups"]:
        assert set(g) >= {"key", "device_hours", "busy_hours", "idle_fraction", "idle_cost"}
    res = runner.invoke(app, ["waste", "--store", store, "--price-per-gpu-hour", "2", "--by", "device"])
    assert res.exit_code == 0 and "$15.00" in res.stdout and "Total" in res.stdout and "Philly" in res.stdout
    out = tmp_path / "waste.md"
    res = runner.invoke(app, ["waste", "--store", store, "--format", "markdown", "--out", str(out)])
    assert res.exit_code == 0 and out.read_text().startswith("## Idle GPU waste")
    res = runner.invoke(app, ["waste", "--store", store, "--by", "colour"])
    assert res.exit_code == 2


def test_gcp_global_names_and_azure_case_match_trace_resource_ids() -> None:
    from finops_cli.report.waste_rates import resource_key

    assert resource_key("//compute.googleapis.com/projects/p/zones/z/instances/a3-0") == resource_key(
        "projects/p/zones/z/instances/a3-0"
    )
    assert resource_key("/subscriptions/X/resourceGroups/ML/VM") == resource_key(
        "/subscriptions/x/resourcegroups/ml/vm"
    )
    assert resource_key(None) is None


def test_waste_over_several_sources_with_their_own_dictionaries(tmp_path: Path, store: Store) -> None:
    a = _trace(tmp_path / "a.csv", {"g0": ("n1", "ml", [0.5] * 4)})
    b = _trace(tmp_path / "b.csv", {"g1": ("n2", "ops", [0.0] * 4), "g0": ("n1", "ml", [])})
    ingest_utilization(store, [a])
    ingest_utilization(store, [b])
    report = api.waste(store=store, price_per_gpu_hour=1.0)
    assert {g["key"]: g["idle_cost"] for g in report.groups} == {"ml": 2.0, "ops": 4.0}


def test_billing_in_two_currencies_is_never_summed(tmp_path: Path, store: Store) -> None:
    f = _trace(tmp_path / "t.csv", {"g0": ("i-1", "ml", [0.5] * 4), "g1": ("i-2", "ml", [0.5] * 4)})
    ingest_utilization(store, [f])
    _billing(
        store,
        [
            {"ResourceId": "i-1", "EffectiveCost": 40.0, "x_GpuHours": 4.0},
            {"ResourceId": "i-2", "EffectiveCost": 36.0, "x_GpuHours": 4.0, "BillingCurrency": "EUR"},
        ],
    )
    with pytest.raises(InputError, match=r"mixes currencies \(EUR, USD\)"):
        api.waste(store=store)


# --- billing only: billed GPU spend, idle unknown -------------------------------------------------
BILLED_ONLY = [
    # i-1: reserved p5, 8 GPUs × 10 h: invoice $0 for the usage (prepaid), amortised $200; a credit on it
    {"ResourceId": "i-1", "BilledCost": 0.0, "EffectiveCost": 200.0, "x_GpuHours": 80.0, "RegionId": "us-east-1",
     "PricingCategory": "Committed", "x_InstanceType": "p5.48xlarge", "Tags": json.dumps({"team": "ml"})},
    {"ResourceId": "i-1", "BilledCost": -5.0, "EffectiveCost": -5.0, "x_GpuHours": 0.0, "ChargeCategory": "Credit"},
    # i-2: on-demand g6, team data
    {"ResourceId": "i-2", "BilledCost": 90.0, "EffectiveCost": 90.0, "x_GpuHours": 40.0,
     "x_InstanceType": "g6.12xlarge", "Tags": json.dumps({"team": "data"})},
    # a CPU box and an S3 bucket: not GPU spend
    {"ResourceId": "i-cpu", "BilledCost": 30.0, "EffectiveCost": 30.0, "x_GpuHours": 0.0,
     "x_InstanceType": "m5.xlarge"},
    {"ResourceId": "bucket", "BilledCost": 12.0, "EffectiveCost": 12.0, "x_GpuHours": None},
    # a GPU line with no ResourceId (FOCUS exports have these): counted, not attributable
    {"ResourceId": None, "BilledCost": 16.0, "EffectiveCost": 16.0, "x_GpuHours": 4.0, "x_InstanceType": "g5.xlarge"},
]  # fmt: skip


def test_billing_only_reports_billed_gpu_spend_by_group(store: Store) -> None:
    _billing(store, BILLED_ONLY)
    report = api.waste(store=store, by="team")
    assert report.basis == "billing"
    t = report.totals
    assert t["month"] == "2026-10"
    assert t["gpu_hours"] == 124.0
    assert t["billed_cost"] == pytest.approx(0.0 - 5.0 + 90.0 + 16.0)  # BilledCost: the invoice
    assert t["effective_cost"] == pytest.approx(200.0 - 5.0 + 90.0 + 16.0)  # amortised
    assert t["idle_hours"] is None and t["idle_cost"] is None
    by_team = {g["key"]: g for g in report.groups}
    assert set(by_team) == {"ml", "data", "(unknown)"}
    assert by_team["ml"]["gpu_hours"] == 80.0 and by_team["ml"]["effective_cost"] == 195.0
    assert by_team["ml"]["effective_per_gpu_hour"] == pytest.approx(195.0 / 80.0)
    assert by_team["data"]["billed_cost"] == 90.0
    assert any("utilisation" in n for n in report.notes)
    by_type = {g["key"]: g["gpu_hours"] for g in api.waste(store=store, by="instance_type").groups}
    assert by_type == {"p5.48xlarge": 80.0, "g6.12xlarge": 40.0, "g5.xlarge": 4.0}
    by_device = {g["key"]: g["resources"] for g in api.waste(store=store, by="device").groups}
    assert by_device == {"i-1": 1, "i-2": 1, "(no ResourceId)": 0}


AWS_RESERVED = """
version: 1
substrates:
  - {id: aws-p5-ri, provider: aws, kind: reserved, accelerator: H100, region: us-east-1, jurisdiction: US,
     gpus: 8, instance_type: p5.48xlarge}
"""


def test_billing_only_by_substrate_uses_the_fleet(tmp_path: Path, store: Store) -> None:
    _billing(store, BILLED_ONLY)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(AWS_RESERVED)
    groups = {g["key"]: g for g in api.waste(store=store, fleet=fleet, by="substrate").groups}
    assert groups["aws-p5-ri"]["gpu_hours"] == 80.0
    assert groups["(unknown)"]["gpu_hours"] == 44.0


def test_waste_cli_with_billing_only_exits_0_and_says_idle_needs_a_trace(store: Store) -> None:
    _billing(store, BILLED_ONLY)
    runner = CliRunner()
    table = runner.invoke(app, ["waste", "--store", str(store.root), "--by", "instance_type"], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    assert "Billed GPU spend by instance_type" in table.output and "p5.48xlarge" in table.output
    assert "BilledCost" in table.output and "EffectiveCost" in table.output
    assert "idle GPU-hours need utilisation data" in table.output
    js = runner.invoke(app, ["waste", "--store", str(store.root), "--format", "json"])
    assert js.exit_code == 0
    doc = json.loads(js.stdout)
    assert doc["basis"] == "billing" and doc["totals"]["gpu_hours"] == 124.0
    md = runner.invoke(app, ["waste", "--store", str(store.root), "--format", "markdown"])
    assert md.exit_code == 0
    assert "as billed (BilledCost)" in md.stdout and "amortised (EffectiveCost)" in md.stdout
    assert "| **Total** | 2 | 124 | $101.00 | $301.00 |" in md.stdout


def test_waste_with_an_empty_store_still_exits_2(store: Store) -> None:
    result = CliRunner().invoke(app, ["waste", "--store", str(store.root)])
    assert result.exit_code == 2
    assert "no utilisation and no billing" in result.output


def test_report_groupings_query_the_month_once_and_equal_single_reports(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _trace(tmp_path / "t.csv", {"g0": ("n1", "ml", [0.25] * 10), "g1": ("n2", "data", [0.5] * 10)})
    ingest_utilization(store, [f])
    _billing(store, [{"ResourceId": "n1", "BilledCost": 40.0, "EffectiveCost": 40.0, "x_GpuHours": 10.0}])
    from finops_cli.store import engine

    calls: list[str] = []
    real = engine.run_pandas

    def counting(st: Store, query: str, *args: object, **kwargs: object) -> object:
        calls.append(query)
        return real(st, query, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "run_pandas", counting)
    both = api.waste_reports(store=store, by=("team", "substrate"), price_per_gpu_hour=4.0)
    assert len(calls) == len(set(calls)), "a query of the month ran twice"
    monkeypatch.setattr(engine, "run_pandas", real)
    for by in ("team", "substrate"):
        assert both[by].to_dict() == api.waste(store=store, by=by, price_per_gpu_hour=4.0).to_dict()
