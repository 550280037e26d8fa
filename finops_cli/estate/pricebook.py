"""The pricebook: reference tables shipped in ``finops_cli/pricebooks/``, overlaid by the user's own.

Two layers, one loader (every command that reads a price or a GPU fact goes through here):

* the **shipped** tables (package data, read through :mod:`importlib.resources`), maintained by hand;
* the **user pricebook**, a directory with files of the same names and columns that overlays them:
  ``--pricebook DIR`` (``finops --pricebook DIR <command>``), else ``$FINOPS_PRICEBOOK``, else
  ``$XDG_CONFIG_HOME/finops`` (``~/.config/finops``). ``finops pricebook refresh`` writes its
  ``reference_prices.csv`` from the providers' price APIs; a user adds instance types the shipped table
  lacks (``p3.2xlarge``/V100, ``g4dn.xlarge``/T4) as rows of its ``instance_types.csv``. A user row wins
  over a shipped row with the same key.

Reference prices (``reference_prices.csv``): list on-demand, typical spot and API per-unit prices, each row
with its ``source`` and the date it was read (``read_on``; refreshed rows also carry ``fetched_at``). A
substrate may say ``price_ref: aws/p5.48xlarge/on_demand`` instead of a number (optionally pinned to a region,
``aws/p5.48xlarge/on_demand/us-west-2``); reports that used a reference price say how old it is
(:func:`reference_price_age_days`) and where it came from.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.errors import InputError
from finops_cli.files import csv_line, read_csv_rows, read_csv_text

if TYPE_CHECKING:
    import pandas as pd

REFERENCE_PRICES_FILE = "reference_prices.csv"
REF_COLUMNS = (
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
#: written by ``finops pricebook refresh`` beside the columns above: when the row was fetched (ISO-8601 UTC)
FETCHED_AT = "fetched_at"
#: the environment variable naming the user pricebook directory (``--pricebook`` wins over it)
PRICEBOOK_ENV = "FINOPS_PRICEBOOK"
#: shown as a row's ``origin`` when it comes from the shipped tables
SHIPPED = "shipped"

_override: Path | None = None


def pricebook_dir() -> Path:
    """The shipped tables, read as package data (works from a wheel, a zip or a source checkout)."""
    return Path(str(resources.files("finops_cli") / "pricebooks"))


def use_pricebook(path: str | os.PathLike[str] | None) -> None:
    """Make ``path`` the user pricebook for this process (``--pricebook``); None goes back to the default."""
    global _override
    _override = None if path is None else Path(path).expanduser()


def user_pricebook_dir() -> Path:
    """The user pricebook directory: ``--pricebook``, else ``$FINOPS_PRICEBOOK``, else ``$XDG_CONFIG_HOME/finops``.

    ``$XDG_CONFIG_HOME`` defaults to ``~/.config`` (the XDG base-directory rule).
    """
    if _override is not None:
        return _override
    named = os.environ.get(PRICEBOOK_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".config") / "finops"


def _named_explicitly() -> bool:
    return _override is not None or bool(os.environ.get(PRICEBOOK_ENV, "").strip())


def _layers(name: str) -> tuple[tuple[str, str, int], ...]:
    """(path, origin, mtime_ns) of each layer of table ``name``: the shipped file, then the user's if it has one.

    A directory named with ``--pricebook``/``$FINOPS_PRICEBOOK`` must exist (a typo must not silently fall back
    to the shipped prices); the default ``~/.config/finops`` may be absent.
    """
    shipped = pricebook_dir() / name
    layers = [(str(shipped), SHIPPED, 0)]
    user = user_pricebook_dir()
    if not user.is_dir():
        if _named_explicitly():
            if user.exists():
                raise InputError("the pricebook is not a directory", path=user)
            raise InputError(
                "pricebook directory not found (create it, or fill it with 'finops pricebook refresh')", path=user
            )
        return tuple(layers)
    file = user / name
    if file.is_file():
        layers.append((str(file), str(file), file.stat().st_mtime_ns))
    return tuple(layers)


@dataclass(frozen=True)
class ReferencePrice:
    """One row of ``reference_prices.csv``: ``ref`` is ``provider/offering/term``.

    ``origin`` is :data:`SHIPPED` or the user pricebook file the row came from; ``fetched_at`` is set on rows
    written by ``finops pricebook refresh`` (ISO-8601 UTC).
    """

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
    origin: str = SHIPPED
    fetched_at: str | None = None
    gpus: float | None = None
    usd_per_instance_hour: float | None = None

    def provenance(self) -> str:
        """``reference price aws/p5.48xlarge/on_demand (us-east-1) from the user pricebook …: <source>, fetched …``."""
        where = f" ({self.region})" if self.region else ""
        book = "shipped pricebook" if self.origin == SHIPPED else f"user pricebook {self.origin}"
        when = f"fetched {self.fetched_at}" if self.fetched_at else f"read {self.read_on.isoformat()}"
        return f"reference price {self.ref}{where} from the {book}: {self.source}, {when}"


def _check_reference_rows(header: list[str], rows: list[dict[str, str]], path: Path) -> None:
    missing = [c for c in REF_COLUMNS if c not in header]
    if missing:
        raise InputError(f"missing column(s) {missing}", path=path)
    for i, row in enumerate(rows):
        where = csv_line(i)
        try:
            datetime.strptime(row["read_on"], "%Y-%m-%d")
        except ValueError:
            raise InputError(f"read_on: expected YYYY-MM-DD, got {row['read_on']!r}", path=path, where=where) from None
        if not row["source"]:
            raise InputError("source: every reference price needs its source", path=path, where=where)
        if not (row["usd_per_gpu_hour"] or row["usd_per_unit"]):
            raise InputError("give usd_per_gpu_hour or usd_per_unit", path=path, where=where)
        for col in ("usd_per_instance_hour", "usd_per_gpu_hour", "usd_per_unit"):
            try:
                value = _num(row[col])
            except ValueError:
                value = math.nan
            # finite and > 0: an ``inf`` passed ``>= 0`` and every plan priced with it exited 70
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InputError(f"{col}: expected a finite price > 0, got {row[col][:40]!r}", path=path, where=where)
        try:
            gpus = _num(row["gpus"])
        except ValueError:
            gpus = math.nan
        if gpus is not None and not (math.isfinite(gpus) and gpus == int(gpus) and 0 < gpus <= 100_000):
            raise InputError(f"gpus: expected a whole number > 0, got {row['gpus'][:40]!r}", path=path, where=where)


#: The columns of the overlaid reference table: the file's, when each row was fetched, ``origin`` and ``ref``.
_TABLE_COLUMNS = (*REF_COLUMNS, FETCHED_AT, "origin", "ref")


@lru_cache(maxsize=8)
def _reference_table(layers: tuple[tuple[str, str, int], ...]) -> tuple[dict[str, str], ...]:
    """The overlaid rows as strings (the standard library's csv: looking up a ``price_ref`` imports no pandas)."""
    table: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for path, origin, _ in reversed(layers):  # the user's rows first: they win on (ref, region)
        header, cells = read_csv_rows(Path(path), kind="reference price table")
        rows = [dict(zip(header, row, strict=True)) for row in cells]
        _check_reference_rows(header, rows, Path(path))
        for row in rows:
            ref = f"{row['provider']}/{row['offering']}/{row['term']}"
            if (ref, row["region"]) not in seen:
                seen.add((ref, row["region"]))
                table.append({**{c: row[c] for c in REF_COLUMNS}, FETCHED_AT: row.get(FETCHED_AT, ""),
                              "origin": origin, "ref": ref})  # fmt: skip
    return tuple(table)


def _reference_layers(path: Path | None) -> tuple[tuple[str, str, int], ...]:
    if path is not None:
        return ((str(path), str(path), Path(path).stat().st_mtime_ns if Path(path).exists() else 0),)
    return _layers(REFERENCE_PRICES_FILE)


def reference_prices(path: Path | None = None) -> pd.DataFrame:
    """The reference price table, shipped rows overlaid by the user pricebook's (strings as read, plus ``ref``
    ``provider/offering/term`` and ``origin``). ``path``: read that one file only."""
    import pandas as pd

    return pd.DataFrame(list(_reference_table(_reference_layers(path))), columns=list(_TABLE_COLUMNS), dtype=str)


def _num(text: str | None) -> float | None:
    return float(text) if text not in ("", None) else None


def reference_price(ref: str, path: Path | None = None, *, region: str | None = None) -> ReferencePrice:
    """Look up ``provider/offering/term`` (or ``provider/offering/term/region``) in the overlaid table.

    Several rows of one ref differ by region: the one in ``region`` (a substrate's) wins, else the row the
    user pricebook has, else the shipped one. An unknown ref is an :class:`InputError` suggesting close ones.
    """
    table = _reference_table(_reference_layers(path))
    key, pinned = ref, None
    parts = ref.split("/")
    if len(parts) == 4:
        key, pinned = "/".join(parts[:3]), parts[3]
    rows = [r for r in table if r["ref"] == key and (pinned is None or r["region"] == pinned)]
    if not rows:
        refs = list(dict.fromkeys(r["ref"] for r in table))
        close = difflib.get_close_matches(ref, refs, n=3, cutoff=0.5)
        known = ", ".join(r["ref"] for r in table[:6])
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {known}, …"
        where = "the pricebook" if path is None else str(path)
        raise InputError(f"price_ref {ref!r} is not in {where} ({REFERENCE_PRICES_FILE}){hint}")
    row = next((r for r in rows if region and r["region"] == region), rows[0])
    return ReferencePrice(
        ref=key,
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
        origin=row["origin"],
        fetched_at=row[FETCHED_AT] or None,
        gpus=_num(row["gpus"]),
        usd_per_instance_hour=_num(row["usd_per_instance_hour"]),
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


def _gpu_family_patterns() -> list[tuple[str, re.Pattern[str]]]:
    return _family_patterns(_layers(GPU_FAMILIES_FILE))


@lru_cache(maxsize=8)
def _family_patterns(layers: tuple[tuple[str, str, int], ...]) -> list[tuple[str, re.Pattern[str]]]:
    """Every layer's patterns: the user pricebook may add families (its rows are added to the shipped ones)."""
    out = []
    for path, _, _ in layers:
        frame = read_csv_text(Path(path), kind="GPU family table")
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


def is_gpu_family(instance_type: str) -> bool:
    """Does the name belong to a GPU family (``finops_cli/pricebooks/gpu_families.csv``)? CPU-only types do not."""
    low = instance_type.strip().lower()
    return any(p.match(low) for _, p in _gpu_family_patterns())


_INSTANCE_RE = re.compile(INSTANCE_TOKEN)
