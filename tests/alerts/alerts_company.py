"""A generated three-month FOCUS store for the alerts tests: several teams and run ids, a weekday season, planted
anomalies and a planted overrun, a partial last month and a corrected re-export.

August and September 2026 are whole; October runs to 2026-10-20 13:00 UTC. ``team=data`` doubles its on-demand
spend from 2026-10-05 on (the overrun); :data:`PLANTED` lists the anomalies (a runaway ``g6.12xlarge`` in one
team on one day); ``team=newteam`` starts on 2026-10-14 (a new scope: never alerted).
"""

from __future__ import annotations

import csv
import json
import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

HEADER = [
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "PricingCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountType",
    "ConsumedQuantity",
    "ConsumedUnit",
    "PricingQuantity",
    "PricingUnit",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceName",
    "ServiceCategory",
    "ProviderName",
    "PublisherName",
    "InvoiceIssuerName",
    "RegionId",
    "RegionName",
    "AvailabilityZone",
    "SkuId",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
    "x_InstanceType",
    "x_GpuCount",
    "x_AcceleratorType",
]

START = date(2026, 8, 1)
END = datetime(2026, 10, 20, 13, tzinfo=UTC)  # billing runs to here
OVERRUN_FROM = date(2026, 10, 5)
NEW_TEAM_FROM = date(2026, 10, 14)


@dataclass(frozen=True)
class Line:
    """One resource's usage: ``per_hour`` is what the bill charges per instance-hour, ``list_per_hour`` the
    on-demand price the export states (None: the export states none)."""

    resource: str
    provider: str
    account: str
    pricing: str  # Standard | Dynamic | Committed | Other
    instance_type: str
    gpus: int
    accelerator: str
    region: str
    service: str
    per_hour: float
    list_per_hour: float | None
    team: str
    weekday_only: bool = False


FLEET = [
    Line("spot-p5-a", "AWS", "111", "Dynamic", "p5.48xlarge", 8, "H100", "us-east-1", "Amazon EC2", 31.2, 55.04,
         "research"),
    Line("spot-p5-b", "AWS", "111", "Dynamic", "p5.48xlarge", 8, "H100", "us-east-1", "Amazon EC2", 31.2, 55.04,
         "research"),
    Line("od-p5-serving", "AWS", "222", "Standard", "p5.48xlarge", 8, "H100", "us-east-1", "Amazon EC2", 55.04,
         55.04, "product"),
    Line("od-p5-weekday", "AWS", "222", "Standard", "p5.48xlarge", 8, "H100", "us-east-1", "Amazon EC2", 55.04,
         55.04, "product", weekday_only=True),
    Line("cw-reserved", "CoreWeave", "cw-1", "Committed", "gd-8xh100ib-i128", 8, "H100", "us-east-04", "CoreWeave",
         16.8, 49.24, "platform"),
    Line("onprem-01", "On-Premises", "dc-1", "Other", "hgx-h100-8", 8, "H100", "us-east", "Kestrel GPU Cluster", 2.8,
         None, "research"),
    Line("od-p4d-data", "AWS", "333", "Standard", "p4d.24xlarge", 8, "A100", "us-west-2", "Amazon EC2", 21.96, 21.96,
         "data", weekday_only=True),
]  # fmt: skip
RUNAWAY = Line("runaway", "AWS", "444", "Standard", "g6.12xlarge", 4, "L4", "us-east-1", "Amazon SageMaker", 4.6016,
               4.6016, "")  # fmt: skip
NEW_TEAM = Line("new-a100", "AWS", "555", "Standard", "p4d.24xlarge", 8, "A100", "us-west-2", "Amazon EC2", 21.96,
                21.96, "newteam")  # fmt: skip

#: (day, team, runaway instance-hours that day): the anomalies the detector must find, the runaway as their cause
PLANTED = [
    (date(2026, 8, 27), "research", 120.0),
    (date(2026, 9, 9), "product", 150.0),
    (date(2026, 9, 22), "platform", 100.0),
    (date(2026, 10, 2), "research", 140.0),
    (date(2026, 10, 16), "product", 130.0),
]


def run_id(team: str, day: date) -> str | None:
    """Research trains in ten-day runs; product serves without one (no tag)."""
    if team == "research":
        return f"pretrain-{(day - START).days // 10:02d}"
    if team == "platform":
        return f"ft-{day:%Y%m}"
    return None


