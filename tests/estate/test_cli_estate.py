"""``finops validate`` / ``stack`` / ``netc`` through Typer's CliRunner, and the sample estate's golden stack."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.store import Store
from tests.conftest import SAMPLES

GOLDEN = Path(__file__).parent / "golden" / "stack_sample.json"
runner = CliRunner()
FLEET, WORKLOADS = str(SAMPLES / "fleet.yaml"), str(SAMPLES / "workloads.yaml")


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _close(a: object, b: object, path: str = "") -> None:
    """Recursive comparison with a relative tolerance on floats."""
    if isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, path
        assert math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9), f"{path}: {a} != {b}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_validate_ok_and_bad(tmp_path: Path) -> None:
    code, out, _ = _run("validate", "--fleet", FLEET, "--workloads", WORKLOADS)
    assert code == 0 and out.startswith("valid:")
    bad = tmp_path / "fleet.yaml"
    bad.write_text((SAMPLES / "fleet.yaml").read_text().replace("gpus: 64\n", "gpus: -64\n", 1))
    code, _, err = _run("validate", "--fleet", str(bad), "--workloads", WORKLOADS)
    assert code == 2 and "substrates[0].gpus: must be >= 0" in err and "Traceback" not in err


def test_validate_warnings_go_to_stderr(tmp_path: Path) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text(
        "version: 1\nworkloads:\n  - {id: a, unit: h100_hours, demand: {total: 1}, throughput: {H100: 1, X9: 1}}\n"
    )
    code, out, err = _run("validate", "--fleet", FLEET, "--workloads", str(wl))
    assert code == 0 and "1 warning" in out and "throughput.X9" in err
    code, _, err = _run("validate", "--fleet", FLEET, "--workloads", str(wl), "--strict")
    assert code == 2


def test_sample_stack_matches_golden(spot_store: Store) -> None:
    code, out, err = _run("stack", "--fleet", FLEET, "--workloads", WORKLOADS, "--store", str(spot_store.root),
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert isinstance(doc, list) and len(doc) == 8
    notes = doc[0].pop("price_notes")  # ages in days change with the calendar: checked apart
    assert any("azure-nd-h100-eus: " in n and "reference price azure/Standard_ND96isr_H100_v5/on_demand" in n
               for n in notes)  # fmt: skip
    assert any("aws-p5-spot-use1: 3.9000 USD/GPU-hour from the spot-price store" in n for n in notes)
    prices = {p["substrate"]: p for p in doc[0].pop("prices")}  # ages too
    assert prices["aws-p5-spot-use1"]["value"] == 3.9 and prices["aws-p5-spot-use1"]["product"] == "Linux/UNIX"
    for d in doc[1:]:
        d.pop("price_notes")
        assert d.pop("prices") == list(prices.values())
    _close(doc, json.loads(GOLDEN.read_text()))


def test_single_workload_json_shape_and_chart(spot_store: Store, tmp_path: Path) -> None:
    chart = tmp_path / "stack.png"
    code, out, err = _run("stack", "--fleet", FLEET, "--workloads", WORKLOADS, "--workload", "image-gen",
                          "--store", str(spot_store.root), "--format", "json", "--chart", str(chart))  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert {"workload", "mode", "unit", "entries", "excluded", "demand_units", "clearing_price"} <= doc.keys()
    assert doc["workload"] == "image-gen" and doc["unit"] == "kimages"
    # the L4 pool tops out at 8 GPUs x 0.6 = 4.8 kimages/h; the launch-evening peak clears on the image API
    assert doc["entries"][-1]["substrate"] == "image-api" and doc["clearing_price"] == 40.0
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reliability_mode_puts_stable_tiers_before_spot(spot_store: Store) -> None:
    args = ["stack", "--fleet", FLEET, "--workloads", WORKLOADS, "--workload", "chat-serving", "--store",
            str(spot_store.root), "--format", "json"]  # fmt: skip
    cost = json.loads(_run(*args)[1])
    rel = json.loads(_run(*args, "--mode", "reliability")[1])
    assert cost["entries"][0]["kind"] == "spot" and rel["entries"][0]["kind"] == "on_demand"
    kinds = [e["kind"] for e in rel["entries"]]
    assert kinds.index("spot") < kinds.index("api")


def test_stack_without_store_when_no_feed_and_clean_error_with_one(tmp_path: Path) -> None:
    code, out, _ = _run("stack", "--fleet", FLEET, "--workloads", WORKLOADS, "--store", str(tmp_path / "empty"))
    assert code == 2
    code, _, err = _run("stack", "--fleet", FLEET, "--store", str(tmp_path / "empty"))
    assert code == 2 and "aws-p5-spot-use1: price_feed aws/us-east-1/p5.48xlarge" in " ".join(err.split())
    fixed = tmp_path / "fleet.yaml"
    text = (SAMPLES / "fleet.yaml").read_text()
    fixed.write_text(text.replace("price_feed: {provider: aws, region: us-east-1, instance_type: p5.48xlarge, "
                                  "gpus_per_instance: 8, statistic: p90}", "price_per_gpu_hour: 3.9"))  # fmt: skip
    code, out, err = _run("stack", "--fleet", str(fixed), "--format", "markdown")
    assert code == 0, err
    assert "### Merit order: fleet" in out and "reference price azure/Standard_ND96isr_H100_v5/on_demand" in out


def test_stack_table_names_the_marginal_step(spot_store: Store) -> None:
    code, out, _ = _run("stack", "--fleet", FLEET, "--workloads", WORKLOADS, "--workload", "pretrain-70b",
                        "--store", str(spot_store.root))  # fmt: skip
    assert code == 0 and "◀ marginal" in out and "clearing price" in out and "excluded:" in out


def test_unknown_workload_is_a_usage_error(spot_store: Store) -> None:
    code, _, err = _run("stack", "--fleet", FLEET, "--workloads", WORKLOADS, "--workload", "nope",
                        "--store", str(spot_store.root))  # fmt: skip
    assert code == 2 and "nope" in err


def test_netc_json_and_trace_replay(spot_store: Store, tmp_path: Path) -> None:
    code, out, err = _run("netc", "--fleet", FLEET, "--workloads", WORKLOADS, "--store", str(spot_store.root),
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)
    keys = {"workload", "substrate", "multiplier", "expected_preemptions", "expected_lost_hours", "netc",
            "tau_minutes", "tau_star_minutes", "netc_at_tau_star", "stable_alternative"}  # fmt: skip
    assert rows and all(keys <= r.keys() for r in rows)
    pre = next(r for r in rows if (r["workload"], r["substrate"]) == ("pretrain-70b", "aws-p5-spot-use1"))
    assert pre["netc"] == pytest.approx(3.9 * 100_000 * pre["multiplier"])
    trace = tmp_path / "trace.json"
    data = ([0] * 300 + [1] * 10) * 200  # one preemption per 300 available minutes
    trace.write_text(json.dumps({"metadata": {"gap_seconds": 60}, "data": data}))
    code, out, err = _run("netc", "--fleet", FLEET, "--workloads", WORKLOADS, "--store", str(spot_store.root),
                          "--trace", str(trace), "--substrate", "aws-p5-spot-use1")  # fmt: skip
    assert code == 0, err
    assert "λ = 0.2000/h" in out and "realised" in out and "aws-p4d-spot-usw2" not in out


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_netc_text_formats(spot_store: Store, fmt: str) -> None:
    code, out, _ = _run("netc", "--fleet", FLEET, "--workloads", WORKLOADS, "--store", str(spot_store.root),
                        "--format", fmt)  # fmt: skip
    assert code == 0 and "pretrain-70b" in out and "aws-p5-spot-use1" in out


def test_horizon_outside_the_profiles_warns(spot_store: Store) -> None:
    code, out, err = _run("stack", "--fleet", FLEET, "--workloads", WORKLOADS, "--workload", "chat-serving",
                          "--store", str(spot_store.root), "--horizon", "2026-11", "--format", "json")  # fmt: skip
    assert code == 0 and json.loads(out)["demand_units"] == 0.0
    assert "chat_serving.csv covers 2026-10-01 00:00 to 2026-10-31 23:00 UTC, nothing inside the horizon" in err
