"""The dispatch events file: outages, rate limits and recoveries of destinations (a YAML list, validated; the
format is in docs/dispatch.md, "Inputs"). ``start``/``end`` are hours from the trace's origin or ISO timestamps;
an event without ``end`` lasts until a ``recover``."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator


class DispatchEvent(BaseModel):
    """One change to a destination's availability."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    type: Literal["outage", "rate_limit", "recover"]
    substrate: str = Field(min_length=1)
    start: float | datetime
    end: float | datetime | None = None
    capacity_factor: float | None = Field(default=None, ge=0, le=1)

    @field_validator("start", "end", mode="before")
    @classmethod
    def _hours_or_timestamp(cls, value: object) -> object:
        """One clear error for either spelling (not one per branch of ``float | datetime``)."""
        if value is None or isinstance(value, datetime):
            return value
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.strip())
            except ValueError:
                pass
            try:
                value = float(value)
            except ValueError:
                value = None
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise ValueError("expected hours from the trace start (a finite number) or an ISO timestamp")

    @model_validator(mode="after")
    def _rules(self) -> DispatchEvent:
        if self.type == "rate_limit" and self.capacity_factor is None:
            raise ValueError("a rate_limit event needs capacity_factor (0-1: the share of capacity left)")
        if self.type != "rate_limit" and self.capacity_factor is not None:
            raise ValueError("capacity_factor is only for rate_limit events")
        if self.type == "recover" and self.end is not None:
            raise ValueError("a recover event has no end (it ends the substrate's events at start)")
        if isinstance(self.start, float) and not math.isfinite(self.start):
            raise ValueError("start must be a finite number of hours or a timestamp")
        return self

    def hours(self, origin: datetime | None) -> tuple[float, float]:
        """``(start, end)`` in hours from ``origin`` (end = +inf when open)."""
        return _to_hours(self.start, origin), math.inf if self.end is None else _to_hours(self.end, origin)


class EventsFile(RootModel[list[DispatchEvent]]):
    """The whole file: a YAML list of events."""


def _to_hours(value: float | datetime, origin: datetime | None) -> float:
    if isinstance(value, datetime):
        if origin is None:
            raise ValueError("timestamps in the events file need a trace with timestamps")
        v = value if value.tzinfo else value.replace(tzinfo=UTC)
        o = origin if origin.tzinfo else origin.replace(tzinfo=UTC)
        return (v - o).total_seconds() / 3600
    return float(value)
