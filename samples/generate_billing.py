"""Write Kestrel AI's October 2026 bill in all five billing formats (``samples/billing/``).

Every GPU resource in ``company.py`` is billed exactly once, at ``usd_per_instance_hour × hours`` (daily
lines), in the format its provider exports:

- ``aws-cur-2026-10.csv.gz``   AWS CUR legacy, payer 111122223333 (research org): p5 spot, p4d on-demand and
  spot, an RI-covered m7i control plane (DiscountedUsage + RIFee), S3, a refund, a credit, tax.
- ``aws-cur2-2026-10.parquet`` AWS CUR 2.0 (Data Exports, MAP columns), payer 444455556666 (product org): p5
  and g6 on-demand, c7i nodes under a Compute Savings Plan (covered usage + negation + recurring fee), tax,
  a credit.
- ``gcp-billing-2026-10.jsonl`` GCP detailed export: a3 spot and on-demand as GPU + core + RAM SKUs with the
  machine_spec system label, persistent disk, a promotional credit inside the lines, tax.
- ``azure-amortized-2026-10.csv`` Azure EA amortized export (UTF-8 BOM, MM/DD/YYYY, brace-less tags,
  ``On Demand`` spelling): ND H100 v5, a reserved D8s v5 (amortized + one UnusedReservation day), disks.
  The matching *actual* export is in ``samples/billing-azure-actual/`` (``OnDemand`` spelling, reservation
  purchase up front) — ingest one of the two, not both.
- ``focus-2026-10.csv`` FOCUS 1.2: the CoreWeave reserved block (Committed) and the on-prem chargeback
  (Other), with ``x_InstanceType`` / ``x_GpuCount`` / ``x_AcceleratorType`` columns.

Rerunnable; the seed only moves storage and transfer amounts and line ids:

    python samples/generate_billing.py --seed 7
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

try:
    from samples.company import MONTH_HOURS, MONTH_START, RESOURCES, Resource
except ImportError:  # run as a script from samples/
    from company import MONTH_HOURS, MONTH_START, RESOURCES, Resource  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
OUT = HERE / "billing"
OUT_AZURE_ACTUAL = HERE / "billing-azure-actual"
DAYS = MONTH_HOURS // 24
PERIOD_END = MONTH_START + timedelta(hours=MONTH_HOURS)
AWS_RESEARCH_PAYER, AWS_PRODUCT_PAYER = "111122223333", "444455556666"
GCP_ACCOUNT = "01A2B3-C4D5E6-F7A8B9"
AZURE_ACCOUNT, AZURE_SUB = "87654321", "5f1c0e2a-0000-4b1e-9c55-0d6a6f1e2b01"


def day_hours(r: Resource, day: int) -> int:
    """Hours resource ``r`` ran on ``day`` (0-based day of October)."""
    return max(0, min(r.last_hour, 24 * day + 24) - max(r.first_hour, 24 * day))


def iso(ts: object) -> str:
    return pd.Timestamp(ts).strftime("%Y-%m-%dT%H:%M:%SZ")


def day_start(day: int) -> object:
    return MONTH_START + timedelta(days=day)


def money(x: float) -> float:
    return round(x, 10)


# ------------------------------------------------------------------------------------------- AWS
def _aws_usage_type(r: Resource) -> str:
    prefix = {"us-east-1": "", "us-west-2": "USW2-"}[r.region]
    kind = "SpotUsage" if r.pricing == "Dynamic" else "BoxUsage"
    return f"{prefix}{kind}:{r.instance_type}"


def aws_lines(rng: random.Random, payer: str, resources: list[Resource], extras: str) -> list[dict[str, object]]:
    """Line items in an internal, layout-neutral shape (written as CUR or CUR 2.0 below)."""
    lines: list[dict[str, object]] = []

    def add(**kw: object) -> None:
        base = {
            "id": f"{rng.getrandbits(64):016x}",
            "payer": payer,
            "account": payer,
            "type": "Usage",
            "start": day_start(0),
            "end": PERIOD_END,
            "product_code": "AmazonEC2",
            "product_name": "Amazon Elastic Compute Cloud",
            "usage_type": "",
            "operation": "",
            "az": "",
            "resource": "",
            "amount": 0.0,
            "rate": 0.0,
            "cost": 0.0,
            "description": "",
            "instance_type": "",
            "region": "",
            "sku": "",
            "term": "",
            "unit": "",
            "od_cost": 0.0,
            "ri_arn": "",
            "ri_effective": 0.0,
            "sp_arn": "",
            "sp_effective": 0.0,
            "sp_total": 0.0,
            "sp_used": 0.0,
            "team": "",
            "workload": "",
        }
        base.update(kw)
        lines.append(base)

    for r in resources:
        az = r.region + ("a" if r.pricing == "Standard" else "c")
        for d in range(DAYS):
            h = day_hours(r, d)
            if not h:
                continue
            add(
                start=day_start(d),
                end=day_start(d + 1),
                usage_type=_aws_usage_type(r),
                operation="RunInstances",
                az=az,
                resource=r.resource_id,
                amount=float(h),
                rate=r.usd_per_instance_hour,
                cost=money(r.usd_per_instance_hour * h),
                description=f"${r.usd_per_instance_hour} per {'Spot' if r.pricing == 'Dynamic' else 'On Demand'} "
                f"Linux {r.instance_type} Instance Hour",
                instance_type=r.instance_type,
                region=r.region,
                sku=_sku(r.instance_type, r.region),
                term="Spot" if r.pricing == "Dynamic" else "OnDemand",
                unit="Hrs",
                od_cost=money(_od_rate(r) * h),
                team=r.team,
                workload=r.workload,
            )
            # EBS gp3 volume attached to the instance (GB-month pro-rated per day)
            gb = 2000 + rng.randrange(0, 4000, 500)
            add(
                start=day_start(d),
                end=day_start(d + 1),
                usage_type=f"{'USW2-' if r.region == 'us-west-2' else ''}EBS:VolumeUsage.gp3",
                operation="CreateVolume-Gp3",
                az=az,
                resource=f"vol-{r.resource_id[2:]}",
                amount=round(gb / 31, 6),
                rate=0.08,
                cost=money(0.08 * gb / 31),
                description="$0.08 per GB-month of General Purpose (gp3) provisioned storage",
                region=r.region,
                sku=_sku("gp3", r.region),
                term="OnDemand",
                unit="GB-Mo",
                od_cost=money(0.08 * gb / 31),
                team=r.team,
                workload=r.workload,
            )
    usage_total = sum(float(x["cost"]) for x in lines)
    if extras == "research":
        # Two m7i.4xlarge control-plane nodes covered by a no-upfront RI (fully used).
        ri_arn = f"arn:aws:ec2:us-east-1:{payer}:reserved-instances/7f0c1d2e-ri-m7i"
        for node in range(2):
            for d in range(DAYS):
                add(
                    type="DiscountedUsage",
                    start=day_start(d),
                    end=day_start(d + 1),
                    usage_type="BoxUsage:m7i.4xlarge",
                    operation="RunInstances",
                    az="us-east-1b",
                    resource=f"i-0f1b2c3d4e5f7{node:04d}",
                    amount=24.0,
                    description="m7i.4xlarge reserved instance applied",
                    instance_type="m7i.4xlarge",
                    region="us-east-1",
                    sku=_sku("m7i.4xlarge", "us-east-1"),
                    term="Reserved",
                    unit="Hrs",
                    od_cost=money(0.8064 * 24),
                    ri_arn=ri_arn,
                    ri_effective=money(0.508 * 24),
                    team="platform",
                    workload="control-plane",
                )
        add(
            type="RIFee",
            usage_type="HeavyUsage:m7i.4xlarge",
            operation="RunInstances",
            amount=2 * float(MONTH_HOURS),
            rate=0.508,
            cost=money(0.508 * 2 * MONTH_HOURS),
            description="USD 0.508 hourly fee per Linux/UNIX (Amazon VPC), m7i.4xlarge instance",
            region="us-east-1",
            term="Reserved",
            unit="Hrs",
            ri_arn=ri_arn,
        )
        for d in range(DAYS):
            gb = 40000 + rng.randrange(0, 5000)
            add(
                start=day_start(d),
                end=day_start(d + 1),
                product_code="AmazonS3",
                product_name="Amazon Simple Storage Service",
                usage_type="TimedStorage-ByteHrs",
                operation="StandardStorage",
                resource="kestrel-checkpoints",
                amount=round(gb / 31, 6),
                rate=0.023,
                cost=money(0.023 * gb / 31),
                description="$0.023 per GB - first 50 TB / month of storage used",
                region="us-east-1",
                sku=_sku("s3", "us-east-1"),
                term="OnDemand",
                unit="GB-Mo",
                od_cost=money(0.023 * gb / 31),
                team="research",
                workload="pretrain-70b",
            )
        add(
            type="Refund",
            start=day_start(11),
            end=day_start(12),
            usage_type="USW2-BoxUsage:p4d.24xlarge",
            resource="i-0c1b2c3d4e5f60000",
            cost=-120.5,
            description="Refund for p4d.24xlarge capacity interruption on 2026-09-28",
            region="us-west-2",
            instance_type="p4d.24xlarge",
        )
        add(type="Credit", cost=-2500.0, description="AWS Activate credit", region="us-east-1")
    else:
        # Two c7i.8xlarge nodes under a Compute Savings Plan ($2.00/h commitment).
        sp_arn = f"arn:aws:savingsplans::{payer}:savingsplan/5c0d9e8f-sp-compute"
        for node in range(2):
            for d in range(DAYS):
                od = money(1.428 * 24)
                common = dict(
                    start=day_start(d),
                    end=day_start(d + 1),
                    usage_type="BoxUsage:c7i.8xlarge",
                    operation="RunInstances",
                    az="us-east-1a",
                    resource=f"i-0a9b2c3d4e5f7{node:04d}",
                    amount=24.0,
                    rate=1.428,
                    instance_type="c7i.8xlarge",
                    region="us-east-1",
                    sku=_sku("c7i.8xlarge", "us-east-1"),
                    unit="Hrs",
                    od_cost=od,
                    sp_arn=sp_arn,
                    team="product",
                    workload="api-gateway",
                )
                add(
                    type="SavingsPlanCoveredUsage",
                    cost=od,
                    sp_effective=money(0.9996 * 24),
                    description="Compute Savings Plan covered c7i.8xlarge usage",
                    term="OnDemand",
                    **common,
                )
                add(
                    type="SavingsPlanNegation",
                    cost=-od,
                    description=f"SavingsPlanNegation used by AccountId : {payer} and UsageSku : c7i.8xlarge",
                    term="OnDemand",
                    **common,
                )
        used = money(0.9996 * 24 * 2 * DAYS)
        add(
            type="SavingsPlanRecurringFee",
            product_code="ComputeSavingsPlans",
            product_name="Savings Plans for AWS Compute usage",
            usage_type="ComputeSP:1yrNoUpfront",
            amount=float(MONTH_HOURS),
            rate=2.0,
            cost=money(2.0 * MONTH_HOURS),
            description="1 year No Upfront Compute Savings Plan",
            unit="Hrs",
            sp_arn=sp_arn,
            sp_total=money(2.0 * MONTH_HOURS),
            sp_used=used,
        )
        add(type="Credit", cost=-1000.0, description="AWS promotional credit", region="us-east-1")
    add(
        type="Tax",
        cost=round(0.02 * usage_total, 2),
        description="Tax for product code AmazonEC2",
        product_code="AmazonEC2",
    )
    return lines


def _sku(name: str, region: str) -> str:
    return "".join("ABCDEFGHJKLMNPQRSTUVWXYZ23456789"[(ord(c) * 7 + i * 13) % 32] for i, c in enumerate(name + region))[
        :16
    ].ljust(16, "Q")


def _od_rate(r: Resource) -> float:
    return {"p5.48xlarge": 55.04, "p4d.24xlarge": 21.96, "g6.12xlarge": 4.6016}.get(
        r.instance_type, r.usd_per_instance_hour
    )


def write_cur_legacy(lines: list[dict[str, object]], path: Path) -> None:
    rows = []
    for x in lines:
        rows.append(
            {
                "identity/LineItemId": x["id"],
                "identity/TimeInterval": f"{iso(x['start'])}/{iso(x['end'])}",
                "bill/InvoiceId": "EUINUS26-0042",
                "bill/BillingEntity": "AWS",
                "bill/BillType": "Anniversary",
                "bill/PayerAccountId": x["payer"],
                "bill/BillingPeriodStartDate": iso(MONTH_START),
                "bill/BillingPeriodEndDate": iso(PERIOD_END),
                "lineItem/UsageAccountId": x["account"],
                "lineItem/LineItemType": x["type"],
                "lineItem/UsageStartDate": iso(x["start"]),
                "lineItem/UsageEndDate": iso(x["end"]),
                "lineItem/ProductCode": x["product_code"],
                "lineItem/UsageType": x["usage_type"],
                "lineItem/Operation": x["operation"],
                "lineItem/AvailabilityZone": x["az"],
                "lineItem/ResourceId": x["resource"],
                "lineItem/UsageAmount": x["amount"],
                "lineItem/CurrencyCode": "USD",
                "lineItem/UnblendedRate": x["rate"],
                "lineItem/UnblendedCost": x["cost"],
                "lineItem/BlendedCost": x["cost"],
                "lineItem/LineItemDescription": x["description"],
                "lineItem/TaxType": "Sales tax" if x["type"] == "Tax" else "",
                "product/ProductName": x["product_name"],
                "product/instanceType": x["instance_type"],
                "product/region": x["region"],
                "product/sku": x["sku"],
                "pricing/term": x["term"],
                "pricing/unit": x["unit"],
                "pricing/publicOnDemandCost": x["od_cost"],
                "reservation/ReservationARN": x["ri_arn"],
                "reservation/EffectiveCost": x["ri_effective"],
                "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod": 0.0,
                "reservation/UnusedRecurringFee": 0.0,
                "savingsPlan/SavingsPlanARN": x["sp_arn"],
                "savingsPlan/SavingsPlanEffectiveCost": x["sp_effective"],
                "resourceTags/user:team": x["team"],
                "resourceTags/user:workload": x["workload"],
            }
        )
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        fh.write(pd.DataFrame(rows).to_csv(index=False, lineterminator="\n").encode())


def write_cur2(lines: list[dict[str, object]], path: Path) -> None:
    str_map = pa.map_(pa.string(), pa.string())
    cols: dict[str, list[object]] = {k: [] for k in CUR2_COLUMNS}
    for x in lines:
        product = {"product_name": x["product_name"], "region": x["region"], "sku": x["sku"]}
        if x["instance_type"]:
            product["instance_type"] = x["instance_type"]
        tags = {f"user_{k}": x[k] for k in ("team", "workload") if x[k]}
        values = {
            "identity_line_item_id": x["id"],
            "bill_payer_account_id": x["payer"],
            "bill_billing_period_start_date": MONTH_START,
            "bill_billing_period_end_date": PERIOD_END,
            "line_item_usage_account_id": x["account"],
            "line_item_line_item_type": x["type"],
            "line_item_usage_start_date": x["start"],
            "line_item_usage_end_date": x["end"],
            "line_item_product_code": x["product_code"],
            "line_item_usage_type": x["usage_type"],
            "line_item_operation": x["operation"],
            "line_item_availability_zone": x["az"] or None,
            "line_item_resource_id": x["resource"] or None,
            "line_item_usage_amount": x["amount"],
            "line_item_currency_code": "USD",
            "line_item_unblended_rate": x["rate"],
            "line_item_unblended_cost": x["cost"],
            "line_item_line_item_description": x["description"],
            "product": [(k, v) for k, v in product.items() if v],
            "product_region_code": x["region"] or None,
            "pricing_term": x["term"] or None,
            "pricing_unit": x["unit"] or None,
            "pricing_public_on_demand_cost": x["od_cost"],
            "reservation_reservation_arn": x["ri_arn"] or None,
            "reservation_effective_cost": x["ri_effective"],
            "savings_plan_savings_plan_arn": x["sp_arn"] or None,
            "savings_plan_savings_plan_effective_cost": x["sp_effective"],
            "savings_plan_total_commitment_to_date": x["sp_total"],
            "savings_plan_used_commitment": x["sp_used"],
            "resource_tags": list(tags.items()),
        }
        for k in CUR2_COLUMNS:
            cols[k].append(values[k])
    ts = pa.timestamp("ms", tz="UTC")
    schema = pa.schema(
        [
            (
                k,
                str_map
                if k in ("product", "resource_tags")
                else ts
                if k.endswith(("_start_date", "_end_date"))
                else CUR2_TYPES.get(k, pa.string()),
            )
            for k in CUR2_COLUMNS
        ]
    )
    pq.write_table(pa.table(cols, schema=schema), path, compression="zstd")


CUR2_COLUMNS = [
    "identity_line_item_id",
    "bill_payer_account_id",
    "bill_billing_period_start_date",
    "bill_billing_period_end_date",
    "line_item_usage_account_id",
    "line_item_line_item_type",
    "line_item_usage_start_date",
    "line_item_usage_end_date",
    "line_item_product_code",
    "line_item_usage_type",
    "line_item_operation",
    "line_item_availability_zone",
    "line_item_resource_id",
    "line_item_usage_amount",
    "line_item_currency_code",
    "line_item_unblended_rate",
    "line_item_unblended_cost",
    "line_item_line_item_description",
    "product",
    "product_region_code",
    "pricing_term",
    "pricing_unit",
    "pricing_public_on_demand_cost",
    "reservation_reservation_arn",
    "reservation_effective_cost",
    "savings_plan_savings_plan_arn",
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date",
    "savings_plan_used_commitment",
    "resource_tags",
]
CUR2_TYPES = {
    k: pa.float64() for k in CUR2_COLUMNS if k.endswith(("_amount", "_cost", "_rate", "_to_date", "_used_commitment"))
}


# ------------------------------------------------------------------------------------------- GCP
GCP_SPLIT = {"gpu": 0.80, "core": 0.12, "ram": 0.08}  # share of the a3 instance-hour price per SKU


def gcp_records(rng: random.Random) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    region_group = "EMEA"

    def rec(r: Resource | None, d: int, sku_id: str, sku: str, cost: float, amount: float, unit: str, **kw: object):
        start = day_start(d)
        row = {
            "billing_account_id": GCP_ACCOUNT,
            "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
            "sku": {"id": sku_id, "description": sku},
            "usage_start_time": pd.Timestamp(start).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "usage_end_time": pd.Timestamp(start + timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "project": {"id": "kestrel-eu", "name": "Kestrel EU"},
            "labels": [{"key": "team", "value": r.team}, {"key": "workload", "value": r.workload}] if r else [],
            "system_labels": [
                {"key": "compute.googleapis.com/machine_spec", "value": r.instance_type},
                {"key": "compute.googleapis.com/cores", "value": "208"},
                {"key": "compute.googleapis.com/memory", "value": "1916928"},
            ]
            if r
            else [],
            "location": {
                "location": "europe-west4",
                "country": "NL",
                "region": "europe-west4",
                "zone": "europe-west4-b",
            },
            "export_time": pd.Timestamp(start + timedelta(days=1, hours=6)).strftime("%Y-%m-%d %H:%M:%S.%f UTC"),
            "cost": round(cost, 6),
            "currency": "USD",
            "currency_conversion_rate": 1.0,
            "usage": {"amount": amount, "unit": unit, "amount_in_pricing_units": amount, "pricing_unit": unit},
            "credits": [],
            "invoice": {"month": "202610"},
            "cost_type": "regular",
            "resource": {
                "name": r.resource_id.rsplit("/", 1)[-1],
                "global_name": "//compute.googleapis.com/" + r.resource_id,
            }
            if r
            else {"name": None, "global_name": None},
        }
        row.update(kw)
        out.append(row)

    for r in (x for x in RESOURCES if x.provider == "gcp"):
        spot = r.pricing == "Dynamic"
        attach = "attached to Spot Preemptible VMs" if spot else "running"
        pre = "Spot Preemptible " if spot else ""
        for d in range(DAYS):
            h = day_hours(r, d)
            if not h:
                continue
            total = r.usd_per_instance_hour * h
            gpu_cost = round(total * GCP_SPLIT["gpu"], 6)
            core_cost = round(total * GCP_SPLIT["core"], 6)
            ram_cost = round(total - gpu_cost - core_cost, 6)  # exact total per day
            credits = []
            if not spot and d < 10:
                credits = [
                    {
                        "name": "Kestrel launch promotion",
                        "amount": -round(0.1 * gpu_cost, 6),
                        "full_name": "Kestrel launch promotion",
                        "id": "promo-kestrel-2026",
                        "type": "PROMOTION",
                    }
                ]
            rec(
                r,
                d,
                "9A2B-H100-" + ("SPOT" if spot else "ODEM"),
                f"Nvidia H100 80GB GPU {attach} in {region_group}"
                if spot
                else f"Nvidia H100 80GB GPU running in {region_group}",
                gpu_cost,
                float(h * r.gpus * 3600),
                "seconds",
                credits=credits,
            )
            rec(
                r,
                d,
                "7C1D-A3CO-" + ("SPOT" if spot else "ODEM"),
                f"{pre}A3 Instance Core running in {region_group}",
                core_cost,
                float(h * 208 * 3600),
                "seconds",
            )
            rec(
                r,
                d,
                "5E3F-A3RA-" + ("SPOT" if spot else "ODEM"),
                f"{pre}A3 Instance Ram running in {region_group}",
                ram_cost,
                float(h * 1872 * 3600 * 2**30),
                "byte-seconds",
            )
            gb = 2000 + rng.randrange(0, 2000, 250)
            rec(
                r,
                d,
                "D973-5D65-BAB2",
                "Balanced PD Capacity in Netherlands",
                round(0.11 * gb / 31, 6),
                float(gb * 2**30 * 86400),
                "byte-seconds",
                system_labels=[],
            )
    # VAT (21 %) on a EUR 100-equivalent taxable support subscription, billed as a tax line.
    rec(None, DAYS - 1, "TAX-NL-VAT", "Tax", 21.0, 0.0, "", cost_type="tax")
    out[-1]["usage"] = {"amount": None, "unit": None, "amount_in_pricing_units": None, "pricing_unit": None}
    return out


# ----------------------------------------------------------------------------------------- Azure
AZURE_HEADER = [
    "BillingAccountId", "BillingAccountName", "BillingPeriodStartDate", "BillingPeriodEndDate", "BillingProfileId",
    "BillingProfileName", "AccountName", "SubscriptionId", "SubscriptionName", "Date", "Product", "PartNumber",
    "MeterId", "ServiceFamily", "MeterCategory", "MeterSubCategory", "MeterRegion", "MeterName", "Quantity",
    "EffectivePrice", "Cost", "UnitPrice", "BillingCurrency", "ResourceLocation", "AvailabilityZone",
    "ConsumedService", "ResourceId", "ResourceName", "AdditionalInfo", "Tags", "UnitOfMeasure", "ResourceGroup",
    "ReservationId", "ReservationName", "ChargeType", "Frequency", "PayGPrice", "PricingModel", "benefitId",
]  # fmt: skip


def azure_rows(kind: str) -> list[dict[str, object]]:
    """EA export rows; ``kind`` is ``actual`` or ``amortized`` (they differ only for the reservation)."""
    od = "On Demand" if kind == "amortized" else "OnDemand"
    rows: list[dict[str, object]] = []
    res_id = "b7e6c1d0-res-d8s"
    res_benefit = f"/providers/Microsoft.Capacity/reservationOrders/a1b2c3d4/reservations/{res_id}"

    def row(d: int, **kw: object) -> None:
        base = {
            "BillingAccountId": AZURE_ACCOUNT,
            "BillingAccountName": "Kestrel AI",
            "BillingPeriodStartDate": "10/01/2026",
            "BillingPeriodEndDate": "10/31/2026",
            "BillingProfileId": AZURE_ACCOUNT,
            "BillingProfileName": "Kestrel AI",
            "AccountName": "Platform",
            "SubscriptionId": AZURE_SUB,
            "SubscriptionName": "kestrel-platform",
            "Date": pd.Timestamp(day_start(d)).strftime("%m/%d/%Y"),
            "BillingCurrency": "USD",
            "ResourceLocation": "EastUS",
            "AvailabilityZone": "",
            "ConsumedService": "Microsoft.Compute",
            "ResourceGroup": "ml",
            "ReservationId": "",
            "ReservationName": "",
            "Frequency": "UsageBased",
            "benefitId": "",
        }
        base.update(kw)
        rows.append(base)

    r = next(x for x in RESOURCES if x.provider == "azure")
    for d in range(DAYS):
        h = day_hours(r, d)
        if not h:
            continue
        vm = r.resource_id.rsplit("/", 1)[-1]
        info = json.dumps({"UsageType": "ComputeHR", "ServiceType": r.instance_type, "VMName": vm, "VCPUs": 96})
        row(
            d,
            Product="Virtual Machines NDisrH100v5 Series - ND96isr H100 v5 - US East",
            PartNumber="AAH-12345",
            MeterId="3f9c2b1a-nd96-h100-v5",
            ServiceFamily="Compute",
            MeterCategory="Virtual Machines",
            MeterSubCategory="NDisrH100v5 Series",
            MeterRegion="US East",
            MeterName="ND96isr H100 v5",
            Quantity=float(h),
            EffectivePrice=r.usd_per_instance_hour,
            Cost=round(r.usd_per_instance_hour * h, 6),
            UnitPrice=r.usd_per_instance_hour,
            ResourceId=r.resource_id,
            ResourceName=vm,
            AdditionalInfo=info,
            Tags=f'"team": "{r.team}","workload": "{r.workload}"',
            UnitOfMeasure="1 Hour",
            ChargeType="Usage",
            PayGPrice=r.usd_per_instance_hour,
            PricingModel=od,
        )
        row(
            d,
            Product="Premium SSD v2 Managed Disks - Provisioned Capacity - US East",
            PartNumber="AAD-99887",
            MeterId="8d7e6f5a-pssd-v2",
            ServiceFamily="Storage",
            MeterCategory="Storage",
            MeterSubCategory="Azure Premium SSD v2 Managed Disks",
            MeterRegion="US East",
            MeterName="Premium SSD v2 Capacity",
            Quantity=float(4096 * 24),
            EffectivePrice=0.000114,
            Cost=round(0.000114 * 4096 * 24, 6),
            UnitPrice=0.000114,
            ResourceId=r.resource_id.replace("virtualMachines/nd-h100-0", "disks/nd-h100-0-data"),
            ResourceName="nd-h100-0-data",
            AdditionalInfo="",
            Tags=f'"team": "{r.team}","workload": "{r.workload}"',
            UnitOfMeasure="1 GiB Hour",
            ChargeType="Usage",
            PayGPrice=0.000114,
            PricingModel=od,
        )
    # A reserved D8s v5 (1-year, $0.22/h effective) running every day but day 20 (an unused day).
    d8s = "/subscriptions/" + AZURE_SUB + "/resourceGroups/ml/providers/Microsoft.Compute/virtualMachines/gateway-0"
    for d in range(DAYS):
        used = d != 20
        common = dict(
            Product="Virtual Machines Dsv5 Series - D8s v5 - US East",
            PartNumber="AAB-33221",
            MeterId="1a2b3c4d-d8s-v5",
            ServiceFamily="Compute",
            MeterCategory="Virtual Machines",
            MeterSubCategory="Dsv5 Series",
            MeterRegion="US East",
            MeterName="D8s v5",
            Quantity=24.0,
            UnitPrice=0.384,
            PayGPrice=0.384,
            UnitOfMeasure="1 Hour",
            ReservationId=res_id,
            ReservationName="gateway-d8s-1y",
            benefitId=res_benefit,
        )
        if used:
            row(
                d,
                EffectivePrice=0.22 if kind == "amortized" else 0.0,
                Cost=round(0.22 * 24, 6) if kind == "amortized" else 0.0,
                ResourceId=d8s,
                ResourceName="gateway-0",
                AdditionalInfo='{"ServiceType":"Standard_D8s_v5","VMName":"gateway-0","VCPUs":8}',
                Tags='"team": "platform","workload": "gateway"',
                ChargeType="Usage",
                PricingModel="Reservation",
                **common,
            )
        elif kind == "amortized":
            row(
                d,
                EffectivePrice=0.22,
                Cost=round(0.22 * 24, 6),
                ResourceId="",
                ResourceName="",
                AdditionalInfo="",
                Tags="",
                ChargeType="UnusedReservation",
                PricingModel="Reservation",
                **common,
            )
    if kind == "actual":
        row(
            0,
            Product="Reserved VM Instance, Standard_D8s_v5, US East, 1 Year",
            PartNumber="",
            MeterId="",
            ServiceFamily="Compute",
            MeterCategory="Virtual Machines",
            MeterSubCategory="",
            MeterRegion="",
            MeterName="Reservation-Base VM",
            Quantity=1.0,
            EffectivePrice=round(0.22 * MONTH_HOURS, 2),
            Cost=round(0.22 * MONTH_HOURS, 6),
            UnitPrice=round(0.22 * MONTH_HOURS, 2),
            ResourceId="",
            ResourceName="",
            AdditionalInfo="",
            Tags="",
            UnitOfMeasure="1 Hour",
            ReservationId=res_id,
            ReservationName="gateway-d8s-1y",
            ChargeType="Purchase",
            Frequency="Recurring",
            PayGPrice=0.0,
            PricingModel="Reservation",
            benefitId=res_benefit,
        )
    return rows


def write_azure(rows: list[dict[str, object]], path: Path) -> None:
    frame = pd.DataFrame(rows, columns=AZURE_HEADER)
    path.write_bytes(b"\xef\xbb\xbf" + frame.to_csv(index=False, lineterminator="\n").encode())


# ----------------------------------------------------------------------------------------- FOCUS
def focus_rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for r in (x for x in RESOURCES if x.provider in ("coreweave", "onprem")):
        cw = r.provider == "coreweave"
        for d in range(DAYS):
            h = day_hours(r, d)
            if not h:
                continue
            cost = round(r.usd_per_instance_hour * h, 6)
            rows.append(
                {
                    "BillingAccountId": "cw-kestrel-001" if cw else "kestrel-infra-chargeback",
                    "BillingAccountName": "Kestrel AI" if cw else "Kestrel AI Infrastructure",
                    "BillingCurrency": "USD",
                    "BillingPeriodStart": "2026-10-01T00:00:00Z",
                    "BillingPeriodEnd": "2026-11-01T00:00:00Z",
                    "ChargePeriodStart": iso(day_start(d)),
                    "ChargePeriodEnd": iso(day_start(d + 1)),
                    "BilledCost": cost,
                    "EffectiveCost": cost,
                    "ListCost": round((35.0 if cw else r.usd_per_instance_hour) * h, 6),
                    "ContractedCost": cost,
                    "ChargeCategory": "Usage",
                    "ChargeClass": None,
                    "ChargeDescription": f"{r.instance_type} node-hours"
                    + (" (reserved block cw-res-h100-64)" if cw else " (power, cooling, ops chargeback)"),
                    "ChargeFrequency": "Usage-Based",
                    "PricingCategory": r.pricing,
                    "CommitmentDiscountId": "cw-res-h100-64" if cw else None,
                    "CommitmentDiscountType": "Reserved capacity" if cw else None,
                    "ConsumedQuantity": float(h),
                    "ConsumedUnit": "Hours",
                    "PricingQuantity": float(h),
                    "PricingUnit": "Hours",
                    "ResourceId": r.resource_id,
                    "ResourceName": r.resource_id,
                    "ResourceType": "GPU node",
                    "ServiceName": "CoreWeave Kubernetes Service" if cw else "Kestrel GPU Cluster",
                    "ServiceCategory": "Compute",
                    "ProviderName": "CoreWeave" if cw else "On-Premises",
                    "PublisherName": "CoreWeave" if cw else "Kestrel AI Infrastructure",
                    "InvoiceIssuerName": "CoreWeave" if cw else "Kestrel AI Infrastructure",
                    "RegionId": r.region,
                    "RegionName": r.region,
                    "AvailabilityZone": None,
                    "SkuId": r.instance_type,
                    "SkuPriceId": f"{r.instance_type}-{'reserved' if cw else 'chargeback'}",
                    "SubAccountId": "kestrel-prod" if cw else r.substrate,
                    "SubAccountName": "Kestrel production" if cw else r.substrate,
                    "Tags": json.dumps({"team": r.team, "workload": r.workload}, sort_keys=True),
                    "x_InstanceType": r.instance_type,
                    "x_GpuCount": r.gpus,
                    "x_AcceleratorType": r.accelerator,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    actual_dir = out.parent / OUT_AZURE_ACTUAL.name
    actual_dir.mkdir(parents=True, exist_ok=True)

    aws = [r for r in RESOURCES if r.provider == "aws"]
    research = [r for r in aws if r.pricing == "Dynamic" or r.instance_type == "p4d.24xlarge"]
    product = [r for r in aws if r not in research]
    write_cur_legacy(aws_lines(rng, AWS_RESEARCH_PAYER, research, "research"), out / "aws-cur-2026-10.csv.gz")
    write_cur2(aws_lines(rng, AWS_PRODUCT_PAYER, product, "product"), out / "aws-cur2-2026-10.parquet")
    with open(out / "gcp-billing-2026-10.jsonl", "w", encoding="utf-8") as fh:
        for rec in gcp_records(rng):
            fh.write(json.dumps(rec) + "\n")
    write_azure(azure_rows("amortized"), out / "azure-amortized-2026-10.csv")
    write_azure(azure_rows("actual"), actual_dir / "azure-actual-2026-10.csv")
    pd.DataFrame(focus_rows()).to_csv(out / "focus-2026-10.csv", index=False, lineterminator="\n")
    for p in sorted([*out.iterdir(), *actual_dir.iterdir()]):
        print(f"{p.relative_to(HERE.parent)}  {p.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
