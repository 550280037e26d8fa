"""Write Kestrel AI's October 2026 GPU utilisation traces and spot-price feeds (``samples/``).

Every trace device belongs to a billed resource of ``company.py`` (same ``resource_id``), so
``finops waste`` prices idle time from the billing samples. Three disjoint sources, one per format:

- ``utilization/dcgm/`` — dcgm-exporter scrapes (Prometheus text, gzipped) of on-prem hosts
  ``onprem-hgx-06`` and ``-07`` every 6 hours, named ``scrape-<ISO time>.prom.gz``;
- ``utilization/prometheus-range.json.gz`` — a Prometheus ``query_range`` (step 1 h) over the CoreWeave
  platform nodes ``cw-node-05…07``; node 07 exposes only ``DCGM_FI_DEV_GPU_UTIL`` (profiling metrics
  off), to show the fallback;
- ``utilization/gpu_util_hourly.csv.gz`` — a generic hourly CSV (``timestamp, device_id, host,
  utilization`` in percent, ``team, workload, resource_id``) for the other resources, except the
  Azure ND node and the GCP on-demand node (no exporter deployed: their paid hours show up as
  *unobserved*), and with a 3-day exporter outage on one p5 instance (a gap: lower coverage).

A GPU is either busy (utilisation ≈ 0.93 ± noise) or idle (exactly 0) in an hour, with the probability
of busy set so each resource's mean matches ``mean_utilization`` — real fleets look like that: many
zeros, a hot tail, a mean that hides both.

Spot prices (``spot_prices/``): AWS CLI ``describe-spot-price-history`` JSON for p5.48xlarge in
us-east-1 and p4d.24xlarge in us-west-2 over October 2026 (a few changes per zone per day, a random
walk around the billed spot price), and a CSV feed (AWS column names) for g6.12xlarge in us-east-1.

    python samples/generate_traces.py --seed 11
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd

try:
    from samples.company import MONTH_HOURS, MONTH_START, RESOURCES, Resource
except ImportError:  # run as a script from samples/
    from company import MONTH_HOURS, MONTH_START, RESOURCES, Resource  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
UTIL_DIR = HERE / "utilization"
SPOT_DIR = HERE / "spot_prices"

DCGM_HOSTS = ("onprem-hgx-06", "onprem-hgx-07")
PROM_NODES = ("cw-node-05", "cw-node-06", "cw-node-07")
GPU_UTIL_ONLY = ("cw-node-07",)
UNOBSERVED = ("nd-h100-0", "a3-od-0")  # suffixes of resource ids with no exporter
OUTAGE = ("i-0a1b2c3d4e5f60001", 400, 472)  # resource, first hour, last hour (exclusive) without samples
BUSY_LEVEL = 0.93
MODEL_NAME = {"H100": "NVIDIA H100 80GB HBM3", "A100": "NVIDIA A100-SXM4-80GB", "L4": "NVIDIA L4"}


def _host(r: Resource) -> str:
    return r.resource_id.rsplit("/", 1)[-1]


def device_hours(r: Resource, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(hour index, utilisation 0–1) for each GPU of ``r``: a (gpus, hours) pair of arrays."""
    hours = np.arange(r.first_hour, r.last_hour)
    # per-GPU means scatter around the resource mean (some GPUs of a node are hotter than others)
    means = np.clip(r.mean_utilization + rng.normal(0, 0.08, r.gpus), 0.02, BUSY_LEVEL - 0.02)
    means *= r.mean_utilization / means.mean()
    p_busy = np.clip(means / BUSY_LEVEL, 0, 1)
    busy = rng.random((r.gpus, len(hours))) < p_busy[:, None]
    level = np.clip(rng.normal(BUSY_LEVEL, 0.05, (r.gpus, len(hours))), 0.05, 1.0)
    return hours, np.where(busy, level, 0.0)


def write_dcgm(rng: np.random.Generator) -> int:
    out = UTIL_DIR / "dcgm"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    res = [r for r in RESOURCES if r.resource_id in DCGM_HOSTS]
    series = {r.resource_id: device_hours(r, rng)[1] for r in res}
    n = 0
    for h in range(0, MONTH_HOURS, 6):
        ts = MONTH_START + timedelta(hours=h)
        lines = []
        for metric, help_text, scale in (
            ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", 100.0),
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", 1.0),
        ):
            lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge"]
            for r in res:
                for g in range(r.gpus):
                    u = series[r.resource_id][g, h]
                    # DEV_GPU_UTIL reads "a kernel ran" and overstates activity; PROF is the truer number
                    value = f"{min(100.0, round(u * 100 * 1.08)):.0f}" if scale == 100 else f"{u:.6f}"
                    labels = (
                        f'gpu="{g}",UUID="GPU-{r.resource_id}-{g}",device="nvidia{g}",'
                        f'modelName="{MODEL_NAME[r.accelerator]}",Hostname="{r.resource_id}",'
                        f'namespace="{r.team}",pod="{r.workload}-{g}",workload="{r.workload}",team="{r.team}"'
                    )
                    lines.append(f"{metric}{{{labels}}} {value}")
                    n += scale == 1.0
        name = out / f"scrape-{ts:%Y-%m-%dT%H-%M-%SZ}.prom.gz"
        with gzip.GzipFile(name, "wb", mtime=0) as fh:
            fh.write(("\n".join(lines) + "\n").encode())
    return n


