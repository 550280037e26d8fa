"""List prices: the pricebook's ``reference_prices.csv`` (shipped rows, then the user's), one row per reference.

A substrate's ``price_ref: aws/p5.48xlarge/on_demand`` (optionally ``…/us-west-2``) is looked up here;
resolving a fleet's prices from these rows and from stored feeds is the estate's job
(:mod:`finops_cli.estate.prices`).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from finops_cli.catalog.pricebook import FETCHED_AT, REF_COLUMNS, REFERENCE_PRICES_FILE, SHIPPED, _layers
from finops_cli.errors import InputError
from finops_cli.files import csv_line, read_csv_rows

if TYPE_CHECKING:
    import pandas as pd


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
    today = as_of or datetime.now(UTC).date()
    return (today - price.read_on).days
