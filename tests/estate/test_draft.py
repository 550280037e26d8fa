"""``finops estate draft``: the sample exports end to end, and generated messy stores."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import yaml
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.core.baseline import match_billing
from finops_cli.estate.draft import draft_estate
from finops_cli.estate.load import load_fleet, load_workloads
from finops_cli.store import Store
from tests.conftest import SAMPLES
from tests.store.pandas_reference import peak_concurrent_gpus

runner = CliRunner()


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _gpu_lines(store: Store) -> pd.DataFrame:
    """GPU spend: lines with GPU-hours, and usage lines of a GPU instance type (a GCP machine's core and RAM)."""
    frame = store.read("billing").to_pandas()  # type: ignore[union-attr]
    usage_of_gpu_type = (frame["x_GpuCount"].fillna(0) > 0) & (frame["ChargeCategory"] == "Usage")
    return frame[(frame["x_GpuHours"].fillna(0).astype(float) > 0) | usage_of_gpu_type]


def _profile_total(path: Path) -> float:
    return float(pd.read_csv(path)["units"].sum())


def _cents(x: float) -> int:
    return round(x * 100)


def _agree_to_the_cent(store: Path, fleet: Path, plan: Path, report: Path) -> float:
    """``costs --by substrate``, plan.json's billed baseline and the report's headline: the same money, per
    substrate and in total, to the cent (issue 14 item 5). Returns the total."""
    code, stdout, stderr = _run("costs", "--store", store, "--by", "substrate", "--fleet", fleet, "--format", "json")
    assert code == 0, stderr
    costs = json.loads(stdout)
    doc = json.loads(plan.read_text())
    by_costs = {r["substrate"]: _cents(r["cost"]) for r in costs["rows"]}
    by_plan = {s["substrate"]: _cents(s["baseline_cost"]) for s in doc["by_substrate"] if s["baseline_cost"]}
    assert by_costs == by_plan
    total = costs["totals"][doc["currency"]]
    assert _cents(total) == _cents(doc["totals"]["baseline_cost"])
    code, stdout, stderr = _run("costs", "--store", store, "--by", "substrate", "--fleet", fleet, "--cost", "billed",
                                "--format", "json")  # fmt: skip
    assert code == 0, stderr
    billed = json.loads(stdout)["totals"][doc["currency"]]
    assert _cents(billed) == _cents(doc["totals"]["baseline_billed_cost"])
    headline = re.search(r"GPU work cost \*\*\\\$([\d,]+\.\d\d)\*\*", report.read_text())
    assert headline is not None and headline.group(1) == f"{total:,.2f}"
    assert f"\\${billed:,.2f} as billed" in report.read_text()
    teams = {a["workload"]: a["team"] for a in doc["allocations"]}
    assert doc["allocations"] and all(teams.values())  # every allocation carries its workload's team
    return float(total)


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sample") / "store"
    r = runner.invoke(app, ["ingest", "billing", str(SAMPLES / "billing"), "--store", str(root)])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["ingest", "utilization", str(SAMPLES / "utilization"), "--store", str(root)])
    assert r.exit_code == 0, r.stderr
    return root


