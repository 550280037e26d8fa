"""FOCUS 1.1–1.3 columns are kept (issue 29): InvoiceId, ServiceSubcategory, SkuPriceDetails, SkuMeter, the
commitment quantities, capacity reservations, the PricingCurrency columns, the account types, the 1.3 provider
names, ContractApplied and the Allocated* columns. Generated FOCUS 1.2 and 1.3 files (several providers and
currencies, cells filled and empty) round-trip through ingest → store → read back; money to the cent; a store
written before these columns existed still reads, with nulls for them."""

from __future__ import annotations

import csv
import json
import random
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from finops_cli.ingest.billing import ingest_billing
from finops_cli.schema.billing import BILLING_SCHEMA
from finops_cli.store import Store
from finops_cli.store.cost_query import cost_groups
from finops_cli.store.engine import run
from finops_cli.store.queries import Query
from tests.ingest.focus_exports import FOCUS_10, START, _base, _write
from tests.ingest.test_focus_conformance import _cur

TEXT_12 = [
    "InvoiceId",
    "BillingAccountType",
    "SubAccountType",
    "ServiceSubcategory",
    "SkuMeter",
    "SkuPriceDetails",
    "PricingCurrency",
    "CommitmentDiscountUnit",
    "CapacityReservationId",
    "CapacityReservationStatus",
]
NUMBERS = [
    "PricingCurrencyListUnitPrice",
    "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost",
    "CommitmentDiscountQuantity",
]
TEXT_13 = [
    "ServiceProviderName",
    "HostProviderName",
    "ContractApplied",
    "AllocatedMethodId",
    "AllocatedMethodDetails",
    "AllocatedResourceId",
    "AllocatedResourceName",
    "AllocatedTags",
]
NEW = [*TEXT_12, *NUMBERS, *TEXT_13]
#: the billing columns before these were added: what an older finops wrote
OLD_COLUMNS = [name for name in BILLING_SCHEMA.names if name not in NEW]

#: (provider, billing account, currency): one currency per billing account, as FOCUS requires
ACCOUNTS = [
    ("AWS", "aws-payer-1", "USD"),
    ("Microsoft", "ms-billing-7", "EUR"),
    ("Google Cloud", "gcp-0A1B2C", "GBP"),
    ("Oracle", "oci-tenancy-3", "USD"),
]
SUBCATEGORIES = ["Virtual Machines", "Block Storage", "Relational Databases", "Other (Compute)"]


def _row(rng: random.Random, i: int, version: str) -> dict[str, str]:
    provider, account, currency = ACCOUNTS[i % len(ACCOUNTS)]
    cost = round(rng.uniform(-5, 400), 7)
    row = _base(START + timedelta(hours=i), 1.0, cost, currency, account)
    row.update(ChargeDescription=f"line {i}", ConsumedQuantity="1", ConsumedUnit="Hours", ServiceName="Compute")
    if version == "1.2":
        row["ProviderName"] = provider

    def maybe(value: str) -> str:  # about a third of the cells empty
        return value if rng.random() > 0.33 else ""

    row.update(
        InvoiceId=maybe(f"INV-{account}-2026-10"),
        BillingAccountType=maybe("Billing Profile" if provider == "Microsoft" else "Billing Account"),
        SubAccountType=maybe({"Google Cloud": "Project", "Microsoft": "Subscription"}.get(provider, "Account")),
        ServiceSubcategory=SUBCATEGORIES[i % len(SUBCATEGORIES)],
        SkuMeter=maybe(rng.choice(["ND96isr H100 v5", "Compute Hours", "Data Transfer Out"])),
        SkuPriceDetails=maybe(json.dumps({"CoreCount": rng.choice([8, 96]), "x_Tier": "hot"})),
        PricingCurrency="USD" if currency != "GBP" else "GBP",
        PricingCurrencyListUnitPrice=maybe(f"{rng.uniform(0, 98):.10f}"),
        PricingCurrencyContractedUnitPrice=maybe(f"{rng.uniform(0, 90):.10f}"),
        PricingCurrencyEffectiveCost=f"{cost * 1.0833:.10f}",
    )
    if i % 5 == 0:  # a line under a commitment and a capacity reservation
        row.update(
            CommitmentDiscountId=f"ri-{i}",
            CommitmentDiscountQuantity=f"{rng.uniform(0, 8):.6f}",
            CommitmentDiscountUnit="Hours",
            CapacityReservationId=f"cr-{i:04d}",
            CapacityReservationStatus=rng.choice(["Used", "Unused", "used"]),
        )
    if version == "1.3":
        row.update(
            ServiceProviderName=provider,
            HostProviderName=maybe("Equinix" if provider == "Oracle" else provider),
        )
        if i % 3 == 0:
            row.update(
                ContractApplied=json.dumps(
                    [{"ContractCommitmentId": f"cc-{account}", "ContractCommitmentAppliedCost": cost}]
                ),
                AllocatedMethodId="cpu-memory-split",
                AllocatedMethodDetails=json.dumps({"Elements": [{"AllocatedRatio": 0.25, "UsageUnit": "CPU"}]}),
                AllocatedResourceId=f"pod/{account}/trainer-{i}",
                AllocatedResourceName=maybe(f"trainer-{i}"),
                AllocatedTags=json.dumps({"team": "research", "k8s/namespace": "train"}),
            )
    return row


