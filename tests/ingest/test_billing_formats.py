"""Each billing format on the Kestrel AI samples (and small variants): FOCUS mapping rules and quirks."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from finops_cli.errors import InputError
from finops_cli.ingest.billing import ingest_billing
from finops_cli.store import Store

REPO = Path(__file__).resolve().parents[2]
BILLING = REPO / "samples" / "billing"
AZURE_ACTUAL = REPO / "samples" / "billing-azure-actual" / "azure-actual-2026-10.csv"


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    store = Store(tmp_path_factory.mktemp("samples") / "store")
    ingest_billing([BILLING], "auto", store)
    return store.read("billing").to_pandas()


def _fmt(lines: pd.DataFrame, fmt: str) -> pd.DataFrame:
    return lines[lines["x_SourceFormat"] == fmt]


def _company():
    import sys

    sys.path.insert(0, str(REPO))
    from samples.company import RESOURCES

    return RESOURCES


def test_every_gpu_line_carries_the_substrate_match_keys(lines: pd.DataFrame) -> None:
    gpu = lines[lines["x_GpuHours"] > 0]
    assert set(gpu["provider"]) == {"aws", "gcp", "azure", "coreweave", "onprem"}
    for column in ("RegionId", "x_InstanceType", "PricingCategory", "x_AcceleratorType", "x_GpuCount"):
        assert gpu[column].notna().all(), column


def test_gpu_costs_and_hours_agree_with_company(lines: pd.DataFrame) -> None:
    """Σ EffectiveCost of a resource's instance lines = usd_per_instance_hour × hours (GCP: GPU+core+RAM SKUs)."""
    for r in _company():
        hours = r.last_hour - r.first_hour
        mine = lines[
            lines["ResourceId"].fillna("").str.endswith(r.resource_id)
            & lines["x_InstanceType"].notna()
            & (lines["ChargeCategory"] == "Usage")
        ]
        # GCP lines are net of credits; the company price is the pre-credit ``cost`` (ListCost here)
        paid = mine["ListCost"] if r.provider == "gcp" else mine["EffectiveCost"]
        assert paid.sum() == pytest.approx(r.usd_per_instance_hour * hours, abs=0.01), r.resource_id
        assert mine["x_GpuHours"].sum() == pytest.approx(r.gpus * hours), r.resource_id
        assert set(mine["PricingCategory"]) == {r.pricing}, r.resource_id
        assert set(mine["provider"]) == {r.provider}


def test_aws_cur_spot_ri_refund_credit_tax(lines: pd.DataFrame) -> None:
    cur = _fmt(lines, "aws-cur")
    spot = cur[cur["ChargeDescription"].str.contains("Spot", na=False)]
    assert set(spot["PricingCategory"]) == {"Dynamic"}
    ri = cur[cur["CommitmentDiscountId"].notna() & (cur["ChargeCategory"] == "Usage")]
    assert set(ri["PricingCategory"]) == {"Committed"}
    assert (ri["BilledCost"] == 0).all() and ri["EffectiveCost"].round(3).eq(12.192).all()  # 0.508 $/h × 24 h
    fee = cur[cur["ChargeCategory"] == "Purchase"]
    assert len(fee) == 1 and fee["BilledCost"].iloc[0] == pytest.approx(755.904) and fee["EffectiveCost"].iloc[0] == 0
    refund = cur[cur["ChargeCategory"] == "Adjustment"]
    assert refund["BilledCost"].tolist() == [-120.5] and refund["ChargeClass"].tolist() == ["Correction"]
    assert cur.loc[cur["ChargeCategory"] == "Credit", "BilledCost"].tolist() == [-2500.0]
    assert cur.loc[cur["ChargeCategory"] == "Tax", "PricingCategory"].isna().all()
    tags = json.loads(spot["Tags"].iloc[0])
    assert tags == {"team": "research", "workload": "pretrain-70b"}  # ``user:`` prefix stripped


