"""Money that is not a number never enters the store, and conservation is exact at any magnitude.

Issue 12 items 3 and 4: a GCP credit of ``NaN`` or ``1e400``, two lines of ``1e308`` (finite each, inf
summed), and a GCP line whose ``cost`` is null, empty or ``NaN`` were stored (as NaN, inf or $0.00) and
the conservation check called them conserved. Each is now exit 2 naming the file and the row, and the
store is untouched.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app

SKUS = [
    ("Nvidia H100 80GB GPU attached to Spot Preemptible VMs in EMEA", "a3-highgpu-8g"),
    ("Spot Preemptible A3 Instance Core running in EMEA", "a3-highgpu-8g"),
    ("Nvidia L4 GPU running in Americas", "g2-standard-4"),
    ("Storage PD Capacity", None),
]


def _gcp_line(rng: random.Random, i: int, currency: str) -> dict:
    sku, spec = SKUS[i % len(SKUS)]
    cost = round(rng.uniform(0.5, 900), 6)
    credits = [{"name": "SUD", "amount": round(-cost * 0.1, 6), "type": "SUSTAINED_USAGE_DISCOUNT"}] if i % 3 else []
    line = {
        "billing_account_id": f"01A2B3-{currency}",
        "service": {"id": "6F81", "description": "Compute Engine"},
        "sku": {"id": f"SKU-{i % 4}", "description": sku},
        "usage_start_time": f"2026-10-{1 + i % 28:02d} 00:00:00 UTC",
        "usage_end_time": f"2026-10-{1 + i % 28:02d} 01:00:00 UTC",
        "project": {"id": f"proj-{i % 3}"},
        "labels": [{"key": "team", "value": f"team-{i % 5}"}],
        "system_labels": [{"key": "compute.googleapis.com/machine_spec", "value": spec}] if spec else [],
        "cost": cost,
        "currency": currency,
        "usage": {"amount": 3600.0, "unit": "seconds"},
        "credits": credits,
        "invoice": {"month": "202610"},
        "cost_type": "regular",
    }
    return line


def _gcp_export(path: Path, edit: dict[int, dict] | None = None, raw: dict[int, str] | None = None) -> Path:
    """A messy two-currency GCP export of 40 lines; ``edit`` overrides fields of a line, ``raw`` its text."""
    rng = random.Random(7)
    lines = []
    for i in range(40):
        line = _gcp_line(rng, i, "USD" if i % 5 else "EUR")
        line.update((edit or {}).get(i, {}))
        text = json.dumps(line)
        for old, new in ((raw or {}).get(i) or {}).items():
            text = text.replace(old, new)
        lines.append(text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _ingest(path: Path, store: Path):
    return CliRunner().invoke(app, ["ingest", "billing", str(path), "--store", str(store)], env={"NO_COLOR": "1"})


def test_the_generated_export_ingests(tmp_path: Path) -> None:
    result = _ingest(_gcp_export(tmp_path / "gcp.jsonl"), tmp_path / "s")
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    "name, edit, raw, says",
    [
        ("credit-nan", {7: {"credits": [{"name": "x", "amount": "NaN", "type": "PROMOTION"}]}}, None, "nan"),
        (
            "credit-1e400",
            {7: {"credits": [{"name": "x", "amount": 12345.5, "type": "PROMOTION"}]}},
            {7: {"12345.5": "1e400"}},
            "inf",
        ),
        ("cost-null", {7: {"cost": None}}, None, "cost is empty"),
        ("cost-empty", {7: {"cost": ""}}, None, "cost"),
        ("cost-nan-text", {7: {"cost": "NaN"}}, None, "cost"),
        ("cost-absurd", {7: {"cost": 1e300}}, None, "1e+15"),
    ],
)
def test_non_finite_or_missing_money_is_refused_with_file_and_row(
    tmp_path: Path, name: str, edit: dict, raw: dict | None, says: str
) -> None:
    path = _gcp_export(tmp_path / f"{name}.jsonl", edit, raw)
    store = tmp_path / "s"
    result = _ingest(path, store)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.output
    line = result.stderr.strip()
    assert f"{name}.jsonl" in line and "row 8" in line and says in line, line
    assert not (store / "billing").exists()


def test_two_huge_lines_cannot_sum_to_infinity(tmp_path: Path) -> None:
    """Each 1e308 is finite; their sum is inf, which used to pass as "conserved" (inf - inf is NaN)."""
    path = tmp_path / "focus.csv"
    header = ["BillingAccountId", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"]
    header += ["BilledCost", "EffectiveCost", "BillingCurrency", "ProviderName", "ChargeCategory"]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for cost in ("1e308", "1e308", "3.5"):
            w.writerow(
                ["acct", "2026-10-01", "2026-11-01", "2026-10-01", "2026-10-02", cost, cost, "USD", "AWS", "Usage"]
            )
    result = _ingest(path, tmp_path / "s")
    assert result.exit_code == 2, result.stderr
    assert "focus.csv" in result.stderr and "row 1" in result.stderr and "finite amount" in result.stderr


def test_conservation_sums_are_exact_where_floats_drop_cents() -> None:
    """At 10^15 a float's step is 0.125: adding a cent changes nothing. The decimal sum keeps it."""
    from finops_cli.ingest.billing.money import MAX_LINE_AMOUNT, exact_sum

    assert sum([1e15, 0.01, -1e15]) == 0.0  # what float conservation saw
    assert exact_sum(pa.array([1e15, 0.01, -1e15])) == 10_000_000  # 0.01 in nano-units
    many = pa.array([0.1] * 1000 + [MAX_LINE_AMOUNT, -MAX_LINE_AMOUNT])
    assert exact_sum(many) == 100 * 10**9
    assert exact_sum(pa.array([], pa.float64())) == 0


