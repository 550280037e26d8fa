"""FOCUS Unit Format, self-contained Azure descriptions and compute-only instance types, on generated months.

Azure prices some meters per block (``10K``, ``100 Hours``): PricingUnit keeps the block with the quantity as given
(``ListUnitPrice × PricingQuantity = ListCost``), ConsumedQuantity is the quantity × the block, and GPU-hours come
from the consumed hours. Database classes (``db.r6g.large``, ``GP_Gen5_4``) never become ``x_InstanceType``."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from finops_cli.ingest.billing import ingest_billing
from finops_cli.ingest.billing.units import focus_unit
from finops_cli.store import Store


@pytest.mark.parametrize(
    ("source", "block", "consumed", "pricing"),
    [
        ("10K", 10_000, "Units", "10000 Units"),
        ("1 GB", 1, "GB", "GB"),
        ("1 Hour", 1, "Hours", "Hours"),
        ("10 Hours", 10, "Hours", "10 Hours"),
        ("100 Hours", 100, "Hours", "100 Hours"),
        ("1 GB/Month", 1, "GB-Months", "GB-Months"),
        ("10000 Transactions", 10_000, "Transactions", "10000 Transactions"),
        ("1 GiB Hour", 1, "GiB-Hours", "GiB-Hours"),
        ("1/Month", 1, "Unit-Months", "Unit-Months"),
        ("1M", 1_000_000, "Units", "1000000 Units"),
        ("1 API Calls", 1, "Requests", "Requests"),
        ("Hrs", 1, "Hours", "Hours"),
        ("GB-Mo", 1, "GB-Months", "GB-Months"),
        ("LCU-Hrs", 1, "LCU-Hours", "LCU-Hours"),
        ("Lambda-GB-Second", 1, "GB-Seconds", "GB-Seconds"),
        ("Million Datapoints", 1_000_000, "Datapoints", "1000000 Datapoints"),
    ],
)
def test_provider_units_in_focus_unit_format(source: str, block: int, consumed: str, pricing: str) -> None:
    unit = focus_unit(source)
    assert unit is not None and (unit.block, unit.name, unit.pricing) == (block, consumed, pricing)


@pytest.mark.parametrize("source", ["1/3 Months", "10000 1,000s", "", "  "])
def test_units_it_cannot_read_are_kept_as_written(source: str) -> None:
    assert focus_unit(source) is None


# --- Azure: one generated month per layout --------------------------------------------------------------------------
EA = ("BillingAccountId,BillingAccountName,BillingPeriodStartDate,BillingPeriodEndDate,SubscriptionId,"
      "SubscriptionName,Date,Product,MeterId,MeterCategory,MeterSubCategory,MeterRegion,MeterName,Quantity,"
      "EffectivePrice,Cost,UnitPrice,BillingCurrency,ResourceLocation,ResourceId,AdditionalInfo,Tags,UnitOfMeasure,"
      "ChargeType,Frequency,PayGPrice,PricingModel")  # fmt: skip
CAMEL = ("billingAccountId,billingPeriodStartDate,billingPeriodEndDate,subscriptionId,date,product,meterId,"
         "meterCategory,meterSubCategory,meterRegion,meterName,quantity,effectivePrice,costInBillingCurrency,"
         "billingCurrency,resourceLocation,InstanceName,additionalInfo,tags,unitOfMeasure,chargeType,frequency,"
         "payGPrice,unitPrice")  # fmt: skip
LEGACY = ("SubscriptionGuid,ResourceGroup,ResourceLocation,UsageDateTime,MeterCategory,MeterSubcategory,MeterId,"
          "MeterName,MeterRegion,UsageQuantity,ResourceRate,PreTaxCost,InstanceId,Tags,AdditionalInfo,Currency,"
          "UnitOfMeasure")  # fmt: skip
ND = {"ServiceType": "Standard_ND96isr_H100_v5", "VCPUs": 96}  # 8 × H100
#: (meter category, subcategory, meter, unit, block, PAYG price per unit of measure, AdditionalInfo)
METERS = [
    ("Virtual Machines", "NDisrH100v5 Series", "ND96isr H100 v5", "1 Hour", 1, 98.32, ND),
    ("Virtual Machines", "NDisrH100v5 Series", "ND96isr H100 v5", "10 Hours", 10, 983.2, ND),
    ("Virtual Machines", "NDisrH100v5 Series", "ND96isr H100 v5", "100 Hours", 100, 9832.0, ND),
    ("Storage", "Tables", "Batch Write Operations", "10K", 10_000, 0.00036, None),
    ("Storage", "Blob Storage", "Hot LRS Data Stored", "1 GB/Month", 1, 0.0184, None),
    ("Storage", "Files", "Protocol Operations", "10000 Transactions", 10_000, 0.015, None),
    ("SQL Database", "General Purpose - Compute Gen5", "vCore", "1 Hour", 1, 0.2522, {"ServiceType": "GP_Gen5_4"}),
]


def azure_month(path: Path, layout: str, seed: int = 7) -> tuple[Path, float, float]:
    """A month of one VM billed in 1-, 10- and 100-hour blocks, block-priced storage and an Azure SQL database, in
    ``layout`` (``ea``, ``camel``, ``legacy``); returns the file, the total cost and the VM's GPU-hours."""
    rng, rows, total, gpu_hours = random.Random(seed), [], 0.0, 0.0
    for day in range(1, 31):
        for category, sub, meter, unit, block, price, info in METERS:
            units = rng.uniform(1, 24) if category != "Storage" else rng.uniform(50, 5000)
            quantity = round(units / block, 8)  # Azure counts blocks: 3 hours of a "10 Hours" meter is 0.3
            cost = round(quantity * price, 8)
            total += cost
            if "H100" in meter:
                gpu_hours += quantity * block * 8
            region = "US East"
            product = f"{category} {sub} - {meter} - {region}"
            info_text = json.dumps(info) if info else ""
            if layout == "legacy":
                rows.append({"SubscriptionGuid": "sub-1", "ResourceGroup": "ml", "ResourceLocation": "US East",
                             "UsageDateTime": f"2026-10-{day:02d} 00:00:00", "MeterCategory": category,
                             "MeterSubcategory": sub, "MeterName": meter, "MeterRegion": region,
                             "UsageQuantity": quantity, "ResourceRate": price, "PreTaxCost": cost,
                             "InstanceId": f"/subscriptions/sub-1/resourceGroups/ml/{meter}", "Tags": "",
                             "AdditionalInfo": info_text, "Currency": "USD", "UnitOfMeasure": unit})  # fmt: skip
            elif layout == "camel":
                rows.append({"billingAccountId": "acct-1", "billingPeriodStartDate": "", "billingPeriodEndDate": "",
                             "subscriptionId": "sub-1", "date": f"10/{day:02d}/2026", "product": product,
                             "meterCategory": category, "meterSubCategory": sub, "meterRegion": region,
                             "meterName": meter, "quantity": quantity, "effectivePrice": price,
                             "costInBillingCurrency": cost, "billingCurrency": "USD", "resourceLocation": "eastus",
                             "InstanceName": f"/subscriptions/sub-1/{meter}", "additionalInfo": info_text,
                             "unitOfMeasure": unit, "chargeType": "Usage", "frequency": "UsageBased",
                             "payGPrice": price, "unitPrice": price})  # fmt: skip
            else:
                rows.append({"BillingAccountId": "8611537", "BillingAccountName": "Kestrel",
                             "BillingPeriodStartDate": "10/01/2026", "BillingPeriodEndDate": "10/31/2026",
                             "SubscriptionId": "sub-1", "Date": f"10/{day:02d}/2026", "Product": product,
                             "MeterCategory": category, "MeterSubCategory": sub, "MeterRegion": region,
                             "MeterName": meter, "Quantity": quantity, "EffectivePrice": price, "Cost": cost,
                             "UnitPrice": price, "BillingCurrency": "USD", "ResourceLocation": "EastUS",
                             "ResourceId": f"/subscriptions/sub-1/{meter}", "AdditionalInfo": info_text,
                             "UnitOfMeasure": unit, "ChargeType": "Usage", "Frequency": "UsageBased",
                             "PayGPrice": price, "PricingModel": "OnDemand"})  # fmt: skip
    header = {"ea": EA, "camel": CAMEL, "legacy": LEGACY}[layout]
    with path.open("w", newline="", encoding="utf-8-sig") as f:
        w = csv.DictWriter(f, header.split(","), restval="")
        w.writeheader()
        w.writerows(rows)
    return path, total, gpu_hours