def test_aws_cur2_savings_plan_lines_conserve_money(lines: pd.DataFrame) -> None:
    cur2 = _fmt(lines, "aws-cur2")
    sp = cur2[cur2["CommitmentDiscountId"].fillna("").str.contains("savingsplan")]
    covered = sp[sp["BilledCost"] > 0 & (sp["ChargeCategory"] == "Usage")]
    negation = sp[sp["BilledCost"] < 0]
    assert len(negation) == 62 and (negation["EffectiveCost"] == 0).all() and (negation["x_GpuHours"] == 0).all()
    assert set(sp["PricingCategory"]) == {"Committed"}
    usage = covered[covered["ChargeCategory"] == "Usage"]
    assert usage["EffectiveCost"].round(4).eq(round(0.9996 * 24, 4)).all()
    fee = cur2[cur2["ChargeCategory"] == "Purchase"]
    assert fee["EffectiveCost"].iloc[0] == pytest.approx(2.0 * 744 - 0.9996 * 24 * 62)  # unused commitment
    p5 = cur2[cur2["x_InstanceType"] == "p5.48xlarge"]  # instance type read from the ``product`` MAP column
    assert set(p5["x_AcceleratorType"]) == {"H100"} and set(p5["RegionId"]) == {"us-east-1"}


def test_aws_cur2_csv_with_json_text_maps(tmp_path: Path, store: Store) -> None:
    table = pa.table(
        {
            "bill_payer_account_id": ["444455556666"],
            "bill_billing_period_start_date": ["2026-10-01T00:00:00.000Z"],
            "line_item_line_item_type": ["Usage"],
            "line_item_usage_start_date": ["2026-10-01T00:00:00.000Z"],
            "line_item_usage_type": ["BoxUsage:g6.12xlarge"],
            "line_item_usage_amount": [10.0],
            "pricing_unit": ["Hrs"],
            "line_item_unblended_cost": [46.016],
            "line_item_currency_code": ["USD"],
            "product": ['{"instance_type": "g6.12xlarge", "region": "us-east-1"}'],
            "resource_tags": ['{"user_team": "product", "aws_created_by": "x"}'],
        }
    )
    path = tmp_path / "cur2.csv"
    pacsv.write_csv(table, path)
    ingest_billing([path], "aws-cur2", store)
    (row,) = store.read("billing").to_pylist()
    assert (row["x_InstanceType"], row["x_GpuHours"], row["RegionId"]) == ("g6.12xlarge", 40.0, "us-east-1")
    assert json.loads(row["Tags"]) == {"aws_created_by": "x", "team": "product"}


def test_gcp_net_of_credits_machine_spec_and_gpu_skus(lines: pd.DataFrame) -> None:
    gcp = _fmt(lines, "gcp")
    raw = [json.loads(x) for x in (BILLING / "gcp-billing-2026-10.jsonl").read_text().splitlines()]
    assert gcp["BilledCost"].sum() == pytest.approx(
        sum(r["cost"] + sum(c["amount"] for c in r["credits"]) for r in raw), abs=0.005
    )
    gpu = gcp[gcp["x_GpuHours"] > 0]
    assert gpu["ChargeDescription"].str.startswith("Nvidia H100 80GB GPU").all()
    spot = gcp[gcp["ChargeDescription"].str.contains("Spot Preemptible", na=False)]
    assert set(spot["PricingCategory"]) == {"Dynamic"}
    core = gcp[gcp["ChargeDescription"].str.contains("Instance Core", na=False)]
    assert set(core["x_InstanceType"]) == {"a3-highgpu-8g"} and (core["x_GpuHours"] == 0).all()
    credited = gcp[gcp["ListCost"] > gcp["BilledCost"]]
    assert len(credited) == 10 and (credited["BilledCost"] == (credited["ListCost"] * 0.9).round(6)).all()
    assert gcp.loc[gcp["ChargeCategory"] == "Tax", "BilledCost"].tolist() == [21.0]


