"""FOCUS 1.3: the Contract Commitment dataset beside the cost and usage lines, and the FOCUS version of each
ingest. Contract commitments are terms, not billed money: the bill's totals do not move, the commitments are
kept in their own dataset, and a re-export replaces them."""

from __future__ import annotations

import csv
from pathlib import Path

from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.ingest.billing import ingest_billing
from finops_cli.store import Store

CONTRACT = (
    "BillingCurrency,ContractCommitmentCategory,ContractCommitmentCost,ContractCommitmentDescription,"
    "ContractCommitmentId,ContractCommitmentPeriodEnd,ContractCommitmentPeriodStart,ContractCommitmentQuantity,"
    "ContractCommitmentType,ContractCommitmentUnit,ContractId,ContractPeriodEnd,ContractPeriodStart,ServiceProviderName"
)
USAGE = (
    "BilledCost,BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargeCategory,"
    "ChargePeriodStart,ChargePeriodEnd,ChargeFrequency,ServiceProviderName,HostProviderName,ContractApplied,"
    "InvoiceId,x_InstanceType,ConsumedQuantity,ConsumedUnit"
)


def _csv(path: Path, header: str, rows: list[dict]) -> Path:
    """``rows`` under the comma-separated ``header``."""
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, header.split(","), restval="")
        w.writeheader()
        w.writerows(rows)
    return path


def contracts(path: Path, months: int = 12, spend: float = 125_000.0) -> tuple[Path, float]:
    rows = []
    for m in range(1, months + 1):
        rows.append({"BillingCurrency": "USD", "ContractCommitmentCategory": "spend" if m % 2 else "Spend",
                     "ContractCommitmentCost": spend, "ContractCommitmentDescription": "GPU spend commitment",
                     "ContractCommitmentId": f"cc-2026-{m:02d}", "ContractCommitmentPeriodStart": f"2026-{m:02d}-01",
                     "ContractCommitmentPeriodEnd": "2027-01-01" if m == 12 else f"2026-{m + 1:02d}-01",
                     "ContractCommitmentType": "Monthly minimum", "ContractId": "msa-77",
                     "ContractPeriodStart": "2026-01-01", "ContractPeriodEnd": "2027-01-01",
                     "ServiceProviderName": "CoreWeave"})  # fmt: skip
    rows.append({**rows[0], "ContractCommitmentId": "cc-gpu-hours", "ContractCommitmentCategory": "Usage",
                 "ContractCommitmentCost": "", "ContractCommitmentQuantity": 50_000,
                 "ContractCommitmentUnit": "Hours"})  # fmt: skip
    return _csv(path, CONTRACT, rows), spend * months


APPLIED = '{"Elements": [{"ContractID": "msa-77", "ContractCommitmentID": "cc-2026-10"}]}'


def usage(path: Path) -> tuple[Path, float]:
    rows, total = [], 0.0
    for day in range(1, 31):
        cost = 8 * 24 * 2.23
        total += cost
        rows.append({"BilledCost": cost, "BillingAccountId": "cw-1", "BillingCurrency": "USD",
                     "BillingPeriodStart": "2026-10-01T00:00:00Z", "BillingPeriodEnd": "2026-11-01T00:00:00Z",
                     "ChargeCategory": "Usage", "ChargePeriodStart": f"2026-10-{day:02d}T00:00:00Z",
                     "ChargePeriodEnd": f"2026-10-{day:02d}T23:59:59Z", "ChargeFrequency": "usage-based",
                     "ServiceProviderName": "CoreWeave", "HostProviderName": "CoreWeave",
                     "ContractApplied": APPLIED,
                     "InvoiceId": "inv-10", "x_InstanceType": "gd-8xh100ib-i128", "ConsumedQuantity": 24,
                     "ConsumedUnit": "Hours"})  # fmt: skip
    return _csv(path, USAGE, rows), total


def test_contract_commitments_beside_a_focus_13_bill(tmp_path: Path, store: Store) -> None:
    cc, committed = contracts(tmp_path / "contract-commitment.csv")
    bill, billed = usage(tmp_path / "cost-and-usage.csv")
    summary = ingest_billing([cc, bill], "auto", store)
    assert [(f.format, f.focus_version) for f in summary.files] == [("focus", "1.3")]
    [conservation] = summary.conservation
    assert round(conservation["billed_cost_written"], 2) == round(billed, 2)  # contracts add no billed money
    assert summary.contract_commitments is not None
    assert summary.contract_commitments["commitments"] == 13
    assert summary.contract_commitments["cost_in"] == summary.contract_commitments["cost_stored"] == {"USD": committed}
    stored = store.read("contract_commitments").to_pandas()
    assert len(stored) == 13 and set(stored["ContractCommitmentCategory"]) == {"Spend", "Usage"}
    lines = store.read("billing").to_pandas()
    assert set(lines["ChargeFrequency"]) == {"Usage-Based"} and lines["x_GpuHours"].sum() == 30 * 24 * 8
    [entry] = [e for e in store.manifest() if e.get("dataset") == "billing"]
    assert entry["focus_version"] == "1.3"
    again = ingest_billing([cc], "auto", store)  # a re-export replaces the same commitments
    assert again.contract_commitments is not None and again.contract_commitments["replaced"] == 13
    assert len(store.read("contract_commitments")) == 13 and len(store.read("billing")) == 30


def test_bad_contract_commitment_is_one_line(tmp_path: Path) -> None:
    cc, _ = contracts(tmp_path / "cc.csv", months=2)
    text = cc.read_text().replace("Monthly minimum", "Monthly minimum", 1).replace(",spend,", ",maybe,", 1)
    cc.write_text(text)
    res = CliRunner().invoke(app, ["ingest", "billing", str(cc), "--store", str(tmp_path / "s")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "ContractCommitmentCategory" in res.stderr and "Spend or Usage" in res.stderr and str(cc) in res.stderr
