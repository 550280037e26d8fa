"""Reference tables shipped in ``finops_cli/pricebooks/``: loaders (no network; the CSVs are maintained by hand).

Reference prices (``finops_cli/pricebooks/reference_prices.csv``): list on-demand, typical spot and API per-unit
prices for common GPU offerings, each row with its ``source`` and the date it was read (``read_on``).
A substrate may say ``price_ref: aws/p5.48xlarge/on_demand`` instead of a number; reports that used a
reference price say how old it is (:func:`reference_price_age_days`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path

import pandas as pd

from finops_cli.errors import InputError
from finops_cli.files import csv_line, read_csv_text

REFERENCE_PRICES_FILE = "reference_prices.csv"
_REF_COLUMNS = (
    "provider",
    "offering",
    "term",
    "accelerator",
    "gpus",
    "usd_per_instance_hour",
    "usd_per_gpu_hour",
    "unit",
    "usd_per_unit",
    "region",
    "source",
    "read_on",
)


def pricebook_dir() -> Path:
    """The shipped tables, read as package data (works from a wheel, a zip or a source checkout)."""
    return Path(str(resources.files("finops_cli") / "pricebooks"))


@dataclass(frozen=True)
class ReferencePrice:
    """One row of ``reference_prices.csv``: ``ref`` is ``provider/offering/term``."""

    ref: str
    provider: str
    offering: str
    term: str  # on_demand | spot | reserved | api
    accelerator: str | None
    usd_per_gpu_hour: float | None
    unit: str | None
    usd_per_unit: float | None
    region: str | None
    source: str
    read_on: date


@lru_cache(maxsize=4)
def _reference_table(path: Path) -> pd.DataFrame:
    frame = read_csv_text(path, kind="reference price table")
    missing = [c for c in _REF_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {missing}", path=path)
    frame["ref"] = frame["provider"] + "/" + frame["offering"] + "/" + frame["term"]
    for i, row in frame.iterrows():
        where = csv_line(int(i))
        try:
            datetime.strptime(row["read_on"], "%Y-%m-%d")
        except ValueError:
            raise InputError(f"read_on: expected YYYY-MM-DD, got {row['read_on']!r}", path=path, where=where) from None
        if not row["source"]:
            raise InputError("source: every reference price needs its source", path=path, where=where)
        if not (row["usd_per_gpu_hour"] or row["usd_per_unit"]):
            raise InputError("give usd_per_gpu_hour or usd_per_unit", path=path, where=where)
    return frame


def reference_prices(path: Path | None = None) -> pd.DataFrame:
    """The reference price table (strings as read, plus a ``ref`` column ``provider/offering/term``)."""
    return _reference_table(path or pricebook_dir() / REFERENCE_PRICES_FILE).copy()


def _num(text: str) -> float | None:
    return float(text) if text not in ("", None) else None


def reference_price(ref: str, path: Path | None = None) -> ReferencePrice:
    """Look up ``provider/offering/term``; an unknown ref is an :class:`InputError` suggesting close ones."""
    table = _reference_table(path or pricebook_dir() / REFERENCE_PRICES_FILE)
    rows = table[table["ref"] == ref]
    if rows.empty:
        close = difflib.get_close_matches(ref, table["ref"].tolist(), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(table['ref'].head(6))}, …"
        raise InputError(f"price_ref {ref!r} is not in finops_cli/pricebooks/{REFERENCE_PRICES_FILE}{hint}")
    row = rows.iloc[0]
    return ReferencePrice(
        ref=ref,
        provider=row["provider"],
        offering=row["offering"],
        term=row["term"],
        accelerator=row["accelerator"] or None,
        usd_per_gpu_hour=_num(row["usd_per_gpu_hour"]),
        unit=row["unit"] or None,
        usd_per_unit=_num(row["usd_per_unit"]),
        region=row["region"] or None,
        source=row["source"],
        read_on=datetime.strptime(row["read_on"], "%Y-%m-%d").date(),
    )


def reference_price_age_days(price: ReferencePrice, as_of: date | None = None) -> int:
    """Whole days between the date the price was read and ``as_of`` (default: today, UTC)."""
    from datetime import UTC

    today = as_of or datetime.now(UTC).date()
    return (today - price.read_on).days


# --- GPU facts per instance type and GCP GPU SKU (finops_cli/pricebooks/instance_types.csv) ------------------------
#
# Billing lines name an instance type (``p5.48xlarge``, ``a3-highgpu-8g``, ``Standard_ND96isr_H100_v5``) or, for
# GCP, a per-GPU SKU ("Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in EMEA"); these helpers turn
# them into (GPUs per instance, accelerator) so GPU-hours and the accelerator mix come out of the bill.

INSTANCE_TYPES_FILE = "instance_types.csv"


@dataclass(frozen=True)
class GpuSkuFacts:
    """What a GCP GPU SKU description says: the accelerator, how it is priced, and where."""

    accelerator: str
    pricing_category: str  # FOCUS: Dynamic (Spot Preemptible) | Committed (Commitment) | Standard
    region_group: str | None  # "Americas", "EMEA", "APAC", or a region name, when the text has one


@lru_cache(maxsize=1)
def _instance_table() -> tuple[dict[tuple[str, str], tuple[int, str]], list[tuple[str, str]]]:
    import csv

    instances: dict[tuple[str, str], tuple[int, str]] = {}
    skus: list[tuple[str, str]] = []
    with open(pricebook_dir() / INSTANCE_TYPES_FILE, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] == "gpu_sku":
                skus.append((row["instance_type"].lower(), row["accelerator"]))
            else:
                instances[(row["provider"].lower(), row["instance_type"].lower())] = (
                    int(row["gpus"]),
                    row["accelerator"],
                )
    # Longest stem first so "Nvidia H100 80GB Mega GPU" wins over "Nvidia H100 80GB GPU".
    skus.sort(key=lambda s: -len(s[0]))
    return instances, skus


def instance_gpu_facts(provider: str, instance_type: str | None) -> tuple[int, str] | None:
    """(GPUs per instance, accelerator) for a known instance type, else None.

    ``provider`` is the store slug (aws, gcp, azure, coreweave, onprem); a type unknown for that provider but
    listed under another one is accepted (FOCUS files from resellers name the underlying type).
    """
    if not instance_type:
        return None
    instances, _ = _instance_table()
    key = instance_type.strip().lower()
    hit = instances.get((provider.lower(), key))
    if hit is not None:
        return hit
    for (_, name), facts in instances.items():
        if name == key:
            return facts
    return None


def gcp_gpu_sku_facts(description: str | None) -> GpuSkuFacts | None:
    """Parse a GCP GPU SKU description, or None when it is not a GPU SKU.

    ``"Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in EMEA"`` → ``GpuSkuFacts("H100",
    "Dynamic", "EMEA")``; ``"Commitment v1: Nvidia L4 GPU running in Americas for 1 Year"`` → Committed.
    Core and RAM SKUs ("Spot Preemptible A3 Instance Core running in EMEA") return None.
    """
    import re

    if not description:
        return None
    low = description.strip().lower()
    _, skus = _instance_table()
    accelerator = next((acc for stem, acc in skus if stem in low), None)
    if accelerator is None:
        m = re.search(r"nvidia (?:tesla )?([a-z]+\d+[a-z]?)\b.*\bgpu\b", low)
        if not m:
            return None
        accelerator = m.group(1).upper()
    region = re.search(r"running in (.+?)(?: for \d+ (?:year|month)s?)?$", description.strip(), re.IGNORECASE)
    return GpuSkuFacts(accelerator, gcp_pricing_category(description), region.group(1).strip() if region else None)


def gcp_pricing_category(description: str) -> str:
    """FOCUS PricingCategory from a GCP SKU description: Spot/Preemptible → Dynamic, Commitment → Committed."""
    low = description.lower()
    if "spot" in low or "preemptible" in low:
        return "Dynamic"
    if low.startswith("commitment") or "commitment v" in low:
        return "Committed"
    return "Standard"


# --- instance types named in free text (FOCUS ChargeDescription, usage types, meters) -------------------------------

GPU_FAMILIES_FILE = "gpu_families.csv"

#: An instance-type-shaped token: AWS ``g5.4xlarge`` / ``p6-b200.48xlarge``, GCP ``a3-highgpu-8g`` /
#: ``n2-standard-4``, Azure ``Standard_ND96isr_H100_v5``.
INSTANCE_TOKEN = (
    r"(?<![\w.-])(?:"
    r"[a-z][a-z0-9]*(?:-[a-z0-9]+)?\.(?:\d*x?large|metal(?:-\d+xl)?|medium|small|micro|nano)"
    r"|[a-z]\d+[a-z]?-(?:standard|highgpu|megagpu|ultragpu|edgegpu|highmem|highcpu|custom)-\d+g?"
    r"|Standard_[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*"
    r")(?![\w.-])"
)


@lru_cache(maxsize=1)
def _gpu_family_patterns() -> list[tuple[str, re.Pattern[str]]]:
    import csv

    with open(pricebook_dir() / GPU_FAMILIES_FILE, encoding="utf-8", newline="") as fh:
        return [(row["provider"], re.compile(row["pattern"])) for row in csv.DictReader(fh)]


def instance_type_in(text: str | None) -> str | None:
    """The first instance-type-shaped token of ``text`` (``"$1.624 per On Demand Linux g5.4xlarge Instance
    Hour"`` → ``g5.4xlarge``; ``"USE1-SpotUsage:p5.48xlarge"`` → ``p5.48xlarge``), known to the pricebook or not."""
    if not text:
        return None
    m = _INSTANCE_RE.search(text)
    return m.group(0) if m else None


def is_gpu_family(instance_type: str) -> bool:
    """Does the name belong to a GPU family (``finops_cli/pricebooks/gpu_families.csv``)? CPU-only types do not."""
    low = instance_type.strip().lower()
    return any(p.match(low) for _, p in _gpu_family_patterns())


_INSTANCE_RE = re.compile(INSTANCE_TOKEN)
