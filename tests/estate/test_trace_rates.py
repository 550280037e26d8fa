"""Issue 10 item 8: measured preemption rates reach the plan.

Multi-node Can't Be Late traces (values are counts of unavailable nodes), a confidence interval for λ
that says when the sample is too small, ``--trace`` refusing to guess the pool, and
``interruption: {trace: FILE}`` in ``fleet.yaml`` so that ``plan`` prices spot at the measured λ.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.core.netc import MIN_TRUSTED_PREEMPTIONS, poisson_rate_interval
from finops_cli.core.pricing import spot_multiplier
from finops_cli.estate.traces import read_trace

runner = CliRunner()


def multi_node_trace(rng: np.random.Generator, nodes: int, steps: int, p_down: float, p_up: float) -> np.ndarray:
    """Counts of unavailable nodes per step: each node flips down/up independently (a Markov chain)."""
    state = np.zeros(nodes, dtype=bool)
    out = np.empty(steps, dtype=np.int64)
    for t in range(steps):
        flip = rng.random(nodes)
        state = np.where(state, flip >= p_up, flip < p_down)
        out[t] = int(state.sum())
    return out


def test_multi_node_counts_give_a_per_node_rate(tmp_path: Path) -> None:
    counts = [0, 0, 2, 2, 1, 0, 0, 4, 4, 0, 0, 0]  # rises: +2 (step 2), +4 (step 7) → 6 node preemptions
    p = tmp_path / "4-node" / "us-east-1f_v100_1.json"
    p.parent.mkdir()
    p.write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": counts}))
    t = read_trace(p)  # N from the public layout's "<N>-node" directory
    step_h = 300 / 3600
    assert t.rate.nodes == 4 and t.rate.preemptions == 6
    assert t.rate.available_hours == pytest.approx((4 * 12 - sum(counts)) * step_h)
    assert t.rate.preemptions_per_hour == pytest.approx(6 / ((48 - 13) * step_h))
    assert t.intervals_hours.sum() == pytest.approx(t.rate.available_hours)
    # N given explicitly (fleet.yaml interruption.nodes) wins; metadata.nodes is read too
    assert read_trace(p, nodes=8).rate.available_hours == pytest.approx((8 * 12 - 13) * step_h)
    q = tmp_path / "t.json"
    q.write_text(json.dumps({"metadata": {"gap_seconds": 300, "nodes": 5}, "data": counts}))
    assert read_trace(q).rate.nodes == 5


def test_multi_node_estimate_recovers_the_simulated_rate(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    p_down = 0.004  # per node per 5-minute step while up: λ = 0.048 / node-hour
    counts = multi_node_trace(rng, 16, 8000, p_down, 0.2)
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"metadata": {"gap_seconds": 300, "nodes": 16}, "data": counts.tolist()}))
    rate = read_trace(p).rate
    lo, hi = rate.interval()
    assert lo < p_down * 12 < hi
    assert not rate.too_small


@pytest.mark.parametrize(
    ("k", "hours", "lo", "hi"),
    # exact (Garwood) 95 % limits from chi-square quantiles, e.g. R: qchisq(c(.025,.975), c(2k, 2k+2)) / 2
    [(0, 100.0, 0.0, 0.036889), (1, 10.0, 0.0025318, 0.55716), (10, 100.0, 0.047954, 0.18390),
     (100, 1000.0, 0.081363, 0.12163)],
)  # fmt: skip
def test_poisson_interval_matches_the_exact_one(k: int, hours: float, lo: float, hi: float) -> None:
    got = poisson_rate_interval(k, hours)
    assert got[0] == pytest.approx(lo, rel=0.03, abs=1e-9) and got[1] == pytest.approx(hi, rel=0.01)


def test_small_samples_are_flagged(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    data = ([0] * 30 + [1] * 2) * 3  # 3 preemptions (the first 0→1 of each cycle) in ~8 hours
    p.write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": data}))
    rate = read_trace(p).rate
    assert rate.preemptions < MIN_TRUSTED_PREEMPTIONS and rate.too_small
    text = rate.describe()
    assert "95 % interval" in text and "too small a sample to trust" in text


FLEET = """version: 1
substrates:
  - {{id: spot-a, provider: aws, kind: spot, accelerator: H100, jurisdiction: US, gpus: 16, price_per_gpu_hour: 2.0,
     {a_rate}, resume_minutes: 6, resume_cost: 3}}
  - {{id: spot-b, provider: aws, kind: spot, accelerator: H100, jurisdiction: US, gpus: 16, price_per_gpu_hour: 2.2,
     interruptions_per_hour: 0.01}}
  - {{id: od, provider: aws, kind: on_demand, accelerator: H100, jurisdiction: US, price_per_gpu_hour: 6.0}}
"""
WORKLOADS = """version: 1
workloads:
  - {id: train, unit: h100_hours, interruptible: true, deferrable: true, demand: {total: 2000}, throughput: {H100: 1}}
