"""Issue 26 item 7: smaller defects, each with a test on generated data.

(a) an Azure EA actual export's commitment purchase has EffectiveCost 0 (FOCUS), and ``costs``, ``plan`` and the
report say when effective cost rests on an actual-cost export without its amortised counterpart; (b) ``costs
--all-lines`` prices a GPU-hour over GPU lines only; (c) ``--store`` works before the command, after it and from
``FINOPS_STORE``; (d) one rounding rule: a saving of 0.00 is 0.0 %, a non-zero quantity never prints as 0.0.
"""

from __future__ import annotations

import csv
import json
from datetime import date, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.core.rounding import percent_of, quantity_decimals
from finops_cli.report.format import number
from finops_cli.store import Store
from tests.estate.focus_month import write_focus_month

runner = CliRunner()
AZURE_HEADER = [
    "BillingAccountId", "BillingAccountName", "BillingPeriodStartDate", "BillingPeriodEndDate", "BillingProfileId",
    "BillingProfileName", "AccountName", "SubscriptionId", "SubscriptionName", "Date", "Product", "PartNumber",
    "MeterId", "ServiceFamily", "MeterCategory", "MeterSubCategory", "MeterRegion", "MeterName", "Quantity",
    "EffectivePrice", "Cost", "UnitPrice", "BillingCurrency", "ResourceLocation", "AvailabilityZone",
    "ConsumedService", "ResourceId", "ResourceName", "AdditionalInfo", "Tags", "UnitOfMeasure", "ResourceGroup",
    "ReservationId", "ReservationName", "ChargeType", "Frequency", "PayGPrice", "PricingModel", "benefitId",
]  # fmt: skip
ND96 = 98.32  # EUR per ND96isr H100 v5 hour, pay-as-you-go
RESERVATION = "/providers/Microsoft.Capacity/reservationOrders/0f0e/reservations/5d5d-nd96"


def _run(*args: object, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args], env=env)
    return result.exit_code, result.stdout, result.stderr


def _azure_row(day: date, cost: float, **kw: object) -> dict:
    row = {
        "BillingAccountId": "55501234", "BillingAccountName": "Acme EU", "BillingPeriodStartDate": "10/01/2026",
        "BillingPeriodEndDate": "10/31/2026", "SubscriptionId": "9a9a", "SubscriptionName": "ml-eu",
        "Date": f"{day:%m/%d/%Y}", "MeterCategory": "Virtual Machines", "MeterName": "ND96isr H100 v5",
        "Quantity": "24.0", "Cost": f"{cost:.6f}", "BillingCurrency": "EUR", "ResourceLocation": "WestEurope",
        "ConsumedService": "Microsoft.Compute", "ResourceId": "/subscriptions/9a9a/vm/nd-0", "ResourceName": "nd-0",
        "AdditionalInfo": '{"ServiceType": "Standard_ND96isr_H100_v5"}', "Tags": '"team": "research"',
        "UnitOfMeasure": "1 Hour", "ChargeType": "Usage", "Frequency": "UsageBased", "PayGPrice": f"{ND96}",
        "PricingModel": "OnDemand",
    }  # fmt: skip
    row.update({k: str(v) for k, v in kw.items()})
    return row


def write_azure(path: Path, kind: str) -> float:
    """Ten on-demand days of one ND96 node, twenty reserved days of another; ``actual``: the reservation's
    monthly purchase billed up front (covered usage at 0); ``amortized``: its share on each covered day and the
    unused part. Returns the purchase."""
    purchase = round(ND96 * 0.62 * 744, 2)
    commitment = {"ReservationId": "5d5d-nd96", "ReservationName": "nd96-1y", "PricingModel": "Reservation",
                  "benefitId": RESERVATION}  # fmt: skip
    reserved = {**commitment, "ResourceId": "/subscriptions/9a9a/vm/nd-1", "ResourceName": "nd-1"}
    rows = []
    for d in range(31):
        day = date(2026, 10, 1) + timedelta(days=d)
        if d < 10:
            rows.append(_azure_row(day, ND96 * 24))
        if d >= 11:
            share = purchase / 31 if kind == "amortized" else 0.0
            rows.append(_azure_row(day, share, **reserved))
    no_resource = {"ResourceId": "", "ResourceName": "", "AdditionalInfo": "", **commitment}
    if kind == "actual":
        rows.append(_azure_row(date(2026, 10, 1), purchase, ChargeType="Purchase", Frequency="Recurring",
                               Quantity="1", PayGPrice="0", **no_resource))  # fmt: skip
    else:
        rows.append(_azure_row(date(2026, 10, 1), purchase * 11 / 31, ChargeType="UnusedReservation", **no_resource))
    rows.append(_azure_row(date(2026, 10, 3), 3.25, MeterCategory="Storage", MeterName="P30 Disks",
                           UnitOfMeasure="1/Month", Quantity="0.1", AdditionalInfo="", PayGPrice="3.25"))  # fmt: skip
    with open(path, "w", newline="", encoding="utf-8-sig") as fh:
        writer = csv.DictWriter(fh, fieldnames=AZURE_HEADER)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in AZURE_HEADER})
    return purchase


