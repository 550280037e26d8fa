"""Issue 10, end to end: ``stack``, ``netc``, ``plan``, ``report`` and ``simulate dispatch`` print the same price.

Two estates: the sample one (with the sample spot feed in the store) and a generated one with several spot
pools, a resume fee, two products in the feed and a CAD fleet with an exchange rate. Every command runs
through the CLI with its default horizon (the one default-month rule) and its JSON or markdown output is
compared: the same unit price per (workload, substrate) pair, and the same price per GPU-hour per substrate.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.store import Store
from tests.conftest import SAMPLES
from tests.estate.spot_feed import messy_feed, write_feed

runner = CliRunner()


def _json(*args: str) -> object:
    res = runner.invoke(app, [*args, "--format", "json"])
    assert res.exit_code == 0, (args, res.output)
    return json.loads(res.stdout)


def _prices(fleet: Path, workloads: Path, store: Path, tmp: Path) -> dict[str, dict]:
    """Per command: {(workload, substrate): unit price} (``gpu_hour``: {substrate: price per GPU-hour})."""
    common = ["--fleet", str(fleet), "--workloads", str(workloads), "--store", str(store)]
    stacks = _json("stack", *common)
    stacks = stacks if isinstance(stacks, list) else [stacks]
    stack = {
        (s["workload"], st["substrate"]): st["cost_per_unit"]
        for s in stacks
        for st in s["entries"]
        if st["segment"] == 0 and not st.get("purchasable")
    }
    segs: dict[tuple[str, str], list[float]] = {}
    for s in stacks:
        for st in s["entries"]:
            segs.setdefault((s["workload"], st["substrate"]), []).append(st["cost_per_unit"])
    netc = {
        (r["workload"], r["substrate"]): r["netc"] / r["demand_units"]
        for r in _json("netc", *common)
        if r["netc"] is not None and r["demand_units"] > 0
    }
    plan_path = tmp / "plan.json"
    plan = _json("plan", *common, "--save-plan", str(plan_path))
    by_pair: dict[tuple[str, str], list[float]] = {}
    for a in plan["allocations"]:
        if a["units"] > 1e-6:
            by_pair.setdefault((a["workload"], a["substrate"]), [0.0, 0.0])
            by_pair[a["workload"], a["substrate"]][0] += a["cost"]
            by_pair[a["workload"], a["substrate"]][1] += a["units"]
    planned = {k: cost / units for k, (cost, units) in by_pair.items()}
    dispatch = {
        (u["workload"], u["substrate"]): u["price_per_unit"]
        for u in _json("simulate", "dispatch", *common, "--generate", "--requests", "300")["unit_prices"]
    }
    report = runner.invoke(
        app, ["report", "--plan", str(plan_path), *common, "--out", str(tmp / "report.md"), "--format", "json"]
    )
    assert report.exit_code == 0, report.output
    md = (tmp / "report.md").read_text(encoding="utf-8")
    table = md.split("## Prices used", 1)[1].split("\n\n", 2)[1]
    reported = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[2] != "per unit":
            reported[cells[0]] = float(cells[2].replace(",", ""))
    return {
        "stack": stack,
        "segments": segs,
        "netc": netc,
        "plan": planned,
        "dispatch": dispatch,
        "gpu_hour_plan": {p["substrate"]: p["value"] for p in plan["prices"] if p["value"] is not None},
        "gpu_hour_stack": {p["substrate"]: p["value"] for p in stacks[0]["prices"] if p["value"] is not None},
        "gpu_hour_report": reported,
        "plan_doc": plan,
        "report_md": md,
    }


def _assert_one_price(p: dict, *, uncongested: bool) -> None:
    stack, netc, dispatch, planned = p["stack"], p["netc"], p["dispatch"], p["plan"]
    assert stack and netc and planned
    assert set(dispatch) == set(stack)  # the same compliant pairs, each with its merit-order price
    for pair, price in stack.items():
        assert dispatch[pair] == pytest.approx(price, rel=1e-9), pair
    for pair, price in netc.items():
        assert price == pytest.approx(stack[pair], rel=1e-9), pair
    for pair, price in planned.items():
        if uncongested:
            assert price == pytest.approx(stack[pair], abs=0.005), pair  # to the cent
        else:  # congestion segments blend: between the base price and the dearest segment
            assert min(p["segments"][pair]) - 0.005 <= price <= max(p["segments"][pair]) + 0.005, pair
    assert p["gpu_hour_plan"] == pytest.approx(p["gpu_hour_stack"], rel=1e-6)
    assert p["gpu_hour_report"] == pytest.approx(p["gpu_hour_plan"], abs=5e-5)  # printed with 4 decimals


def test_sample_estate_prints_one_price_everywhere(store: Store, tmp_path: Path) -> None:
    res = runner.invoke(
        app,
        ["ingest", "spot-prices", "--store", str(store.root),
         *(a for f in sorted((SAMPLES / "spot_prices").iterdir()) for a in ("--file", str(f)))],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    p = _prices(SAMPLES / "fleet.yaml", SAMPLES / "workloads.yaml", store.root, tmp_path)
    _assert_one_price(p, uncongested=False)
    assert p["plan_doc"]["horizon"]["start"] == "2026-10-01T00:00:00Z"  # the profiles' month, for every command
    feed = {q["substrate"]: q for q in p["plan_doc"]["prices"]}["aws-p5-spot-use1"]
    assert feed["product"] == "Linux/UNIX" and feed["window_end"] <= "2026-11-01T00:00:00Z"


def _generated_estate(tmp: Path, fee: float) -> tuple[Path, Path]:
    spot = {"kind": "spot", "provider": "aws", "accelerator": "A10G", "resume_minutes": 5}
    fleet = {
        "version": 1,
        "currency": "CAD",
        "fx": {"USD:CAD": 1.37},
        "congestion": [{"up_to": 1.0, "multiplier": 1.0}],  # flat: a plan's cost per unit is its base price
        "substrates": [
            spot | {"id": "g5-use1", "jurisdiction": "US", "gpus": 16, "interruptions_per_hour": 0.05,
                    "resume_cost": fee, "price_feed": {"provider": "aws", "region": "us-east-1",
                    "instance_type": "g5.12xlarge", "gpus_per_instance": 4, "statistic": "p90"}},
            spot | {"id": "g5-usw2-win", "jurisdiction": "US", "gpus": 12, "interruptions_per_hour": 0.02,
                    "resume_cost": fee / 2, "preference": 1.1, "price_feed": {"provider": "aws",
                    "region": "us-west-2", "instance_type": "g5.12xlarge", "statistic": "mean", "product": "Windows"}},
            spot | {"id": "g6-use1", "accelerator": "L4", "jurisdiction": "US", "gpus": 24,
                    "interruptions_per_hour": 0.03, "resume_cost": fee, "price_ref": "aws/g6.12xlarge/spot"},
            spot | {"id": "g5-euc1", "jurisdiction": "EU", "gpus": 32, "interruptions_per_hour": 0.04,
                    "resume_cost": fee, "price_feed": {"provider": "aws", "region": "eu-central-1",
                    "instance_type": "g5.12xlarge", "gpus_per_instance": 4, "statistic": "p50"}},
            {"id": "g5-od", "provider": "aws", "kind": "on_demand", "accelerator": "A10G", "jurisdiction": "US",
             "price_ref": "aws/g5.12xlarge/on_demand"},
            {"id": "eu-od", "provider": "ovh", "kind": "on_demand", "accelerator": "A10G", "jurisdiction": "EU",
             "price_per_gpu_hour": 2.4},
        ],
    }  # fmt: skip
    workloads = {
        "version": 1,
        "workloads": [
            {"id": "train", "unit": "steps", "interruptible": True, "deferrable": True, "demand": {"total": 30000},
             "throughput": {"A10G": 1.0, "L4": 0.7}, "checkpoint": {"interval_minutes": 20, "write_minutes": 1},
             "requires": {"jurisdictions": ["US"]}},
            {"id": "serve", "unit": "Mreq", "demand": {"total": 9000}, "throughput": {"A10G": 2.0, "L4": 1.5},
             "requires": {"jurisdictions": ["US"]}},
            {"id": "eu-batch", "unit": "jobs", "interruptible": True, "demand": {"total": 12000},
             "throughput": {"A10G": 1.0}, "requires": {"jurisdictions": ["EU"]}},
        ],
    }  # fmt: skip
    f, w = tmp / "fleet.yaml", tmp / "workloads.yaml"
    f.write_text(yaml.safe_dump(fleet, sort_keys=False))
    w.write_text(yaml.safe_dump(workloads, sort_keys=False))
    return f, w


@pytest.mark.parametrize("fee", [0.0, 4.0])
def test_generated_estate_with_spot_pools_products_fee_and_cad_prints_one_price(
    store: Store, tmp_path: Path, fee: float
) -> None:
    two_products = {"Linux/UNIX": 1.0, "Windows": 2.5}
    write_feed(
        store,
        messy_feed(seed=11, products=two_products, end="2026-10-31T18:00"),
        messy_feed(seed=12, region="us-west-2", products=two_products, end="2026-10-31T18:00"),
        messy_feed(seed=13, region="eu-central-1", products=two_products, usd_per_instance_hour=2.6,
                   end="2026-10-31T18:00"),
    )  # fmt: skip
    fleet, workloads = _generated_estate(tmp_path, fee)
    p = _prices(fleet, workloads, store.root, tmp_path)
    _assert_one_price(p, uncongested=True)
    doc = p["plan_doc"]
    assert doc["currency"] == "CAD" and doc["fx"] == {"USD:CAD": 1.37}
    used = {q["substrate"]: q for q in doc["prices"]}
    assert used["g5-usw2-win"]["product"] == "Windows" and used["g5-use1"]["product"] == "Linux/UNIX"
    assert used["g5-usw2-win"]["quoted"] / used["g5-use1"]["quoted"] > 1.7  # Windows (mean) vs Linux (p90), no blend
    assert used["g6-use1"]["value"] == pytest.approx(0.46 * 1.37, abs=1e-6)
    assert "1 USD = 1.37 CAD" in p["report_md"]
    spot_pairs = {s for (_, s) in p["plan"] if s in ("g5-use1", "g5-usw2-win", "g6-use1", "g5-euc1")}
    assert len(spot_pairs) >= 3, p["plan"]  # several spot pools really carry work, each priced the same
    assert re.search(r"CA\$", p["report_md"])
