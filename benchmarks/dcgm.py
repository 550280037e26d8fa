"""dcgm-exporter scrape parsing: the vectorised path vs prometheus_client, and a whole ingest.

Writes ``--files`` scrape files (``--hosts`` × 8 GPUs each; every device reports DCGM_FI_DEV_GPU_UTIL, half
also DCGM_FI_PROF_GR_ENGINE_ACTIVE, plus six other DCGM metrics, with the labels dcgm-exporter writes),
then times, in this process: parsing through :func:`finops_cli.ingest.utilization.dcgm.iter_dcgm` (the
vectorised path) and through prometheus_client file by file (:func:`parse_scrape`, the path before #15),
and ``ingest_utilization`` of the directory into a fresh store. "Samples" are the utilisation sample
lines read (both metrics); "rows" the utilisation rows produced (one per device and scrape).

    python benchmarks/dcgm.py --files 60 --hosts 256
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

OTHER = ["DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
         "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_COPY_UTIL"]  # fmt: skip


def generate(d: Path, files: int, hosts: int, seed: int = 3) -> int:
    """Write the scrapes; returns the number of utilisation sample lines."""
    rng = np.random.default_rng(seed)
    samples = 0
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
        (d / f"scrape-2026-10-01T{f // 60:02d}-{f % 60:02d}-00Z.prom").write_text("\n".join(lines) + "\n")
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=60)
    ap.add_argument("--hosts", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from finops_cli.files import read_text
    from finops_cli.ingest.utilization import ingest_utilization
    from finops_cli.ingest.utilization.dcgm import iter_dcgm, parse_scrape, scrape_files, timestamp_from_name
    from finops_cli.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="finops-dcgm-"))
    try:
        d = tmp / "scrapes"
        d.mkdir()
        samples = generate(d, args.files, args.hosts)
        size = sum(p.stat().st_size for p in d.iterdir()) / 1e6
        print(f"{args.files} scrapes, {samples:,} utilisation samples, {size:,.0f} MB")
        for run in range(args.runs):
            t0 = time.perf_counter()
            rows = sum(b.num_rows for b in iter_dcgm(d))
            fast = time.perf_counter() - t0
            t0 = time.perf_counter()
            old = 0
            for p in scrape_files(d):
                old += len(parse_scrape(read_text(p), p, timestamp_from_name(p.name))["timestamp_ns"])
            slow = time.perf_counter() - t0
            assert old == rows
            t0 = time.perf_counter()
            ingest_utilization(Store(tmp / f"store{run}"), [d], fmt="dcgm")
            whole = time.perf_counter() - t0
            print(
                f"run {run + 1}: vectorised parse {fast:5.2f} s ({samples / fast:>10,.0f} samples/s, {rows:,} rows)  "
                f"prometheus_client {slow:5.2f} s ({samples / slow:>9,.0f} samples/s)  "
                f"ingest {whole:5.2f} s ({samples / whole:>9,.0f} samples/s)"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
