"""CLI latency benchmark: wall time of the small commands, as a user's shell runs them (a fresh process each).

Usage::

    python benchmarks/cli_latency.py              # median of 7 runs per command
    python benchmarks/cli_latency.py --runs 15 --skip-demo

Each command runs ``--runs`` times after one warm-up run (so the OS page cache and ``__pycache__`` are warm);
the table shows the median wall time, the fastest run, the median CPU time (user + system of the process,
which a busy machine stretches far less than the wall time) and the target (docs/performance.md). The machine's
load average is printed before and after: on a 2-core machine a load above 2 stretches every wall figure.
``import pandas`` alone is timed too, as the yardstick the small commands must beat.

Bytecode: an installed wheel has its ``.pyc`` files (pip compiles them), but an editable checkout run with
``PYTHONDONTWRITEBYTECODE=1`` (set in some shells and CI images) compiles every ``finops_cli`` module from source in
every run: ~0.1-0.3 s more per command. By default the commands run with that variable removed and
``PYTHONPYCACHEPREFIX`` pointing into the benchmark's temporary directory, so the warm-up run compiles once and the
timed runs read bytecode, as an installed tool does; ``--as-is`` keeps the caller's environment.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import add_json_option, write_json

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
PLAN = REPO / "tests" / "report" / "golden" / "sample-plan.json"


def _finops(source: Path | None) -> list[str]:
    """How to start ``finops``: the installed script, or the package found in ``source`` (another checkout)."""
    if source is not None:
        code = f"import sys; sys.path.insert(0, {str(source)!r}); from finops_cli.cli.app import main; main()"
        return [sys.executable, "-c", code]
    exe = Path(sys.executable).with_name("finops")
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from finops_cli.cli.app import main; main()"]


def _time(
    cmd: list[str], runs: int, cwd: Path, env: dict[str, str], stderr: list[str] | None = None
) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system, from ``wait4``) of each run after the warm-up; each timed
    run's stderr is appended to ``stderr`` when given."""
    walls, cpus = [], []
    for i in range(runs + 1):  # the first run warms the caches and is not counted
        with tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode not in (0, 1):
                err.seek(0)
                tail = err.read().decode(errors="replace").strip()[-500:]
                raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {tail}")
            if i and stderr is not None:
                err.seek(0)
                stderr.append(err.read().decode(errors="replace"))
        if i:
            walls.append(elapsed)
            cpus.append(usage.ru_utime + usage.ru_stime)
    return walls, cpus


def _phases(walls: list[float], logs: list[str]) -> list[tuple[str, float]]:
    """Median seconds per step of ``finops -v demo`` (its ``demo: <step> took N s`` lines), and the rest of the
    wall time: Python start-up, the CLI, imports, printing the plan and exit."""
    per_run = [dict((m[0], float(m[1])) for m in re.findall(r"demo: (.+?) took ([0-9.]+) s", log)) for log in logs]
    names = list(per_run[0]) if per_run else []
    rows = [(name, statistics.median(run.get(name, 0.0) for run in per_run)) for name in names]
    rest = statistics.median(wall - sum(run.values()) for wall, run in zip(walls, per_run, strict=True))
    return [*rows, ("rest: start-up, CLI, imports not inside a step, printing the plan, exit", rest)]


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min, {os.cpu_count()} CPUs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="Timed runs per command (median reported).")
    parser.add_argument("--demo-runs", type=int, default=3, help="Timed runs of `finops demo`.")
    parser.add_argument("--skip-demo", action="store_true", help="Leave out `finops demo` (the slow one).")
    parser.add_argument(
        "--source",
        type=Path,
        help="Time the finops_cli package of another checkout (e.g. `git worktree add /tmp/old <commit>`), "
        "for a before/after under the same load.",
    )
    parser.add_argument(
        "--as-is",
        action="store_true",
        help="Keep the environment as it is (PYTHONDONTWRITEBYTECODE=1 then compiles finops_cli in every run).",
    )
    add_json_option(parser)
    args = parser.parse_args()

    finops = _finops(args.source)
    fleet, workloads = SAMPLES / "fleet.yaml", SAMPLES / "workloads.yaml"
    validate = [*finops, "validate", "--fleet", str(fleet), "--workloads", str(workloads)]
    cases: list[tuple[str, list[str], float, int]] = [
        ("python -c 'import pandas' (yardstick)", [sys.executable, "-c", "import pandas"], float("nan"), args.runs),
        ("finops --help", [*finops, "--help"], 0.3, args.runs),
        ("finops --version", [*finops, "--version"], 0.3, args.runs),
        ("finops validate (samples)", validate, 0.5, args.runs),
        ("finops gate (sample plan)", [*finops, "gate", "--plan", str(PLAN), "--baseline", str(PLAN)], 0.5, args.runs),
    ]
    print(f"load before: {_load()}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="finops-latency-") as tmp:
        cwd = Path(tmp)
        env = dict(os.environ)
        if not args.as_is:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(cwd / "pycache")
        print(f"bytecode: {'as the environment says' if args.as_is else 'cached after the warm-up run'}")
        if not args.skip_demo:  # -v: the demo logs each step's time (the phase table below)
            demo = [*finops, "-v", "demo", "--out", str(cwd / "demo")]
            cases.append(("finops demo (warm)", demo, 6.0, args.demo_runs))
        phases: list[tuple[str, float]] = []
        for name, cmd, target, runs in cases:
            logs: list[str] = []
            walls, cpus = _time(cmd, runs, cwd, env, logs)
            rows.append((name, statistics.median(walls), min(walls), statistics.median(cpus), target, runs))
            shutil.rmtree(cwd / "demo", ignore_errors=True)
            if "demo" in cmd:
                phases = _phases(walls, logs)
    print(f"load after:  {_load()}")
    print()
    print(f"| {'command':<40} | median s | fastest s | CPU s (median) | target s | runs |")
    print(f"|{'-' * 42}|----------|-----------|----------------|----------|------|")
    for name, median, fastest, cpu, target, runs in rows:
        goal = "" if target != target else f"≤ {target:.1f}"
        print(f"| {name:<40} | {median:8.3f} | {fastest:9.3f} | {cpu:14.3f} | {goal:>8} | {runs:>4} |")
    if phases:
        print()
        print("`finops demo`, wall seconds per step (median over the runs; `finops -v demo` logs them):")
        print()
        print(f"| {'step':<72} | median s |")
        print(f"|{'-' * 74}|----------|")
        for name, seconds in phases:
            print(f"| {name:<72} | {seconds:8.3f} |")
    results = [
        {"command": name, "median_s": median, "fastest_s": fastest, "cpu_median_s": cpu, "runs": runs}
        | ({} if target != target else {"target_s": target})
        for name, median, fastest, cpu, target, runs in rows
    ]
    write_json(args.json, "cli_latency", results + [{"demo_step": n, "median_s": s} for n, s in phases])


if __name__ == "__main__":
    main()
