"""A generated multi-file AWS CUR (legacy ``lineItem/…`` layout), as AWS splits a large export into parts.

Messy on purpose: two payers billed in different currencies (USD, EUR), two billing periods, several
usage accounts, spot/on-demand/savings-plan lines, credits (negative), tag columns that are sometimes empty,
a GPU instance type the pricebook does not know, and one (payer, period) spread over several part files,
so the Spark engine's shuffle must bring the parts of one store file back together in file order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

INSTANCES = [
    ("p5.48xlarge", 98.32),
    ("p4d.24xlarge", 21.96),
    ("g6.12xlarge", 4.6016),
    ("m7i.large", 0.1008),
    ("p9.huge", 150.0),  # not in the pricebook: a warning, no GPU-hours
]
TEAMS = ["research", "product", "", "platform"]
#: (payer, currency, billing period start)
EXPORTS = [
    ("111122223333", "USD", "2026-10-01"),
    ("111122223333", "USD", "2026-11-01"),
    ("444455556666", "EUR", "2026-10-01"),
]


def write_parts(directory: Path, rows_per_part: int = 2_000, parts_per_export: int = 2, seed: int = 11) -> list[Path]:
    """Write every export of :data:`EXPORTS` as ``parts_per_export`` CSV files; the paths, in order."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for e, (payer, currency, period) in enumerate(EXPORTS):
        start = np.datetime64(f"{period}T00:00:00")
        end = (start.astype("datetime64[M]") + 1).astype("datetime64[s]")
        for part in range(parts_per_export):
            n = rows_per_part
            idx = np.arange(n) + part * n
            inst = rng.integers(0, len(INSTANCES), n)
            kind = rng.choice(["Usage", "Usage", "Usage", "SavingsPlanCoveredUsage", "Credit"], n)
            spot = (rng.random(n) < 0.3) & (kind == "Usage")
            hour = rng.integers(0, 24 * 28, n)
            t0 = start + hour.astype("timedelta64[h]")
            t1 = t0 + np.timedelta64(1, "h")
            types = np.array([i[0] for i in INSTANCES])[inst]
            rate = np.array([i[1] for i in INSTANCES])[inst] * np.where(spot, 0.4, 1.0)
            amount = np.round(rng.uniform(0.1, 1.0, n), 4)
            cost = np.round(rate * amount, 8)
            cost = np.where(kind == "Credit", -np.round(rng.uniform(1, 500, n), 2), cost)
            iso0, iso1 = np.char.add(t0.astype(str), "Z"), np.char.add(t1.astype(str), "Z")
            cols = {
                "identity/LineItemId": np.char.mod(f"{e}{part}%012x", idx),
                "identity/TimeInterval": np.char.add(np.char.add(iso0, "/"), iso1),
                "bill/PayerAccountId": np.full(n, payer),
                "bill/BillingEntity": np.full(n, "AWS"),
                "bill/BillingPeriodStartDate": np.full(n, f"{period}T00:00:00Z"),
                "bill/BillingPeriodEndDate": np.full(n, f"{end}Z"),
                "lineItem/UsageAccountId": np.char.mod("0000%08d", rng.integers(0, 5, n)),
                "lineItem/LineItemType": kind,
                "lineItem/UsageStartDate": iso0,
                "lineItem/UsageEndDate": iso1,
                "lineItem/ProductCode": np.full(n, "AmazonEC2"),
                "lineItem/UsageType": np.char.add(np.where(spot, "SpotUsage:", "BoxUsage:"), types),
                "lineItem/Operation": np.full(n, "RunInstances"),
                "lineItem/AvailabilityZone": np.where(rng.random(n) < 0.5, "us-east-1a", "eu-west-1b"),
                "lineItem/ResourceId": np.char.mod("i-0%016x", rng.integers(0, 300, n)),
                "lineItem/UsageAmount": amount,
                "lineItem/CurrencyCode": np.full(n, currency),
                "lineItem/UnblendedRate": rate,
                "lineItem/UnblendedCost": cost,
                "lineItem/LineItemDescription": np.char.add("instance hour ", types),
                "product/instanceType": np.where(kind == "Credit", "", types),
                "product/region": np.where(rng.random(n) < 0.5, "us-east-1", "eu-west-1"),
                "pricing/term": np.where(spot, "Spot", "OnDemand"),
                "pricing/unit": np.full(n, "Hrs"),
                "resourceTags/user:team": np.array(TEAMS)[rng.integers(0, len(TEAMS), n)],
                "resourceTags/user:workload": np.char.mod("wl-%d", rng.integers(0, 6, n)),
            }
            path = directory / f"cur-{payer}-{period[:7]}-{part + 1:05d}.csv"
            pacsv.write_csv(pa.table(cols), path, pacsv.WriteOptions(quoting_style="needed"))
            paths.append(path)
    return paths