@pytest.mark.parametrize("layout", ["ea", "camel", "legacy"])
def test_azure_block_units_money_and_gpu_hours(tmp_path: Path, store: Store, layout: str) -> None:
    path, total, gpu_hours = azure_month(tmp_path / f"azure-{layout}.csv", layout)
    ingest_billing([path], "auto", store)
    first = store.read("billing").to_pandas()
    ingest_billing([path], "auto", store)
    lines = store.read("billing").to_pandas().sort_values("x_SourceRow").reset_index(drop=True)
    assert len(lines) == len(first) == 30 * len(METERS)  # a second ingest changes nothing
    assert round(lines["BilledCost"].sum() * 100) == round(total * 100)
    assert lines["x_GpuHours"].sum() == pytest.approx(gpu_hours)  # 1, 10 and 100 Hours meters alike
    source = pd.read_csv(path, encoding="utf-8-sig")
    quantity = source["Quantity" if layout == "ea" else "quantity" if layout == "camel" else "UsageQuantity"]
    unit = source["UnitOfMeasure" if layout != "camel" else "unitOfMeasure"]
    blocks = {u: b for *_, u, b, _, _ in METERS}
    assert lines["PricingQuantity"].to_numpy() == pytest.approx(quantity.to_numpy())
    assert lines["ConsumedQuantity"].to_numpy() == pytest.approx((quantity * unit.map(blocks)).to_numpy())
    expected = {"1 Hour": ("Hours", "Hours"), "10 Hours": ("Hours", "10 Hours"), "100 Hours": ("Hours", "100 Hours"),
                "10K": ("Units", "10000 Units"), "1 GB/Month": ("GB-Months", "GB-Months"),
                "10000 Transactions": ("Transactions", "10000 Transactions")}  # fmt: skip
    got = set(zip(unit, lines["ConsumedUnit"], lines["PricingUnit"], strict=True))
    assert got == {(u, *expected[u]) for u in expected}
    if layout != "legacy":  # the legacy report has no PayGPrice: no list price, ListCost = BilledCost
        money = lines["ListUnitPrice"] * lines["PricingQuantity"]  # money-consistent per line
        assert money.to_numpy() == pytest.approx(lines["ListCost"].to_numpy(), rel=1e-9)
        assert lines["ListCost"].to_numpy() == pytest.approx(lines["BilledCost"].to_numpy(), rel=1e-6, abs=1e-8)
    h100 = lines[lines["x_GpuHours"] > 0]
    assert len(h100) == 90 and set(h100["x_InstanceType"]) == {"Standard_ND96isr_H100_v5"}
    sql = lines[lines["ServiceName"] == "SQL Database"]
    assert len(sql) == 30 and sql["x_InstanceType"].isna().all() and (sql["x_GpuHours"] == 0).all()


