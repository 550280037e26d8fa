"""``finops pricebook import skypilot DIR``: a SkyPilot catalog (``vms.csv`` per cloud) into the user pricebook,
so a team that already keeps a SkyPilot catalog reuses its instance facts and prices.

Read columns (SkyPilot catalog v7/v8 ``vms.csv``): ``InstanceType``, ``AcceleratorName``, ``AcceleratorCount``,
``vCPUs``, ``MemoryGiB``, ``Price``, ``SpotPrice``, ``Region`` (required); ``GpuInfo`` and ``AvailabilityZone``
(optional). Rows without an accelerator (CPU types), without an instance type (GCP's per-GPU attachment rows) or
with a fraction of a GPU are skipped and counted; any other bad cell refuses the import naming file and line.
"""

from __future__ import annotations

import ast
import math
import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from finops_cli.atomic import check_writable, write_text
from finops_cli.catalog.fetchers.common import _money
from finops_cli.catalog.gpus import INSTANCE_TYPES_FILE
from finops_cli.catalog.pricebook import FETCHED_AT, REF_COLUMNS, REFERENCE_PRICES_FILE
from finops_cli.errors import InputError
from finops_cli.files import csv_line, read_csv_rows
from finops_cli.text import one_line

REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "SpotPrice", "Region")
INSTANCE_COLUMNS = ("provider", "kind", "instance_type", "gpus", "accelerator", "gpu_memory_gb", "vcpus",
                    "memory_gb", "gpu_sku", "interconnect", "source", "date_read")  # fmt: skip
PRICE_COLUMNS = (*REF_COLUMNS, FETCHED_AT)
#: one pricebook row, column → cell
Row = dict[str, str]
#: SkyPilot's cloud directory names that differ from the store's provider slugs
PROVIDER_OF_CLOUD = {"do": "digitalocean"}


@dataclass
class SkypilotImport:
    """What an import wrote: instance types and price rows per provider, rows skipped and why."""

    files: list[Path] = field(default_factory=list)
    instance_types: dict[str, int] = field(default_factory=dict)
    prices: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)


def accelerator_family(name: str) -> str:
    """SkyPilot's accelerator name → the pricebook's family: ``A100-80GB`` → ``A100``, ``tpu-v5e`` → ``TPU v5e``."""
    low = name.strip().lower()
    if low.startswith("tpu-"):
        return "TPU " + low.split("-", 1)[1].split("-")[0]
    return name.strip().split("-")[0]


def _number(cells: list[str], at: dict[str, int], column: str, path: Path, i: int, *, blank: bool) -> float | None:
    text = cells[at[column]].strip() if at[column] < len(cells) else ""
    if not text and blank:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise InputError(
            f"{column}: expected a number ≥ 0, got {one_line(repr(text), 40)}", path=path, where=csv_line(i)
        )
    return value


def _gpu_memory_gb(text: str) -> str:
    """Memory per GPU from ``GpuInfo`` (a Python literal, read with :func:`ast.literal_eval`, never ``eval``)."""
    try:
        info: Any = ast.literal_eval(text) if text.strip() else {}
        mib = info["Gpus"][0]["MemoryInfo"]["SizeInMiB"]
    except (ValueError, SyntaxError, TypeError, KeyError, IndexError, MemoryError, RecursionError):
        return ""
    return _money(float(mib) / 1024) if isinstance(mib, int | float) and mib > 0 else ""


def vms_files(directory: Path) -> list[tuple[str, Path]]:
    """(provider, vms.csv) under ``directory``: ``DIR/vms.csv`` (provider = the folder's name) or
    ``DIR/<cloud>/vms.csv`` (SkyPilot's ``catalogs/v8`` layout)."""
    if not directory.is_dir():
        raise InputError("not a directory (expected a SkyPilot catalog folder holding vms.csv)", path=directory)
    direct = directory / "vms.csv"
    found = [direct] if direct.is_file() else sorted(directory.glob("*/vms.csv"))
    if not found:
        raise InputError(
            "no vms.csv here or in its sub-folders (SkyPilot's catalogs/v8/<cloud>/vms.csv)", path=directory
        )
    return [(PROVIDER_OF_CLOUD.get(f.parent.name.lower(), f.parent.name.lower()), f) for f in found]


