"""The report's charts drawn in the helper process (report/drawing.py): the same files as in-process, errors handed
back, a dead helper replaced by in-process drawing, and nothing left behind."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from finops_cli.errors import InputError
from finops_cli.report import drawing, figures
from finops_cli.report.gate import parse_plan
from finops_cli.report.markdown import ReportInputs, SupplyInputs, WasteInputs, write_report

GOLDEN = Path(__file__).parent / "golden"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture(params=["1", "2"])
def helper(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """Running chart helpers, one or two (the suite draws in-process by default: tests/conftest.py), started."""
    monkeypatch.setenv(drawing.PROCESSES_ENV, request.param)
    drawing.start()
    pool = drawing._pool()
    assert pool is not None
    pool.submit(drawing._ready).result(timeout=120)  # a helper is running (forked from the warm fork server)
    yield
    drawing.stop()


def test_two_helpers_forked_from_a_fork_server_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, two helpers where a fork server can fork them warm (matplotlib imported once), one spawned helper
    where there is none, none on one core."""
    import finops_cli.cores

    monkeypatch.delenv(drawing.PROCESSES_ENV)
    monkeypatch.setattr(finops_cli.cores, "usable_cores", lambda: 2)
    assert drawing._processes() == (2 if drawing._fork_server() else 1)
    monkeypatch.setattr(drawing, "_fork_server", lambda: False)
    assert drawing._processes() == 1
    monkeypatch.setattr(finops_cli.cores, "usable_cores", lambda: 1)
    assert drawing._processes() == 0


@pytest.mark.skipif(not drawing._fork_server(), reason="no fork server on this platform")
def test_helpers_are_forked_warm_from_the_fork_server(helper: None) -> None:
    """A helper forked from the server has matplotlib already: it imported nothing to draw. (The question is a
    builtin's call: handing over a function of this module would import it, and matplotlib with it.)"""
    pool = drawing._pool()
    assert pool._mp_context.get_start_method() == "forkserver"
    question = "[m in __import__('sys').modules for m in ('matplotlib.pyplot', 'finops_cli.report.figures')]"
    assert pool.submit(eval, question).result(timeout=60) == [True, True]


def _inputs() -> ReportInputs:
    """The sample plan with idle waste and the supply curve of its biggest workload: all four charts."""
    plan = parse_plan(json.loads((GOLDEN / "sample-plan.json").read_text()))
    waste = WasteInputs(
        {by: json.loads((GOLDEN / f"sample-waste-{by}.json").read_text()) for by in ("team", "substrate")}
    )
    entries = [
        {"substrate": "onprem-h100", "kind": "owned", "cost_per_unit": 0.35, "capacity_units": 64.0},
        {"substrate": "cw-reserved-h100", "kind": "reserved", "cost_per_unit": 0.0, "capacity_units": 32.0},
        {"substrate": "aws-p5-spot-use1", "kind": "spot", "cost_per_unit": 4.2, "capacity_units": 96.0},
        {"substrate": "aws-p5-od-use1", "kind": "on_demand", "cost_per_unit": 6.88, "capacity_units": None},
    ]
    stack = {"workload": "pretrain-70b", "unit": "h100_hours", "entries": entries, "demand_units": 134.4}
    supply = SupplyInputs({**stack, "clearing_price": 4.2}, "USD", "pretrain-70b", "h100_hours", 4.2, 134.4)
    return ReportInputs(plan=plan, waste=waste, supply=supply)


def _refuse(path: Path) -> Path:
    raise InputError("no prices for this workload", path=path.name)


