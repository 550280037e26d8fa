"""Generated market scenarios: cluster compositions × tenant mixes × contention levels, seeded.

The experiments of ``finops simulate market --experiment …`` run on these families. They were fixed
(and documented in docs/market.md) before any experiment was run; change them only with a note there.

- **Accelerators** (:data:`ACCELERATORS`): five types, each with a base price and a speed (hours per
  unit of work); the slow types are the cheapest per unit of work.
- **Compositions** (:data:`COMPOSITIONS`): the share of the cluster of each type.
- **Workload families** (:data:`WORKLOADS`): LLM inference services (stateless), checkpointed training,
  genomics pipelines and HPC simulations: work, compatibility, checkpoints and migration overheads.
- **Tenant classes** (:data:`TENANT_CLASSES`): *urgent* (a high value of time and a hard deadline),
  *standard* (a modest value of time and a soft deadline) and *batch* (``value_per_hour`` 0, no
  deadline: today's break-even agent), drawn with fixed shares.
- **Contention** ρ: tenants arrive uniformly over ``window_hours`` until their offered load — the
  hours each needs on its preferred type — reaches ρ × accelerators × window.

Each random quantity has its own stream spawned from one seed (Gavel's style), so changing one draw
leaves the others where they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from finops_cli.sim.market.scenario import Scenario, Tenant

#: type → (base price USD/h, hours per unit of work). USD per unit of work: H100 3.00, A100 2.88,
#: L40S 2.42, A10 1.80, L4 1.75 — the fastest is the dearest per unit of work.
ACCELERATORS: dict[str, tuple[float, float]] = {
    "H100": (3.00, 1.0),
    "A100": (1.80, 1.6),
    "L40S": (1.10, 2.2),
    "A10": (0.60, 3.0),
    "L4": (0.50, 3.5),
}

#: composition → share of the accelerators of each type (sums to 1).
COMPOSITIONS: dict[str, dict[str, float]] = {
    "fast-scarce": {"H100": 0.10, "A100": 0.15, "L40S": 0.25, "A10": 0.25, "L4": 0.25},
    "balanced": {"H100": 0.20, "A100": 0.20, "L40S": 0.20, "A10": 0.20, "L4": 0.20},
    "cheap-scarce": {"H100": 0.60, "A100": 0.25, "L40S": 0.08, "A10": 0.04, "L4": 0.03},
}


@dataclass(frozen=True)
class TenantClass:
    """How one class of tenants values time. Deadlines are multiples of the tenant's best time."""

    share: float
    value_per_hour: tuple[float, float]  # USD/h, uniform range
    deadline: str | None  # "hard" | "soft" | None
    deadline_multiple: float = 0.0  # deadline = multiple × best time (fastest compatible type)
    hard_penalty_multiple: float = 0.0  # hard: penalty = multiple × value_per_hour × best time


@dataclass(frozen=True)
class Workload:
    """A workload family: how much work, where it runs, and what a move costs it (uniform ranges).

    ``restart_hours`` is the wall time to resume on another accelerator (billed there); the overheads are
    the orders of magnitude the systems the papers cite report (docs/market.md, *workload families*).
    """

    share: float
    work: tuple[float, float]  # units (hours on an H100)
    types: tuple[int, int]  # how many of the five types it runs on
    checkpoint_hours: tuple[float, float]  # between checkpoints (a service: its agent's decision period)
    restart_hours: tuple[float, float]
    restart_usd: tuple[float, float]  # checkpoint-restart cost per move (storage, transfer)
    stateless: bool = False


#: The workload families (shares sum to 1). Sources in docs/market.md.
WORKLOADS: dict[str, Workload] = {
    # LLM inference service: hardware-agnostic serving, stateless; a move reloads the model (ServerlessLLM:
    # tens of seconds to load a 30–70 B checkpoint, a few seconds with its loader)
    "inference": Workload(0.35, (1.0, 8.0), (5, 5), (0.25, 0.25), (5 / 3600, 90 / 3600), (0.0, 0.0), True),
    # checkpointed training: periodic checkpoints; resume = load + re-shard onto the new type (minutes)
    "training": Workload(0.30, (2.0, 12.0), (2, 5), (0.25, 1.0), (2 / 60, 10 / 60), (0.0, 0.5)),
    # genomics pipeline (Parabricks): a stage's output is its checkpoint; resume = re-stage the inputs
    "genomics": Workload(0.20, (0.5, 3.0), (3, 5), (0.2, 0.6), (1 / 60, 5 / 60), (0.0, 0.1)),
    # HPC simulation (HACC): application checkpoints to a parallel file system; resume reads them back
    "hpc": Workload(0.15, (4.0, 16.0), (2, 5), (0.5, 2.0), (5 / 60, 15 / 60), (0.1, 1.0)),
}

