"""FOCUS conformance where the source has the facts: ListUnitPrice and SkuPriceId on Usage and Purchase lines of
the AWS CUR (``pricing/publicOnDemandRate``, ``pricing/RateCode``) and ListUnitPrice on Azure (``PayGPrice``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from finops_cli.ingest.billing import ingest_billing
from finops_cli.store import Store

SAMPLE_AZURE = Path(__file__).resolve().parents[2] / "samples" / "billing" / "azure-amortized-2026-10.csv"


def _cur(legacy: bool) -> pa.Table:
    names = {
        "payer": ("bill/PayerAccountId", "bill_payer_account_id"),
        "period": ("bill/BillingPeriodStartDate", "bill_billing_period_start_date"),
        "type": ("lineItem/LineItemType", "line_item_line_item_type"),
        "start": ("lineItem/UsageStartDate", "line_item_usage_start_date"),
        "usage_type": ("lineItem/UsageType", "line_item_usage_type"),
        "amount": ("lineItem/UsageAmount", "line_item_usage_amount"),
        "unit": ("pricing/unit", "pricing_unit"),
        "cost": ("lineItem/UnblendedCost", "line_item_unblended_cost"),
        "currency": ("lineItem/CurrencyCode", "line_item_currency_code"),
        "rate": ("pricing/publicOnDemandRate", "pricing_public_on_demand_rate"),
        "rate_code": ("pricing/RateCode", "pricing_rate_code"),
    }
    values = {
        "payer": ["444455556666"] * 3,
        "period": ["2026-10-01T00:00:00Z"] * 3,
        "type": ["Usage", "Tax", "Usage"],
        "start": ["2026-10-01T00:00:00Z"] * 3,
        "usage_type": ["BoxUsage:p5.48xlarge", "", "DataTransfer-Out-Bytes"],
        "amount": [2.0, 0.0, 10.0],
        "unit": ["Hrs", "", "GB"],
        "cost": [110.08, 8.8, 0.9],
        "currency": ["USD"] * 3,
        "rate": ["55.04", "", "0.09"],
        "rate_code": ["P5SKU.JRTCKXETXF.6YS6EN2CT7", "", "DTSKU.JRTCKXETXF.N9VAR4HJMH"],
    }
    return pa.table({names[k][0 if legacy else 1]: v for k, v in values.items()})


@pytest.mark.parametrize(("legacy", "fmt"), [(True, "aws-cur"), (False, "aws-cur2")])
def test_cur_list_unit_price_and_sku_price_id(tmp_path: Path, store: Store, legacy: bool, fmt: str) -> None:
    path = tmp_path / "cur.csv"
    pacsv.write_csv(_cur(legacy), path)
    ingest_billing([path], fmt, store)
    rows = sorted(store.read("billing").to_pylist(), key=lambda r: r["x_SourceRow"])
    assert [r["ListUnitPrice"] for r in rows] == [55.04, None, 0.09]
    assert [r["SkuPriceId"] for r in rows] == ["P5SKU.JRTCKXETXF.6YS6EN2CT7", None, "DTSKU.JRTCKXETXF.N9VAR4HJMH"]


def test_azure_list_unit_price_is_payg_price(store: Store) -> None:
    ingest_billing([SAMPLE_AZURE], "auto", store)
    lines = store.read("billing").to_pandas()
    source = pacsv.read_csv(SAMPLE_AZURE).to_pandas()
    usage = lines[lines["ChargeCategory"].isin(["Usage", "Purchase"])]
    assert usage["ListUnitPrice"].notna().all() and lines["ListUnitPrice"].notna().sum() == len(usage)
    by_row = source["PayGPrice"].to_numpy()
    assert (usage["ListUnitPrice"].to_numpy() == by_row[usage["x_SourceRow"].to_numpy() - 1]).all()


def test_cur_service_categories_and_names(tmp_path: Path, store: Store) -> None:
    codes = ["AWSGlue", "AmazonCloudWatch", "AWSQueueService", "AmazonStates", "awskms", "AWSCloudTrail", "AWSIoT"]
    n = len(codes)
    table = pa.table({
        "bill/PayerAccountId": ["444455556666"] * n, "bill/BillingPeriodStartDate": ["2026-10-01T00:00:00Z"] * n,
        "lineItem/LineItemType": ["Usage"] * n, "lineItem/UsageStartDate": ["2026-10-01T00:00:00Z"] * n,
        "lineItem/UnblendedCost": [1.0] * n, "lineItem/CurrencyCode": ["USD"] * n, "lineItem/ProductCode": codes,
        "product/ProductName": [None] * n,
    })  # fmt: skip
    path = tmp_path / "cur.csv"
    pacsv.write_csv(table, path)
    ingest_billing([path], "aws-cur", store)
    rows = {r["x_SourceRow"]: r for r in store.read("billing").to_pylist()}
    got = [(rows[i]["ServiceCategory"], rows[i]["ServiceName"]) for i in sorted(rows)]
    assert got == [
        ("Analytics", "AWS Glue"),
        ("Management and Governance", "Amazon CloudWatch"),
        ("Integration", "Amazon Simple Queue Service"),
        ("Integration", "AWS Step Functions"),
        ("Security", "AWS Key Management Service"),
        ("Management and Governance", "AWS CloudTrail"),
        ("Internet of Things", "AWS IoT"),
    ]
