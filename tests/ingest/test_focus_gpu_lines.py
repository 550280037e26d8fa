"""GPU lines in FOCUS exports (issue 11, item 1): each provider's own FOCUS shape, GPU-hours found.

FOCUS has no instance-type column: the FOCUS 1.0 sample's g5.4xlarge lines used to be stored with no
instance type and 0 GPU-hours. The fixtures are generated in each provider's export shape
(``focus_exports.py``) and carry their own expected totals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from focus_exports import aws_focus_10, azure_focus, focus_12_sku_price_details, gcp_focus
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.ingest.billing import ingest_billing
from finops_cli.store import Store


def _gpu_hours(summary) -> dict[str, float]:  # type: ignore[no-untyped-def]
    out: dict[str, float] = {}
    for g in summary.gpu_hours:
        out[g["accelerator"]] = out.get(g["accelerator"], 0.0) + g["gpu_hours"]
    return out


@pytest.mark.parametrize(
    "writer",
    [
        aws_focus_10,
        lambda p: azure_focus(p, "1.0"),
        lambda p: azure_focus(p, "1.2"),
        gcp_focus,
        focus_12_sku_price_details,
    ],
    ids=["aws-focus-1.0", "azure-focuscost-1.0", "azure-focuscost-1.2", "gcp-focus", "focus-1.2-skupricedetails"],
)
def test_gpu_hours_found_in_each_providers_focus_export(tmp_path: Path, writer) -> None:  # type: ignore[no-untyped-def]
    path, expected = writer(tmp_path / "export.csv")
    summary = ingest_billing([path], "focus", Store(tmp_path / "s"))
    assert summary.rows == expected.rows
    assert _gpu_hours(summary) == pytest.approx(dict(expected.gpu_hours), abs=2e-3)  # the summary rounds to 3 dp
    for c in summary.conservation:
        assert c["cost_in"] == pytest.approx(expected.billed[c["currency"]], abs=0.01)
    if expected.unknown_gpu_types:
        (line,) = summary.warnings
        assert line.startswith(f"{len(expected.unknown_gpu_types)} GPU instance type(s)")
        assert all(t in line for t in sorted(expected.unknown_gpu_types)[:3])
    else:
        assert summary.warnings == []
    for cpu in expected.cpu_types:  # CPU-only types are not "missing GPU types"
        assert all(cpu not in w for w in summary.warnings)


def test_instance_type_and_accelerator_are_stored_per_line(tmp_path: Path) -> None:
    path, _ = aws_focus_10(tmp_path / "aws.csv")
    store = Store(tmp_path / "s")
    ingest_billing([path], "auto", store)
    table = store.read("billing", columns=["x_InstanceType", "x_GpuCount", "x_AcceleratorType", "x_GpuHours",
                                           "PricingCategory", "ChargeCategory"]).to_pandas()  # fmt: skip
    g5 = table[table["x_InstanceType"] == "g5.4xlarge"]
    assert len(g5) and set(g5["x_GpuCount"]) == {1} and set(g5["x_AcceleratorType"]) == {"A10G"}
    spot = table[(table["x_InstanceType"] == "p5.48xlarge") & (table["PricingCategory"] == "Dynamic")]
    assert len(spot) and (spot["x_GpuHours"] > 0).all()  # recognised from x_UsageType alone
    assert set(table.loc[table["x_InstanceType"] == "c5.xlarge", "x_GpuHours"]) == {0.0}
    assert (table.loc[table["ChargeCategory"] != "Usage", "x_GpuHours"] == 0).all()


def test_cli_prints_one_warning_line_with_a_count(tmp_path: Path) -> None:
    path, expected = aws_focus_10(tmp_path / "aws.csv")
    many = path.read_text().splitlines()
    header, body = many[0], many[1:]
    # 40 distinct unknown GPU types on top: still one line, a count and three examples
    extra = [body[0].replace("g5.4xlarge", f"g9x.{n}xlarge") for n in range(2, 42)]
    path.write_text("\n".join([header, *body, *extra]) + "\n")
    res = CliRunner().invoke(app, ["ingest", "billing", str(path), "--store", str(tmp_path / "s"), "-o", "json"])
    assert res.exit_code == 0, res.output
    warnings = [ln for ln in res.stderr.splitlines() if "warning:" in ln]
    assert len(warnings) == 1, res.stderr
    assert f"{len(expected.unknown_gpu_types) + 40} GPU instance type(s)" in warnings[0]
    assert warnings[0].count("xlarge") == 3 and "…" in warnings[0]
    assert json.loads(res.stdout)["warnings"] == [warnings[0].split("warning: ", 1)[1]]