TENANT_CLASSES: dict[str, TenantClass] = {
    "urgent": TenantClass(0.2, (5.0, 20.0), "hard", deadline_multiple=1.5, hard_penalty_multiple=3.0),
    "standard": TenantClass(0.5, (0.5, 3.0), "soft", deadline_multiple=3.0),
    "batch": TenantClass(0.3, (0.0, 0.0), None),
}

#: Named sizes: accelerators and arrival window (hours). ``small`` runs in CI in seconds.
SIZES: dict[str, tuple[int, float]] = {"small": (40, 8.0), "full": (400, 24.0)}

#: The share of the arrival window that is warm-up: the cluster starts empty, so tenants arriving in it are
#: simulated (they load the cluster) but not scored; the experiments' metrics cover arrivals after it.
WARMUP_SHARE = 0.25

#: The contention levels ρ (offered load ÷ capacity) of the *contention* experiment.
CONTENTION_LEVELS: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0)


def pools(composition: dict[str, float], n_accelerators: int) -> list[dict[str, object]]:
    """Accelerator pools for a composition: at least one of each type listed."""
    return [
        {"type": k, "count": max(1, round(n_accelerators * share)), "base_price_per_hour": ACCELERATORS[k][0]}
        for k, share in composition.items()
        if share > 0
    ]


def _pick(rng: np.random.Generator, shares: dict[str, float]) -> str:
    """One name drawn with probability proportional to its share (one uniform draw)."""
    u = float(rng.random()) * sum(shares.values())
    for name, share in shares.items():
        u -= share
        if u < 0:
            return name
    return name


#: How an inference service's demand is modelled: ``volume`` — a fixed volume of requests it finishes
#: (done sooner on faster hardware); ``lifetime`` — a fixed lifetime and a request rate (the same requests
#: spread over the time an A10 of its own speed takes to serve them): it serves at most that rate, and
#: what it cannot serve while waiting or on slower hardware is lost (the metric: throughput retained).
SERVICE_MODELS = ("volume", "lifetime")


