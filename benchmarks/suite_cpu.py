"""Where the test suite's CPU time goes: CPU seconds per test module (and the slowest tests), per xdist worker.

Usage::

    python benchmarks/suite_cpu.py                  # the whole suite, as CI runs it (-n 2)
    python benchmarks/suite_cpu.py tests/cli -n 2   # any pytest arguments
    python benchmarks/suite_cpu.py --report DIR     # summarise an earlier run's records again

pytest's ``--durations`` are wall times, which a shared 2-core machine stretches by its load; CPU time barely
moves with the load, so it is the figure to compare before and after a change. This script runs pytest with itself
loaded as a plugin (``-p suite_cpu``): every worker records, for each test, the CPU seconds its process used
(all threads: DuckDB, Arrow, HiGHS) plus those of the child processes it waited for (the CLI subprocess tests,
the wheel build) over setup, call and teardown, so a module-scoped fixture counts in the module that builds it.
It then prints the modules by CPU, the 25 costliest tests, each worker's busy time and when it went idle (a
worker that idles while the other finishes a long module is wall time lost: long modules should start first),
and the whole run's wall and CPU time with the load average. Tests run niced as usual: do not run this under
the bench wrapper.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OUT_ENV = "FINOPS_SUITE_CPU_DIR"


_TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (every thread's), from ``/proc/PID/task/TID/children``."""
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            kids.extend(int(k) for k in task.read_text().split())
        except OSError:
            continue
    return kids


def _live_descendants_cpu(root: int) -> float:
    """CPU seconds of the processes still running under ``root`` (a Spark JVM, a spawned ingest worker), with
    the children they have waited for. Walks only this process's subtree (a few files per test, not all of
    ``/proc``); 0 where ``/proc`` has no ``children`` files."""
    total, todo = 0.0, _children(root)
    while todo:
        pid = todo.pop()
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # it just ended
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid ...
        total += sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime
        todo.extend(_children(pid))
    return total


def _cpu() -> float:
    """CPU seconds of this process (every thread), of the children it has waited for and of those still running.

    A child counts once: while it runs through ``/proc``, after it is reaped through ``RUSAGE_CHILDREN`` (which
    then holds its whole life, and ``/proc`` no longer does), so a difference of two readings is what the test
    used."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + _live_descendants_cpu(os.getpid())


# --- the plugin (loaded in every xdist worker by ``-p suite_cpu``) -------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """Record one test's CPU seconds (setup + call + teardown) and its wall start and end."""
    out = os.environ.get(OUT_ENV)
    start_wall, start_cpu = time.time(), _cpu()
    yield
    if out:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        record = {"id": item.nodeid, "cpu": _cpu() - start_cpu, "start": start_wall, "end": time.time()}
        with open(Path(out) / f"{worker}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


# --- the runner and the report -------------------------------------------------------------------------------------


def report(out: Path) -> float:
    """Print the per-module, per-test and per-worker figures recorded in ``out``; return the tests' CPU sum."""
    workers: dict[str, list[dict[str, float | str]]] = {}
    for path in sorted(out.glob("*.jsonl")):
        workers[path.stem] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows = [r for records in workers.values() for r in records]
    if not rows:
        print("no records")
        return 0.0
    t0 = min(float(r["start"]) for r in rows)
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0.0])
    for r in rows:
        m = modules[str(r["id"]).split("::", 1)[0]]
        m[0] += float(r["cpu"])
        m[1] += 1
        m[2] += float(r["end"]) - float(r["start"])
    total = sum(m[0] for m in modules.values())
    print(f"{'module':60} {'tests':>5} {'CPU s':>7} {'wall s':>7} {'share':>6}")
    for name, (cpu, n, wall) in sorted(modules.items(), key=lambda kv: -kv[1][0])[:40]:
        print(f"{name:60} {n:5d} {cpu:7.1f} {wall:7.1f} {cpu / total:6.1%}")
    print(f"{'all ' + str(len(modules)) + ' modules':60} {len(rows):5d} {total:7.1f}")
    print("\ncostliest tests (CPU s, setup + call + teardown):")
    for r in sorted(rows, key=lambda r: -float(r["cpu"]))[:25]:
        print(f"  {float(r['cpu']):6.2f}  {r['id']}")
    print("\nworkers (busy CPU s; first and last test, seconds after the first test started):")
    for name, records in workers.items():
        cpu = sum(float(r["cpu"]) for r in records)
        first = min(float(r["start"]) for r in records) - t0
        last = max(float(r["end"]) for r in records) - t0
        tail = max(records, key=lambda r: float(r["end"]))
        print(f"  {name}: {len(records)} tests, {cpu:.1f} CPU s, {first:.1f}-{last:.1f} s; last: {tail['id']}")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", type=Path, help="summarise the records in this directory instead of running")
    args, pytest_args = parser.parse_known_args()
    if args.report:
        report(args.report)
        return
    out = Path(tempfile.mkdtemp(prefix="suite-cpu-"))
    env = dict(os.environ, **{OUT_ENV: str(out)})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "pytest", "-p", "suite_cpu", *(pytest_args or ["-n", "2"])]
    load_before = os.getloadavg()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    print(f"\nrecords in {out}\n")
    total = report(out)
    load = " → ".join(f"{a:.1f}/{b:.1f}/{c:.1f}" for a, b, c in (load_before, os.getloadavg()))
    outside = usage.ru_utime + usage.ru_stime - total
    print(
        f"\nwhole run: {wall:.1f} s wall, {usage.ru_utime:.1f} s user + {usage.ru_stime:.1f} s sys for pytest, its "
        f"workers and the processes they waited for ({outside:.1f} s outside the tests: start-up, collection; a "
        f"process left running, such as a Spark JVM, counts in the tests only); load average {load}; "
        f"exit {os.waitstatus_to_exitcode(status)}"
    )


if __name__ == "__main__":
    main()