def write_prometheus(rng: np.random.Generator) -> int:
    res = [r for r in RESOURCES if r.resource_id in PROM_NODES]
    result = []
    n = 0
    for r in res:
        hours, util = device_hours(r, rng)
        stamps = [int((MONTH_START + timedelta(hours=int(h))).timestamp()) for h in hours]
        metric = "DCGM_FI_DEV_GPU_UTIL" if r.resource_id in GPU_UTIL_ONLY else "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
        for g in range(r.gpus):
            values = util[g] * (100 if metric == "DCGM_FI_DEV_GPU_UTIL" else 1)
            fmt = "{:.0f}" if metric == "DCGM_FI_DEV_GPU_UTIL" else "{:.4f}"
            result.append(
                {
                    "metric": {
                        "__name__": metric,
                        "gpu": str(g),
                        "UUID": f"GPU-{r.resource_id}-{g}",
                        "modelName": MODEL_NAME[r.accelerator],
                        "Hostname": r.resource_id,
                        "namespace": r.team,
                        "pod": f"{r.workload}-{g}",
                        "team": r.team,
                        "workload": r.workload,
                    },
                    "values": [[t, fmt.format(v)] for t, v in zip(stamps, values, strict=True)],
                }
            )
            n += len(stamps)
    doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    with gzip.GzipFile(UTIL_DIR / "prometheus-range.json.gz", "wb", mtime=0) as fh:
        fh.write(json.dumps(doc, separators=(",", ":")).encode())
    return n


def write_csv(rng: np.random.Generator) -> int:
    frames = []
    for r in RESOURCES:
        if r.resource_id in DCGM_HOSTS or r.resource_id in PROM_NODES or r.resource_id.endswith(UNOBSERVED):
            continue
        hours, util = device_hours(r, rng)
        keep = np.ones(len(hours), dtype=bool)
        if r.resource_id == OUTAGE[0]:
            keep = (hours < OUTAGE[1]) | (hours >= OUTAGE[2])
        for g in range(r.gpus):
            ts = MONTH_START + pd.to_timedelta(hours[keep], unit="h")
            frames.append(
                pd.DataFrame(
                    {
                        "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "device_id": f"{_host(r)}/gpu{g}",
                        "host": _host(r),
                        "utilization": np.round(util[g][keep] * 100, 1),
                        "team": r.team,
                        "workload": r.workload,
                        "resource_id": r.resource_id,
                    }
                )
            )
    df = pd.concat(frames, ignore_index=True).sort_values(["timestamp", "device_id"], kind="stable")
    with gzip.GzipFile(UTIL_DIR / "gpu_util_hourly.csv.gz", "wb", mtime=0) as fh:
        fh.write(df.to_csv(index=False).encode())
    return len(df)


def _spot_walk(rng: np.random.Generator, base: float, zone_bias: float) -> list[tuple[pd.Timestamp, float]]:
    """Price changes for one zone over the month: ~4 a day, mean-reverting around ``base``."""
    t = MONTH_START - timedelta(hours=6)
    end = MONTH_START + timedelta(hours=MONTH_HOURS)
    price = base * zone_bias
    out = []
    while t < end:
        out.append((pd.Timestamp(t), round(price, 4)))
        t += timedelta(minutes=float(rng.exponential(360)) + 5)
        price += 0.25 * (base * zone_bias - price) + rng.normal(0, 0.03 * base)
        price = max(price, 0.3 * base)
    return out


def write_spot(rng: np.random.Generator) -> tuple[int, int]:
    SPOT_DIR.mkdir(exist_ok=True)
    records = []
    for itype, zones, base in (
        ("p5.48xlarge", ("us-east-1a", "us-east-1b", "us-east-1d"), 31.2),
        ("p4d.24xlarge", ("us-west-2a", "us-west-2b"), 9.2),
    ):
        for i, zone in enumerate(zones):
            for ts, price in _spot_walk(rng, base, 0.96 + 0.04 * i):
                records.append(
                    {
                        "AvailabilityZone": zone,
                        "InstanceType": itype,
                        "ProductDescription": "Linux/UNIX",
                        "SpotPrice": f"{price:.6f}",
                        "Timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S+00:00"),
                    }
                )
    records.sort(key=lambda r: r["Timestamp"], reverse=True)  # the API returns newest first
    (SPOT_DIR / "aws-spot-history-2026-10.json").write_text(
        json.dumps({"SpotPriceHistory": records, "NextToken": ""}, indent=4) + "\n", encoding="utf-8"
    )
    rows = []
    for zone_id, zone in (("use1-az1", "us-east-1a"), ("use1-az2", "us-east-1b")):
        for ts, price in _spot_walk(rng, 2.30, 1.0):
            rows.append(
                {
                    "AvailabilityZoneId": zone_id,
                    "AvailabilityZone": zone,
                    "InstanceType": "g6.12xlarge",
                    "ProductDescription": "Linux/UNIX",
                    "SpotPrice": f"{price:.4f}",
                    "Timestamp": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
    pd.DataFrame(rows).to_csv(SPOT_DIR / "g6-spot-feed-2026-10.csv", index=False)
    return len(records), len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    # one seed, separate streams: changing one output leaves the others as they were
    streams = np.random.SeedSequence(args.seed).spawn(4)
    UTIL_DIR.mkdir(exist_ok=True)
    n_dcgm = write_dcgm(np.random.default_rng(streams[0]))
    n_prom = write_prometheus(np.random.default_rng(streams[1]))
    n_csv = write_csv(np.random.default_rng(streams[2]))
    n_json, n_feed = write_spot(np.random.default_rng(streams[3]))
    print(f"utilisation samples: dcgm {n_dcgm:,}, prometheus {n_prom:,}, csv {n_csv:,}")
    print(f"spot price changes: aws json {n_json:,}, csv feed {n_feed:,}")


if __name__ == "__main__":
    main()