def test_the_helper_draws_the_same_files_as_the_main_process(
    tmp_path: Path, helper: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:  # were a chart drawn here, it would fail: the helper draws them all
        for name in ("idle_by_team_chart", "baseline_vs_plan_chart", "savings_waterfall_chart"):
            m.setattr(figures, name, _refuse)
        by_helper = write_report(_inputs(), tmp_path / "helper" / "report.md")
    drawing.stop()
    in_process = write_report(_inputs(), tmp_path / "main" / "report.md")
    assert by_helper.unavailable == in_process.unavailable == []
    assert by_helper.markdown == in_process.markdown
    assert [p.name for p in by_helper.chart_paths] == [p.name for p in in_process.chart_paths]
    assert len(by_helper.chart_paths) == 4
    for a, b in zip(by_helper.chart_paths, in_process.chart_paths, strict=True):
        assert a.read_bytes() == b.read_bytes()
    for folder in ("helper", "main"):  # no staging folder left behind
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == sorted(
            ["report.md", *(p.name for p in in_process.chart_paths)]
        )


def test_a_chart_error_in_the_helper_is_handed_back(tmp_path: Path, helper: None) -> None:
    d = drawing.Drawing(tmp_path / "report.md")
    try:
        d.submit("supply", "x.png", f"{__name__}:_refuse")
        d.submit("mix", "mix.png", "finops_cli.report.figures:baseline_vs_plan_chart", ["spot"], [2.0], [1.0])
        drawn, failed = d.wait()
    finally:
        d.close()
    assert drawn == {"mix": "mix.png"}
    assert isinstance(failed["supply"], InputError) and str(failed["supply"]) == "x.png: no prices for this workload"
    assert not d.stage.exists()


def test_a_dead_helper_is_replaced_by_drawing_here(tmp_path: Path, helper: None) -> None:
    pool = drawing._pool()
    for pid in list(pool._processes):  # the helper dies (OOM killer, a user's kill)
        os.kill(pid, signal.SIGKILL)
    d = drawing.Drawing(tmp_path / "report.md")
    try:
        d.submit("mix", "mix.png", "finops_cli.report.figures:baseline_vs_plan_chart", ["spot"], [2.0], [1.0])
        drawn, failed = d.wait()
        assert failed == {} and drawn == {"mix": "mix.png"}
        assert (d.stage / "mix.png").read_bytes()[:4] == b"\x89PNG"
    finally:
        d.close()


@pytest.mark.parametrize("value", ["two", "-1"])
def test_a_bad_process_count_is_an_input_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(drawing.PROCESSES_ENV, value)
    with pytest.raises(InputError, match="FINOPS_CHART_PROCESSES"):
        drawing.start()


def test_a_stopped_helper_ends_without_the_interpreters_teardown(tmp_path: Path) -> None:
    """The helper's exit skips teardown (the main process waits for it): handlers registered before it do not
    run, what it printed is flushed, and it ends with 0."""
    import subprocess
    import sys

    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('teardown ran'))\n"  # registered first: would run after the helper's
        "from finops_cli.report.drawing import _exit_without_teardown\n"
        "_exit_without_teardown()\n"
        "print('drawn', end='')\n"
        "sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout == "drawn"
    assert done.returncode == 0


def test_stop_joins_a_helper_that_exits_at_once(helper: None, tmp_path: Path) -> None:
    """:func:`drawing.stop` after a chart: the helper process is gone (joined), none left running."""
    pool = drawing._pool()
    d = drawing.Drawing(tmp_path / "report.md")
    d.submit("idle", "idle.png", "finops_cli.report.figures:idle_by_team_chart", ["a"], [1.0], currency="USD")
    assert d.wait()[0] == {"idle": "idle.png"}
    d.close()
    processes = list(pool._processes.values())
    drawing.stop()
    assert processes and all(p.exitcode == 0 for p in processes)


@pytest.mark.parametrize("fork_server", [True, False])
def test_helpers_end_when_the_main_process_is_killed(tmp_path: Path, fork_server: bool) -> None:
    """A killed CLI (SIGKILL: no chance to stop its pool) leaves no helper behind, nor a fork server."""
    import subprocess
    import sys
    import time

    if fork_server and not drawing._fork_server():
        pytest.skip("no fork server on this platform")
    script = (
        "import os, signal, sys\n"
        "from finops_cli.report import drawing\n"
        f"drawing._fork_server = lambda: {fork_server}\n"
        "if __name__ == '__main__':\n"
        "    os.environ[drawing.PROCESSES_ENV] = '2'\n"
        "    drawing.start()\n"
        "    pool = drawing._pool()\n"
        "    futures = [pool.submit(drawing._ready) for _ in range(4)]\n"
        "    [f.result(timeout=120) for f in futures]\n"
        "    print(' '.join(map(str, pool._processes)), flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    (tmp_path / "killed.py").write_text(script)
    out = tmp_path / "pids.txt"
    with out.open("w") as fh:
        subprocess.run([sys.executable, str(tmp_path / "killed.py")], stdout=fh, timeout=180, check=False)
    helpers = [int(p) for p in out.read_text().split()]
    assert helpers
    deadline = time.monotonic() + 20
    while any(drawing._alive(p) for p in helpers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(drawing._alive(p) for p in helpers)
