"""Analysis at scale: peak RSS and wall time of ``finops plan``, ``waste`` and ``report`` on a generated month.

Writes a store of ``--lines`` billing lines and ``--samples`` utilisation samples for the Kestrel AI sample
company (``samples/company.py``), replicated until the month is that big: one line per instance-hour with
every FOCUS column the exports fill (50 columns, a 16-key ``Tags`` object per resource with a
high-cardinality ``user_name``), and one-minute DCGM-like samples per GPU. The data is generated with
vectorised numpy/pyarrow and written **directly in the store's layout through the store's own transactions**
(``Store.transaction`` → ``write_partitioned``), so each commit builds the ingest aggregates exactly as an
ingest does; it does not go through the CSV parsers (ingest speed is ``benchmarks/ingest.py``'s business).
The store is cached under ``--workdir``.

Then each command runs as the real CLI (``finops …``) in its own process, one after another; its wall time
and peak RSS (``ru_maxrss`` of that child, from ``os.wait4``: DuckDB's threads included) are printed, with
the load average before it. ``plan`` uses the sample estate with three workloads switched to
``demand.from_store`` (busy GPU-hours of one workload tag from ``utilization_hourly``, allocated GPU-hours
of one team's trace, billed GPU-hours of one ``user_name`` tag that only the bill carries: a DuckDB
``json_extract_string`` over the horizon's billing lines)::

    python benchmarks/analysis.py --lines 5000000 --samples 20000000
    python benchmarks/analysis.py --lines 50000000 --samples 200000000 --runs 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from results import add_json_option, write_json

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
sys.path.insert(0, str(SAMPLES))

N_TAG_KEYS = 16
USERS = 5000
#: rows per store transaction (one commit, one file per partition and its aggregate)
BILLING_ROWS_PER_TX = 2_500_000
SAMPLES_PER_TX = 5_000_000
MINUTES_PER_HOUR = 60


def _take(values: list[str | None], idx: np.ndarray) -> pa.Array:
    """``values[idx]`` as a plain string array (what ingest writes), built in C++ from the distinct values."""
    return pa.array(values, pa.string()).take(pa.array(idx))


def _workload(r: object, copy: int) -> str:
    """Copy 0 of a sample resource keeps its workload; the replicas are workloads of their own."""
    return r.workload if copy == 0 else f"{r.workload}-{copy}"  # type: ignore[attr-defined]


def _tags(r: object, copy: int, instance: int) -> str:
    """A resource's Tags object: the sample team/workload plus 13 more keys (keys sorted, as ingest writes)."""
    tags = {
        "team": r.team,  # type: ignore[attr-defined]
        "workload": _workload(r, copy),
        "user_name": f"u{instance % USERS}",
        "cost-center": f"cc-{instance % 37}",
        "env": ("prod", "staging", "dev")[instance % 3],
        "project": f"proj-{instance % 211}",
        "owner": f"owner-{instance % 97}@kestrel.ai",
        "cluster": f"k8s-{instance % 13}",
        "namespace": f"ns-{instance % 53}",
        "app": f"app-{instance % 71}",
        "component": ("trainer", "server", "worker", "eval")[instance % 4],
        "created-by": "terraform",
        "department": ("rd", "product", "platform")[instance % 3],
        "data-classification": ("internal", "confidential")[instance % 2],
        "budget": f"b-{instance % 19}",
        "ticket": f"OPS-{10000 + instance % 3001}",
    }
    assert len(tags) == N_TAG_KEYS
    return json.dumps(tags, sort_keys=True, separators=(",", ":"))


def _chunk_no(first_instance: int) -> int:
    """The export file (and billing account) of a block of instances: one per :data:`BILLING_ROWS_PER_TX` lines."""
    from company import MONTH_HOURS

    return first_instance // max(1, BILLING_ROWS_PER_TX // MONTH_HOURS)


