"""``finops pricebook import skypilot DIR`` on catalogs generated in SkyPilot's ``vms.csv`` layout (v8: CRLF line
ends, ``GpuInfo`` as a Python literal, one row per zone on AWS, per-GPU attachment rows without a type on GCP)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.catalog.gpus import instance_gpu_facts
from finops_cli.catalog.pricebook import use_pricebook
from finops_cli.catalog.prices import reference_price
from finops_cli.cli.app import app

HEADER = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "Region", "GpuInfo",
          "SpotPrice", "AvailabilityZone"]  # fmt: skip
runner = CliRunner()


def gpu_info(name: str, count: float, mib: int) -> str:
    gpus = [{"Name": name, "Manufacturer": "NVIDIA", "Count": count, "MemoryInfo": {"SizeInMiB": mib}}]
    return repr({"Gpus": gpus, "TotalGpuMemoryInMiB": int(mib * count)})


def write_vms(path: Path, rows: list[list[object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\r\n")
        w.writerow(HEADER)
        w.writerows(rows)
    return path


def catalog(root: Path) -> Path:
    """Three clouds: AWS (zones, CPU rows), GCP (attachment rows, a TPU), Lambda (no spot)."""
    write_vms(root / "aws" / "vms.csv", [
        ["p3.2xlarge", "V100", 1.0, 8.0, 61.0, 3.06, "us-east-1", gpu_info("V100", 1, 16384), 0.95, "us-east-1a"],
        ["p3.2xlarge", "V100", 1.0, 8.0, 61.0, 3.06, "us-east-1", gpu_info("V100", 1, 16384), 1.05, "us-east-1b"],
        ["p3.2xlarge", "V100", 1.0, 8.0, 61.0, 3.06, "us-east-1", gpu_info("V100", 1, 16384), 1.25, "us-east-1c"],
        ["g6f.xlarge", "L4", 0.125, 4.0, 16.0, 0.24, "us-east-1", "", "", "us-east-1a"],
        ["m5.large", "", "", 2.0, 8.0, 0.096, "us-east-1", "", 0.04, "us-east-1a"],
    ])  # fmt: skip
    write_vms(root / "gcp" / "vms.csv", [
        ["", "T4", 1.0, "", "", 0.35, "us-central1", "", 0.14, "us-central1-a"],
        ["a2-ultragpu-1g", "A100-80GB", 1.0, 12.0, 170.0, 5.07, "us-central1", "", 1.57, "us-central1-a"],
        ["ct5lp-hightpu-4t", "tpu-v5e", 4.0, 112.0, 192.0, 4.8, "us-west4", "", "", "us-west4-a"],
    ])  # fmt: skip
    write_vms(root / "lambda" / "vms.csv", [
        ["gpu_8x_a100", "A100", 8.0, 124.0, 1800.0, 15.92, "europe-central-1", gpu_info("A100", 8, 40960), "", ""],
        ["gpu_9x_zz", "ZZ9", 9.0, 9.0, 90.0, 9.0, "us-east-1", "", "", ""],
    ])  # fmt: skip
    return root


def test_import_writes_instance_facts_and_prices(tmp_path: Path) -> None:
    book = tmp_path / "book"
    res = runner.invoke(
        app, ["pricebook", "import", "skypilot", str(catalog(tmp_path / "v8")), "--pricebook", str(book)]
    )
    assert res.exit_code == 0, res.output
    assert "imported 3 vms.csv: 5 GPU instance types, 7 prices" in res.stderr
    assert (
        "1 a fraction of a GPU" in res.stderr
        and "1 no instance type" in res.stderr
        and "1 no accelerator" in res.stderr
    )
    use_pricebook(book)
    assert instance_gpu_facts("lambda", "gpu_9x_zz") == (9, "ZZ9")
    assert instance_gpu_facts("gcp", "ct5lp-hightpu-4t") == (4, "TPU v5e")
    assert instance_gpu_facts("gcp", "a2-ultragpu-1g") == (1, "A100")
    spot = reference_price("aws/p3.2xlarge/spot")
    assert spot.usd_per_gpu_hour == pytest.approx(1.05)  # the median of three zones
    assert reference_price("lambda/gpu_8x_a100/on_demand").usd_per_gpu_hour == pytest.approx(15.92 / 8)
    with (book / "instance_types.csv").open() as f:
        rows = {r["instance_type"]: r for r in csv.DictReader(f)}
    assert rows["gpu_8x_a100"]["gpu_memory_gb"] == "40" and rows["p3.2xlarge"]["source"].startswith("SkyPilot")
    before = {p.name: p.read_bytes() for p in book.iterdir()}
    again = runner.invoke(app, ["pricebook", "import", "skypilot", str(tmp_path / "v8"), "--pricebook", str(book)])
    assert again.exit_code == 0 and {p.name: p.read_bytes() for p in book.iterdir()} == before  # idempotent


def test_import_keeps_the_users_other_rows(tmp_path: Path) -> None:
    book = tmp_path / "book"
    book.mkdir()
    (book / "instance_types.csv").write_text(
        "provider,kind,instance_type,gpus,accelerator,note\naws,instance,x9.big,2,H100,mine\n"
    )
    root = write_vms(
        tmp_path / "lambda" / "vms.csv", [["gpu_1x_a10", "A10", 1, 30, 200, 0.75, "us-east-1", "", "", ""]]
    )
    res = runner.invoke(app, ["pricebook", "import", "skypilot", str(root.parent), "--pricebook", str(book)])
    assert res.exit_code == 0, res.output
    use_pricebook(book)
    assert instance_gpu_facts("aws", "x9.big") == (2, "H100") and instance_gpu_facts("lambda", "gpu_1x_a10") == (
        1,
        "A10",
    )
    assert "mine" in (book / "instance_types.csv").read_text()


@pytest.mark.parametrize(
    ("row", "match"),
    [
        (["gpu_1x_a10", "A10", "one", 30, 200, 0.75, "us-east-1", "", "", ""], "AcceleratorCount"),
        (["gpu_1x_a10", "A10", 1, 30, 200, "-1", "us-east-1", "", "", ""], "Price"),
        (["gpu_1x_a10", "A10", 1, 30, 200, 0.75, "us-east-1", "", "nan", ""], "SpotPrice"),
        (["gpu_1x_a10", "A10", 1, 30, 200, 0.75, "", "", "", ""], "Region"),
    ],
)
def test_bad_row_is_refused_with_file_and_line(tmp_path: Path, row: list[object], match: str) -> None:
    good = ["gpu_1x_a10", "A10", 1, 30, 200, 0.75, "us-east-1", "", "", ""]
    vms = write_vms(tmp_path / "lambda" / "vms.csv", [good, row])
    book = tmp_path / "book"
    res = runner.invoke(app, ["pricebook", "import", "skypilot", str(vms.parent), "--pricebook", str(book)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert str(vms) in res.stderr and "line 3" in res.stderr and match in res.stderr
    assert not (book / "instance_types.csv").exists()


def test_not_a_skypilot_catalog(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "vms.csv").write_text("a,b\n1,2\n")
    res = runner.invoke(
        app, ["pricebook", "import", "skypilot", str(tmp_path / "x"), "--pricebook", str(tmp_path / "b")]
    )
    assert res.exit_code == 2 and "missing column(s) InstanceType" in res.stderr
    res = runner.invoke(app, ["pricebook", "import", "skypilot", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "not a directory" in res.stderr
    res = runner.invoke(app, ["pricebook", "import", "dstack", str(tmp_path / "x")])
    assert res.exit_code == 2 and "expected skypilot" in res.stderr