def test_gcp_csv_export_with_credit_arrays(tmp_path: Path, store: Store) -> None:
    header = "billing_account_id,sku.description,usage_start_time,usage_end_time,cost,currency,credits,invoice.month"
    rows = [
        "01A2B3,Nvidia L4 GPU running in Americas,2026-10-01 00:00:00+00:00,2026-10-01 01:00:00+00:00,2.5,USD,"
        '"[{""name"": ""SUD"", ""amount"": -0.5, ""type"": ""SUSTAINED_USAGE_DISCOUNT""}]",202610',
        "01A2B3,L4 core,2026-10-01 00:00:00+00:00,2026-10-01 01:00:00+00:00,1.0,USD,[],202610",
    ]
    path = tmp_path / "gcp.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    summary = ingest_billing([path], "auto", store)
    assert summary.files[0].format == "gcp"
    assert sorted(store.read("billing")["BilledCost"].to_pylist()) == [1.0, 2.0]


def test_azure_quirks_bom_dates_braceless_tags_spellings(lines: pd.DataFrame, tmp_path: Path) -> None:
    az = _fmt(lines, "azure")
    vm = az[az["x_InstanceType"] == "Standard_ND96isr_H100_v5"]
    assert len(vm) == 31 and set(vm["PricingCategory"]) == {"Standard"}  # "On Demand"
    assert vm["ChargePeriodStart"].min() == pd.Timestamp("2026-10-01", tz="UTC")  # MM/DD/YYYY
    assert vm["BillingPeriodEnd"].iloc[0] == pd.Timestamp("2026-11-01", tz="UTC")  # inclusive end → exclusive
    assert json.loads(vm["Tags"].iloc[0]) == {"team": "platform", "workload": "research-notebooks"}
    assert set(vm["RegionId"]) == {"eastus"} and vm["x_GpuHours"].sum() == 744 * 8
    unused = az[az["ResourceId"].isna() & (az["PricingCategory"] == "Committed")]
    assert len(unused) == 1 and unused["x_GpuHours"].iloc[0] == 0


def test_azure_actual_export_and_both_kinds_at_once(store: Store) -> None:
    summary = ingest_billing([AZURE_ACTUAL], "azure", store)
    assert summary.files[0].azure_export == "actual"
    got = store.read("billing").to_pandas()
    assert set(got["PricingCategory"].dropna()) == {"Standard", "Committed"}  # "OnDemand" spelling
    assert got.loc[got["ChargeCategory"] == "Purchase", "BilledCost"].tolist() == [pytest.approx(0.22 * 744)]
    # actual and amortized describe the same money: giving both is refused, nothing is written
    before = sorted(p.name for p in store.files("billing"))
    with pytest.raises(InputError, match="ingest one"):
        ingest_billing([AZURE_ACTUAL, BILLING / "azure-amortized-2026-10.csv"], "auto", store)
    assert sorted(p.name for p in store.files("billing")) == before
    # ... and one after the other, the later replaces the earlier (same idempotency key)
    ingest_billing([BILLING / "azure-amortized-2026-10.csv"], "auto", store)
    assert store.read("billing").num_rows == 93


def test_focus_native_coreweave_committed_and_onprem_other(lines: pd.DataFrame) -> None:
    focus = _fmt(lines, "focus")
    assert set(focus["provider"]) == {"coreweave", "onprem"}
    cw = focus[focus["provider"] == "coreweave"]
    assert set(cw["PricingCategory"]) == {"Committed"} and set(cw["CommitmentDiscountId"]) == {"cw-res-h100-64"}
    onprem = focus[focus["provider"] == "onprem"]
    assert set(onprem["PricingCategory"]) == {"Other"}
    assert set(onprem["x_InstanceType"]) == {"hgx-h100-8", "dgx-a100-8"}


