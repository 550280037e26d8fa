"""The accelerator catalog (``pricebooks/instance_types.csv`` and the family lists): every row sourced, every
type of a generated AWS spot-price history classified, and a missing GPU count pointing at the row to add."""

from __future__ import annotations

import csv
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.catalog.gpus import (
    CPU_ONLY,
    GPU,
    GPU_UNLISTED,
    UNKNOWN,
    classify_instance_type,
    instance_gpu_facts,
)
from finops_cli.catalog.pricebook import pricebook_dir, use_pricebook
from finops_cli.cli.app import app
from finops_cli.ingest.spot import ingest_spot_prices
from finops_cli.report.prices import NoGpuCount, feed_statistic
from finops_cli.store import Store

BOOK = pricebook_dir()


def _rows(name: str) -> list[dict[str, str]]:
    with (BOOK / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_every_catalog_row_has_a_source_and_sane_facts() -> None:
    rows = _rows("instance_types.csv")
    assert len(rows) > 200
    for r in rows:
        where = f"{r['provider']}/{r['instance_type']}"
        assert r["source"].strip() and r["date_read"].strip(), where
        assert int(r["gpus"]) > 0 and r["accelerator"], where
        assert 0 < float(r["gpu_memory_gb"]) <= 300, where
    keys = [(r["provider"], r["instance_type"].lower()) for r in rows]
    assert len(keys) == len(set(keys))
    for name in ("gpu_families.csv", "cpu_only_families.csv"):
        assert all(r["source"].startswith("https://") and r["pattern"] for r in _rows(name)), name


@pytest.mark.parametrize(
    ("provider", "itype", "gpus", "accelerator"),
    [
        ("aws", "p2.16xlarge", 16, "K80"),
        ("aws", "p3.2xlarge", 1, "V100"),
        ("aws", "g3s.xlarge", 1, "M60"),
        ("aws", "g4dn.12xlarge", 4, "T4"),
        ("aws", "gr6.8xlarge", 1, "L4"),
        ("aws", "dl1.24xlarge", 8, "Gaudi"),
        ("aws", "trn2.48xlarge", 16, "Trainium2"),
        ("aws", "inf2.48xlarge", 12, "Inferentia2"),
        ("gcp", "a3-megagpu-8g", 8, "H100"),
        ("gcp", "ct5p-hightpu-4t", 4, "TPU v5p"),
        ("gcp", "ct6e-standard-8t", 8, "TPU v6e"),
        ("azure", "Standard_ND96isr_MI300X_v5", 8, "MI300X"),
        ("azure", "standard_nc6s_v3", 1, "V100"),
        ("azure", "Standard_ND128isr_NDR_GB200_v6", 4, "GB200"),
        ("oci", "BM.GPU.H200.8", 8, "H200"),
        ("lambda", "gpu_8x_h100_sxm5", 8, "H100"),
        ("crusoe", "l40s-48gb.4x", 4, "L40S"),
        ("nebius", "gpu-h200-sxm_8gpu-128vcpu-1600gb", 8, "H200"),
    ],
)
def test_catalog_knows_each_cloud(provider: str, itype: str, gpus: int, accelerator: str) -> None:
    assert instance_gpu_facts(provider, itype) == (gpus, accelerator)
    assert classify_instance_type(provider, itype) == GPU


@pytest.mark.parametrize(
    ("provider", "itype", "kind"),
    [
        ("aws", "m7i-flex.large", CPU_ONLY),
        ("aws", "u7i-12tb.224xlarge", CPU_ONLY),
        ("aws", "f2.12xlarge", CPU_ONLY),
        ("gcp", "n1-standard-8", CPU_ONLY),
        ("azure", "Standard_HB120rs_v3", CPU_ONLY),
        ("azure", "Standard_NP10s", CPU_ONLY),
        ("oci", "VM.Standard.E5.Flex", CPU_ONLY),
        ("aws", "g6f.large", GPU_UNLISTED),  # a fractional L4: a GPU family, no whole-GPU row
        ("aws", "zz9.large", UNKNOWN),
    ],
)
def test_classification(provider: str, itype: str, kind: str) -> None:
    assert classify_instance_type(provider, itype) == kind


# --- a DescribeSpotPriceHistory answer over the whole EC2 catalogue ------------------------------------------------
SIZES = ("medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "metal")
CPU_FAMILIES = tuple(
    [
        "a1",
        "c4",
        "c5",
        "c5a",
        "c5ad",
        "c5d",
        "c5n",
        "c6a",
        "c6g",
        "c6gd",
        "c6gn",
        "c6i",
        "c6id",
        "c6in",
        "c7a",
        "c7g",
        "c7gd",
        "c7gn",
        "c7i",
        "c7i-flex",
        "c8g",
        "d2",
        "d3",
        "d3en",
        "h1",
        "i3",
        "i3en",
        "i4g",
        "i4i",
        "i7ie",
        "im4gn",
        "is4gen",
        "m4",
        "m5",
        "m5a",
        "m5ad",
        "m5d",
        "m5dn",
        "m5n",
        "m5zn",
        "m6a",
        "m6g",
        "m6gd",
        "m6i",
        "m6id",
        "m6idn",
        "m6in",
        "m7a",
        "m7g",
        "m7gd",
        "m7i",
        "m7i-flex",
        "m8g",
        "r4",
        "r5",
        "r5a",
        "r5ad",
        "r5b",
        "r5d",
        "r5dn",
        "r5n",
        "r6a",
        "r6g",
        "r6gd",
        "r6i",
        "r6id",
        "r6idn",
        "r6in",
        "r7a",
        "r7g",
        "r7gd",
        "r7i",
        "r7iz",
        "r8g",
        "t2",
        "t3",
        "t3a",
        "t4g",
        "x1",
        "x1e",
        "x2gd",
        "x2idn",
        "x2iedn",
        "x2iezn",
        "z1d",
        "hpc6a",
        "hpc7g",
        "f1",
        "vt1",
    ]
)


def spot_history(gpu_types: list[str], n_cpu: int, seed: int = 7) -> dict:
    """``aws ec2 describe-spot-price-history`` output (the EC2 API reference's SpotPrice shape) for every GPU type
    of the catalog and ``n_cpu`` CPU-only types, two zones each."""
    rng = random.Random(seed)
    cpu = [f"{fam}.{size}" for fam in CPU_FAMILIES for size in SIZES]
    types = gpu_types + rng.sample(cpu, n_cpu) + ["u-6tb1.metal", "mac2-m2pro.metal"]
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    records = [
        {
            "AvailabilityZone": f"us-east-1{zone}",
            "InstanceType": itype,
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": f"{rng.uniform(0.01, 40):.6f}",
            "Timestamp": (t0 + timedelta(minutes=rng.randrange(60 * 24 * 20))).isoformat(),
        }
        for itype in types
        for zone in "ab"
    ]
    return {"SpotPriceHistory": records, "NextToken": ""}


def test_generated_spot_history_is_fully_classified(tmp_path: Path, store: Store) -> None:
    gpu_types = [r["instance_type"] for r in _rows("instance_types.csv") if r["provider"] == "aws"]
    doc = spot_history(gpu_types, n_cpu=480)
    path = tmp_path / "history.json"
    path.write_text(json.dumps(doc))
    result = ingest_spot_prices(store, files=[path])
    assert result.unknown_instance_types == [] and result.cpu_only_types == 482
    rows = store.read("spot_prices").to_pylist()
    assert len(rows) == len(doc["SpotPriceHistory"])
    gpu_rows = [r for r in rows if r["instance_type"] in set(gpu_types)]
    assert len(gpu_rows) == 2 * len(gpu_types) > 150
    assert all(r["gpus"] and r["accelerator"] and r["usd_per_gpu_hour"] > 0 for r in gpu_rows)


def test_unknown_types_give_one_summary_line(tmp_path: Path) -> None:
    doc = spot_history(["p5.48xlarge"], n_cpu=50)
    odd = ("g6f.large", "zz1.large", "zz2.large", "zz3.large", "zz4.large", "zz5.large")
    doc["SpotPriceHistory"] += [{**doc["SpotPriceHistory"][0], "InstanceType": t} for t in odd]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(doc))
    res = CliRunner().invoke(app, ["ingest", "spot-prices", "--store", str(tmp_path / "s"), "--file", str(path)])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if "no GPU count" in line]
    assert len(lines) == 1 and "6 instance type(s)" in lines[0] and "1 in GPU families" in lines[0]
    assert "aws/g6f.large" in lines[0] and "(1 more)" in lines[0] and "c5.large" not in res.stderr