def focus_file(
    path: Path, version: str, rows: int = 96, seed: int = 29, account_suffix: str = ""
) -> tuple[Path, list[dict[str, str]]]:
    """A generated FOCUS ``version`` (1.2 or 1.3) CSV and its rows as written."""
    rng = random.Random(seed)
    data = [_row(rng, i, version) for i in range(rows)]
    for r in data:
        r["BillingAccountId"] += account_suffix
    header = [*FOCUS_10, *TEXT_12, *NUMBERS]
    if version == "1.3":
        header = [c for c in header if c != "ProviderName"] + TEXT_13  # 1.3 names the provider ServiceProviderName
    return _write(path, header, data), data


def _stored(store: Store) -> dict[tuple[str, int], dict]:
    table = store.read("billing")
    assert table is not None
    return {(r["x_SourceFile"], r["x_SourceRow"]): r for r in table.to_pylist()}


def _cents(total: float) -> int:
    return round(total * 100)


@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_new_focus_columns_round_trip(tmp_path: Path, store: Store, version: str) -> None:
    path, rows = focus_file(tmp_path / f"focus-{version}.csv", version)
    summary = ingest_billing([path], "auto", store)
    assert summary.files[0].focus_version == version
    stored = _stored(store)
    assert len(stored) == len(rows)
    expected_text = TEXT_12 + (TEXT_13 if version == "1.3" else [])
    for i, written in enumerate(rows, start=1):
        line = stored[(path.name, i)]
        for name in expected_text:
            want = written.get(name) or None
            if name == "CapacityReservationStatus" and want:
                want = want.capitalize()  # the spec's spelling
            if name == "ServiceProviderName" and version == "1.2":
                want = written["ProviderName"]  # FOCUS 1.3's name for the same fact
            assert line[name] == want, (i, name)
        for name in NUMBERS:
            want_number = float(written[name]) if written.get(name) else None
            assert line[name] == want_number, (i, name)
        if version == "1.2":
            assert line["HostProviderName"] is None and line["ContractApplied"] is None
        assert line["ProviderName"] == ACCOUNTS[(i - 1) % len(ACCOUNTS)][0]
    # money to the cent, per currency, and the pricing-currency cost unchanged
    billed: dict[str, float] = defaultdict(float)
    for r in rows:
        billed[r["BillingCurrency"]] += float(r["BilledCost"])
    table = store.read("billing")
    assert table is not None
    got = table.group_by("BillingCurrency").aggregate([("BilledCost", "sum"), ("PricingCurrencyEffectiveCost", "sum")])
    for g in got.to_pylist():
        assert _cents(g["BilledCost_sum"]) == _cents(billed[g["BillingCurrency"]])
        want = sum(
            float(r["PricingCurrencyEffectiveCost"]) for r in rows if r["BillingCurrency"] == g["BillingCurrency"]
        )
        assert _cents(g["PricingCurrencyEffectiveCost_sum"]) == _cents(want)
    assert {g["BillingCurrency"] for g in got.to_pylist()} == {"USD", "EUR", "GBP"}