def _row(line: Line, start: datetime, hours: float, team: str, noise: float, count: float = 1.0) -> dict[str, object]:
    """The line of ``count`` instances of ``line`` running ``hours`` from ``start``."""
    month = start.date().replace(day=1)
    nxt = (month + timedelta(days=32)).replace(day=1)
    cost = round(line.per_hour * hours * count * noise, 6)
    tags = {"team": team} if team else {}
    rid = run_id(team, start.date()) if team else None
    if rid:
        tags["run_id"] = rid
    return {
        "BillingAccountId": f"acct-{line.account}",
        "BillingAccountName": "",
        "BillingCurrency": "USD",
        "BillingPeriodStart": f"{month}T00:00:00Z",
        "BillingPeriodEnd": f"{nxt}T00:00:00Z",
        "ChargePeriodStart": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ChargePeriodEnd": (start + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "BilledCost": cost,
        "EffectiveCost": cost,
        "ListCost": round(line.list_per_hour * hours * count, 6) if line.list_per_hour else cost,
        "ContractedCost": cost,
        "ChargeCategory": "Usage",
        "ChargeClass": "",
        "ChargeDescription": f"{line.instance_type} instance-hours",
        "ChargeFrequency": "Usage-Based",
        "PricingCategory": line.pricing,
        "CommitmentDiscountId": "cw-commit-1" if line.pricing == "Committed" else "",
        "CommitmentDiscountType": "Reservation" if line.pricing == "Committed" else "",
        "ConsumedQuantity": hours * count,
        "ConsumedUnit": "Hours",
        "PricingQuantity": hours * count,
        "PricingUnit": "Hours",
        "ResourceId": line.resource,
        "ResourceName": line.resource,
        "ResourceType": "instance",
        "ServiceName": line.service,
        "ServiceCategory": "Compute",
        "ProviderName": line.provider,
        "PublisherName": line.provider,
        "InvoiceIssuerName": line.provider,
        "RegionId": line.region,
        "RegionName": line.region,
        "AvailabilityZone": "",
        "SkuId": line.instance_type,
        "SkuPriceId": "",
        "SubAccountId": f"acct-{line.account}",
        "SubAccountName": "",
        "Tags": json.dumps(tags, sort_keys=True),
        "x_InstanceType": line.instance_type,
        "x_GpuCount": line.gpus,
        "x_AcceleratorType": line.accelerator,
    }


def month_rows(month: date, seed: int = 7, correction: float = 1.0) -> list[dict[str, object]]:
    """One billing period's lines, one per resource and day (the last day of October partial)."""
    rng = random.Random(f"{seed}-{month}")
    rows = []
    day = month
    while day.month == month.month and datetime(day.year, day.month, day.day, tzinfo=UTC) < END:
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        hours = min(24.0, (END - start).total_seconds() / 3600)
        for line in FLEET:
            if line.weekday_only and day.weekday() >= 5:
                continue
            scale = 2.0 if line.team == "data" and day >= OVERRUN_FROM else 1.0
            rows.append(_row(line, start, hours, line.team, rng.uniform(0.97, 1.03) * correction, scale))
        if day >= NEW_TEAM_FROM:
            rows.append(_row(NEW_TEAM, start, hours, NEW_TEAM.team, 1.0))
        for when, team, extra in PLANTED:
            if when == day:
                rows.append(_row(RUNAWAY, start, min(hours, 24.0), team, 1.0, extra / 24.0))
        day += timedelta(days=1)
    return rows


def write_month(path: Path, month: date, **kwargs: object) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=HEADER)
        writer.writeheader()
        writer.writerows(month_rows(month, **kwargs))  # type: ignore[arg-type]
    return path


def build_store(tmp: Path) -> Path:
    """The store, ingested as a messy month-end would be: August twice (idempotent), September first with a
    wrong export and then its corrected re-export (which replaces it), October partial."""
    from finops_cli import api

    store = tmp / "store"
    exports = tmp / "exports"
    exports.mkdir(parents=True, exist_ok=True)
    aug = write_month(exports / "focus-2026-08.csv", date(2026, 8, 1))
    api.ingest_billing([aug], store=store)
    api.ingest_billing([aug], store=store)
    sep = write_month(exports / "focus-2026-09.csv", date(2026, 9, 1), correction=1.4)
    api.ingest_billing([sep], store=store)
    write_month(sep, date(2026, 9, 1))  # the corrected re-export of the same period
    api.ingest_billing([sep], store=store)
    api.ingest_billing([write_month(exports / "focus-2026-10.csv", date(2026, 10, 1))], store=store)
    return store


def expected_total() -> float:
    """Σ cost of every line the store should hold (August once, September corrected, October partial)."""
    return sum(
        float(r["EffectiveCost"])  # type: ignore[arg-type]
        for m in (date(2026, 8, 1), date(2026, 9, 1), date(2026, 10, 1))
        for r in month_rows(m)
    )