@pytest.mark.parametrize("layout", ["ea", "camel", "legacy"])
def test_azure_charge_description_is_self_contained(tmp_path: Path, store: Store, layout: str) -> None:
    path, _, _ = azure_month(tmp_path / f"azure-{layout}.csv", layout)
    ingest_billing([path], "auto", store)
    lines = store.read("billing").to_pandas().sort_values("x_SourceRow")
    first = lines["ChargeDescription"].iloc[0]
    if layout == "legacy":  # no product column: meter category - subcategory - meter - region
        assert first == "Virtual Machines - NDisrH100v5 Series - ND96isr H100 v5 - US East, 98.32 USD per 1 Hour"
    else:
        assert first == "Virtual Machines NDisrH100v5 Series - ND96isr H100 v5 - US East, 98.32 USD per 1 Hour"
    assert lines["ChargeDescription"].notna().all()
    assert not lines["ChargeDescription"].isin([m[2] for m in METERS]).any()  # never the bare meter name


def test_azure_unused_reservation_and_frequency(tmp_path: Path, store: Store) -> None:
    rows = [{"BillingAccountId": "1", "BillingPeriodStartDate": "10/01/2026", "Date": "10/03/2026",
             "Product": "Virtual Machines Dsv5 Series - D8s v5 - US East", "MeterCategory": "Virtual Machines",
             "Quantity": q, "EffectivePrice": 0.22, "Cost": round(q * 0.22, 6), "BillingCurrency": "USD",
             "UnitOfMeasure": "1 Hour", "ChargeType": kind, "Frequency": freq, "PayGPrice": 0.384,
             "PricingModel": "Reservation"}
            for q, kind, freq in ((20, "Usage", "UsageBased"), (4, "UnusedReservation", "UsageBased"),
                                  (1, "Purchase", "Recurring"))]  # fmt: skip
    path = tmp_path / "azure-amortized.csv"
    pacsv.write_csv(pa.Table.from_pylist(rows), path)
    ingest_billing([path], "azure", store)
    got = sorted(store.read("billing").to_pylist(), key=lambda r: r["x_SourceRow"])
    assert [r["ChargeFrequency"] for r in got] == ["Usage-Based", "Usage-Based", "Recurring"]
    assert got[1]["ChargeDescription"].startswith("Unused reservation: Virtual Machines Dsv5 Series")
    assert [r["PricingQuantity"] for r in got] == [20, 4, 1]  # Purchase lines are priced too (FOCUS: not null)
    assert [r["PricingUnit"] for r in got] == ["Hours"] * 3


