"""Utilisation ingest at scale: N samples of a generic CSV trace into an empty store.

Writes a CSV of ``--samples`` rows (ISO-8601 timestamps, device id, utilisation in percent, team,
resource id; 1-minute cadence; devices interleaved as an exporter writes them), then runs
``finops ingest utilization`` on it in a child process and reports wall time, samples/s and the
child's peak RSS. The CSV is cached under ``--workdir`` between runs. ``--replace`` then ingests the same
trace again under other options (another key, the same samples) with ``replace=True`` and reports that
second ingest, whose overlap check reads the stored spans back (issue 11: no sample stored twice).

    python benchmarks/utilization.py --samples 10000000 [--replace]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from results import add_json_option, write_json

CHILD = """
import sys, time, json
from finops_cli.store import Store
from finops_cli.ingest.utilization import ingest_utilization
t = time.perf_counter()
again = len(sys.argv) > 3
r = ingest_utilization(Store(sys.argv[2]), [sys.argv[1]], max_gap_factor=1.6 if again else 1.5, replace=again)
print(json.dumps({"seconds": time.perf_counter() - t, "rows": r.rows_written, "replaced": len(r.replaced),
                  "devices": r.sources[0].devices, "coverage": r.sources[0].coverage}))
"""


def make_csv(path: Path, samples: int, devices: int) -> None:
    """Write ``samples`` rows in 1-minute steps, all devices per step (interleaved), 1 M rows at a time."""
    steps = -(-samples // devices)
    dev_names = pa.array([f"node-{d // 8:04d}/gpu{d % 8}" for d in range(devices)])
    teams = pa.array(["research", "product", "platform", "data"])
    rng = np.random.default_rng(1)
    start = np.datetime64("2026-10-01T00:00:00", "s").astype(np.int64)
    chunk_steps = max(1, 1_000_000 // devices)
    written = 0
    schema = pa.schema(
        [
            ("timestamp", pa.string()),
            ("device_id", pa.string()),
            ("utilization", pa.float64()),
            ("team", pa.string()),
            ("resource_id", pa.string()),
        ]
    )
    with pacsv.CSVWriter(path, schema) as writer:
        for s0 in range(0, steps, chunk_steps):
            n_steps = min(chunk_steps, steps - s0)
            n = min(n_steps * devices, samples - written)
            if n <= 0:
                break
            step = np.repeat(np.arange(s0, s0 + n_steps), devices)[:n]
            dev = np.tile(np.arange(devices), n_steps)[:n]
            ts = pa.array(start + step * 60, pa.int64()).cast(pa.timestamp("s", tz="UTC"))
            util = np.where(rng.random(n) < 0.4, 0.0, np.round(rng.uniform(20, 100, n), 1))
            names = pc.take(dev_names, pa.array(dev))
            table = pa.table(
                {
                    "timestamp": pc.strftime(ts, "%Y-%m-%dT%H:%M:%SZ"),
                    "device_id": names,
                    "utilization": util,
                    "team": pc.take(teams, pa.array(dev % 4)),
                    "resource_id": pc.utf8_slice_codeunits(names, 0, 9),
                }
            )
            writer.write_table(table)
            written += n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--devices", type=int, default=2_000)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "finops-bench-util")
    ap.add_argument("--replace", action="store_true", help="also time a re-ingest that replaces the first")
    add_json_option(ap)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    csv = args.workdir / f"trace-{args.samples}-{args.devices}.csv"
    if not csv.exists():
        t = time.perf_counter()
        make_csv(csv, args.samples, args.devices)
        print(f"wrote {csv} ({csv.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    store = args.workdir / "store"
    subprocess.run(["rm", "-rf", str(store)], check=True)
    t = time.perf_counter()
    cmd = [sys.executable, "-c", CHILD, str(csv), str(store)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    res = json.loads(out.stdout)
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    size_mb = csv.stat().st_size / 1e6
    print(f"samples            {res['rows']:,}")
    print(f"devices            {res['devices']:,}")
    print(f"input              {size_mb:,.0f} MB CSV")
    print(f"ingest (in-proc)   {res['seconds']:.1f} s")
    print(f"wall incl. start   {wall:.1f} s")
    print(f"samples/s          {res['rows'] / res['seconds']:,.0f}")
    print(f"peak RSS (child)   {rss_mb:,.0f} MB")
    print(f"store size         {sum(p.stat().st_size for p in store.rglob('*.parquet')) / 1e6:,.0f} MB")
    figures = {**res, "input_mb": size_mb, "wall_s": wall, "samples_per_s": res["rows"] / res["seconds"]}
    results = [figures | {"peak_rss_mb": rss_mb}]
    if args.replace:
        out = subprocess.run([*cmd, "again"], check=True, capture_output=True, text=True)
        again = json.loads(out.stdout)
        print(f"re-ingest, replace {again['seconds']:.1f} s ({again['replaced']} stored source replaced)")
        results.append({"re_ingest": True, **again})
    write_json(args.json, "utilization", results)


if __name__ == "__main__":
    main()
