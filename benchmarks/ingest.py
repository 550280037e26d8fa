"""Billing ingest throughput and memory: ``finops ingest billing`` vs a bare pyarrow CSV → Parquet conversion.

Cases (``--case``):

- ``cur``: an N-row CUR-like CSV (legacy ``lineItem/…`` layout, 32 columns, two tag columns);
- ``wide``: a realistic-width CUR 2.0 CSV (132 columns, 16 ``resource_tags_user_*`` columns, a
  high-cardinality ``resource_tags_user_name``; see :func:`generate_wide`);
- ``gcp``: a GCP BigQuery billing export as JSON Lines (credits and labels as lists of objects);
- ``parallel``: the ``cur`` rows split into ``--files`` files of one export, ingested with ``--jobs 1``
  and with ``--jobs 2`` (the parallel ingest).

Each run is its own subprocess (peak RSS = the child's VmHWM; CPU = user + sys of the child and its workers,
imports included). ``--pairs K`` runs K interleaved (bare, finops) pairs and prints the median ratio; the
bare run is ``pyarrow.csv.open_csv`` (explicit string schema, ``use_threads=False``) → ``ParquetWriter``
(for ``gcp``: ``pyarrow.json.open_json`` → ``ParquetWriter``). Usage::

    python benchmarks/ingest.py --case cur --rows 5000000 --pairs 5
    python benchmarks/ingest.py --case wide --rows 1000000 --pairs 5 --keep /tmp/wide.csv
    python benchmarks/ingest.py --case gcp --rows 500000 --pairs 3
    python benchmarks/ingest.py --case parallel --rows 4000000 --files 8 --pairs 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from results import add_json_option, write_json

INSTANCES = [("p5.48xlarge", 55.04, "H100"), ("p4d.24xlarge", 21.96, "A100"), ("g6.12xlarge", 4.6016, "L4")]
REGIONS = ["us-east-1", "us-west-2"]
TEAMS = ["research", "product", "data", "platform"]


def _cur_lines(rng: np.random.Generator, rows: int, chunk: int) -> Iterator[tuple[Any, ...]]:
    """Per chunk of ``rows``, the line facts both CUR generators share, drawn from ``rng`` in one order:
    ``(n, idx, inst, spot, t0, t1, types, rate, amount, region)`` (40 lines an hour over October)."""
    start = np.datetime64("2026-10-01T00:00:00")
    for offset in range(0, rows, chunk):
        n = min(chunk, rows - offset)
        idx = np.arange(offset, offset + n)
        inst = rng.integers(0, len(INSTANCES), n)
        spot = rng.random(n) < 0.35
        hour = (idx // 40) % 744
        t0 = (start + hour.astype("timedelta64[h]")).astype(str)
        t1 = (start + (hour + 1).astype("timedelta64[h]")).astype(str)
        types = np.array([i[0] for i in INSTANCES])[inst]
        rate = np.array([i[1] for i in INSTANCES])[inst] * np.where(spot, 0.45, 1.0)
        amount = np.round(rng.uniform(0.25, 1.0, n), 4)
        region = np.array(REGIONS)[rng.integers(0, 2, n)]
        yield n, idx, inst, spot, t0, t1, types, rate, amount, region


class _CsvChunks:
    """A CSV file written a chunk of columns at a time, the header with the first chunk only."""

    def __init__(self, path: Path) -> None:
        self._path, self._first = path, True

    def __enter__(self) -> _CsvChunks:
        self._fh = open(self._path, "wb")
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()

    def write(self, cols: dict[str, Any]) -> None:
        options = pacsv.WriteOptions(include_header=self._first, quoting_style="needed")
        pacsv.write_csv(pa.table(cols), self._fh, options)
        self._first = False


def generate(path: Path, rows: int, chunk: int = 250_000, seed: int = 7) -> None:
    """Write an N-row CUR-like CSV in chunks (bounded memory)."""
    rng = np.random.default_rng(seed)
    with _CsvChunks(path) as out:
        for n, idx, inst, spot, t0, t1, types, rate, amount, region in _cur_lines(rng, rows, chunk):
            usage_type = np.char.add(np.where(spot, "SpotUsage:", "BoxUsage:"), types)
            cols = {
                "identity/LineItemId": np.char.mod("%016x", idx),
                "identity/TimeInterval": np.char.add(np.char.add(t0, "Z/"), np.char.add(t1, "Z")),
                "bill/InvoiceId": np.full(n, "EUINUS26-0042"),
                "bill/BillingEntity": np.full(n, "AWS"),
                "bill/PayerAccountId": np.full(n, "111122223333"),
                "bill/BillingPeriodStartDate": np.full(n, "2026-10-01T00:00:00Z"),
                "bill/BillingPeriodEndDate": np.full(n, "2026-11-01T00:00:00Z"),
                "lineItem/UsageAccountId": np.char.mod("0000%08d", rng.integers(0, 20, n)),
                "lineItem/LineItemType": np.full(n, "Usage"),
                "lineItem/UsageStartDate": np.char.add(t0, "Z"),
                "lineItem/UsageEndDate": np.char.add(t1, "Z"),
                "lineItem/ProductCode": np.full(n, "AmazonEC2"),
                "lineItem/UsageType": usage_type,
                "lineItem/Operation": np.full(n, "RunInstances"),
                "lineItem/AvailabilityZone": np.char.add(region, "a"),
                "lineItem/ResourceId": np.char.mod("i-0%016x", rng.integers(0, 5000, n)),
                "lineItem/UsageAmount": amount,
                "lineItem/CurrencyCode": np.full(n, "USD"),
                "lineItem/UnblendedRate": rate,
                "lineItem/UnblendedCost": np.round(rate * amount, 8),
                "lineItem/BlendedCost": np.round(rate * amount, 8),
                "lineItem/LineItemDescription": np.char.add("Linux instance hour ", types),
                "product/ProductName": np.full(n, "Amazon Elastic Compute Cloud"),
                "product/instanceType": types,
                "product/region": region,
                "product/sku": np.char.mod("SKU%08d", inst * 10 + spot),
                "pricing/term": np.where(spot, "Spot", "OnDemand"),
                "pricing/unit": np.full(n, "Hrs"),
                "pricing/publicOnDemandCost": np.round(np.array([i[1] for i in INSTANCES])[inst] * amount, 8),
                "reservation/ReservationARN": np.full(n, ""),
                "resourceTags/user:team": np.array(TEAMS)[rng.integers(0, len(TEAMS), n)],
                "resourceTags/user:workload": np.char.mod("wl-%02d", rng.integers(0, 12, n)),
            }
            out.write(cols)


#: CUR 2.0 (Athena-flattened snake_case) columns the ingest maps; the realistic-width case adds sparse
#: product/pricing/reservation columns around them (as real exports have 120–200) and 16 tag columns.
WIDE_FILLERS = 84
WIDE_TAGS = [
    "name",
    "team",
    "workload",
    "project",
    "cost_center",
    "environment",
    "owner",
    "application",
    "service",
    "component",
    "stack",
    "version",
    "created_by",
    "business_unit",
    "ticket",
    "compliance",
]


def generate_wide(path: Path, rows: int, chunk: int = 200_000, seed: int = 11) -> None:
    """Write an N-row realistic-width CUR 2.0 CSV: 130 columns, 16 ``resource_tags_user_*`` columns.

    ``resource_tags_user_name`` is high-cardinality (≈ 1 in 4 lines carries one of 200 k user names), other
    tags repeat a few values and are often empty, as in a real organisation's export.
    """
    rng = np.random.default_rng(seed)
    with _CsvChunks(path) as out:
        for n, idx, inst, spot, t0, t1, types, rate, amount, region in _cur_lines(rng, rows, chunk):
            cols = {
                "identity_line_item_id": np.char.mod("%016x", idx),
                "identity_time_interval": np.char.add(np.char.add(t0, "Z/"), np.char.add(t1, "Z")),
                "bill_invoice_id": np.full(n, "EUINUS26-0042"),
                "bill_billing_entity": np.full(n, "AWS"),
                "bill_bill_type": np.full(n, "Anniversary"),
                "bill_payer_account_id": np.full(n, "111122223333"),
                "bill_billing_period_start_date": np.full(n, "2026-10-01 00:00:00.000"),
                "bill_billing_period_end_date": np.full(n, "2026-11-01 00:00:00.000"),
                "line_item_usage_account_id": np.char.mod("0000%08d", rng.integers(0, 40, n)),
                "line_item_line_item_type": np.full(n, "Usage"),
                "line_item_usage_start_date": np.char.add(t0, ".000"),
                "line_item_usage_end_date": np.char.add(t1, ".000"),
                "line_item_product_code": np.full(n, "AmazonEC2"),
                "line_item_usage_type": np.char.add(np.where(spot, "SpotUsage:", "BoxUsage:"), types),
                "line_item_operation": np.full(n, "RunInstances"),
                "line_item_availability_zone": np.char.add(region, "a"),
                "line_item_resource_id": np.char.mod("i-0%016x", rng.integers(0, 20000, n)),
                "line_item_usage_amount": amount,
                "line_item_currency_code": np.full(n, "USD"),
                "line_item_unblended_rate": rate,
                "line_item_unblended_cost": np.round(rate * amount, 8),
                "line_item_blended_cost": np.round(rate * amount, 8),
                "line_item_line_item_description": np.char.add("Linux instance hour ", types),
                "product_product_name": np.full(n, "Amazon Elastic Compute Cloud"),
                "product_instance_type": types,
                "product_region_code": region,
                "product_sku": np.char.mod("SKU%08d", inst * 10 + spot),
                "pricing_term": np.where(spot, "Spot", "OnDemand"),
                "pricing_unit": np.full(n, "Hrs"),
                "pricing_public_on_demand_cost": np.round(np.array([i[1] for i in INSTANCES])[inst] * amount, 8),
                "reservation_reservation_a_r_n": np.full(n, ""),
                "savings_plan_savings_plan_a_r_n": np.full(n, ""),
            }
            for i in range(WIDE_FILLERS):  # sparse descriptive columns: mostly empty, a few values when set
                kind = i % 3
                if kind == 0:
                    cols[f"product_attribute_{i:02d}"] = np.full(n, "")
                elif kind == 1:
                    cols[f"product_attribute_{i:02d}"] = np.where(rng.random(n) < 0.3, f"value-{i}", "")
                else:
                    cols[f"reservation_metric_{i:02d}"] = np.where(rng.random(n) < 0.2, "0", "")
            for j, tag in enumerate(WIDE_TAGS):
                if tag == "name":  # high cardinality: one of 200 k user names on a quarter of the lines
                    values = np.char.mod("user-%06d", rng.integers(0, 200_000, n))
                    cols["resource_tags_user_name"] = np.where(rng.random(n) < 0.25, values, "")
                else:
                    vocab = np.array([""] + [f"{tag}-{k}" for k in range(3 + j * 2)])
                    cols[f"resource_tags_user_{tag}"] = vocab[rng.integers(0, len(vocab), n)]
            out.write(cols)


GCP_SKUS = [
    ("Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas", "a3-highgpu-8g"),
    ("A3 Instance Core running in Americas", "a3-highgpu-8g"),
    ("Nvidia L4 GPU running in Americas", "g2-standard-8"),
    ("Storage PD Capacity", None),
]


def generate_gcp(path: Path, rows: int, seed: int = 13) -> None:
    """Write an N-line GCP billing export as JSON Lines (BigQuery's JSON layout: nested objects, credits and
    labels as lists of objects, system labels with the machine spec)."""
    import json

    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for start in range(0, rows, 50_000):
            n = min(50_000, rows - start)
            sku = rng.integers(0, len(GCP_SKUS), n)
            cost = np.round(rng.uniform(0.01, 40.0, n), 6)
            hour = rng.integers(0, 744, n)
            team = rng.integers(0, 6, n)
            lines = []
            for i in range(n):
                desc, spec = GCP_SKUS[sku[i]]
                h = int(hour[i])
                t0 = f"2026-10-{1 + h // 24:02d} {h % 24:02d}:00:00 UTC"
                t1 = f"2026-10-{1 + h // 24:02d} {h % 24:02d}:59:59 UTC"
                credits = (
                    [{"name": "Sustained use", "amount": -round(cost[i] * 0.2, 6), "full_name": "SUD",
                      "id": "sud", "type": "SUSTAINED_USAGE_DISCOUNT"}]
                    if i % 3 == 0 else []
                )  # fmt: skip
                record = {
                    "billing_account_id": "01A2B3-C4D5E6-F7A8B9",
                    "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
                    "sku": {"id": f"SKU-{sku[i]}", "description": desc},
                    "usage_start_time": t0,
                    "usage_end_time": t1,
                    "project": {"id": f"proj-{team[i]}", "name": f"Project {team[i]}", "labels": []},
                    "labels": [{"key": "team", "value": f"team-{team[i]}"}, {"key": "user", "value": f"u{i % 997}"}],
                    "system_labels": [{"key": "compute.googleapis.com/machine_spec", "value": spec}] if spec else [],
                    "location": {"location": "us-central1", "country": "US", "region": "us-central1",
                                 "zone": "us-central1-a"},
                    "export_time": "2026-11-02 06:00:00.000000 UTC",
                    "cost": float(cost[i]),
                    "currency": "USD",
                    "currency_conversion_rate": 1.0,
                    "usage": {"amount": 3600.0, "unit": "seconds", "amount_in_pricing_units": 1.0,
                              "pricing_unit": "hour"},
                    "credits": credits,
                    "invoice": {"month": "202610"},
                    "cost_type": "regular",
                }  # fmt: skip
                lines.append(json.dumps(record))
            fh.write("\n".join(lines) + "\n")


def split_csv(source: Path, directory: Path, files: int) -> list[Path]:
    """Split a CSV into ``files`` parts (header repeated), as a large CUR is delivered."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as fh:
        header = fh.readline()
        body = fh.read()
    cuts = [0]
    for k in range(1, files):
        at = body.index(b"\n", len(body) * k // files) + 1
        cuts.append(at)
    cuts.append(len(body))
    out = []
    for k in range(files):
        part = directory / f"cur-{k + 1:05d}.csv"
        part.write_bytes(header + body[cuts[k] : cuts[k + 1]])
        out.append(part)
    return out


# ------------------------------------------------------------------------------------------------ child runs
def _run_finops(csv: Path, work: Path, jobs: int | None = None) -> dict[str, object]:
    from finops_cli import api

    summary = api.ingest_billing([csv], "auto", work / "store", jobs=jobs)
    return {"rows": summary.rows}


def _run_finops_1(csv: Path, work: Path) -> dict[str, object]:
    return _run_finops(csv, work, jobs=1)


def _run_finops_2(csv: Path, work: Path) -> dict[str, object]:
    return _run_finops(csv, work, jobs=2)


def _run_bare_json(path: Path, work: Path) -> dict[str, object]:
    import pyarrow.json as pajson

    reader = pajson.open_json(path, read_options=pajson.ReadOptions(block_size=16 << 20))
    return _to_parquet(reader, work)


def _to_parquet(reader: pa.RecordBatchReader, work: Path) -> dict[str, object]:
    """The bare baselines' whole work after reading: every batch to one zstd Parquet file."""
    import pyarrow.parquet as pq

    rows = 0
    with pq.ParquetWriter(work / "bare.parquet", reader.schema, compression="zstd") as writer:
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    return {"rows": rows}


def _run_bare_stream(csv: Path, work: Path) -> dict[str, object]:
    from finops_cli.ingest.readers.stream import read_header

    header = read_header(csv)
    types = {c: pa.string() for c in header}
    types.update({c: pa.float64() for c in header if c.endswith(("Amount", "Cost", "Rate"))})
    reader = pacsv.open_csv(
        csv,
        read_options=pacsv.ReadOptions(use_threads=False, block_size=8 << 20),
        convert_options=pacsv.ConvertOptions(column_types=types),
    )
    return _to_parquet(reader, work)


def _run_bare_dataset(csv: Path, work: Path) -> dict[str, object]:
    import pyarrow.dataset as ds

    from finops_cli.ingest.readers.stream import read_header

    header = read_header(csv)
    types = {c: pa.string() for c in header}
    types.update({c: pa.float64() for c in header if c.endswith(("Amount", "Cost", "Rate"))})
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(column_types=types))
    ds.write_dataset(ds.dataset(csv, format=fmt), work / "bare_ds", format="parquet")
    return {"rows": None}


