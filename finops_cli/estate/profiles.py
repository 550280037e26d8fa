"""Demand profile CSVs (``hour,units`` next to ``workloads.yaml``), parsed and checked without pandas: ``finops
validate`` and the planner (:func:`finops_cli.estate.demand_io.read_profile`) judge a profile by the same rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops_cli.errors import InputError
from finops_cli.files import csv_line, read_csv_rows

if TYPE_CHECKING:
    from finops_cli.estate.load import Estate
    from finops_cli.schema.estate import Workload


@dataclass(frozen=True)
class Profile:
    """A parsed profile: ``hours`` are all integer offsets (0, 1, …) or all UTC timestamps, ``units`` ≥ 0."""

    hours: list[int] | list[datetime]
    units: list[float]

    @property
    def timestamped(self) -> bool:
        return bool(self.hours) and isinstance(self.hours[0], datetime)


def profile_path(estate: Estate, workload: Workload) -> Path:
    """Where ``workload``'s profile CSV lives: relative paths are relative to ``workloads.yaml``."""
    assert workload.demand.profile is not None
    p = Path(workload.demand.profile)
    return p if p.is_absolute() else estate.base_dir / p


def _number(text: str) -> float | None:
    """A decimal number as pandas' ``to_numeric`` reads it (Python's ``float`` also takes ``1_000``: not here)."""
    if "_" in text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _timestamp(text: str) -> datetime | None:
    """An ISO 8601 time in UTC (a time without an offset is UTC)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def parse_profile(path: Path) -> Profile:
    """Read and check a demand profile; errors name the file, line and column. ``hour`` is an integer offset or an
    ISO timestamp, as the first row has it; ``units`` a finite number ≥ 0 (infinity would reach the solver)."""
    header, rows = read_csv_rows(path, kind="demand profile")
    missing = [c for c in ("hour", "units") if c not in header]
    if missing:
        raise InputError(f"missing column(s) {missing}; expected a header 'hour,units'", path=path)
    h, u = header.index("hour"), header.index("units")
    units: list[float] = []
    for i, row in enumerate(rows):
        amount = _number(row[u].strip())
        if amount is None or amount < 0 or math.isinf(amount):
            raise InputError(f"units: expected a number >= 0, got {row[u]!r}", path=path, where=csv_line(i))
        units.append(amount)
    texts = [row[h].strip() for row in rows]
    offsets = not texts or _number(texts[0]) is not None  # the first row decides: integer offsets or timestamps
    hours: list[Any] = []
    for i, text in enumerate(texts):
        if offsets:
            num = _number(text)
            value: int | datetime | None = int(num) if num is not None and num >= 0 and num.is_integer() else None
        else:
            value = _timestamp(text)
        if value is None:
            raise InputError(
                f"hour: expected an integer >= 0 or an ISO timestamp (like the first row), got {text!r}",
                path=path,
                where=csv_line(i),
            )
        hours.append(value)
    return Profile(hours, units)