"""


def _estate(tmp_path: Path, a_rate: str = "interruptions_per_hour: 0.01") -> tuple[str, str]:
    (tmp_path / "fleet.yaml").write_text(FLEET.format(a_rate=a_rate))
    (tmp_path / "workloads.yaml").write_text(WORKLOADS)
    return str(tmp_path / "fleet.yaml"), str(tmp_path / "workloads.yaml")


def _write_cbl(path: Path, counts: np.ndarray, nodes: int) -> None:
    path.write_text(json.dumps({"metadata": {"gap_seconds": 300, "nodes": nodes}, "data": counts.tolist()}))


def test_netc_trace_refuses_to_guess_the_pool(tmp_path: Path) -> None:
    fl, wl = _estate(tmp_path)
    tr = tmp_path / "t.json"
    _write_cbl(tr, multi_node_trace(np.random.default_rng(1), 4, 3000, 0.01, 0.3), 4)
    r = runner.invoke(app, ["netc", "--fleet", fl, "--workloads", wl, "--horizon", "2026-10", "--trace", str(tr)])
    assert r.exit_code == 2
    err = " ".join(r.stderr.split())
    assert "2 spot substrates (spot-a, spot-b)" in err and "--substrate" in err
    r = runner.invoke(app, ["netc", "--fleet", fl, "--workloads", wl, "--horizon", "2026-10", "--trace", str(tr),
                            "--substrate", "spot-a", "--format", "json"])  # fmt: skip
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["substrate"] for row in rows] == ["spot-a"]
    lo, hi = rows[0]["trace"]["preemptions_per_hour_95"]
    assert lo < rows[0]["preemptions_per_hour"] < hi and rows[0]["trace"]["nodes"] == 4


def test_single_spot_pool_takes_the_trace_without_substrate(tmp_path: Path) -> None:
    fl, wl = _estate(tmp_path)
    text = Path(fl).read_text()
    start = text.index("  - {id: spot-b")
    Path(fl).write_text(text[:start] + text[text.index("  - {id: od") :])
    tr = tmp_path / "t.json"
    tr.write_text(json.dumps({"metadata": {"gap_seconds": 3600}, "data": [0] * 40 + [1] + [0] * 40 + [1, 0]}))
    r = runner.invoke(app, ["netc", "--fleet", fl, "--workloads", wl, "--horizon", "2026-10", "--trace", str(tr)])
    assert r.exit_code == 0, r.stderr
    assert "too small a sample to trust" in " ".join((r.stdout + r.stderr).split())


def test_validate_warns_when_a_fleet_trace_is_too_small(tmp_path: Path) -> None:
    (tmp_path / "few.json").write_text(json.dumps({"metadata": {"gap_seconds": 3600}, "data": [0] * 50 + [1, 0]}))
    fl, wl = _estate(tmp_path, "interruption: {trace: few.json}")
    r = runner.invoke(app, ["validate", "--fleet", fl, "--workloads", wl])
    assert r.exit_code == 0 and "too small a sample to trust" in " ".join(r.stderr.split())
    r = runner.invoke(app, ["validate", "--fleet", fl, "--workloads", wl, "--strict"])
    assert r.exit_code == 2


def test_fleet_interruption_trace_sets_the_rate_plan_uses(tmp_path: Path) -> None:
    counts = multi_node_trace(np.random.default_rng(3), 8, 6000, 0.01, 0.25)
    (tmp_path / "traces").mkdir()
    _write_cbl(tmp_path / "traces" / "a.json", counts, 8)
    fl, wl = _estate(tmp_path, "interruption: {trace: traces/a.json}")
    measured = read_trace(tmp_path / "traces" / "a.json").rate
    est = api.estate(fl, wl)
    spot_a = est.fleet.substrate("spot-a")
    assert spot_a.interruptions_per_hour == pytest.approx(measured.preemptions_per_hour)
    assert [r.substrate for r in est.rates] == ["spot-a"]
    result = api.plan(est, horizon="2026-10-01:48", blocks=4)
    frame = result.output.frame
    wall = frame.rows.loc[frame.rows["substrate"] == "spot-a", "wall_per_gpu_hour"].iloc[0]
    assert wall == pytest.approx(spot_multiplier(spot_a, est.workloads.workloads[0]))
    assert wall > 1.02  # the measured λ (~0.1/h), not a default
    notes = " ".join(result.document.notes)
    assert "spot-a: λ measured from trace traces/a.json" in notes and "95 % interval" in notes
    # stack and netc see the same measured λ
    st = api.stack(api.estate(fl, wl), horizon="2026-10-01:48").stacks[0]
    net = api.netc(api.estate(fl, wl), horizon="2026-10-01:48", substrate="spot-a").rows[0]
    assert net.preemptions_per_hour == pytest.approx(measured.preemptions_per_hour)
    step = next(s for s in st.steps if s.substrate == "spot-a" and s.segment == 0)
    assert step.usd_per_unit == pytest.approx(net.cost_per_unit)


@pytest.mark.parametrize(
    ("rate", "expected"),
    [
        ("interruption: {trace: missing.json}", "substrates[0].interruption.trace: "),
        ("interruption: {trace: bad.json}", "substrates[0].interruption.trace: "),
        ("interruption: {trace: bad.json}, interruptions_per_hour: 0.1", "give one of interruptions_per_hour"),
    ],
)
def test_bad_interruption_traces_exit_2_naming_the_field(tmp_path: Path, rate: str, expected: str) -> None:
    (tmp_path / "bad.json").write_text('{"metadata": {"gap_seconds": 60}, "data": [1, 1]}')
    fl, wl = _estate(tmp_path, rate)
    r = runner.invoke(app, ["validate", "--fleet", fl, "--workloads", wl])
    assert r.exit_code == 2 and expected in " ".join(r.stderr.split()) and "Traceback" not in r.stderr