def test_sample_exports_draft_validate_plan_report_without_hand_edits(sample_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "draft"
    code, stdout, stderr = _run("estate", "draft", "--store", sample_store, "--out", out)
    assert code == 0, stderr
    fleet, workloads = out / "fleet.yaml", out / "workloads.yaml"
    assert "NOT INFERRED" in fleet.read_text() and "NOT INFERRED" in workloads.read_text()
    code, stdout, stderr = _run("validate", "--fleet", fleet, "--workloads", workloads)
    assert code == 0 and stdout.startswith("valid:"), stderr
    plan = tmp_path / "plan.json"
    code, _, stderr = _run("plan", "--fleet", fleet, "--workloads", workloads, "--store", sample_store, "--out", plan)
    assert code == 0, stderr
    # every allocation carries its workload's team, so a plan can be shown back per team
    teams = {w.id: w.team for w in load_workloads(workloads).workloads}
    allocations = json.loads(plan.read_text())["allocations"]
    assert allocations and all(a["team"] == teams[a["workload"]] for a in allocations)
    code, _, stderr = _run(
        "report", "--plan", plan, "--fleet", fleet, "--workloads", workloads, "--store", sample_store,
        "--out", tmp_path / "report.md",
    )  # fmt: skip
    assert code == 0, stderr
    total = _agree_to_the_cent(sample_store, fleet, plan, tmp_path / "report.md")
    assert total == pytest.approx(506_660.06, abs=0.005)  # the GCP machines' core and RAM lines included
    # the draft's substrates select every GPU line of the store: 100 % of its GPU spend, per currency
    gpu = _gpu_lines(Store(sample_store))
    matched = match_billing(gpu, load_fleet(fleet))
    assert matched.notna().all()
    assert gpu["EffectiveCost"].sum() == pytest.approx(gpu[matched.notna()]["EffectiveCost"].sum(), abs=1e-6)
    # finops costs --by substrate agrees: nothing unmatched, the same total
    code, stdout, stderr = _run(
        "costs", "--store", sample_store, "--by", "substrate", "--fleet", fleet, "--format", "json"
    )
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert "(unmatched)" not in {r["substrate"] for r in doc["rows"]}
    assert doc["totals"]["USD"] == pytest.approx(gpu["EffectiveCost"].sum(), abs=1e-6)
    # one substrate per (provider, account, region, instance type, pricing category)
    keys = gpu[["provider", "BillingAccountId", "RegionId", "x_InstanceType", "PricingCategory"]].drop_duplicates()
    assert len(load_fleet(fleet).substrates) == len(keys)
    # demand: busy GPU-hours where utilisation exists, never above what was billed for the tag
    wl = load_workloads(workloads)
    assert {w.unit for w in wl.workloads} == {"gpu_hours"}
    busy = sum(_profile_total(out / str(w.demand.profile)) for w in wl.workloads)
    assert 0 < busy <= gpu["x_GpuHours"].sum()


def test_draft_refuses_to_overwrite_and_bad_month(sample_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "d"
    assert _run("estate", "draft", "--store", sample_store, "--out", out)[0] == 0
    code, _, err = _run("estate", "draft", "--store", sample_store, "--out", out)
    assert code == 2 and "--force" in err and "Traceback" not in err
    assert _run("estate", "draft", "--store", sample_store, "--out", out, "--force")[0] == 0
    code, _, err = _run("estate", "draft", "--store", sample_store, "--out", out, "--month", "2026-13")
    assert code == 2 and "YYYY-MM" in err
    code, _, err = _run("estate", "draft", "--store", sample_store, "--out", out, "--month", "2026-09")
    assert code == 2 and "2026-10" in err
    code, _, err = _run("estate", "draft", "--store", tmp_path / "empty", "--out", out)
    assert code == 2 and "ingest billing" in err


def _line(**kw: object) -> dict:
    base = {
        "provider": "aws", "BillingAccountId": "111122223333", "RegionId": "us-east-1",
        "x_InstanceType": "p4d.24xlarge", "PricingCategory": "Standard", "x_GpuCount": 8.0,
        "x_AcceleratorType": "A100", "x_GpuHours": 192.0, "EffectiveCost": 600.0, "BilledCost": 600.0,
        "BillingCurrency": "USD", "ChargeCategory": "Usage", "ChargePeriodStart": pd.Timestamp("2026-10-01", tz="UTC"),
        "ChargePeriodEnd": pd.Timestamp("2026-10-02", tz="UTC"), "Tags": '{"team": "research"}',
    }  # fmt: skip
    base.update(kw)
    return base


def _messy_store(root: Path, lines: list[dict]) -> Store:
    store = Store(root)
    frame = pd.DataFrame(lines)
    with store.transaction() as tx:
        for (provider, period), part in frame.assign(billing_period="2026-10").groupby(["provider", "billing_period"]):
            table = pa.Table.from_pandas(part.drop(columns=["provider", "billing_period"]), preserve_index=False)
            tx.write("billing", {"provider": provider, "billing_period": period}, "k", table)
    return store


def test_messy_store_accounts_currencies_spot_reserved_untagged(tmp_path: Path) -> None:
    day = pd.Timedelta(days=1)
    t0 = pd.Timestamp("2026-10-01", tz="UTC")
    lines = [
        _line(),  # account A, standard
        _line(BillingAccountId="999900001111", EffectiveCost=500.0, BilledCost=500.0, Tags='{"workload": "ft"}'),
        _line(PricingCategory="Dynamic", EffectiveCost=250.0, BilledCost=250.0, Tags=None),  # untagged spot
        _line(PricingCategory="Committed", provider="coreweave", BillingAccountId="cw-1", RegionId="us-east-04",
              x_InstanceType="gd-8xh100ib-i128", x_AcceleratorType="H100", EffectiveCost=400.0, BilledCost=0.0),
        _line(ChargePeriodStart=t0 + day, ChargePeriodEnd=t0 + 2 * day, x_GpuHours=96.0),  # 4 GPUs the next day
        _line(x_GpuHours=0.0, EffectiveCost=99.0, x_InstanceType=None, x_GpuCount=None),  # storage: not a GPU line
        _line(x_GpuHours=0.0, EffectiveCost=60.0, BilledCost=60.0),  # the machine's CPU/RAM SKU: GPU spend
        _line(x_GpuHours=0.0, EffectiveCost=-45.0, BilledCost=-45.0, ChargeCategory="Credit"),  # a credit: not usage
        _line(BillingCurrency="EUR", provider="gcp", BillingAccountId="01A", RegionId="europe-west4",
              x_InstanceType="a3-highgpu-8g", x_AcceleratorType="H100", EffectiveCost=900.0, BilledCost=900.0),
    ]  # fmt: skip
    store = _messy_store(tmp_path / "store", lines)
    code, _, err = _run("estate", "draft", "--store", store.root, "--out", tmp_path / "x")
    assert code == 2 and "EUR, USD" in err and "--currency" in err and not (tmp_path / "x").exists()

    draft = draft_estate(store, currency="USD")
    fleet = yaml.safe_load(draft.fleet_yaml)
    subs = {s["id"]: s for s in fleet["substrates"]}
    assert fleet["currency"] == "USD" and len(subs) == 4  # two accounts, spot, reserved; EUR left out
    assert {s["kind"] for s in subs.values()} == {"on_demand", "spot", "reserved"}
    assert {s["match"]["BillingAccountId"] for s in subs.values()} == {"111122223333", "999900001111", "cw-1"}
    reserved = next(s for s in subs.values() if s["kind"] == "reserved")
    assert reserved["price_per_gpu_hour"] == 0.0
    assert reserved["committed_per_gpu_hour"] * reserved["gpus"] * 744 == pytest.approx(400.0)
    od = next(s for s in subs.values() if s["kind"] == "on_demand" and s["match"]["BillingAccountId"] == "111122223333")
    assert od["gpus"] == 8.0 and od["price_per_gpu_hour"] == pytest.approx((1200.0 + 60.0) / 288.0)
    wl = {w["id"]: w for w in yaml.safe_load(draft.workloads_yaml)["workloads"]}
    assert set(wl) == {"research", "ft", "untagged"}
    research = pd.read_csv(io.StringIO(draft.profiles[wl["research"]["demand"]["profile"]]))
    assert research["units"].sum() == pytest.approx(192 + 96 + 192)  # billed: no utilisation
    # the bill's shape: 8 + 8 GPUs (aws and coreweave) all day one, 4 GPUs day two, nothing after
    assert len(research) == 744 and list(research["units"][[0, 23, 24, 47, 48]]) == [16, 16, 4, 4, 0]
    assert draft.gpu_effective_cost == pytest.approx(600 + 500 + 250 + 400 + 600 + 60)
    eur = draft_estate(store, currency="EUR")
    assert yaml.safe_load(eur.fleet_yaml)["currency"] == "EUR" and eur.substrates == 1
    code, _, err = _run("estate", "draft", "--store", store.root, "--out", tmp_path / "x", "--currency", "GBP")
    assert code == 2 and "GBP" in err


def test_peak_concurrent_gpus_overlapping_periods() -> None:
    t = pd.Timestamp("2026-10-01", tz="UTC")
    h = pd.Timedelta(hours=1)
    lines = pd.DataFrame(
        {
            "ChargePeriodStart": [t, t + 2 * h, t + 4 * h, t + 4 * h],
            "ChargePeriodEnd": [t + 4 * h, t + 6 * h, t + 5 * h, t + 8 * h],
            "x_GpuHours": [32.0, 32.0, 8.0, 4.0],  # 8 GPUs, 8 GPUs, 8 GPUs, 1 GPU
        }
    )
    # hours 2-4: 16; hour 4-5: 8 + 8 + 1 = 17 (the first line ended at 4); later 9, then 1
    assert peak_concurrent_gpus(lines) == pytest.approx(17.0)


def _generated_month(seed: int = 14) -> list[dict]:
    """A month of daily lines across providers and accounts: GPU SKUs, a GCP machine's core and RAM SKUs, spot,
    a reservation, credits and refunds on GPU types, storage, and tags that come and go."""
    import numpy as np

    rng = np.random.default_rng(seed)
    t0, day = pd.Timestamp("2026-10-01", tz="UTC"), pd.Timedelta(days=1)
    pools = [  # (the pool's columns, USD per GPU-hour)
        ({"provider": "aws", "BillingAccountId": "111122223333", "RegionId": "us-east-1",
          "x_InstanceType": "p5.48xlarge", "x_AcceleratorType": "H100", "PricingCategory": "Standard"}, 6.88),
        ({"provider": "aws", "BillingAccountId": "444455556666", "RegionId": "us-east-1",
          "x_InstanceType": "p5.48xlarge", "x_AcceleratorType": "H100", "PricingCategory": "Dynamic"}, 3.9),
        ({"provider": "gcp", "BillingAccountId": "01AB-CD", "RegionId": "us-central1",
          "x_InstanceType": "a3-highgpu-8g", "x_AcceleratorType": "H100", "PricingCategory": "Standard"}, 11.06),
        ({"provider": "coreweave", "BillingAccountId": "cw-1", "RegionId": "us-east-04",
          "x_InstanceType": "gd-8xh100ib-i128", "x_AcceleratorType": "H100", "PricingCategory": "Committed"}, 2.1),
    ]  # fmt: skip
    lines = []
    for d in range(31):
        when = {"ChargePeriodStart": t0 + d * day, "ChargePeriodEnd": t0 + (d + 1) * day}
        for pool, rate in pools:
            nodes = int(rng.integers(1, 4))
            team = str(rng.choice(["research", "product", "data"]))
            tags = json.dumps({"team": team}) if rng.random() < 0.85 else None
            cost = round(8.0 * 24 * nodes * rate, 2)
            billed = 0.0 if pool["PricingCategory"] == "Committed" else cost
            lines.append(_line(**pool, **when, x_GpuHours=8.0 * 24 * nodes, EffectiveCost=cost, BilledCost=billed,
                               Tags=tags))  # fmt: skip
            if pool["provider"] == "gcp":  # the machines' vCPUs and memory, billed beside their GPUs
                for usd in (208 * 0.029, 1872 * 0.003):
                    c = round(24 * nodes * usd, 2)
                    lines.append(_line(**pool, **when, x_GpuHours=0.0, EffectiveCost=c, BilledCost=c, Tags=tags))
        storage = {"x_InstanceType": None, "x_GpuCount": None, "x_AcceleratorType": None}
        lines.append(_line(**when, **storage, x_GpuHours=0.0, EffectiveCost=12.5, BilledCost=12.5))
    refund = {"ChargeCategory": "Adjustment", "PricingCategory": None, "EffectiveCost": -120.5, "BilledCost": -120.5}
    lines.append(_line(**{**pools[0][0], **refund}, x_GpuHours=0.0))
    return lines


def test_generated_estate_costs_plan_and_report_agree_to_the_cent(tmp_path: Path) -> None:
    """The same check as on the sample exports, on a generated month: GCP core/RAM lines, spot, a reservation,
    two accounts, a refund and storage lines. Fails on the code that counted only lines with GPU-hours."""
    store = _messy_store(tmp_path / "store", _generated_month())
    out = tmp_path / "draft"
    code, _, stderr = _run("estate", "draft", "--store", store.root, "--out", out)
    assert code == 0, stderr
    fleet, workloads = out / "fleet.yaml", out / "workloads.yaml"
    plan, report = tmp_path / "plan.json", tmp_path / "report.md"
    code, _, stderr = _run("plan", "--fleet", fleet, "--workloads", workloads, "--store", store.root, "--out", plan)
    assert code == 0, stderr
    code, _, stderr = _run("report", "--plan", plan, "--fleet", fleet, "--workloads", workloads, "--store",
                           store.root, "--out", report)  # fmt: skip
    assert code == 0, stderr
    total = _agree_to_the_cent(store.root, fleet, plan, report)
    gpu = _gpu_lines(store)
    assert _cents(total) == _cents(gpu["EffectiveCost"].sum())
    # the GCP substrate is priced at its machines' whole cost per GPU-hour (GPU + core + RAM SKUs)
    gcp = next(s for s in load_fleet(fleet).substrates if s.provider == "gcp")
    lines = gpu[gpu["provider"] == "gcp"]
    assert gcp.price_per_gpu_hour == pytest.approx(lines["EffectiveCost"].sum() / lines["x_GpuHours"].sum(), abs=1e-6)
    assert gcp.price_per_gpu_hour > 11.06