# --- database instance classes -----------------------------------------------------------------------------------
def test_database_classes_are_not_instance_types_and_never_warn(tmp_path: Path, store: Store) -> None:
    n = 4
    cur = pa.table({
        "bill/PayerAccountId": ["1"] * n, "bill/BillingPeriodStartDate": ["2026-10-01T00:00:00Z"] * n,
        "lineItem/LineItemType": ["Usage"] * n, "lineItem/UsageStartDate": ["2026-10-01T00:00:00Z"] * n,
        "lineItem/UnblendedCost": [1.0] * n, "lineItem/CurrencyCode": ["USD"] * n,
        "lineItem/UsageAmount": [10.0] * n, "pricing/unit": ["Hrs"] * n,
        "lineItem/ProductCode": ["AmazonRDS", "AmazonElastiCache", "AmazonDocDB", "AmazonEC2"],
        "product/instanceType": ["db.r6g.large", "cache.r6g.large", "db.p3.2xlarge", "g5.4xlarge"],
    })  # fmt: skip
    cur_path = tmp_path / "cur.csv"
    pacsv.write_csv(cur, cur_path)
    focus = pa.table({
        "BilledCost": [1.0] * 3, "BillingCurrency": ["USD"] * 3, "BillingAccountId": ["9"] * 3,
        "ChargePeriodStart": ["2026-10-01T00:00:00Z"] * 3, "ChargeCategory": ["Usage"] * 3,
        "ProviderName": ["Microsoft", "Google Cloud", "AWS"], "ConsumedQuantity": [1.0] * 3,
        "ConsumedUnit": ["Hours"] * 3, "x_InstanceType": [None, "db-custom-4-15360", "db.g4dn.xlarge"],
        "SkuPriceDetails": ['{"F_InstanceType": "BC_Gen5_8"}', None, None],
        "ChargeDescription": ["SQL Database Business Critical", "Cloud SQL", "$1 per p5.48xlarge Instance Hour"],
    })  # fmt: skip
    focus_path = tmp_path / "focus.csv"
    pacsv.write_csv(focus, focus_path)
    summary = ingest_billing([cur_path, focus_path], "auto", store)
    assert summary.warnings == []
    rows = store.read("billing").to_pylist()
    got = {f"{r['x_SourceFormat']}/{r['x_SourceRow']}": r["x_InstanceType"] for r in rows}
    assert got == {"aws-cur/1": None, "aws-cur/2": None, "aws-cur/3": None, "aws-cur/4": "g5.4xlarge",
                   "focus/1": None, "focus/2": None, "focus/3": "p5.48xlarge"}  # fmt: skip
    assert all(r["x_GpuHours"] == 0 for r in rows if r["x_InstanceType"] is None)


