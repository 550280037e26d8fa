"""A generated FOCUS 1.0 export of the shape issue 26 found on the public FOCUS sample: GPU lines in one month and a
stray non-GPU line (a $0.24 object-storage charge) in the next billing period.

Our own rows, with the messiness of real exports: hourly GPU lines with a daily shape (busy hours, quiet nights,
a two-node burst), a spot line, a storage line in another currency, a tax line, and the stray line of the next
period. :func:`write_focus_month` returns the file and what the rows hold, worked out as they are written.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

HEADER = [
    "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
    "ChargePeriodStart", "ChargePeriodEnd", "BilledCost", "EffectiveCost", "ListCost", "ContractedCost",
    "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency", "PricingCategory",
    "CommitmentDiscountId", "CommitmentDiscountType", "ConsumedQuantity", "ConsumedUnit", "PricingQuantity",
    "PricingUnit", "ResourceId", "ResourceName", "ResourceType", "ServiceName", "ServiceCategory", "ProviderName",
    "PublisherName", "InvoiceIssuerName", "RegionId", "RegionName", "AvailabilityZone", "SkuId", "SkuPriceId",
    "SubAccountId", "SubAccountName", "Tags",
]  # fmt: skip
P4D_RATE = 32.7726  # USD per p4d.24xlarge instance-hour (8 A100)


@dataclass
class Month:
    """What the generated export holds (worked out from the rows as they were written)."""

    path: Path
    gpu_month: str
    stray_month: str
    gpu_hours_by_hour: dict[datetime, float] = field(default_factory=dict)  # GPU-hours per clock hour
    gpu_cost: float = 0.0
    lines: int = 0


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _period(t: datetime) -> tuple[datetime, datetime]:
    start = t.replace(day=1, hour=0, minute=0, second=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def _row(t: datetime, hours: float, cost: float, **kw: object) -> dict:
    start, end = _period(t)
    row = {
        "BillingAccountId": "111122223333", "BillingAccountName": "Acme ML", "BillingCurrency": "USD",
        "BillingPeriodStart": _iso(start), "BillingPeriodEnd": _iso(end), "ChargePeriodStart": _iso(t),
        "ChargePeriodEnd": _iso(t + timedelta(hours=hours)), "BilledCost": f"{cost:.10f}",
        "EffectiveCost": f"{cost:.10f}", "ListCost": f"{cost:.10f}", "ContractedCost": f"{cost:.10f}",
        "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based", "PricingCategory": "Standard",
        "ConsumedQuantity": f"{hours}", "ConsumedUnit": "Hrs", "PricingQuantity": f"{hours}", "PricingUnit": "Hrs",
        "ServiceName": "Amazon Elastic Compute Cloud", "ServiceCategory": "Compute", "ProviderName": "AWS",
        "PublisherName": "AWS", "InvoiceIssuerName": "AWS", "RegionId": "us-east-1",
        "RegionName": "US East (N. Virginia)", "Tags": json.dumps({"team": "research"}),
    }  # fmt: skip
    row.update({k: str(v) for k, v in kw.items()})
    return row


def write_focus_month(path: Path, *, year: int = 2024, month: int = 9, day: int = 12) -> Month:
    """GPU lines on ``day`` and the next day of ``year-month`` (hourly, p4d.24xlarge, one to two nodes), a storage
    line in EUR and a tax line the same month, and one $0.24 Oracle object-storage line in the next period."""
    t0 = datetime(year, month, day, 8, tzinfo=UTC)
    stray_t = _period(t0)[1] + timedelta(days=2)
    out = Month(path, f"{year}-{month:02d}", f"{stray_t:%Y-%m}")
    rows: list[dict] = []
    # the shape: one node 08:00-16:00 on day one, two nodes 09:00-12:00 on day two, one node 12:00-14:00 after
    shape = [(t0 + timedelta(hours=h), 1) for h in range(8)]
    shape += [(t0 + timedelta(days=1, hours=1 + h), 2) for h in range(3)]
    shape += [(t0 + timedelta(days=1, hours=4 + h), 1) for h in range(2)]
    for i, (t, nodes) in enumerate(shape):
        for n in range(nodes):
            cost = P4D_RATE * (0.999 if i % 3 else 1.0)  # a rounding of the rate now and then, as exports do
            rows.append(
                _row(t, 1.0, cost, ResourceId=f"arn:aws:ec2:us-east-1:111122223333:instance/i-0p4d{n}",
                     SkuId="8AXYZP4D", ChargeDescription=f"${P4D_RATE} per On Demand Linux p4d.24xlarge Instance Hour")
            )  # fmt: skip
            out.gpu_hours_by_hour[t] = out.gpu_hours_by_hour.get(t, 0.0) + 8.0
            out.gpu_cost += cost
    storage = _row(t0, 24.0, 11.5, BillingCurrency="EUR", BillingAccountId="999988887777", ServiceName="Amazon S3",
                   ServiceCategory="Storage", ConsumedUnit="GB-Mo", ConsumedQuantity="500", PricingUnit="GB-Mo",
                   SkuId="S3STD", ChargeDescription="EUR 0.023 per GB-month", Tags="{}")  # fmt: skip
    tax = _row(t0, 1.0, 17.4, ChargeCategory="Tax", PricingCategory="", ChargeDescription="Tax for AmazonEC2",
               ChargeFrequency="One-Time", ConsumedQuantity="", ConsumedUnit="", Tags="{}")  # fmt: skip
    stray = _row(stray_t, 24.0, 0.24, ProviderName="Oracle", PublisherName="Oracle", InvoiceIssuerName="Oracle",
                 ServiceName="Object Storage", ServiceCategory="Storage", ConsumedUnit="GB-Mo",
                 ConsumedQuantity="10", PricingUnit="GB-Mo", RegionId="us-ashburn-1", SkuId="B91628",
                 ChargeDescription="Object Storage - Storage", Tags="{}")  # fmt: skip
    rows += [storage, tax, stray]
    out.lines = len(rows)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=HEADER)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in HEADER})
    return out