def test_reingest_is_idempotent(tmp_path: Path, store: Store) -> None:
    path, rows = focus_file(tmp_path / "focus-1.3.csv", "1.3")
    ingest_billing([path], "auto", store)
    files, first = store.files("billing"), store.read("billing")
    ingest_billing([path], "auto", store)
    again = store.read("billing")
    assert store.files("billing") == files
    assert first is not None and again is not None and again.num_rows == len(rows)
    order = [("x_SourceRow", "ascending")]
    assert again.sort_by(order).equals(first.sort_by(order))


def test_json_columns_of_a_parquet_file_are_json_text(tmp_path: Path, store: Store) -> None:
    """A Parquet FOCUS file may hold ContractApplied as a list of objects and AllocatedTags as a map: stored as
    JSON text."""
    path, _ = focus_file(tmp_path / "focus.csv", "1.3", rows=8)
    table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
    applied = pa.array([[{"ContractCommitmentId": "cc-1", "ContractCommitmentAppliedCost": 12.5}]] * 8)
    tags = pa.array([[("team", "research")]] * 8, pa.map_(pa.string(), pa.string()))
    table = table.set_column(table.schema.get_field_index("ContractApplied"), "ContractApplied", applied)
    table = table.set_column(table.schema.get_field_index("AllocatedTags"), "AllocatedTags", tags)
    pq.write_table(table, tmp_path / "focus.parquet")
    ingest_billing([tmp_path / "focus.parquet"], "focus", store)
    stored = store.read("billing")
    assert stored is not None
    applied_text = '[{"ContractCommitmentAppliedCost": 12.5, "ContractCommitmentId": "cc-1"}]'
    assert set(stored["ContractApplied"].to_pylist()) == {applied_text}
    assert set(stored["AllocatedTags"].to_pylist()) == {'{"team": "research"}'}


def _age(store: Store) -> None:
    """Rewrite every billing file of ``store`` as an older finops wrote it: only :data:`OLD_COLUMNS`."""
    for logical in store.files("billing"):
        located = store.locate(logical)
        pq.write_table(pq.read_table(located).select(OLD_COLUMNS), located)


def test_a_store_written_before_the_new_columns_reads_with_nulls(tmp_path: Path, store: Store) -> None:
    old_path, old_rows = focus_file(tmp_path / "old-1.2.csv", "1.2", rows=40, seed=1)
    ingest_billing([old_path], "auto", store)
    _age(store)
    old_store = Store(store.root)
    footers = old_store.checked_schemas("billing")
    assert all(schema.names == OLD_COLUMNS for schema in footers.values())
    # read back: every current column, the new ones null, the money as it was
    aged = old_store.read("billing")
    assert aged is not None and aged.num_rows == len(old_rows)
    assert aged.schema.names[: len(BILLING_SCHEMA)] == BILLING_SCHEMA.names
    for name in NEW:
        assert aged[name].null_count == aged.num_rows, name
    assert _cents(pc.sum(aged["BilledCost"]).as_py()) == _cents(sum(float(r["BilledCost"]) for r in old_rows))
    # a newer ingest beside the old files (other accounts): one table, old lines null, new ones filled
    new_path, new_rows = focus_file(tmp_path / "new-1.3.csv", "1.3", rows=24, seed=2, account_suffix="-new")
    ingest_billing([new_path], "auto", old_store)
    mixed = Store(store.root)
    both = mixed.read("billing")
    assert both is not None and both.num_rows == len(old_rows) + len(new_rows)
    by_file = {f: both.filter(pc.equal(both["x_SourceFile"], f)) for f in (old_path.name, new_path.name)}
    assert by_file[old_path.name]["InvoiceId"].null_count == len(old_rows)
    assert by_file[new_path.name]["ServiceProviderName"].null_count == 0
    # the query engine's views see the same: columns an old file lacks are NULL
    q = Query(
        "new_columns",
        ("billing",),
        "SELECT x_SourceFile, count(ServiceProviderName) AS named, count(*) AS lines "
        "FROM billing GROUP BY x_SourceFile ORDER BY x_SourceFile",
    )
    result = run(mixed, q)
    assert result is not None
    assert result.to_pylist() == [
        {"x_SourceFile": new_path.name, "named": len(new_rows), "lines": len(new_rows)},
        {"x_SourceFile": old_path.name, "named": 0, "lines": len(old_rows)},
    ]
    # re-ingesting the old export rewrites its files in the current schema
    ingest_billing([old_path], "auto", mixed)
    assert all(s.names == BILLING_SCHEMA.names for s in Store(store.root).checked_schemas("billing").values())


