"""Generated FOCUS exports in the shape each provider's own FOCUS export has (issue 11, item 1).

Each writer returns the file and what a correct reader must find: GPU-hours per accelerator, BilledCost per
currency and the GPU instance types the pricebook does not know. Rows are our own, generated with a seed;
the column sets follow the providers' documentation:

- AWS Data Exports "FOCUS 1.0 with AWS columns": the FOCUS columns plus ``x_CostCategories``,
  ``x_Discounts``, ``x_Operation``, ``x_ServiceCode``, ``x_UsageType``; EC2 lines describe themselves as
  "$1.624 per On Demand Linux g5.4xlarge Instance Hour", consumed in ``Hrs``.
- Microsoft Cost Management FocusCost 1.0: FOCUS plus ``x_SkuDetails`` (JSON, ``ServiceType`` = VM size),
  ``x_SkuMeterCategory`` / ``x_SkuMeterSubcategory`` / ``x_SkuMeterName``, ``x_ResourceGroupName``…;
  FocusCost 1.2-preview renames the meter to ``SkuMeter`` and adds ``SkuPriceDetails``.
- Google Cloud FOCUS BigQuery export (as CSV): FOCUS plus ``x_Credits``, ``x_CostType``, ``x_ServiceId``,
  ``x_Location``, ``x_ExportTime``; GPUs are their own per-GPU SKUs ("Nvidia H100 80GB GPU running in
  Americas"), consumed in seconds, next to core and RAM SKUs.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

FOCUS_10 = [
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "SkuId",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
]
AWS_X = ["x_CostCategories", "x_Discounts", "x_Operation", "x_ServiceCode", "x_UsageType"]
AZURE_10_X = ["x_ResourceGroupName", "x_SkuDetails", "x_SkuMeterCategory", "x_SkuMeterName", "x_SkuMeterSubcategory"]
AZURE_12 = [*FOCUS_10, "SkuMeter", "SkuPriceDetails", "x_ResourceGroupName", "x_SkuDetails", "x_SkuMeterCategory"]
GCP_X = ["x_Credits", "x_CostType", "x_ExportTime", "x_Location", "x_ServiceId"]

START = datetime(2026, 10, 1, tzinfo=UTC)


@dataclass
class Expected:
    """What the file holds, worked out from the rows as they were written (independently of the parser)."""

    gpu_hours: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    billed: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    unknown_gpu_types: set[str] = field(default_factory=set)
    cpu_types: set[str] = field(default_factory=set)
    rows: int = 0


def _iso(t: datetime, style: str) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if style == "iso" else t.strftime("%Y-%m-%d %H:%M:%S")


def _base(t: datetime, hours: float, cost: float, currency: str, account: str, style: str = "iso") -> dict:
    return {
        "BilledCost": f"{cost:.10f}",
        "EffectiveCost": f"{cost:.10f}",
        "ListCost": f"{cost:.10f}",
        "ContractedCost": f"{cost:.10f}",
        "BillingAccountId": account,
        "BillingAccountName": "Kestrel AI",
        "BillingCurrency": currency,
        "BillingPeriodStart": _iso(START, style),
        "BillingPeriodEnd": _iso(datetime(2026, 11, 1, tzinfo=UTC), style),
        "ChargePeriodStart": _iso(t, style),
        "ChargePeriodEnd": _iso(t + timedelta(hours=max(hours, 1.0)), style),
        "ChargeCategory": "Usage",
        "ChargeFrequency": "Usage-Based",
        "PricingCategory": "Standard",
    }


def _write(path: Path, header: list[str], rows: list[dict], null: str = "") -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header, extrasaction="raise")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, null) for k in header})
    return path


def aws_focus_10(path: Path, seed: int = 1) -> tuple[Path, Expected]:
    """AWS "FOCUS 1.0 with AWS columns": on-demand and spot GPU hours, CPU hours, storage, tax, a credit."""
    rng = np.random.default_rng(seed)
    exp = Expected()
    # (type, GPUs, accelerator or None for CPU, $/h, known to the pricebook?)
    types = [("g5.4xlarge", 1, "A10G", 1.624, True), ("p5.48xlarge", 8, "H100", 98.32, True),
             ("p4de.24xlarge", 8, "A100", 40.96, True), ("c5.xlarge", 0, None, 0.17, False),
             ("m7i.2xlarge", 0, None, 0.403, False), ("g6f.4xlarge", 1, "L4", 1.1, False),
             ("p7.48xlarge", 8, "B300", 142.0, False)]  # fmt: skip
    rows = []
    for h in range(72):
        t = START + timedelta(hours=h)
        for name, gpus, acc, rate, known in types:
            if rng.random() < 0.15:
                continue
            spot = name.startswith("p5") and h % 3 == 0
            qty = 1.0 if rng.random() < 0.9 else round(float(rng.uniform(0.1, 1.0)), 4)
            cost = qty * rate * (0.4 if spot else 1.0)
            r = _base(t, qty, cost, "USD", "111122223333", style="plain")
            usage_type = ("USE1-SpotUsage:" if spot else "USE1-BoxUsage:") + name
            # spot lines name the type only in x_UsageType
            spot_text = f"${rate * 0.4:.3f} per Spot Linux instance-hour in us-east-1"
            r.update(
                ChargeDescription=spot_text if spot else f"${rate:.3f} per On Demand Linux {name} Instance Hour",
                PricingCategory="Dynamic" if spot else "Standard",
                ConsumedQuantity=f"{qty}", ConsumedUnit="Hrs", PricingQuantity=f"{qty}", PricingUnit="Hrs",
                ProviderName="AWS", PublisherName="AWS", InvoiceIssuerName="AWS", RegionId="us-east-1",
                RegionName="US East (N. Virginia)", ResourceId=f"arn:aws:ec2:us-east-1:111122223333:instance/i-{name}",
                ServiceCategory="Compute", ServiceName="Amazon Elastic Compute Cloud", SkuId="8AXYZ" + name[:3].upper(),
                SubAccountId="444455556666", Tags=json.dumps({"team": "research" if gpus else "platform"}),
                x_Operation="RunInstances", x_ServiceCode="AmazonEC2", x_UsageType=usage_type,
                x_CostCategories="{}", x_Discounts="{}",
            )  # fmt: skip
            rows.append(r)
            exp.billed["USD"] += cost
            if acc and known:
                exp.gpu_hours[acc] += qty * gpus
            elif acc:
                exp.unknown_gpu_types.add(name)
            else:
                exp.cpu_types.add(name)
    storage = _base(START, 1, 12.5, "USD", "111122223333", style="plain")
    storage.update(ChargeDescription="$0.08 per GB-month of General Purpose SSD (gp3) provisioned storage",
                   ConsumedQuantity="156.25", ConsumedUnit="GB-Mo", ProviderName="AWS", ServiceCategory="Storage",
                   x_UsageType="USE1-EBS:VolumeUsage.gp3", x_ServiceCode="AmazonEC2")  # fmt: skip
    tax = _base(START, 1, 310.0, "USD", "111122223333", style="plain")
    tax.update(ChargeCategory="Tax", ChargeDescription="Tax for product code AmazonEC2", ProviderName="AWS",
               PricingCategory="", ChargeFrequency="One-Time")  # fmt: skip
    credit = _base(START, 1, -50.0, "USD", "111122223333", style="plain")
    credit.update(ChargeCategory="Credit", ChargeDescription="AWS Activate credit", ProviderName="AWS",
                  PricingCategory="", ChargeFrequency="One-Time")  # fmt: skip
    for extra in (storage, tax, credit):
        rows.append(extra)
        exp.billed["USD"] += float(extra["BilledCost"])
    exp.rows = len(rows)
    return _write(path, FOCUS_10 + AWS_X, rows, null="NULL"), exp


def azure_focus(path: Path, version: str = "1.0", seed: int = 2) -> tuple[Path, Expected]:
    """Microsoft FocusCost 1.0 (x_SkuDetails, x_SkuMeterName) or 1.2-preview (SkuMeter, SkuPriceDetails), in EUR."""
    rng = np.random.default_rng(seed)
    exp = Expected()
    # (VM size, meter name, GPUs, accelerator or None for CPU, €/h, known to the pricebook?)
    sizes = [("Standard_ND96isr_H100_v5", "ND96isr H100 v5", 8, "H100", 90.0, True),
             ("Standard_NC24ads_A100_v4", "NC24ads A100 v4", 1, "A100", 3.4, True),
             ("Standard_D8s_v5", "D8s v5", 0, None, 0.35, False),
             ("Standard_NV12ads_A10_v5", "NV12ads A10 v5", 1, "A10", 2.9, False)]  # fmt: skip
    rows = []
    for h in range(48):
        t = START + timedelta(hours=h)
        for size, meter, gpus, acc, rate, known in sizes:
            spot = size == "Standard_NC24ads_A100_v4" and h % 2 == 1
            qty = 1.0 if rng.random() < 0.85 else round(float(rng.uniform(0.2, 1.0)), 4)
            cost = qty * rate * (0.3 if spot else 1.0)
            r = _base(t, qty, cost, "EUR", "8611537")
            meter_name = meter + (" Spot" if spot else "")
            r.update(
                ChargeDescription=f"Virtual Machines {meter_name}",
                PricingCategory="Dynamic" if spot else "Standard",
                ConsumedQuantity=f"{qty}", ConsumedUnit="Hours", PricingQuantity=f"{qty}", PricingUnit="1 Hour",
                ProviderName="Microsoft", PublisherName="Microsoft", InvoiceIssuerName="Microsoft",
                RegionId="westeurope", RegionName="West Europe", ResourceType="Virtual machine",
                ResourceId=f"/subscriptions/sub/resourceGroups/ml/providers/Microsoft.Compute/virtualMachines/{meter}",
                ServiceCategory="Compute", ServiceName="Virtual Machines", SkuId="DZH318Z0BQ4L",
                SubAccountId="sub", Tags=json.dumps({"team": "serving"}),
                x_ResourceGroupName="ml", x_SkuMeterCategory="Virtual Machines",
            )  # fmt: skip
            details = {"ServiceType": size, "VCPUs": 96, "UsageType": "ComputeHR"}
            if version == "1.0":
                series = meter.split()[0][:2] + " Series"
                r.update(x_SkuDetails=json.dumps(details), x_SkuMeterName=meter_name, x_SkuMeterSubcategory=series)
            elif h % 2:  # 1.2-preview: half the lines with SkuPriceDetails, the other half only SkuMeter
                r.update(SkuMeter=meter_name, SkuPriceDetails=json.dumps({"CoreCount": 96}))
            else:
                r.update(SkuMeter=meter_name)
            rows.append(r)
            exp.billed["EUR"] += cost
            if acc and known:
                exp.gpu_hours[acc] += qty * gpus
            elif acc and version == "1.0":  # 1.2 meters only name types the pricebook knows
                exp.unknown_gpu_types.add(size)
            elif not acc:
                exp.cpu_types.add(size)
    exp.rows = len(rows)
    header = FOCUS_10 + AZURE_10_X + ["x_SkuMeterSubcategory"] if version == "1.0" else AZURE_12
    return _write(path, list(dict.fromkeys(header)), rows), exp


def gcp_focus(path: Path, seed: int = 3) -> tuple[Path, Expected]:
    """Google Cloud FOCUS export: per-GPU SKUs (on-demand and spot), core and RAM SKUs of the same VMs, credits."""
    rng = np.random.default_rng(seed)
    exp = Expected()
    skus = [("Nvidia H100 80GB GPU running in Americas", "H100", 8),
            ("Nvidia L4 GPU attached to Spot Preemptible VMs running in EMEA", "L4", 2),
            ("A3 Instance Core running in Americas", None, 208),
            ("A3 Instance Ram running in Americas", None, 1872)]  # fmt: skip
    rows = []
    for h in range(48):
        t = START + timedelta(hours=h)
        for sku, acc, units in skus:
            busy = 1.0 if rng.random() < 0.8 else round(float(rng.uniform(0.25, 1.0)), 4)
            seconds = units * 3600 * busy if acc else 3600 * busy
            cost = seconds / 3600 * (11.06 if acc == "H100" else 0.28 if acc == "L4" else 0.02)
            r = _base(t, 1.0, cost, "USD", "01F2C3-4D5E6F-7A8B9C")
            r.update(
                ChargeDescription=sku, ConsumedQuantity=f"{seconds}", ConsumedUnit="seconds",
                PricingQuantity=f"{seconds / 3600}", PricingUnit="hour",
                PricingCategory="Dynamic" if "Spot" in sku else "Standard",
                ProviderName="Google Cloud", PublisherName="Google Cloud", InvoiceIssuerName="Google Cloud",
                RegionId="us-central1", RegionName="Iowa", ResourceType="compute.googleapis.com/Instance",
                ResourceId="//compute.googleapis.com/projects/kestrel-ml/zones/us-central1-a/instances/trainer-1",
                ServiceCategory="Compute", ServiceName="Compute Engine", SkuId="C3FA-" + str(abs(hash(sku)) % 9999),
                SubAccountId="kestrel-ml", Tags=json.dumps({"team": "research"}),
                x_CostType="regular", x_ServiceId="6F81-5844-456A", x_Location="us-central1",
                x_ExportTime=_iso(t + timedelta(hours=6), "iso"), x_Credits="[]",
            )  # fmt: skip
            rows.append(r)
            exp.billed["USD"] += cost
            if acc:
                exp.gpu_hours[acc] += seconds / 3600
    exp.rows = len(rows)
    return _write(path, FOCUS_10 + GCP_X, rows), exp


def focus_12_sku_price_details(path: Path) -> tuple[Path, Expected]:
    """A FOCUS 1.2 file from a generator that states F_InstanceType / F_GpuCount in SkuPriceDetails only."""
    exp = Expected()
    rows = []
    for h in range(24):
        t = START + timedelta(hours=h)
        r = _base(t, 1.0, 31.2, "USD", "acct-9")
        r.update(
            ChargeDescription="GPU node hour",
            ConsumedQuantity="1",
            ConsumedUnit="Hours",
            ProviderName="Lambda",
            SkuPriceId="gpu-8x-h100-sxm",
            SkuId="gpu-8x-h100",
            SkuPriceDetails=json.dumps({"F_InstanceType": "p5.48xlarge", "F_GpuCount": 8, "F_CoreCount": 192}),
        )
        rows.append(r)
        exp.billed["USD"] += 31.2
        exp.gpu_hours["H100"] += 8.0
    exp.rows = len(rows)
    return _write(path, [*FOCUS_10, "SkuMeter", "SkuPriceDetails"], rows), exp