# --- item 6's first bullets on messy data -------------------------------------------------------------------------
def _messy_cur2(path: Path) -> Path:
    """CUR 2.0 as Parquet with the ``product`` MAP, empty rates, purchases, fees, tax and credits."""
    kinds = ["Usage", "Usage", "RIFee", "SavingsPlanRecurringFee", "Tax", "Credit", "Usage", "Usage"]
    n = len(kinds)
    product = [[("instance_type", "p5.48xlarge"), ("region", "us-east-1")], [("region", "us-east-1")], [], [], [],
               [], [("product_name", "")], []]  # fmt: skip
    table = pa.table({
        "bill_payer_account_id": ["1"] * n, "bill_billing_period_start_date": ["2026-10-01T00:00:00Z"] * n,
        "line_item_line_item_type": kinds, "line_item_usage_start_date": ["2026-10-01T00:00:00Z"] * n,
        "line_item_unblended_cost": [98.32, 0.5, 40.0, 30.0, 8.0, -5.0, 0.2, 0.1],
        "line_item_currency_code": ["USD"] * n, "line_item_usage_amount": [1.0, 5.0, 720.0, 1.0, 0, 0, 2.0, 1.0],
        "pricing_unit": ["Hrs", "GB-Mo", "Hrs", "", "", "", "Requests", "Count"],
        "line_item_product_code": ["AmazonEC2", "AmazonS3", "AmazonEC2", "ComputeSavingsPlans", "AmazonEC2",
                                   "AmazonEC2", "AWSSecretsManager", "AmazonCloudWatch"],
        "pricing_public_on_demand_rate": [98.32, None, 0.0555, None, 0.0, None, 0.05, 0.1],
        "pricing_rate_code": ["A.B.C", "", "R.I.F", "S.P.R", "T.A.X", "", "S.M.1", "C.W.1"],
        "product": pa.array(product, pa.map_(pa.string(), pa.string())),
        "product_product_name": ["Amazon Elastic Compute Cloud"] + [""] * (n - 1),  # Parquet: empty, not null
    })  # fmt: skip
    pq.write_table(table, path)
    return path


def test_cur_list_unit_price_sku_price_id_service_and_units_on_messy_data(tmp_path: Path, store: Store) -> None:
    ingest_billing([_messy_cur2(tmp_path / "cur2.parquet")], "auto", store)
    rows = sorted(store.read("billing").to_pylist(), key=lambda r: r["x_SourceRow"])
    assert [r["ChargeCategory"] for r in rows] == ["Usage", "Usage", "Purchase", "Purchase", "Tax", "Credit"] + [
        "Usage"
    ] * 2
    assert [r["ListUnitPrice"] for r in rows] == [98.32, None, 0.0555, None, None, None, 0.05, 0.1]
    assert [r["SkuPriceId"] for r in rows] == ["A.B.C", None, "R.I.F", "S.P.R", None, None, "S.M.1", "C.W.1"]
    assert [r["ConsumedUnit"] for r in rows] == ["Hours", "GB-Months", None, None, None, None, "Requests", "Counts"]
    priced = [(r["PricingQuantity"], r["PricingUnit"]) for r in rows[:3]]
    assert priced == [(1, "Hours"), (5, "GB-Months"), (720, "Hours")]
    assert rows[0]["x_GpuHours"] == 8.0
    assert (rows[6]["ServiceCategory"], rows[6]["ServiceName"]) == ("Security", "AWS Secrets Manager")
    assert (rows[7]["ServiceCategory"], rows[7]["ServiceName"]) == ("Management and Governance", "Amazon CloudWatch")
    assert [r["ChargeFrequency"] for r in rows[:4]] == ["Usage-Based", "Usage-Based", "Recurring", "Recurring"]


