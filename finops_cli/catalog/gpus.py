"""GPU facts from the pricebook: GPUs and accelerator per instance type and per GCP GPU SKU, and GPU
families named in free text, so GPU-hours and the accelerator mix come out of the bill."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.catalog.pricebook import _layers, user_pricebook_dir
from finops_cli.errors import InputError
from finops_cli.files import csv_line, read_csv_rows, read_csv_text

if TYPE_CHECKING:
    import pandas as pd

INSTANCE_TYPES_FILE = "instance_types.csv"


@dataclass(frozen=True)
class GpuSkuFacts:
    """What a GCP GPU SKU description says: the accelerator and how it is priced."""

    accelerator: str
    pricing_category: str  # FOCUS: Dynamic (Spot Preemptible) | Committed (Commitment) | Standard


INSTANCE_COLUMNS = ("provider", "kind", "instance_type", "gpus", "accelerator")


def instance_types() -> pd.DataFrame:
    """The instance-type table, shipped rows then the user pricebook's (strings as read, plus ``origin``)."""
    return _instance_frame(_layers(INSTANCE_TYPES_FILE)).copy()


@lru_cache(maxsize=8)
def _instance_frame(layers: tuple[tuple[str, str, int], ...]) -> pd.DataFrame:
    import pandas as pd

    frames = [pd.DataFrame(rows, columns=header, dtype=str).assign(origin=origin) for header, rows, origin in
              _instance_rows(layers)]  # fmt: skip
    return pd.concat(frames, ignore_index=True)


@lru_cache(maxsize=8)
def _instance_rows(layers: tuple[tuple[str, str, int], ...]) -> list[tuple[list[str], list[list[str]], str]]:
    """Each layer's (header, rows, origin), shipped then the user's, every row checked; all cells text.

    Read with the standard library (:func:`~finops_cli.files.read_csv_rows`): billing ingest looks GPU facts
    up here and should not import pandas for a table of a few hundred rows.
    """
    out = []
    for path, origin, _ in layers:
        header, rows = read_csv_rows(Path(path), kind="instance type table")
        missing = [c for c in INSTANCE_COLUMNS if c not in header]
        if missing:
            raise InputError(f"missing column(s) {missing}", path=Path(path))
        at = {c: header.index(c) for c in INSTANCE_COLUMNS}
        for i, cells in enumerate(rows):
            gpus, kind, name, accelerator = (cells[at[c]] for c in ("gpus", "kind", "instance_type", "accelerator"))
            if not (gpus.isdigit() and int(gpus) > 0):
                raise InputError(f"gpus: expected a whole number > 0, got {gpus!r}", path=Path(path), where=csv_line(i))
            if kind not in ("instance", "gpu_sku") or not accelerator or not name:
                raise InputError(
                    "expected kind instance or gpu_sku, an instance_type and an accelerator",
                    path=Path(path),
                    where=csv_line(i),
                )
        out.append((header, rows, origin))
    return out


def _instance_table() -> tuple[dict[tuple[str, str], tuple[int, str]], list[tuple[str, str]]]:
    return _instance_index(_layers(INSTANCE_TYPES_FILE))


@lru_cache(maxsize=8)
def _instance_index(
    layers: tuple[tuple[str, str, int], ...],
) -> tuple[dict[tuple[str, str], tuple[int, str]], list[tuple[str, str]]]:
    instances: dict[tuple[str, str], tuple[int, str]] = {}
    skus: dict[str, str] = {}
    for header, rows, _ in _instance_rows(layers):  # later (user) rows win
        at = {c: header.index(c) for c in INSTANCE_COLUMNS}
        for cells in rows:
            provider, kind, name, gpus, accelerator = (cells[at[c]] for c in INSTANCE_COLUMNS)
            if kind == "gpu_sku":
                skus[name.lower()] = accelerator
            else:
                instances[(provider.lower(), name.lower())] = (int(gpus), accelerator)
    # Longest stem first so "Nvidia H100 80GB Mega GPU" wins over "Nvidia H100 80GB GPU".
    return instances, sorted(skus.items(), key=lambda s: -len(s[0]))


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
    """A GCP GPU SKU's accelerator and pricing, or None when it is not a GPU SKU (core and RAM SKUs).

    ``"Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in EMEA"`` → ``GpuSkuFacts("H100", "Dynamic")``.
    """
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
    return GpuSkuFacts(accelerator, gcp_pricing_category(description))


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
CPU_ONLY_FAMILIES_FILE = "cpu_only_families.csv"

#: An instance-type-shaped token: AWS ``g5.4xlarge`` / ``p6-b200.48xlarge``, GCP ``a3-highgpu-8g`` /
#: ``n2-standard-4``, Azure ``Standard_ND96isr_H100_v5``.
INSTANCE_TOKEN = (
    r"(?<![\w.-])(?:"
    r"[a-z][a-z0-9]*(?:-[a-z0-9]+)?\.(?:\d*x?large|metal(?:-\d+xl)?|medium|small|micro|nano)"
    r"|[a-z]\d+[a-z]?-(?:standard|highgpu|megagpu|ultragpu|edgegpu|highmem|highcpu|custom)-\d+g?"
    r"|Standard_[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*"
    r")(?![\w.-])"
)