def _billing_chunk(first: int, count: int, rng: np.random.Generator) -> pa.Table:
    """Lines of instances ``first … first+count-1``: one per hour of the month, every exported column filled."""
    from company import MONTH, MONTH_HOURS, MONTH_START, RESOURCES

    from finops_cli.schema.billing import BILLING_SCHEMA

    inst = np.arange(first, first + count)
    tmpl = [RESOURCES[i % len(RESOURCES)] for i in inst]
    copy = inst // len(RESOURCES)
    n = count * MONTH_HOURS
    row_inst = np.repeat(np.arange(count), MONTH_HOURS)  # index into the chunk's instances
    hour = np.tile(np.arange(MONTH_HOURS), count)
    start_us = int(MONTH_START.timestamp() * 1_000_000)
    charge = start_us + hour.astype(np.int64) * 3_600_000_000
    ts = pa.timestamp("us", tz="UTC")
    per_hour = np.array([r.usd_per_instance_hour for r in tmpl])[row_inst]
    gpus = np.array([r.gpus for r in tmpl], dtype=np.int32)[row_inst]
    effective = np.round(per_hour * rng.uniform(0.98, 1.02, n), 6)
    rid = [f"{r.resource_id}-{c}" for r, c in zip(tmpl, copy, strict=True)]
    months_us = (MONTH_HOURS * 3_600_000_000) + start_us
    cols = {
        "BillingAccountId": _take([f"acct-{r.provider}-{_chunk_no(first):04d}" for r in tmpl], row_inst),
        "BillingAccountName": _take([f"Kestrel AI {r.provider}" for r in tmpl], row_inst),
        "SubAccountId": _take([f"sub-{c % 50}" for c in copy], row_inst),
        "SubAccountName": _take([f"project {c % 50}" for c in copy], row_inst),
        "BillingPeriodStart": pa.array(np.full(n, start_us), ts),
        "BillingPeriodEnd": pa.array(np.full(n, months_us), ts),
        "ChargePeriodStart": pa.array(charge, ts),
        "ChargePeriodEnd": pa.array(charge + 3_600_000_000, ts),
        "BilledCost": pa.array(effective),
        "EffectiveCost": pa.array(effective),
        "ListCost": pa.array(np.round(per_hour * 1.25, 6)),
        "ContractedCost": pa.array(effective),
        "ListUnitPrice": pa.array(np.round(per_hour * 1.25, 6)),
        "ContractedUnitPrice": pa.array(per_hour),
        "BillingCurrency": _take(["USD"], np.zeros(n, dtype=np.int64)),
        "ChargeCategory": _take(["Usage"], np.zeros(n, dtype=np.int64)),
        "ChargeDescription": _take(
            [f"{r.instance_type} {r.pricing} instance-hour in {r.region}" for r in tmpl], row_inst
        ),
        "ChargeFrequency": _take(["Usage-Based"], np.zeros(n, dtype=np.int64)),
        "PricingCategory": _take([r.pricing for r in tmpl], row_inst),
        "ConsumedQuantity": pa.array(np.ones(n)),
        "ConsumedUnit": _take(["Hours"], np.zeros(n, dtype=np.int64)),
        "PricingQuantity": pa.array(np.ones(n)),
        "PricingUnit": _take(["Hours"], np.zeros(n, dtype=np.int64)),
        "ResourceId": _take(rid, row_inst),
        "ResourceName": _take([f"{x}.kestrel.internal" for x in rid], row_inst),
        "ResourceType": _take(["Virtual Machine"], np.zeros(n, dtype=np.int64)),
        "ServiceName": _take([f"{r.provider} compute" for r in tmpl], row_inst),
        "ServiceCategory": _take(["Compute"], np.zeros(n, dtype=np.int64)),
        "ProviderName": _take([r.provider for r in tmpl], row_inst),
        "PublisherName": _take([r.provider for r in tmpl], row_inst),
        "InvoiceIssuerName": _take([r.provider for r in tmpl], row_inst),
        "RegionId": _take([r.region for r in tmpl], row_inst),
        "RegionName": _take([r.region.upper() for r in tmpl], row_inst),
        "AvailabilityZone": _take([f"{r.region}-{'abc'[i % 3]}" for i, r in zip(inst, tmpl, strict=True)], row_inst),
        "SkuId": _take([f"sku-{r.instance_type}" for r in tmpl], row_inst),
        "SkuPriceId": _take([f"price-{r.instance_type}-{r.pricing}" for r in tmpl], row_inst),
        "Tags": _take([_tags(r, c, i) for r, c, i in zip(tmpl, copy, inst, strict=True)], row_inst),
        "x_InstanceType": _take([r.instance_type for r in tmpl], row_inst),
        "x_GpuCount": pa.array(gpus, pa.int32()),
        "x_AcceleratorType": _take([r.accelerator for r in tmpl], row_inst),
        "x_GpuHours": pa.array(gpus.astype(float)),
        "x_SourceFormat": _take(["focus-1.0"], np.zeros(n, dtype=np.int64)),
        "x_SourceFile": _take([f"export-{_chunk_no(first):04d}.parquet"], np.zeros(n, dtype=np.int64)),
        "x_SourceRow": pa.array(np.arange(n, dtype=np.int64) + 2),
    }
    arrays = [cols.get(f.name, pa.nulls(n, f.type)) for f in BILLING_SCHEMA]
    table = pa.Table.from_arrays(arrays, schema=BILLING_SCHEMA)
    table = table.append_column("provider", _take([r.provider for r in tmpl], row_inst))
    return table.append_column("billing_period", _take([MONTH], np.zeros(n, dtype=np.int64)))