def test_missing_gpu_count_names_the_row_to_add(tmp_path: Path, store: Store) -> None:
    rec = {"AvailabilityZone": "us-east-1a", "InstanceType": "g6f.xlarge", "ProductDescription": "Linux/UNIX",
           "SpotPrice": "0.40", "Timestamp": "2026-11-02T00:00:00+00:00"}  # fmt: skip
    path = tmp_path / "h.json"
    path.write_text(json.dumps({"SpotPriceHistory": [rec]}))
    ingest_spot_prices(store, files=[path])
    prices = store.read("spot_prices")
    book = tmp_path / "book"
    book.mkdir()
    use_pricebook(book)
    with pytest.raises(NoGpuCount) as err:
        feed_statistic(prices, "aws", "us-east-1", "g6f.xlarge", "latest", 30, per="gpu_hour")
    message = str(err.value)
    assert "g6f.xlarge" in message and str(book / "instance_types.csv") in message
    assert "aws,instance,g6f.xlarge,<gpus>,<accelerator>" in message and "ingest spot prices" not in message
    row = "aws,instance,g6f.xlarge,1,L4"
    (book / "instance_types.csv").write_text(f"provider,kind,instance_type,gpus,accelerator\n{row}\n")
    stat = feed_statistic(prices, "aws", "us-east-1", "g6f.xlarge", "latest", 30, per="gpu_hour")  # no re-ingest
    assert stat.value == pytest.approx(0.40)