def _focus_with_effective(path: Path, effective: list[str]) -> Path:
    """$67.20 on-prem GPU lines (the sample's shape), one a day, with the given EffectiveCost cells."""
    header = ["BillingAccountId", "BillingPeriodStart", "ChargePeriodStart", "ChargePeriodEnd", "BilledCost"]
    header += ["EffectiveCost", "BillingCurrency", "ProviderName", "ChargeCategory", "ConsumedQuantity"]
    header += ["ConsumedUnit", "x_InstanceType", "x_GpuCount", "x_AcceleratorType"]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for day, eff in enumerate(effective, start=1):
            start, end = f"2026-10-{day:02d}T00:00:00Z", f"2026-10-{day + 1:02d}T00:00:00Z"
            line = ["kestrel", "2026-10-01", start, end, "67.2", eff, "USD", "On-Premises", "Usage", "24"]
            w.writerow([*line, "Hours", "hgx-h100-8", "8", "H100"])
    return path


@pytest.mark.parametrize(
    "name, cells, row",
    [
        ("one-empty", ["67.2", "67.2", "", "67.2", "67.2"], 3),
        ("one-nan", ["67.2", "67.2", "67.2", "NaN", "67.2"], 4),
        ("all-empty", ["", "", "", "", ""], 1),  # was TypeError, exit 70
    ],
)
def test_an_empty_effective_cost_is_refused_not_stored_as_null(tmp_path: Path, name: str, cells, row: int) -> None:
    """Issue 27 items 3, 4: an empty EffectiveCost was stored as null ($268.80 amortised against $336.00
    billed, reported "conserved"); FOCUS says EffectiveCost MUST NOT be null, so the line is refused."""
    path = _focus_with_effective(tmp_path / f"{name}.csv", cells)
    store = tmp_path / "s"
    result = _ingest(path, store)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and f"{name}.csv" in line and f"row {row}" in line and "EffectiveCost" in line, line
    assert not (store / "billing").exists()


def test_effective_cost_is_conserved_and_reported(tmp_path: Path) -> None:
    """Every money column the store keeps is accounted for: EffectiveCost in = EffectiveCost written."""
    import pyarrow.parquet as pq

    path = _focus_with_effective(tmp_path / "ok.csv", ["67.2", "50", "67.2", "0", "67.2"])
    store = tmp_path / "s"
    result = CliRunner().invoke(
        app, ["ingest", "billing", str(path), "--store", str(store), "-f", "focus", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    (check,) = json.loads(result.stdout)["conservation"]
    assert check["cost_in"] == check["billed_cost_written"] == pytest.approx(336.0)
    assert check["effective_cost_in"] == check["effective_cost_written"] == pytest.approx(251.6)
    stored = pq.read_table(store / "billing").column("EffectiveCost").to_pylist()
    assert None not in stored and sum(stored) == pytest.approx(251.6)