def _gpu_family_patterns() -> list[tuple[str, re.Pattern[str]]]:
    return _family_patterns(_layers(GPU_FAMILIES_FILE))


def _cpu_family_patterns() -> list[tuple[str, re.Pattern[str]]]:
    return _family_patterns(_layers(CPU_ONLY_FAMILIES_FILE))


@lru_cache(maxsize=16)
def _family_patterns(layers: tuple[tuple[str, str, int], ...]) -> list[tuple[str, re.Pattern[str]]]:
    """Every layer's patterns: the user pricebook may add families (its rows are added to the shipped ones)."""
    out = []
    for path, _, _ in layers:
        frame = read_csv_text(Path(path), kind="instance family table")
        if not {"provider", "pattern"} <= set(frame.columns):
            raise InputError("missing column(s) provider, pattern", path=Path(path))
        for i, row in frame.iterrows():
            try:
                out.append((row["provider"], re.compile(row["pattern"])))
            except re.error as exc:
                raise InputError(
                    f"pattern: not a regular expression ({exc})", path=Path(path), where=csv_line(int(i))
                ) from None
    return out


def instance_type_in(text: str | None) -> str | None:
    """The first instance-type-shaped token of ``text`` (``"$1.624 per On Demand Linux g5.4xlarge Instance
    Hour"`` → ``g5.4xlarge``; ``"USE1-SpotUsage:p5.48xlarge"`` → ``p5.48xlarge``), known to the pricebook or not."""
    if not text:
        return None
    m = _INSTANCE_RE.search(text)
    return m.group(0) if m else None


#: Database instance classes, which are not compute instance types: AWS RDS, Aurora, DocumentDB, Neptune and
#: MemoryDB (``db.r6g.large``, ``db.serverless``), ElastiCache (``cache.r6g.large``), Azure SQL vCore SKUs
#: (``GP_Gen5_4``, ``BC_Gen5_8``, ``HS_Gen5_2``, ``GP_S_Gen5_1``, ``BC_M_8``), GCP Cloud SQL tiers
#: (``db-custom-4-15360``, ``db-n1-standard-2``, ``db-f1-micro``).
DATABASE_CLASS = re.compile(r"^(?:(?:db|cache)\.\S+|db-[a-z0-9-]+|(?:gp|bc|hs)(?:_s)?_[a-z0-9]+_\d+)$", re.IGNORECASE)


def is_database_class(name: str) -> bool:
    """Is the name a database instance class (:data:`DATABASE_CLASS`) rather than a compute instance type?"""
    return bool(DATABASE_CLASS.match(name.strip()))


def is_gpu_family(instance_type: str) -> bool:
    """Does the name belong to a GPU family (``pricebooks/gpu_families.csv``)? CPU-only types do not."""
    low = instance_type.strip().lower()
    return any(p.match(low) for _, p in _gpu_family_patterns())


def is_cpu_only(instance_type: str) -> bool:
    """Is the name a known family without a GPU (``pricebooks/cpu_only_families.csv``: ``c5.xlarge``,
    ``n2-standard-4``, ``Standard_D2s_v3``)? Such types are never reported as missing a GPU count."""
    low = instance_type.strip().lower()
    return any(p.match(low) for _, p in _cpu_family_patterns())


#: how the catalog knows an instance type: GPUs counted, CPU-only, a GPU family without a row, or not at all
GPU, CPU_ONLY, GPU_UNLISTED, UNKNOWN = "gpu", "cpu_only", "gpu_unlisted", "unknown"


def classify_instance_type(provider: str, instance_type: str) -> str:
    """:data:`GPU` (a row gives its GPU count), :data:`CPU_ONLY`, :data:`GPU_UNLISTED` (a GPU family with no
    row: plans cannot price it per GPU) or :data:`UNKNOWN` (neither list names its family)."""
    if instance_gpu_facts(provider, instance_type) is not None:
        return GPU
    if is_gpu_family(instance_type):
        return GPU_UNLISTED
    return CPU_ONLY if is_cpu_only(instance_type) else UNKNOWN


def missing_row_hint(provider: str, instance_type: str) -> str:
    """Where the fix for a missing GPU count goes: the row to append to the user's ``instance_types.csv``."""
    path = user_pricebook_dir() / INSTANCE_TYPES_FILE
    return (
        f"{instance_type} has no GPU count in the pricebook: add the row "
        f"'{provider},instance,{instance_type},<gpus>,<accelerator>' to {path} "
        f"(columns {','.join(INSTANCE_COLUMNS)}; create the file with that header if it is new)"
    )


def unknown_types_line(unknown: list[str], unlisted: list[str], *, shown: int = 5) -> str:
    """One summary line for the instance types an ingest could not count GPUs for (never one line per type)."""
    head = ", ".join(unknown[:shown]) + (f", … ({len(unknown) - shown} more)" if len(unknown) > shown else "")
    path = user_pricebook_dir()
    gpu = f"{len(unlisted)} in GPU families; " if unlisted else ""
    return (
        f"{len(unknown)} instance type(s) with no GPU count in the pricebook ({gpu}{head}): prices per GPU-hour "
        f"left empty; add rows to {path / INSTANCE_TYPES_FILE}, or list CPU-only families in "
        f"{path / CPU_ONLY_FAMILIES_FILE}"
    )


_INSTANCE_RE = re.compile(INSTANCE_TOKEN)
