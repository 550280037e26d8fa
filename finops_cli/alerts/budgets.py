"""Budgets: ``budgets.yaml`` (validated, JSON Schema published), evaluated against the store with a forecast.

A budget covers the billing lines of a scope (any dimension or tag, as ``finops costs --where``) over a period
(each calendar month, or fixed dates) and has thresholds on **actual** spend and on **forecast** period-end
spend (AWS Budgets' defaults: 50/80/100 % actual, 100 % forecast). :func:`check_budgets` evaluates every budget
as of the instant the store's billing runs to; a crossed threshold fails the check (exit 1, like ``gate``).
Read the file as the estate files are, ``finops_cli.estate.load.load_model(path, Budgets)``: every error names the
file, the line and the field path.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, model_validator

from finops_cli.alerts.forecast import METHOD, Forecast, forecast_total
from finops_cli.alerts.scope import dimension
from finops_cli.alerts.series import daily_costs, data_through, filled
from finops_cli.errors import EXIT_GATE_FAILED, FinopsError, InputError
from finops_cli.store.store import Store

#: days of spend before a period's start the forecast also learns from
HISTORY_DAYS = 56


class ThresholdCrossed(FinopsError):
    """A budget threshold was crossed (exit code 1, as a failed gate)."""

    exit_code = EXIT_GATE_FAILED


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Threshold(_Model):
    """Alert when ``spend`` (actual or forecast) reaches ``percent`` of the amount."""

    spend: Literal["actual", "forecast"]
    percent: PositiveFloat


class Dates(_Model):
    """A fixed period, both dates included."""

    start: date
    end: date

    @model_validator(mode="after")
    def _ordered(self) -> Dates:
        if self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")
        return self


DEFAULT_THRESHOLDS = (
    Threshold(spend="actual", percent=50),
    Threshold(spend="actual", percent=80),
    Threshold(spend="actual", percent=100),
    Threshold(spend="forecast", percent=100),
)
Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code, e.g. USD")]


class Budget(_Model):
    """One budget: a scope, a period, an amount and its thresholds."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}$", description="unique id")]
    scope: dict[str, str | list[str]] = Field(
        default_factory=dict,
        description="dimension or tag → value(s), as 'finops costs --where' (team, provider, account, workload, …); "
        "empty: every line",
    )
    period: Literal["monthly"] | Dates = "monthly"
    amount: PositiveFloat
    currency: Currency | None = Field(None, description="default: the file's currency")
    thresholds: list[Threshold] = Field(default_factory=lambda: list(DEFAULT_THRESHOLDS), min_length=1)
    cost: Literal["effective", "billed"] | None = Field(None, description="default: the file's cost")
    all_lines: bool = Field(False, description="every billing line, not only GPU lines")

    def where(self) -> dict[str, list[str]]:
        return {dimension(k): [v] if isinstance(v, str) else list(v) for k, v in self.scope.items()}


class Budgets(_Model):
    """``budgets.yaml``."""

    version: Literal[1]
    currency: Currency = "USD"
    cost: Literal["effective", "billed"] = "effective"
    budgets: list[Budget] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> Budgets:
        seen: set[str] = set()
        for i, b in enumerate(self.budgets):
            if b.name in seen:
                raise ValueError(f"budgets[{i}].name: duplicate name {b.name!r}")
            seen.add(b.name)
        return self


def json_schema_text() -> str:
    """The published ``docs/budgets.schema.json`` (regenerate: ``python -m finops_cli.alerts.budgets``)."""
    import json

    schema = Budgets.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://finops.example/budgets.schema.json"
    schema["title"] = "finops budgets.yaml"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def period_of(budget: Budget, day: date) -> tuple[date, date]:
    """[start, end) of the budget's period holding ``day`` (a fixed period is itself)."""
    if isinstance(budget.period, Dates):
        return budget.period.start, budget.period.end + timedelta(days=1)
    start = day.replace(day=1)
    return start, (start + timedelta(days=32)).replace(day=1)