def test_focus_sample_shape_null_literals_and_sku_fallback(tmp_path: Path, store: Store) -> None:
    """FOCUS-Sample-Data style: quoted NULL literals, space-separated timestamps, no x_ columns."""
    path = tmp_path / "focus.csv"
    path.write_text(
        '"BilledCost","BillingAccountId","BillingCurrency","BillingPeriodStart","BillingPeriodEnd","ChargeCategory",'
        '"ChargePeriodStart","ChargePeriodEnd","ConsumedQuantity","ConsumedUnit","PricingCategory","ProviderName",'
        '"RegionId","SkuId","Tags"\n'
        '33.6,"1234567890123","USD","2026-10-01 00:00:00","2026-11-01 00:00:00","Usage","2026-10-01 00:00:00",'
        '"2026-10-01 02:00:00",2,"Hours","Committed","CoreWeave","us-east-04","gd-8xh100ib-i128",NULL\n'
        'NULL,"1234567890123","USD","2026-10-01 00:00:00","2026-11-01 00:00:00","Tax","2026-10-01 00:00:00",'
        '"2026-10-02 00:00:00",NULL,NULL,NULL,"CoreWeave",NULL,NULL,"{""env"": ""prod""}"\n'
    )
    with pytest.raises(InputError, match="row 2: BilledCost is empty"):
        ingest_billing([path], "focus", store)
    path.write_text(path.read_text().replace('NULL,"1234567890123"', '0.5,"1234567890123"'))
    ingest_billing([path], "focus", store)
    got = store.read("billing").to_pandas().sort_values("BilledCost")
    assert got["BillingAccountId"].tolist() == ["1234567890123"] * 2
    usage = got.iloc[1]
    assert (usage["x_InstanceType"], usage["x_GpuHours"], usage["provider"]) == ("gd-8xh100ib-i128", 16.0, "coreweave")


def test_cur_legacy_gzip_part_files_in_one_command(tmp_path: Path, store: Store) -> None:
    """A CUR split into parts lands under one key (one store file per part: ``<key>``, ``<key>-part1``, so
    parts convert in parallel); ingesting the parts together keeps every line."""
    raw = gzip.decompress((BILLING / "aws-cur-2026-10.csv.gz").read_bytes()).decode().splitlines()
    header, body = raw[0], raw[1:]
    half = len(body) // 2
    for i, chunk in enumerate((body[:half], body[half:]), start=1):
        (tmp_path / f"kestrel-{i}.csv.gz").write_bytes(gzip.compress(("\n".join([header, *chunk]) + "\n").encode()))
    summary = ingest_billing([tmp_path], "aws-cur", store)
    assert summary.rows == len(body) and len(summary.sources) == 1
    key = summary.sources[0]["key"]
    assert sorted(p.stem for p in store.files("billing")) == [key, f"{key}-part1"]
    assert len(store.source_files("billing", key)) == 2


def test_gcp_parquet_export_with_nested_columns(tmp_path: Path, store: Store) -> None:
    """BigQuery → Parquet keeps structs (flattened on read) and list<struct> credits/labels."""
    import pyarrow.json as pajson
    import pyarrow.parquet as pq

    nested = pajson.read_json(BILLING / "gcp-billing-2026-10.jsonl")
    assert pa.types.is_list(nested.schema.field("credits").type)
    pq.write_table(nested, tmp_path / "gcp.parquet")
    summary = ingest_billing([tmp_path / "gcp.parquet"], "auto", store)
    got = store.read("billing").to_pandas()
    jsonl = Store(tmp_path / "jsonl")
    ingest_billing([BILLING / "gcp-billing-2026-10.jsonl"], "gcp", jsonl)
    want = jsonl.read("billing").to_pandas()
    assert summary.files[0].format == "gcp" and len(got) == len(want)
    assert got["BilledCost"].sum() == pytest.approx(want["BilledCost"].sum(), abs=1e-6)
    assert got["x_GpuHours"].sum() == pytest.approx(want["x_GpuHours"].sum())
    assert set(got["x_InstanceType"].dropna()) == {"a3-highgpu-8g"}
    assert got["Tags"].dropna().iloc[0] == want["Tags"].dropna().iloc[0]