def test_azure_actual_purchase_has_no_effective_cost_and_every_command_says_so(tmp_path: Path) -> None:
    actual = tmp_path / "azure-actual-2026-10.csv"
    purchase = write_azure(actual, "actual")
    store = tmp_path / "store"
    code, _, err = _run("ingest", "billing", actual, "--store", store)
    assert code == 0, err  # money conserved: BilledCost keeps the purchase
    lines = Store(store).read("billing").to_pandas()
    bought = lines[lines["ChargeCategory"] == "Purchase"]
    assert bought["BilledCost"].tolist() == [pytest.approx(purchase)] and bought["EffectiveCost"].tolist() == [0.0]
    assert lines["BilledCost"].sum() == pytest.approx(ND96 * 240 + purchase + 3.25)
    code, stdout, err = _run("costs", "--store", store, "--all-lines", "--format", "json")
    assert code == 0, err
    said = "effective cost rests on an actual-cost export without its amortised counterpart"
    assert any(said in n for n in json.loads(stdout)["notes"]) and said in err
    code, _, err = _run("costs", "--store", store, "--cost", "billed")
    assert code == 0 and said not in err  # billed cost is the invoice: nothing to say
    estate = tmp_path / "estate"
    code, _, err = _run("estate", "draft", "--store", store, "--out", estate)
    assert code == 0, err
    plan, report = tmp_path / "plan.json", tmp_path / "report.md"
    fleet, workloads = estate / "fleet.yaml", estate / "workloads.yaml"
    code, _, err = _run("plan", "--fleet", fleet, "--workloads", workloads, "--store", store, "--out", plan)
    assert code == 0, err
    assert said in err and any(said in n for n in json.loads(plan.read_text())["notes"])
    code, _, err = _run("report", "--plan", plan, "--store", store, "--out", report)
    assert code == 0, err
    assert said in report.read_text()
    # the amortised export of the same period replaces the actual one: nothing left to say
    amortized = tmp_path / "azure-amortized-2026-10.csv"
    write_azure(amortized, "amortized")
    code, _, err = _run("ingest", "billing", amortized, "--store", store)
    assert code == 0, err
    code, stdout, err = _run("costs", "--store", store, "--format", "json")
    assert code == 0 and said not in err and not any(said in n for n in json.loads(stdout)["notes"])


@pytest.fixture(scope="module")
def stray_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    root = tmp_path_factory.mktemp("lines")
    month = write_focus_month(root / "focus.csv")
    code, _, err = _run("ingest", "billing", month.path, "--store", root / "store")
    assert code == 0, err
    return root / "store", month.gpu_cost


def test_all_lines_prices_a_gpu_hour_over_gpu_lines_only(stray_store: tuple[Path, float]) -> None:
    store, gpu_cost = stray_store
    code, stdout, err = _run("costs", "--store", store, "--all-lines", "--by", "provider", "--format", "json")
    assert code == 0, err
    aws = next(r for r in json.loads(stdout)["rows"] if r["provider"] == "aws" and r["currency"] == "USD")
    assert aws["cost"] == pytest.approx(gpu_cost + 17.4)  # the tax line is every line's cost ...
    assert aws["per_gpu_hour"] == pytest.approx(gpu_cost / aws["gpu_hours"])  # ... not a GPU-hour's
    code, stdout, _ = _run("costs", "--store", store, "--all-lines", "--by", "provider")
    assert "Spend, all lines" in stdout and "GPU spend" not in stdout


def test_store_before_the_command_after_it_and_from_the_environment(stray_store: tuple[Path, float]) -> None:
    store, gpu_cost = stray_store
    args = ("costs", "--format", "json")
    for argv, env in (
        (("--store", store, *args), None),
        ((*args, "--store", store), None),
        (args, {"FINOPS_STORE": str(store)}),
        (("--store", store, *args), {"FINOPS_STORE": str(store.parent / "missing")}),  # the command line wins
        (("--store", store.parent / "missing", *args, "--store", store), None),  # the command's own wins
    ):
        code, stdout, err = _run(*argv, env=env)
        assert code == 0, (argv, env, err)
        assert json.loads(stdout)["totals"]["USD"] == pytest.approx(gpu_cost)


def test_one_rounding_rule() -> None:
    assert percent_of(0.004, 445.0) == 0.0  # the saving shows as 0.00: so does its share
    assert percent_of(-0.0001, 445.0) == 0.0
    assert percent_of(12.34, 100.0) == 12.34 and percent_of(5.0, 0.001) is None
    assert number(0.04, 1) == "0.04" and number(0.0, 1) == "0.0" and number(12345.67, 1) == "12,345.7"
    assert quantity_decimals(0.00042, 1) == 4 and quantity_decimals(3.14159, 2) == 2
