"""Billing ingest of a generated multi-file CUR: the local engine, Spark ``local[2]`` and a 2-worker standalone cluster.

Generates ``--files`` CUR-like CSV parts (the legacy ``lineItem/…`` layout of ``benchmarks/ingest.py``;
one payer and period split into parts, as AWS delivers a large export) with ``--rows`` lines in all, then
ingests them into a fresh store once per engine, each in its own subprocess (so the JVM and the memory of
one run do not leak into the other). For Spark it reports the session start-up apart from the ingest job.
Prints wall seconds, rows/s, the Spark overhead (Spark ÷ local) and the machine's load, then one table of
every run side by side, and checks that the stores hold the same rows and the same BilledCost per currency
to the cent. docs/scale.md quotes its figures. Usage::

    python benchmarks/spark.py                            # 10 M lines in 10 files: local, local[2], cluster
    python benchmarks/spark.py --lines 2000000 --files 4 --keep /tmp/cur-parts
    python benchmarks/spark.py --master local[2]          # without the cluster

``--master`` takes a comma-separated list; ``standalone`` starts a Spark standalone master and two 1-core
workers on 127.0.0.1 for the run (``tests/spark/cluster.py``; the store is a directory on this machine, which
its executors share), a ``spark://`` URL uses a running cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import generate  # the sibling benchmark's CUR generator
from results import add_json_option, write_json


def _tree_cpu_seconds() -> float:
    """CPU seconds of this process and every live descendant (the JVM, Spark's Python workers), plus what
    reaped children used: read from /proc (Linux), so the Spark figure is not only the driver's."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, list[str]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stats[int(d.name)] = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
    parent = {pid: int(f[1]) for pid, f in stats.items()}
    mine, total = os.getpid(), 0.0
    for pid, f in stats.items():
        p = pid
        while p > 1 and p != mine:
            p = parent.get(p, 0)
        if p == mine:  # utime, stime, cutime, cstime
            total += sum(int(x) for x in f[11:15]) / tick
    return total


def _child(engine: str, parts: Path, store: Path, master: str, warm: bool, jobs: int | None) -> None:
    from finops_cli import api
    from finops_cli.store import Store

    out: dict[str, object] = {"engine": engine}
    if engine == "spark":
        from finops_cli.spark.session import get_session

        t0 = time.perf_counter()
        get_session(master, conf={"spark.driver.memory": "4g"})
        out["startup_seconds"] = time.perf_counter() - t0
    cpu0 = _tree_cpu_seconds()
    t0 = time.perf_counter()
    local = {"jobs": jobs} if engine == "local" else {}
    summary = api.ingest_billing([parts], "aws-cur", store, engine=engine, spark_master=master, **local)
    out["seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = _tree_cpu_seconds() - cpu0
    if warm:  # again, in the same session: the Python workers are up and the JVM's code is compiled
        t0 = time.perf_counter()
        api.ingest_billing([parts], "aws-cur", store, engine=engine, spark_master=master, **local)
        out["warm_seconds"] = time.perf_counter() - t0
    out["rows"] = summary.rows
    out["conservation"] = summary.conservation
    table = Store(store).read("billing", columns=["BilledCost"])
    out["stored_rows"] = table.num_rows
    print(json.dumps(out))


def _run(engine: str, parts: Path, work: Path, master: str, warm: bool, jobs: int | None) -> dict[str, object]:
    store = work / f"store-{engine}"
    shutil.rmtree(store, ignore_errors=True)
    cmd = [sys.executable, __file__, "--child", engine, "--parts", str(parts), "--store", str(store)]
    cmd += ["--master", master] + (["--warm"] if warm else []) + (["--jobs", str(jobs)] if jobs else [])
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}  # executors too
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{engine} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _standalone(root: Path) -> Any:
    """A standalone master and two 1-core workers on 127.0.0.1 (the test suite's cluster), started for the run."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.spark.cluster import StandaloneCluster, cluster_env

    t0 = time.perf_counter()
    cluster = StandaloneCluster(root, cluster_env(), worker_memory="2g").start()
    print(f"standalone cluster: master and 2 workers × 1 core up in {time.perf_counter() - t0:.1f} s")
    return cluster


def _table(results: dict[str, dict[str, Any]], rows: int, files: int, size: int) -> None:
    """Every run side by side: wall time of the job, session start, CPU of the process tree, lines/s, ratio."""
    local = float(results["local"]["seconds"]) if "local" in results else None
    print(
        f"\n| engine ({rows / 1e6:g} M lines, {files} files, {size / 1e9:.2f} GB) | wall (job) | session start "
        "| CPU (process tree) | lines/s | ratio to local |"
    )
    print("|---|--:|--:|--:|--:|--:|")
    for label, r in results.items():
        secs = float(r["seconds"])
        start = f"{float(r['startup_seconds']):.1f} s" if "startup_seconds" in r else "—"
        if "cluster_start_seconds" in r:
            start += f" (+ {float(r['cluster_start_seconds']):.1f} s to start the cluster)"
        cpu = "—" if r.get("cluster") else f"{float(r['cpu_seconds']):.1f} s"
        ratio = f"{secs / local:.2f}×" if local else "—"
        print(f"| {label} | {secs:.1f} s | {start} | {cpu} | {int(r['rows']) / secs / 1e3:,.0f} k | {ratio} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", "--rows", dest="rows", type=int, default=10_000_000, help="lines in all files together")
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument(
        "--master",
        default="local[2],standalone",
        help="Spark masters, comma-separated; standalone: a 2-worker cluster started for the run",
    )
    ap.add_argument("--keep", type=Path, help="generate the parts here and keep them (reused if present)")
    ap.add_argument("--engines", default="local,spark")
    ap.add_argument("--warm", action="store_true", help="ingest twice per engine; report the second run too")
    ap.add_argument("--jobs", type=int, help="the local engine's worker processes (default: its own choice)")
    add_json_option(ap)
    ap.add_argument("--child", choices=["local", "spark"], help=argparse.SUPPRESS)
    ap.add_argument("--parts", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child, args.parts, args.store, args.master, args.warm, args.jobs)
        return
    tmp = Path(tempfile.mkdtemp(prefix="finops-spark-bench-"))
    parts = args.keep or tmp / "parts"
    try:
        parts.mkdir(parents=True, exist_ok=True)
        per_file = -(-args.rows // args.files)
        t0 = time.perf_counter()
        for i in range(args.files):
            path = parts / f"cur-00001-{i + 1:05d}.csv"
            if not path.exists():
                generate(path, min(per_file, args.rows - i * per_file), seed=7 + i)
        size = sum(p.stat().st_size for p in parts.glob("*.csv"))
        print(f"{args.files} files, {args.rows:,} lines, {size / 1e9:.2f} GB ({time.perf_counter() - t0:.0f} s)")
        results = {}
        runs = [
            (engine, master)
            for engine in args.engines.split(",")
            for master in (args.master.split(",") if engine == "spark" else [""])
        ]
        cluster, cluster_start = None, None
        for engine, master in runs:
            label = f"{engine} {master}".strip()
            if master == "standalone":
                if cluster is None:
                    t0 = time.perf_counter()
                    cluster = _standalone(tmp / "cluster")
                    cluster_start = time.perf_counter() - t0
                master = cluster.master_url
            load_before = os.getloadavg()[0]
            try:
                r = _run(engine, parts, tmp, master, args.warm, args.jobs)
            except BaseException:
                if cluster is not None:
                    cluster.stop()
                raise
            if master.startswith("spark://"):  # its executors are not this process's children: CPU not comparable
                r["cluster"] = True
                if cluster_start is not None:
                    r["cluster_start_seconds"] = cluster_start
            results[label] = r
            engine = label
            extra = f"  (+ {float(r['startup_seconds']):.1f} s session start)" if "startup_seconds" in r else ""
            extra += f"  CPU {float(r['cpu_seconds']):.1f} s"  # type: ignore[arg-type]
            extra += f"  warm rerun {float(r['warm_seconds']):.1f} s" if "warm_seconds" in r else ""  # type: ignore[arg-type]
            secs = float(r["seconds"])  # type: ignore[arg-type]
            print(
                f"{engine:<18} {secs:8.1f} s  {int(r['rows']) / secs:>10,.0f} lines/s{extra}  "  # type: ignore[call-overload]
                f"load {load_before:.1f} → {os.getloadavg()[0]:.1f}"
            )
        if cluster is not None:
            cluster.stop()
        for label, spk in results.items():
            if "local" not in results or not label.startswith("spark"):
                continue
            loc = results["local"]
            assert loc["stored_rows"] == spk["stored_rows"] == loc["rows"], "stores differ in rows"
            assert loc["conservation"] == spk["conservation"], "stores differ in money"
            ratio = float(spk["seconds"]) / float(loc["seconds"])  # type: ignore[arg-type]
            print(
                f"{label} overhead: {ratio:.2f}x the local wall time (job only), "
                f"{(float(spk['seconds']) + float(spk['startup_seconds'])) / float(loc['seconds']):.2f}x "  # type: ignore[arg-type]
                f"with the session start; same {int(loc['rows']):,} rows and money on both"  # type: ignore[call-overload]
            )
        _table(results, args.rows, args.files, size)
        write_json(args.json, "spark", [{**r, "engine": label} for label, r in results.items()])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