def _peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: reset by exec, unlike ru_maxrss which a child inherits from its parent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


RUNS = {
    "finops": _run_finops,
    "finops-jobs1": _run_finops_1,
    "finops-jobs2": _run_finops_2,
    "bare-stream": _run_bare_stream,
    "bare-json": _run_bare_json,
    "bare-dataset": _run_bare_dataset,
}


def _child(name: str, csv: Path, work: Path) -> None:
    t0 = time.perf_counter()
    out = RUNS[name](csv, work)
    out["seconds"] = time.perf_counter() - t0
    usage, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    out["cpu_seconds"] = (
        usage.ru_utime + usage.ru_stime + kids.ru_utime + kids.ru_stime
    )  # includes imports; steadier than wall time on a busy box
    out["peak_rss_mb"] = _peak_rss_mb()
    print(json.dumps(out))


def _measure(name: str, csv: Path) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix=f"bench-{name}-", dir=csv.parent))
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", name, "--csv", str(csv), "--work", str(work)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"{name} failed:\n{proc.stderr[-2000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _line(name: str, r: dict[str, object], rows: int, size_mb: float) -> str:
    secs = float(r["seconds"])  # type: ignore[arg-type]
    return (
        f"{name:<13} {secs:7.1f} s  {rows / secs:>11,.0f} rows/s  {size_mb / secs:7.1f} MB/s  "
        f"CPU {float(r['cpu_seconds']):6.1f} s  peak RSS {float(r['peak_rss_mb']):,.0f} MB"  # type: ignore[arg-type]
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=["cur", "wide", "gcp", "parallel"], default="cur")
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--files", type=int, default=8, help="parallel case: files of the export")
    ap.add_argument("--pairs", type=int, default=1, help="interleaved (baseline, finops) pairs; median ratio")
    ap.add_argument("--keep", type=Path, help="write the input here and keep it (reused if it exists)")
    add_json_option(ap)
    ap.add_argument("--child", choices=sorted(RUNS), help=argparse.SUPPRESS)
    ap.add_argument("--csv", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child, args.csv, args.work)
        return
    tmp = Path(tempfile.mkdtemp(prefix="finops-bench-"))
    suffix = ".jsonl" if args.case == "gcp" else ".csv"
    source = args.keep or tmp / f"{args.case}{suffix}"
    try:
        if not source.exists():
            t0 = time.perf_counter()
            {"cur": generate, "parallel": generate, "wide": generate_wide, "gcp": generate_gcp}[args.case](
                source, args.rows
            )
            mb = source.stat().st_size / 1e6
            print(f"generated {args.rows:,} rows, {mb:,.0f} MB in {time.perf_counter() - t0:.1f} s")
        target = source
        if args.case == "parallel":
            target = tmp / "export"
            split_csv(source, target, args.files)
        size_mb = source.stat().st_size / 1e6
        base, mine = {
            "cur": ("bare-stream", "finops"),
            "wide": ("bare-stream", "finops"),
            "gcp": ("bare-json", "finops"),
            "parallel": ("finops-jobs1", "finops-jobs2"),
        }[args.case]
        ratios, cpu_ratios, runs = [], [], []
        for pair in range(args.pairs):
            a = _measure(base, target)
            b = _measure(mine, target)
            runs += [{"pair": pair + 1, "run": base, **a}, {"pair": pair + 1, "run": mine, **b}]
            print(f"pair {pair + 1}: " + _line(base, a, args.rows, size_mb))
            print(f"pair {pair + 1}: " + _line(mine, b, args.rows, size_mb))
            ratios.append(float(b["seconds"]) / float(a["seconds"]))  # type: ignore[arg-type]
            cpu_ratios.append(float(b["cpu_seconds"]) / float(a["cpu_seconds"]))  # type: ignore[arg-type]
        load = os.getloadavg()
        if args.case == "parallel":  # the target is a speed-up: one process's time over two workers'
            speedups = sorted(1 / r for r in ratios)
            print(
                f"speed-up --jobs 2 over --jobs 1: median {statistics.median(speedups):.2f}x "
                f"(range {speedups[0]:.2f}-{speedups[-1]:.2f}, {len(speedups)} pairs; target >= 1.7x)"
            )
        print(
            f"{mine} / {base}: median wall {statistics.median(ratios):.2f}x "
            f"(range {min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} pairs), median CPU "
            f"{statistics.median(cpu_ratios):.2f}x; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
            f"cores {os.cpu_count()}"
        )
        summary = {
            "case": args.case,
            "rows": args.rows,
            "input_mb": size_mb,
            "median_wall_ratio": statistics.median(ratios),
        }
        write_json(args.json, "ingest", [*runs, summary | {"median_cpu_ratio": statistics.median(cpu_ratios)}])
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