def tenant_stream(seed: int, types: list[str], prefix: str = "t", services: str = "volume") -> Iterator[dict[str, Any]]:
    """An endless, seeded stream of tenant dicts (arrival left at 0: the caller spreads arrivals);
    ``services`` is one of :data:`SERVICE_MODELS`."""
    s_class, s_work, s_compat, s_speed, s_value, s_ckpt = (
        np.random.default_rng(x) for x in np.random.SeedSequence(seed).spawn(6)
    )
    s_family = np.random.default_rng(np.random.SeedSequence(seed).spawn(8)[7])
    classes = {k: c.share for k, c in TENANT_CLASSES.items()}
    workloads = {k: w.share for k, w in WORKLOADS.items()}
    n = 0
    while True:
        cls_name = _pick(s_class, classes)
        cls = TENANT_CLASSES[cls_name]
        family = _pick(s_family, workloads)
        wl = WORKLOADS[family]
        work = float(s_work.uniform(*wl.work))
        k = int(s_compat.integers(min(wl.types[0], len(types)), min(wl.types[1], len(types)) + 1))
        compatible = sorted(s_compat.choice(len(types), size=k, replace=False).tolist())
        noise = s_speed.uniform(0.8, 1.25, size=len(types))
        hours = {types[j]: float(ACCELERATORS[types[j]][1] * noise[j]) for j in compatible}
        lo, hi = cls.value_per_hour
        value = float(s_value.uniform(lo, hi)) if hi > 0 else 0.0
        best = work * min(hours.values())
        tenant: dict[str, object] = {
            "id": f"{prefix}{n}-{family}-{cls_name}",
            "work": work,
            "execution_hours": hours,
            "checkpoint_interval_hours": float(s_ckpt.uniform(*wl.checkpoint_hours)),
            "checkpoint_restart_cost": float(s_ckpt.uniform(*wl.restart_usd)),
            "restart_hours": float(s_ckpt.uniform(*wl.restart_hours)),
            "value_per_hour": value,
            "stateless": wl.stateless,
        }
        if wl.stateless and services == "lifetime":
            ref = hours.get("A10") or sorted(hours.values())[len(hours) // 2]
            tenant["lifetime_hours"] = work * ref  # no deadline: it ends when its lifetime does
        elif cls.deadline == "hard":
            tenant["deadline"] = {
                "hours": cls.deadline_multiple * best,
                "kind": "hard",
                "penalty": cls.hard_penalty_multiple * value * best,
            }
        elif cls.deadline == "soft":
            tenant["deadline"] = {"hours": cls.deadline_multiple * best, "kind": "soft", "penalty_per_hour": value}
        yield tenant
        n += 1


def generate(
    composition: str | dict[str, float],
    contention: float,
    *,
    n_accelerators: int,
    window_hours: float,
    seed: int,
    options: dict[str, object] | None = None,
    extra_pools: list[dict[str, object]] | None = None,
    hours_alias: dict[str, str] | None = None,
    n_tenants: int | None = None,
    services: str = "volume",
) -> Scenario:
    """One scenario of the family: ``composition`` at contention ρ = ``contention``.

    Tenants are drawn from :func:`tenant_stream` until their offered load (hours on their preferred
    type at base prices, :meth:`Tenant.preference`) reaches ρ × accelerators × window; arrivals are
    uniform over the window (their own stream). ``extra_pools`` and ``hours_alias`` (new type → the
    type whose speed it shares) add accelerator groups, e.g. the operator experiment's capped group.
    ``n_tenants`` draws exactly that many tenants instead (the benchmark's 2,000). ``services``: how the
    inference services' demand is modelled (:data:`SERVICE_MODELS`).
    """
    mix = COMPOSITIONS[composition] if isinstance(composition, str) else composition
    accelerators = pools(mix, n_accelerators) + list(extra_pools or [])
    prices = {str(a["type"]): float(a["base_price_per_hour"]) for a in accelerators}  # type: ignore[arg-type]
    capacity = sum(int(a["count"]) for a in accelerators)  # type: ignore[call-overload]
    target = contention * capacity * window_hours
    types = [k for k in mix if mix[k] > 0]
    arrivals = np.random.default_rng(np.random.SeedSequence(seed).spawn(7)[6])
    tenants: list[Tenant] = []
    offered = 0.0
    if services not in SERVICE_MODELS:
        raise ValueError(f"unknown service model {services!r}; expected one of {', '.join(SERVICE_MODELS)}")
    for raw in tenant_stream(seed, types, services=services):
        if (offered >= target) if n_tenants is None else (len(tenants) >= n_tenants):
            break
        for new, like in (hours_alias or {}).items():
            hours = raw["execution_hours"]
            if like in hours:
                hours[new] = hours[like]
        raw["arrival_hours"] = float(arrivals.uniform(0.0, window_hours))
        t = Tenant.model_validate(raw)
        offered += t.hours_on(t.preference(prices)[0])
        tenants.append(t)  # validated once: the scenario takes the instance as it is
    doc = {
        "version": 1,
        "name": f"{composition if isinstance(composition, str) else 'custom'} rho={contention:g} seed={seed}",
        "accelerators": accelerators,
        "tenants": tenants,
        "options": options or {},
    }
    return Scenario.model_validate(doc)


def load_by_type(sc: Scenario, since: float, until: float) -> dict[str, float]:
    """Offered load ρ per accelerator type over ``[since, until)``: the hours the tenants arriving then need
    on their preferred type (at base prices), ÷ that type's accelerators × the window's hours."""
    prices = {a.type: a.base_price_per_hour for a in sc.accelerators}
    offered = dict.fromkeys(prices, 0.0)
    for t in sc.tenants:
        if since <= t.arrival_hours < until:
            k = t.preference(prices)[0]
            offered[k] += t.hours_on(k)
    span = max(until - since, 1e-12)
    return {a.type: offered[a.type] / (a.count * span) for a in sc.accelerators}