def _scope_text(budget: Budget) -> str:
    return ", ".join(f"{k}={','.join(v)}" for k, v in budget.where().items()) or "all"


def evaluate(store: Store, budget: Budget, budgets: Budgets, through: datetime, day: date) -> dict[str, Any]:
    """One budget's row: period, actual, forecast, thresholds crossed, notes."""
    currency = budget.currency or budgets.currency
    start, end = period_of(budget, day)
    edge = min(max(through.date(), start), end)  # the first day not wholly billed, within the period
    frame = daily_costs(
        store, [], budget.where(), start - timedelta(days=HISTORY_DAYS), end,
        cost=budget.cost or budgets.cost, gpu_only=not budget.all_lines,
    )  # fmt: skip
    notes = [
        f"{c} spend of {float(v):,.2f} in scope is not counted in a {currency} budget"
        for c, v in frame[frame["currency"] != currency].groupby("currency")["cost"].sum().items()
        if abs(float(v)) > 0.005
    ]
    cutoff = through.date() + timedelta(days=0 if through.time() == datetime.min.time() else 1)
    mine = frame[(frame["currency"] == currency) & (frame["day"] < cutoff)]
    in_period = mine[(mine["day"] >= start) & (mine["day"] < end)]
    actual = float(in_period["cost"].sum())
    complete = float(in_period[in_period["day"] < edge]["cost"].sum())
    spent = mine[mine["day"] < edge]
    if spent.empty:
        history = filled(spent["day"], spent["cost"], edge, edge)
    else:
        history = filled(spent["day"], spent["cost"], min(spent["day"]), edge)
    forecast: Forecast = forecast_total(history, complete, (end - edge).days)
    if edge < end:
        notes.append(f"partial period: billing runs to {through:%Y-%m-%d %H:%M} UTC; actual is period to date")
    crossed = []
    for t in budget.thresholds:
        value = actual if t.spend == "actual" else forecast.expected
        if value is not None and value >= budget.amount * t.percent / 100.0 - 1e-9:
            crossed.append({"spend": t.spend, "percent": t.percent, "value": value})
    return {
        "name": budget.name,
        "scope": _scope_text(budget),
        "period": {"start": start.isoformat(), "end": (end - timedelta(days=1)).isoformat()},
        "currency": currency,
        "amount": budget.amount,
        "actual": actual,
        "actual_pct": 100.0 * actual / budget.amount,
        "forecast": forecast.as_json(),
        "thresholds": [t.model_dump() for t in budget.thresholds],
        "crossed": crossed,
        "status": "alert" if crossed else "ok",
        "dedup_key": f"finops/budget/{budget.name}/{start.isoformat()}",
        "notes": notes,
    }


def check_budgets(
    store: Store, budgets: Budgets, *, month: str | None = None, as_of: datetime | None = None
) -> dict[str, Any]:
    """Every budget evaluated as of the end of the store's billing, or ``as_of`` (midnight UTC of its day) if
    earlier; ``month``: the period holding that month's first day instead of the as-of day's. The
    ``finops.budget_check`` document; ``passed`` is False when any threshold is crossed."""
    through = data_through(store)
    if as_of is not None:
        through = min(through, datetime(as_of.year, as_of.month, as_of.day, tzinfo=UTC))
    day = (through - timedelta(microseconds=1)).date()
    if month is not None:
        try:
            day = datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC).date()
        except ValueError:
            raise InputError(f"{month!r}: expected YYYY-MM such as 2026-10", param="month") from None
    rows = [evaluate(store, b, budgets, through, day) for b in budgets.budgets]
    return {
        "kind": "finops.budget_check",
        "schema_version": 1,
        "as_of": through.isoformat(),
        "forecast_method": METHOD,
        "passed": not any(r["crossed"] for r in rows),
        "budgets": rows,
    }


if __name__ == "__main__":
    print(json_schema_text(), end="")
