"""dcgm-exporter scrape parsing: the vectorised path vs prometheus_client, and a whole ingest.

Writes ``--files`` scrape files (``--hosts`` × 8 GPUs each; every device reports DCGM_FI_DEV_GPU_UTIL, half
also DCGM_FI_PROF_GR_ENGINE_ACTIVE, plus six other DCGM metrics, with the labels dcgm-exporter writes),
then times, in this process: parsing through :func:`finops_cli.ingest.utilization.dcgm.iter_dcgm` (the
vectorised path), through prometheus_client file by file (:func:`parse_scrape`, the path before #15; in
the first ``--client-runs`` runs only: it takes a minute), and ``ingest_utilization`` of the directory into
a fresh store. Three units, all printed: **sample lines** (Prometheus samples: every metric's lines, all
of which are parsed and checked), **utilisation samples** (the lines of the two utilisation metrics) and
**rows** (one per device and scrape). Run 1 also pays the first-use costs (imports, the label-set cache);
the median is over all runs.

    python benchmarks/dcgm.py --files 40 --hosts 256 --runs 6
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from results import add_json_option, write_json

OTHER = ["DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
         "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_COPY_UTIL"]  # fmt: skip


def generate(d: Path, files: int, hosts: int, seed: int = 3) -> tuple[int, int]:
    """Write the scrapes; returns (sample lines of every metric, utilisation sample lines)."""
    rng = np.random.default_rng(seed)
    samples = lines_out = 0
    for f in range(files):
        lines = []
        for metric in ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", *OTHER]:
            lines += [f"# HELP {metric} {metric}.", f"# TYPE {metric} gauge"]
            for h in range(hosts):
                for g in range(8):
                    if metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" and g % 2:
                        continue
                    labels = (
                        f'gpu="{g}",UUID="GPU-{h:04d}-{g}",device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",'
                        f'Hostname="node-{h:04d}",namespace="team-{h % 7}",pod="job-{h % 40}-{g}",'
                        f'container="main",workload="job-{h % 40}"'
                    )
                    if metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
                        value = f"{rng.random():.6f}"
                    else:
                        value = str(int(rng.integers(0, 101)))
                    lines.append(f"{metric}{{{labels}}} {value}")
                    samples += metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
                    lines_out += 1
        (d / f"scrape-2026-10-01T{f // 60:02d}-{f % 60:02d}-00Z.prom").write_text("\n".join(lines) + "\n")
    return lines_out, samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=60)
    ap.add_argument("--hosts", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--client-runs", type=int, default=1, help="runs that also time prometheus_client")
    add_json_option(ap)
    args = ap.parse_args()
    from finops_cli.files import read_text
    from finops_cli.ingest.utilization import ingest_utilization
    from finops_cli.ingest.utilization.dcgm import iter_dcgm, parse_scrape, scrape_files, timestamp_from_name
    from finops_cli.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="finops-dcgm-"))
    try:
        d = tmp / "scrapes"
        d.mkdir()
        lines, samples = generate(d, args.files, args.hosts)
        size = sum(p.stat().st_size for p in d.iterdir()) / 1e6
        print(f"{args.files} scrapes, {lines:,} sample lines, {samples:,} utilisation samples, {size:,.0f} MB")
        parses, ingests = [], []
        for run in range(args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            rows = sum(b.num_rows for b in iter_dcgm(d))
            fast, fast_cpu = time.perf_counter() - t0, time.process_time() - c0
            client = ""
            if run < args.client_runs:
                t0 = time.perf_counter()
                old = 0
                for p in scrape_files(d):
                    old += len(parse_scrape(read_text(p), p, timestamp_from_name(p.name))["timestamp_ns"])
                slow = time.perf_counter() - t0
                assert old == rows
                client = f"  prometheus_client {slow:5.2f} s ({lines / slow:>9,.0f} lines/s)"
            t0, c0 = time.perf_counter(), time.process_time()
            ingest_utilization(Store(tmp / f"store{run}"), [d], fmt="dcgm")
            whole, whole_cpu = time.perf_counter() - t0, time.process_time() - c0
            shutil.rmtree(tmp / f"store{run}", ignore_errors=True)
            parses.append(fast)
            ingests.append(whole)
            print(
                f"run {run + 1}: parse {fast:5.2f} s (CPU {fast_cpu:5.2f} s; {lines / fast:>9,.0f} sample lines/s, "
                f"{samples / fast:>9,.0f} utilisation samples/s, {rows / fast:>9,.0f} rows/s){client}  "
                f"ingest {whole:5.2f} s (CPU {whole_cpu:5.2f} s; {lines / whole:>9,.0f} sample lines/s, "
                f"{samples / whole:>9,.0f} utilisation samples/s)"
            )
        p, w = statistics.median(parses), statistics.median(ingests)
        print(
            f"median of {len(parses)} runs: parse {p:.2f} s = {lines / p:,.0f} "
            f"sample lines/s = {samples / p:,.0f} utilisation samples/s; ingest {w:.2f} s = {lines / w:,.0f} "
            f"sample lines/s = {samples / w:,.0f} utilisation samples/s; load average "
            + " ".join(f"{x:.1f}" for x in os.getloadavg())
        )
        figures = {"scrapes": args.files, "sample_lines": lines, "samples": samples, "parse_s": p, "ingest_s": w}
        write_json(args.json, "dcgm", [figures | {"parse_lines_per_s": lines / p, "ingest_lines_per_s": lines / w}])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