@pytest.mark.parametrize("legacy", [True, False])
def test_cur_invoice_and_capacity_reservation(tmp_path: Path, store: Store, legacy: bool) -> None:
    table = _cur(legacy)  # Usage, Tax, Usage
    table = table.append_column(
        "bill/InvoiceId" if legacy else "bill_invoice_id", pa.array(["EUINGB26-1", "", "EUINGB26-1"])
    )
    arn = "arn:aws:ec2:us-east-1:444455556666:capacity-reservation/cr-0123456789abcdef0"
    if not legacy:  # CUR 2.0 with INCLUDE CAPACITY RESERVATION DATA, and its pricing currency
        table = table.append_column("capacity_reservation_capacity_reservation_arn", pa.array([arn, "", arn]))
        table = table.append_column(
            "capacity_reservation_capacity_reservation_status", pa.array(["Used", "", "unused"])
        )
        table = table.append_column("pricing_currency", pa.array(["USD", "", "USD"]))
    path = tmp_path / "cur.csv"
    pacsv.write_csv(table, path)
    ingest_billing([path], "aws-cur" if legacy else "aws-cur2", store)
    rows = sorted(store.read("billing").to_pylist(), key=lambda r: r["x_SourceRow"])
    assert [r["InvoiceId"] for r in rows] == ["EUINGB26-1", None, "EUINGB26-1"]
    assert all(r["ServiceProviderName"] == "AWS" for r in rows)
    if legacy:  # the legacy CUR has no capacity reservation or pricing currency column
        assert all(r["CapacityReservationId"] is None and r["PricingCurrency"] is None for r in rows)
    else:
        assert [r["CapacityReservationId"] for r in rows] == [arn, None, arn]
        assert [r["CapacityReservationStatus"] for r in rows] == ["Used", None, "Unused"]
        assert [r["PricingCurrency"] for r in rows] == ["USD", None, "USD"]


def test_azure_invoice_pricing_currency_and_meter(tmp_path: Path, store: Store) -> None:
    """The camelCase usage details carry invoiceId and pricingCurrency; the meter name is the SkuMeter."""
    header = [
        "invoiceId", "billingAccountId", "subscriptionId", "date", "meterCategory", "meterName", "quantity",
        "costInBillingCurrency", "billingCurrency", "pricingCurrency", "chargeType", "unitOfMeasure",
    ]  # fmt: skip
    rows = [
        ["G012345678", "ba-1", "sub-1", "10/01/2026", "Virtual Machines", "ND96isr H100 v5", "24", "2351.04", "EUR",
         "USD", "Usage", "1 Hour"],
        ["", "ba-1", "sub-1", "10/02/2026", "Storage", "P30 LRS Disk", "1", "4.10", "EUR", "USD", "Usage", "1/Month"],
    ]  # fmt: skip
    path = tmp_path / "usage-details.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header, *rows])
    ingest_billing([path], "azure", store)
    lines = sorted(store.read("billing").to_pylist(), key=lambda r: r["x_SourceRow"])
    assert [r["InvoiceId"] for r in lines] == ["G012345678", None]
    assert [r["PricingCurrency"] for r in lines] == ["USD", "USD"]
    assert [r["SkuMeter"] for r in lines] == ["ND96isr H100 v5", "P30 LRS Disk"]
    assert [r["ServiceProviderName"] for r in lines] == ["Microsoft", "Microsoft"]
    assert all(r["CapacityReservationId"] is None and r["HostProviderName"] is None for r in lines)


def test_costs_group_by_the_new_columns(tmp_path: Path, store: Store) -> None:
    """Commitment reports: cost per capacity reservation and currency; lines without one under (none)."""
    path, rows = focus_file(tmp_path / "focus-1.3.csv", "1.3")
    ingest_billing([path], "auto", store)
    frame = cost_groups(store, ["CapacityReservationId"], gpu_only=False)
    assert frame is not None
    want: dict[tuple[str, str], float] = defaultdict(float)
    for r in rows:
        want[(r.get("CapacityReservationId") or "(none)", r["BillingCurrency"])] += float(r["BilledCost"])
    got = {(g["CapacityReservationId"], g["currency"]): g["billed_cost"] for g in frame.to_dict("records")}
    assert {k: _cents(v) for k, v in got.items()} == {k: _cents(v) for k, v in want.items()}