def test_focus_enumerations_in_every_spelling(tmp_path: Path, store: Store) -> None:
    spellings = ["Usage-based", "UsageBased", "usage based", " one-time ", "ONETIME", "recurring"]
    n = len(spellings)
    table = pa.table({
        "BilledCost": [1.0] * n, "BillingCurrency": ["USD"] * n, "BillingAccountId": ["9"] * n,
        "ChargePeriodStart": ["2026-10-01T00:00:00Z"] * n, "ProviderName": ["Oracle"] * n,
        "ChargeCategory": ["usage", "Usage", "USAGE", "purchase", "Purchase", "Purchase"],
        "ChargeFrequency": spellings, "CommitmentDiscountStatus": ["used", None, None, None, None, "UNUSED"],
    })  # fmt: skip
    path = tmp_path / "focus.csv"
    pacsv.write_csv(table, path)
    ingest_billing([path], "focus", store)
    rows = sorted(store.read("billing").to_pylist(), key=lambda r: r["x_SourceRow"])
    assert [r["ChargeFrequency"] for r in rows] == ["Usage-Based"] * 3 + ["One-Time", "One-Time", "Recurring"]
    assert [r["ChargeCategory"] for r in rows] == ["Usage"] * 3 + ["Purchase"] * 3
    assert [r["CommitmentDiscountStatus"] for r in rows] == ["Used", None, None, None, None, "Unused"]


def test_gcp_units_and_pricing_units(tmp_path: Path, store: Store) -> None:
    header = ["billing_account_id", "sku.description", "usage_start_time", "cost", "currency", "usage.amount",
              "usage.unit", "usage.amount_in_pricing_units", "usage.pricing_unit", "invoice.month", "cost_type",
              "system_labels"]  # fmt: skip
    rows = [
        ["01A2B3", "Nvidia H100 80GB GPU running in Americas", "2026-10-01 00:00:00+00:00", 11.06, "USD", 14400.0,
         "seconds", 4.0, "hour", "202610", "regular", "[]"],
        ["01A2B3", "SSD backed PD Capacity", "2026-10-01 00:00:00+00:00", 0.5, "USD", 2.7e14, "byte-seconds", 2.9,
         "gibibyte month", "202610", "regular", "[]"],
        ["01A2B3", "Tax", "2026-10-01 00:00:00+00:00", 1.0, "USD", None, None, None, None, "202610", "tax", "[]"],
    ]  # fmt: skip
    path = tmp_path / "gcp.csv"
    pacsv.write_csv(pa.table({h: [r[i] for r in rows] for i, h in enumerate(header)}), path)
    ingest_billing([path], "gcp", store)
    got = sorted(store.read("billing").to_pylist(), key=lambda r: r["x_SourceRow"])
    assert [(r["ConsumedUnit"], r["PricingQuantity"], r["PricingUnit"]) for r in got] == [
        ("Seconds", 4.0, "Hours"), ("B-Seconds", 2.9, "GiB-Months"), (None, None, None)
    ]  # fmt: skip
    assert got[0]["x_GpuHours"] == 4.0  # from the consumed seconds, as before


def test_oci_block_units(tmp_path: Path, store: Store) -> None:
    header = ["lineItem/tenantId", "lineItem/intervalUsageStart", "lineItem/intervalUsageEnd", "usage/billedQuantity",
              "product/Description", "cost/myCost", "cost/currencyCode", "cost/skuUnitDescription"]  # fmt: skip
    rows = [
        ["t", "2026-10-01T00:00Z", "2026-10-01T01:00Z", 0.000002, "Monitoring Service - Retrieval", 2.3e-9, "USD",
         "Million Datapoints"],
        ["t", "2026-10-01T00:00Z", "2026-10-01T01:00Z", 8.0, "Compute - GPU - H100", 80.0, "USD", "GPU Per Hour"],
    ]  # fmt: skip
    path = tmp_path / "oci.csv"
    pacsv.write_csv(pa.table({h: [r[i] for r in rows] for i, h in enumerate(header)}), path)
    ingest_billing([path], "auto", store)
    got = sorted(store.read("billing").to_pylist(), key=lambda r: r["x_SourceRow"])
    units = [(r["PricingQuantity"], r["PricingUnit"], r["ConsumedQuantity"], r["ConsumedUnit"]) for r in got]
    assert units[0] == (0.000002, "1000000 Datapoints", pytest.approx(2.0), "Datapoints")
    assert units[1] == (8.0, "GPU-Hours", 8.0, "GPU-Hours") and got[1]["x_GpuHours"] == 8.0