def _utilization_chunk(m0: int, m1: int, devices: int, rng: np.random.Generator) -> pa.Table:
    """One-minute samples of ``devices`` GPUs for minutes ``m0 … m1-1`` of the month (dictionary columns)."""
    from company import MONTH, MONTH_START, RESOURCES

    from finops_cli.schema.utilization import STORE_SCHEMA

    gpus = [(i, g) for i, r in enumerate(RESOURCES) for g in range(r.gpus)]
    d = np.arange(devices)
    tmpl = [RESOURCES[gpus[k % len(gpus)][0]] for k in d]
    copy = d // len(gpus)
    rid = [f"{r.resource_id}-{c}" for r, c in zip(tmpl, copy, strict=True)]
    minutes = np.arange(m0, m1)
    n = len(minutes) * devices
    dev = pa.array(np.tile(d, len(minutes)).astype(np.int32))
    dtype = pa.dictionary(pa.int32(), pa.string())

    def per_device(values: list[str]) -> pa.Array:
        return pa.DictionaryArray.from_arrays(dev, pa.array(values, pa.string()))

    def constant(value: str) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value]))

    start_us = int(MONTH_START.timestamp() * 1_000_000)
    mean = np.array([r.mean_utilization for r in tmpl])[np.tile(d, len(minutes))]
    util = np.round(np.clip(rng.normal(mean, 0.15), 0.0, 1.0), 3)
    util[rng.random(n) < 0.05] = 0.0
    cols = {
        "timestamp": pa.array(
            start_us + np.repeat(minutes, devices).astype(np.int64) * 60_000_000, STORE_SCHEMA[0].type
        ),
        "interval_s": pa.array(np.full(n, 60.0)),
        "device_id": per_device([f"{x}/gpu{gpus[k % len(gpus)][1]}" for k, x in zip(d, rid, strict=True)]),
        "host": per_device(rid),
        "accelerator": per_device([r.accelerator for r in tmpl]),
        "utilization": pa.array(util),
        "team": per_device([r.team for r in tmpl]),
        "workload": per_device([_workload(r, c) for r, c in zip(tmpl, copy, strict=True)]),
        "resource_id": per_device(rid),
        "metric": constant("DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
        "source": constant(f"dcgm-{m0:06d}"),
    }
    assert all(STORE_SCHEMA.field(k).type == dtype for k in ("device_id", "team", "metric"))
    table = pa.Table.from_arrays([cols[f.name] for f in STORE_SCHEMA], schema=STORE_SCHEMA)
    return table.append_column("month", _take([MONTH], np.zeros(n, dtype=np.int64)))


def generate(store_dir: Path, lines: int, samples: int, seed: int = 15) -> None:
    """Write the month through store transactions: billing by blocks of instances, utilisation by time slices."""
    from company import MONTH_HOURS

    from finops_cli import api
    from finops_cli.store import Store
    from finops_cli.store.engine import stage_aggregates

    rng = np.random.default_rng(seed)
    store = Store(store_dir)
    instances = max(1, math.ceil(lines / MONTH_HOURS))
    per_tx = max(1, BILLING_ROWS_PER_TX // MONTH_HOURS)
    for first in range(0, instances, per_tx):
        table = _billing_chunk(first, min(per_tx, instances - first), rng)
        with store.transaction(aggregates=stage_aggregates) as tx:
            tx.write_partitioned("billing", table, key=f"gen-{first:07d}")
        print(f"  billing: {first + table.num_rows // MONTH_HOURS:,} of {instances:,} instances", flush=True)
    minutes = MONTH_HOURS * MINUTES_PER_HOUR
    devices = max(1, math.ceil(samples / minutes))
    step = max(1, SAMPLES_PER_TX // devices)
    for m0 in range(0, minutes, step):
        table = _utilization_chunk(m0, min(m0 + step, minutes), devices, rng)
        with store.transaction(aggregates=stage_aggregates) as tx:
            tx.write_partitioned("utilization", table, key=f"gen-{m0:06d}")
        print(f"  utilisation: minute {min(m0 + step, minutes):,} of {minutes:,} ({devices:,} GPUs)", flush=True)
    api.ingest_spot_prices(store=store, files=sorted((SAMPLES / "spot_prices").iterdir()))


#: store-only columns an export does not carry (ingest writes them)
_NOT_IN_EXPORT = {"x_GpuHours", "x_SourceFormat", "x_SourceFile", "x_SourceRow", "provider", "billing_period"}
#: columns of a generic utilisation trace (ingest infers ``interval_s``, sets ``metric`` and ``source``)
_TRACE_COLUMNS = ["timestamp", "device_id", "host", "accelerator", "utilization", "team", "workload", "resource_id"]


def write_inputs(inputs: Path, lines: int, samples: int, seed: int = 15) -> None:
    """Write the month as exports: FOCUS Parquet billing files (one billing account each, so each file is
    its own source) and generic utilisation traces as Parquet (a time slice of every GPU each), zstd.

    The same generated rows as :func:`generate`, less the columns ingest computes; ``ingest`` then runs the
    real ``finops ingest`` on them.
    """
    import pyarrow.parquet as pq
    from company import MONTH_HOURS

    rng = np.random.default_rng(seed)
    (inputs / "billing").mkdir(parents=True, exist_ok=True)
    (inputs / "utilization").mkdir(parents=True, exist_ok=True)
    instances = max(1, math.ceil(lines / MONTH_HOURS))
    per_tx = max(1, BILLING_ROWS_PER_TX // MONTH_HOURS)
    for first in range(0, instances, per_tx):
        table = _billing_chunk(first, min(per_tx, instances - first), rng)
        table = table.select([c for c in table.column_names if c not in _NOT_IN_EXPORT])
        pq.write_table(table, inputs / "billing" / f"focus-{_chunk_no(first):04d}.parquet", compression="zstd")
        print(f"  billing export: {first + table.num_rows // MONTH_HOURS:,} of {instances:,} instances", flush=True)
    minutes = MONTH_HOURS * MINUTES_PER_HOUR
    devices = max(1, math.ceil(samples / minutes))
    step = max(1, SAMPLES_PER_TX // devices)
    for m0 in range(0, minutes, step):
        table = _utilization_chunk(m0, min(m0 + step, minutes), devices, rng).select(_TRACE_COLUMNS)
        pq.write_table(table, inputs / "utilization" / f"trace-{m0:06d}.parquet", compression="zstd")
        print(f"  utilisation trace: minute {min(m0 + step, minutes):,} of {minutes:,} ({devices:,} GPUs)", flush=True)


def ingest(store: Path, inputs: Path) -> None:
    """``finops ingest billing`` and ``finops ingest utilization`` on the exports, one file per command (each
    is its own source), then the sample spot prices; times and peak RSS printed per command."""
    finops = str(Path(sys.executable).with_name("finops"))
    for kind, fmt in (("billing", ["--input-format", "focus"]), ("utilization", ["--input-format", "csv"])):
        for path in sorted((inputs / kind).glob("*.parquet")):
            result = run([finops, "ingest", kind, str(path), *fmt, "--store", str(store)])
            print(json.dumps({"what": f"ingest {kind}", "file": path.name, **result}), flush=True)
            if result["exit"]:
                raise SystemExit(f"ingest of {path} failed")
    from finops_cli import api

    api.ingest_spot_prices(store=store, files=sorted((SAMPLES / "spot_prices").iterdir()))


def estate_files(workdir: Path) -> tuple[Path, Path]:
    """The sample fleet, and the sample workloads with three demands read from the store (module docstring)."""
    import yaml

    est = workdir / "estate"
    if est.exists():
        shutil.rmtree(est)
    shutil.copytree(SAMPLES / "demand", est / "demand")
    shutil.copy(SAMPLES / "fleet.yaml", est / "fleet.yaml")
    doc = yaml.safe_load((SAMPLES / "workloads.yaml").read_text())
    from_store = {
        "finetune-eu": {"tag": "workload", "value": "finetune-eu", "extend": "repeat"},
        "batch-embeddings": {"tag": "team", "value": "data", "quantity": "allocated_gpu_hours", "extend": "repeat"},
        "eval-sweeps": {"tag": "user_name", "value": "u7", "extend": "repeat"},
    }
    for w in doc["workloads"]:
        if w["id"] in from_store:
            w["demand"] = {"from_store": from_store[w["id"]]}
    (est / "workloads.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return est / "fleet.yaml", est / "workloads.yaml"


def run(argv: list[str]) -> dict[str, object]:
    """Run one CLI command in its own process: wall and CPU seconds, peak RSS (MB), exit code, load before it.

    Peak RSS is GNU time's ``%M`` (the command's ``ru_maxrss``): measured through the small ``time`` process
    rather than ``wait4`` from this one, because Linux counts a child's pre-``exec`` memory (a fork of this
    process, which holds generated data) in its ``ru_maxrss``.
    """
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "MAXRSS_KB %M %U %S", *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - t
    rss = [line.split()[1:] for line in proc.stderr.splitlines() if line.startswith("MAXRSS_KB ")]
    result: dict[str, object] = {
        "seconds": round(seconds, 1),
        "cpu_seconds": round(float(rss[-1][1]) + float(rss[-1][2]), 1) if rss else None,
        "peak_rss_mb": round(int(rss[-1][0]) / 1024) if rss else None,
        "exit": proc.returncode,
        "load_before": round(load, 1),
    }
    if proc.returncode:
        result["stderr"] = proc.stderr[-1500:]
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--samples", type=int, default=20_000_000)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/finops-analysis-bench"))
    ap.add_argument("--only", choices=["waste", "plan", "report"], action="append")
    ap.add_argument("--runs", type=int, default=1, help="runs of each command (interleaved)")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument(
        "--via-ingest",
        action="store_true",
        help="write the month as export files (FOCUS Parquet, utilisation Parquet) and run the real finops ingest",
    )
    ap.add_argument("--keep-inputs", action="store_true", help="keep the export files after ingest")
    add_json_option(ap)
    args = ap.parse_args()
    store = args.workdir / f"store-{args.lines}-{args.samples}{'-ingested' if args.via_ingest else ''}"
    if not (store / "manifest.json").exists():
        if store.exists():
            shutil.rmtree(store)
        t = time.perf_counter()
        if args.via_ingest:
            inputs = args.workdir / f"inputs-{args.lines}-{args.samples}"
            if not (inputs / "DONE").exists():
                write_inputs(inputs, args.lines, args.samples)
                (inputs / "DONE").write_text("")
            size = sum(f.stat().st_size for f in inputs.rglob("*.parquet"))
            print(f"inputs {inputs}: {size / 1e9:.2f} GB in {time.perf_counter() - t:.0f} s", flush=True)
            t = time.perf_counter()
            ingest(store, inputs)
            if not args.keep_inputs:
                shutil.rmtree(inputs)
        else:
            generate(store, args.lines, args.samples)
        print(f"generated {store} in {time.perf_counter() - t:.0f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    parquet = sum(f.stat().st_size for f in store.rglob("*.parquet"))
    detail = {d: sum(f.stat().st_size for f in (store / d).rglob("*.parquet")) for d in ("billing", "utilization")}
    limit = os.environ.get("FINOPS_DUCKDB_MEMORY", "default")
    print(
        f"store: {parquet / 1e9:.2f} GB of Parquet (billing {detail['billing'] / 1e9:.2f} GB, utilisation "
        f"{detail['utilization'] / 1e9:.2f} GB); DuckDB memory_limit {limit}",
        flush=True,
    )
    if args.generate_only:
        return
    fleet, workloads = estate_files(args.workdir)
    out = args.workdir / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").unlink(missing_ok=True)  # report reads this run's plan, never an earlier size's
    finops = [str(Path(sys.executable).with_name("finops"))]
    commands = {
        "waste": [*finops, "waste", "--store", str(store), "--fleet", str(fleet), "--format", "json"],
        "plan": [*finops, "plan", "--store", str(store), "--fleet", str(fleet), "--workloads", str(workloads),
                 "--format", "json", "--out", str(out / "plan.json")],
        "report": [*finops, "report", "--plan", str(out / "plan.json"), "--store", str(store), "--fleet", str(fleet),
                   "--workloads", str(workloads), "--out", str(out / "report.md"), "--format", "json"],
    }  # fmt: skip
    results = []
    for i in range(args.runs):
        for what in args.only or ["waste", "plan", "report"]:
            result = {"what": what, "run": i + 1, "lines": args.lines, "samples": args.samples, **run(commands[what])}
            results.append(result)
            print(json.dumps(result))
            sys.stdout.flush()
    write_json(args.json, "analysis", results)


if __name__ == "__main__":
    main()
