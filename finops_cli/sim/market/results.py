"""What a market policy run produced: per tenant, per policy, and the policy's totals (see :mod:`.base`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict


@dataclass
class TenantResult:
    tenant: str
    arrival_hours: float
    finish_hours: float | None
    cost: float
    completion_hours: float | None
    migrations: int
    work_lost_hours: float
    performance_retained: float | None
    accelerators: list[str] = field(default_factory=list)
    deadline_missed: bool | None = None
    penalty: float = 0.0
    time_value: float = 0.0
    budget_exhausted: bool = False  # its money ran out (or never covered the job): stopped, unfinished
    work_redone_hours: float = 0.0  # work since its checkpoint given up by its own choice (a move now)
    served: float | None = None  # a service with a lifetime: the share of its requests it served

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


class PolicyTotals(TypedDict):
    """A policy's totals over every tenant (``None`` where no tenant finished)."""

    cost: float
    finished: int
    unfinished: int
    mean_completion_hours: float | None
    makespan_hours: float | None
    migrations: int
    work_lost_hours: float
    work_redone_hours: float
    mean_performance_retained: float | None
    deadline_misses: int
    penalty: float
    time_value: float
    generalized_cost: float
    bid_updates: int
    budget_exhausted: int


@dataclass
class PolicyResult:
    """One policy's outcome: per tenant, totals, and the event log."""

    policy: str
    tenants: list[TenantResult]
    events: list[dict[str, object]]
    bid_updates: int = 0
    load: dict[str, dict[str, object]] = field(default_factory=dict)
    #: the provider's side of the money: what each accelerator earned and the migrations' fees, USD
    provider: dict[str, float] = field(default_factory=dict)

    def totals(self) -> PolicyTotals:
        done = [t for t in self.tenants if t.finish_hours is not None]
        perf = [t.performance_retained for t in done if t.performance_retained is not None]
        cost = sum(t.cost for t in self.tenants)
        time_value = sum(t.time_value for t in self.tenants)
        penalty = sum(t.penalty for t in self.tenants)
        return {
            "cost": sum(t.cost for t in self.tenants),
            "finished": len(done),
            "unfinished": len(self.tenants) - len(done),
            "mean_completion_hours": (sum(t.completion_hours or 0.0 for t in done) / len(done)) if done else None,
            "makespan_hours": max((t.finish_hours or 0.0 for t in done), default=None),
            "migrations": sum(t.migrations for t in self.tenants),
            "work_lost_hours": sum(t.work_lost_hours for t in self.tenants),
            "work_redone_hours": sum(t.work_redone_hours for t in self.tenants),
            "mean_performance_retained": (sum(perf) / len(perf)) if perf else None,
            "deadline_misses": sum(1 for t in self.tenants if t.deadline_missed),
            "penalty": penalty,
            "time_value": time_value,
            "generalized_cost": cost + time_value + penalty,
            "bid_updates": self.bid_updates,
            "budget_exhausted": sum(1 for t in self.tenants if t.budget_exhausted),
        }

    def as_dict(self, *, events: bool = True) -> dict[str, object]:
        out: dict[str, object] = {
            "policy": self.policy,
            "totals": self.totals(),
            "tenants": [t.as_dict() for t in self.tenants],
        }
        if self.load:
            out["load"] = self.load
        if self.provider:
            out["provider"] = self.provider
        if events:
            out["events"] = self.events
        return out


@dataclass
class ExperimentResult:
    """One experiment: what was run (``params``), the table (``columns`` × ``rows``) and a ``summary``."""

    experiment: str
    params: dict[str, Any]
    columns: list[str]
    rows: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    series: dict[str, Any] = field(default_factory=dict)  # extra data the chart needs (timelines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "params": self.params,
            "columns": self.columns,
            "rows": self.rows,
            "summary": self.summary,
            "series": self.series,
        }