def read_vms(provider: str, path: Path, today: str, result: SkypilotImport) -> tuple[list[Row], list[Row]]:
    """One ``vms.csv`` → (instance rows, price rows); prices per (type, term, region) are the median over zones."""
    header, rows = read_csv_rows(path, kind="SkyPilot vms.csv")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"not a SkyPilot vms.csv: missing column(s) {', '.join(missing)}", path=path)
    at = {c: header.index(c) for c in header}
    source = f"SkyPilot catalog {path.parent.name}/{path.name}"
    instances: dict[str, Row] = {}
    quotes: dict[tuple[str, str, str], list[float]] = {}
    for i, cells in enumerate(rows):
        cell = {c: (cells[j].strip() if j < len(cells) else "") for c, j in at.items()}
        name, accelerator = cell["InstanceType"], cell["AcceleratorName"]
        count = _number(cells, at, "AcceleratorCount", path, i, blank=True)
        prices = {
            t: _number(cells, at, c, path, i, blank=True) for t, c in (("on_demand", "Price"), ("spot", "SpotPrice"))
        }
        for c in ("vCPUs", "MemoryGiB"):
            _number(cells, at, c, path, i, blank=True)
        why = ("no accelerator" if not accelerator or not count else "no instance type" if not name
               else "a fraction of a GPU" if count != int(count) else "")  # fmt: skip
        if why:
            result.skipped[why] = result.skipped.get(why, 0) + 1
            continue
        if not cell["Region"]:
            raise InputError("Region: empty on a GPU row", path=path, where=csv_line(i))
        instances.setdefault(name, {
            "provider": provider, "kind": "instance", "instance_type": name, "gpus": str(int(count or 0)),
            "accelerator": accelerator_family(accelerator), "gpu_memory_gb": _gpu_memory_gb(cell.get("GpuInfo", "")),
            "vcpus": cell["vCPUs"], "memory_gb": cell["MemoryGiB"], "gpu_sku": "", "interconnect": "",
            "source": source, "date_read": today,
        })  # fmt: skip
        for term, price in prices.items():
            if price:
                quotes.setdefault((name, term, cell["Region"]), []).append(price)
    price_rows = []
    for (name, term, region), values in quotes.items():
        facts = instances[name]
        usd = statistics.median(values)
        zones = f", median of {len(values)} zone prices" if len(values) > 1 else ""
        price_rows.append({
            "provider": provider, "offering": name, "term": term, "accelerator": facts["accelerator"],
            "gpus": facts["gpus"], "usd_per_instance_hour": _money(usd),
            "usd_per_gpu_hour": _money(usd / int(facts["gpus"])), "unit": "", "usd_per_unit": "", "region": region,
            "source": f"{source} ({'Price' if term == 'on_demand' else 'SpotPrice'}{zones})", "read_on": today,
            FETCHED_AT: "",
        })  # fmt: skip
    return list(instances.values()), price_rows


def _merge(path: Path, columns: tuple[str, ...], key: tuple[str, ...], new: list[Row]) -> str:
    """The user's table with ``new`` rows replacing those of the same key (extra user columns kept), as CSV text."""
    import csv
    import io

    header, rows = read_csv_rows(path, kind=path.name) if path.is_file() else ([], [])
    old = [dict(zip(header, cells, strict=False)) for cells in rows]
    cols = [*columns, *(c for c in header if c not in columns)]

    def ident(r: Row) -> tuple[str, ...]:
        return tuple(str(r.get(k, "")).lower() for k in key)

    fresh = {ident(r) for r in new}
    out = io.StringIO()
    writer = csv.DictWriter(out, cols, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows([r for r in old if ident(r) not in fresh] + new)
    return out.getvalue()


def import_skypilot(directory: Path, target: Path, *, now: datetime | None = None) -> SkypilotImport:
    """Read every ``vms.csv`` under ``directory`` and merge it into the pricebook at ``target`` (created if
    missing): ``instance_types.csv`` by (provider, instance_type), ``reference_prices.csv`` by (provider,
    offering, term, region). Everything is read and checked before anything is written."""
    today = (now or datetime.now(UTC)).date().isoformat()
    result = SkypilotImport()
    instances: list[Row] = []
    prices: list[Row] = []
    for provider, path in vms_files(directory):
        got_instances, got_prices = read_vms(provider, path, today, result)
        result.files.append(path)
        result.instance_types[provider] = result.instance_types.get(provider, 0) + len(got_instances)
        result.prices[provider] = result.prices.get(provider, 0) + len(got_prices)
        instances += got_instances
        prices += got_prices
    it_path, ref_path = target / INSTANCE_TYPES_FILE, target / REFERENCE_PRICES_FILE
    for p in (it_path, ref_path):
        check_writable(p)
    it_text = _merge(it_path, INSTANCE_COLUMNS, ("provider", "instance_type"), instances)
    ref_text = _merge(ref_path, PRICE_COLUMNS, ("provider", "offering", "term", "region"), prices)
    target.mkdir(parents=True, exist_ok=True)
    # the pricebook's tables are updated in place, as ``refresh`` does: read above, replaced atomically here
    write_text(it_path, it_text, output=False)
    write_text(ref_path, ref_text, output=False)
    return result
