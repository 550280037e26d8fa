r"""The shared bookkeeping of every market policy: tenants, accelerators, time, money, the event log.

A policy (one per module, Gavel-style) only decides *who runs where and at what price*; this base
class runs the discrete-event loop and keeps the accounts:

- progress: a tenant on accelerator type :math:`k` advances at :math:`1/H_k` of its work per hour
  (:math:`H_k` = ``work × execution_hours[k]``), after ``restart_hours`` on a new accelerator;
- checkpoints: every ``checkpoint_interval_hours`` of running time; a preempted tenant loses the work
  since its last checkpoint (*work lost*, in hours of the accelerator it lost);
- money: the holder of an accelerator pays its current price per hour (piecewise linear in time when
  the floor's fall rate is bounded); each migration costs ``checkpoint_restart_cost``;
- *performance retained* = best possible time (fastest compatible type, no waiting) ÷ achieved time
  (finish − arrival);
- the value of time: a tenant's *time value* is ``value_per_hour`` × its completion hours and its
  *penalty* what its deadline charges for finishing late; *generalized cost* = cost + time value +
  penalty is what a value-of-time agent minimises.

Decision points are arrivals, checkpoints and finishes; simultaneous events run in the order finish,
checkpoint, arrival, then by tenant order (arrival time, then listing order), so every run with the
same scenario is identical.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import ClassVar

from finops_cli.sim.market import agent
from finops_cli.sim.market.agent import EPS
from finops_cli.sim.market.results import PolicyResult, TenantResult
from finops_cli.sim.market.scenario import Scenario

_FINISH, _CHECKPOINT, _ARRIVAL, _BUDGET, _WAKE, _END = 0, 1, 2, 3, 4, 5


class Policy:
    """Base class: the event loop and the accounts. Subclasses implement the ``on_*`` hooks.

    Parameters
    ----------
    scenario
        A validated :class:`~finops_cli.sim.market.scenario.Scenario`.
    log_events
        Keep the event log (``events[{t, type, tenant, accelerator, price}]``); off for benchmarks.
    horizon_hours
        Stop the clock here (tenants still running are reported unfinished); None runs to the end.
    """

    name: ClassVar[str] = "base"

    def __init__(self, scenario: Scenario, *, log_events: bool = True, horizon_hours: float | None = None) -> None:
        self.scenario = scenario
        self.opts = scenario.options
        self.log_events = log_events
        self.horizon = math.inf if horizon_hours is None else horizon_hours
        self.types = [a.type for a in scenario.accelerators]
        self.type_index = {k: j for j, k in enumerate(self.types)}
        self.base_by_type = [a.base_price_per_hour for a in scenario.accelerators]
        # accelerators
        self.acc_type: list[int] = []
        self.acc_label: list[str] = []
        self.by_type: list[list[int]] = [[] for _ in self.types]
        for j, pool in enumerate(scenario.accelerators):
            for k in range(pool.count):
                self.by_type[j].append(len(self.acc_type))
                self.acc_type.append(j)
                self.acc_label.append(f"{pool.type}/{k}")
        n_acc = len(self.acc_type)
        self.holder = [-1] * n_acc
        self.price_p0 = [self.base_by_type[self.acc_type[a]] for a in range(n_acc)]  # price at price_t0
        self.price_t0 = [0.0] * n_acc
        self.price_target = list(self.price_p0)  # where the price settles (a floor falling at a bounded rate)
        self.free_heap: list[list[int]] = [list(ids) for ids in self.by_type]  # lowest index first
        self.revenue = [0.0] * n_acc  # the provider's ledger: what each accelerator has been paid
        self.restart_fees = 0.0  # checkpoint-restart costs paid
        # tenants, in decision order: arrival time, then listing order
        order = sorted(range(len(scenario.tenants)), key=lambda i: (scenario.tenants[i].arrival_hours, i))
        self.tenants = [scenario.tenants[i] for i in order]
        n = len(self.tenants)
        self.hours = [[t.hours_on(k) if k in t.execution_hours else math.inf for k in self.types] for t in self.tenants]
        self.compatible = [[j for j in range(len(self.types)) if math.isfinite(self.hours[i][j])] for i in range(n)]
        prices = dict(zip(self.types, self.base_by_type, strict=True))
        self.pref = [[self.type_index[k] for k in t.preference(prices)] for t in self.tenants]
        # a budget is a spending limit: a tenant launches only on types whose whole job it can pay for at
        # base prices (none: it does not launch), and it is stopped the moment its money runs out
        self.budget = [t.budget for t in self.tenants]
        self.unaffordable = [False] * n
        for i, b in enumerate(self.budget):
            if b is not None:
                self.pref[i] = [j for j in self.pref[i] if self.hours[i][j] * self.base_by_type[j] <= b + EPS]
                self.unaffordable[i] = not self.pref[i]
        self.exhausted = [False] * n
        self.budget_version = [0] * n
        self.wake_version = [0] * n  # a waiting agent's next periodic update (stale when re-scheduled)
        self.on = [-1] * n
        self.progress = [0.0] * n  # fraction of work done at seg_t0
        self.ckpt = [0.0] * n  # fraction saved at the last checkpoint
        self.seg_t0 = [0.0] * n  # when progress was last written
        self.run_from = [0.0] * n  # progress accrues from here (after a restart)
        self.cost = [0.0] * n
        self.paid_until = [0.0] * n
        self.migrations = [0] * n
        self.lost_hours = [0.0] * n
        self.redone_hours = [0.0] * n  # work given up by choice: a move now, before the checkpoint
        self.finish: list[float | None] = [None] * n
        self.started = [False] * n
        self.left_acc = [-1] * n  # the accelerator the tenant last left (at seg_t0)
        self.next_ckpt = [math.inf] * n  # a running tenant's next checkpoint (inf: it finishes first)
        self.version = [0] * n
        self.used: list[list[str]] = [[] for _ in range(n)]
        self.waiting: list[deque[int]] = [deque() for _ in self.types]
        self.events: list[dict[str, object]] = []
        self.bid_updates = 0  # how many times an agent (re)computed a bid
        # load per type: accelerators held now, ∫ held dt, peak, and a timeline for load-priced pools
        self.busy = [0] * len(self.types)
        self.busy_area = [0.0] * len(self.types)
        self.busy_peak = [0] * len(self.types)
        self.busy_t = [0.0] * len(self.types)
        self.over_cap_hours = [0.0] * len(self.types)
        self.load_pricing = [a.load_pricing for a in scenario.accelerators]
        self.timeline: dict[int, list[tuple[float, int]]] = {
            j: [(0.0, 0)] for j, lp in enumerate(self.load_pricing) if lp is not None
        }
        self._heap: list[tuple[float, int, int, int, int]] = []
        self.now = 0.0

    # --- the event loop ---------------------------------------------------------------------------

    def run(self) -> PolicyResult:
        for i, tenant in enumerate(self.tenants):
            if self.unaffordable[i]:
                self.exhausted[i] = True  # its budget pays for the job nowhere: it never launches
                self.log(tenant.arrival_hours, "budget", i, None, None)
                continue
            heapq.heappush(self._heap, (tenant.arrival_hours, _ARRIVAL, i, 0, 0))
            if tenant.lifetime_hours is not None:
                heapq.heappush(self._heap, (tenant.arrival_hours + tenant.lifetime_hours, _END, i, 0, 0))
        while self._heap:
            t, kind, i, ver, _ = heapq.heappop(self._heap)
            if t > self.horizon:
                break
            if kind == _WAKE:  # a stale wake-up does not move the clock (it would stretch the run's end)
                if ver == self.wake_version[i] and self.queued(i):
                    self.now = t
                    self.on_wake(i, t)
                continue
            if kind == _END and (self.finish[i] is not None or self.exhausted[i]):
                continue  # it served everything (or stopped) before its lifetime ended
            self.now = t
            if kind == _END:
                self.end_of_life(i, t)
                continue
            if kind == _BUDGET:
                if ver == self.budget_version[i] and self.on[i] >= 0:
                    self._budget_check(i, t)
                continue
            if kind == _ARRIVAL:
                batch = [i]
                while self._heap and self._heap[0][0] == t and self._heap[0][1] == _ARRIVAL:
                    batch.append(heapq.heappop(self._heap)[2])
                for j in batch:
                    self.log(t, "arrive", j, None, None)
                self.on_arrivals(batch, t)
                continue
            if ver != self.version[i]:
                continue  # stale: the tenant moved or was preempted since this was scheduled
            if kind == _FINISH:
                a = self.stop(i, t)
                self.progress[i] = self.ckpt[i] = 1.0
                self.finish[i] = t
                self.log(t, "finish", i, a, None)
                self.on_finish(i, a, t)
            else:
                self.progress[i] = self.progress_at(i, t)
                self.seg_t0[i] = t
                self.ckpt[i] = self.progress[i]
                self._schedule_checkpoint(i, t)
                self.log(t, "checkpoint", i, self.on[i], None)
                self.on_checkpoint(i, t)
        end = min(self.horizon, max([self.now, *[f for f in self.finish if f is not None]]))
        for i in range(len(self.tenants)):
            if self.on[i] >= 0:
                self.settle(i, end)
        for j in range(len(self.types)):
            self._load_change(j, 0, end)
        self.end = end
        return self.result()

    # --- hooks ------------------------------------------------------------------------------------

    def on_arrivals(self, tenants: list[int], t: float) -> None:
        raise NotImplementedError

    def on_checkpoint(self, i: int, t: float) -> None:
        """Allocations fixed for life by default: nothing happens at a checkpoint."""

    def on_finish(self, i: int, a: int, t: float) -> None:
        self.on_vacated(a, t)

    def end_of_life(self, i: int, t: float) -> None:
        """A service's lifetime ends: it stops wherever it is (running, or still waiting) and has served what
        it served; requests it did not serve are lost."""
        a = self.stop(i, t)
        self.finish[i] = t
        self.log(t, "finish", i, a, None)
        self.on_end_of_life(i, a, t)

    def on_end_of_life(self, i: int, a: int, t: float) -> None:
        """Hand on the accelerator a service held when its lifetime ended (-1: it was waiting)."""
        if a >= 0:
            self.on_finish(i, a, t)

    def on_wake(self, i: int, t: float) -> None:
        """A waiting tenant's agent updates (scheduled by :meth:`schedule_wake`); default: nothing."""

    def schedule_wake(self, i: int, t: float) -> None:
        """Wake waiting tenant ``i``'s agent at ``t`` (replacing any earlier wake-up)."""
        self.wake_version[i] += 1
        heapq.heappush(self._heap, (t, _WAKE, i, self.wake_version[i], 0))

    def on_budget_exhausted(self, i: int, a: int, t: float) -> None:
        """Tenant ``i``'s money ran out; it was taken off ``a`` (-1: it held nothing). Default: hand ``a`` on."""
        if a >= 0:
            self.on_vacated(a, t)

    # --- budgets: a spending limit ----------------------------------------------------------------

    def spent(self, i: int, t: float) -> float:
        """What tenant ``i`` has paid up to ``t`` (settled first)."""
        self.settle(i, t)
        return self.cost[i]

    def burn_rate(self, i: int, t: float) -> float:
        """USD per hour tenant ``i`` is paying now (an upper bound while a price falls)."""
        return self.price_at(self.on[i], t) if self.on[i] >= 0 else 0.0

    def can_afford(self, i: int, type_j: int) -> bool:
        """Whether tenant ``i``'s remaining budget pays to finish on ``type_j`` at its floor now, with a
        checkpoint-restart if it would be a migration (always, without a budget)."""
        b = self.budget[i]
        if b is None:
            return True
        f = self.ckpt[i] if self.started[i] else 0.0
        need = (1.0 - f) * self.hours[i][type_j] * self.floor_price(type_j)
        if self.started[i] and self.progress[i] > 0:
            need += self.tenants[i].checkpoint_restart_cost
        return self.spent(i, self.now) + need <= b + EPS

    def schedule_budget(self, i: int, t: float) -> None:
        """(Re)schedule the instant tenant ``i``'s money runs out at its current spending rate."""
        b = self.budget[i]
        if b is None or self.on[i] < 0:
            return
        self.budget_version[i] += 1
        rate = self.burn_rate(i, t)
        left = b - self.spent(i, t)
        if left <= EPS:
            heapq.heappush(self._heap, (t, _BUDGET, i, self.budget_version[i], 0))
        elif rate > EPS:
            heapq.heappush(self._heap, (t + left / rate, _BUDGET, i, self.budget_version[i], 0))

    def _budget_check(self, i: int, t: float) -> None:
        b = self.budget[i]
        assert b is not None
        if b - self.spent(i, t) > 1e-9:
            self.schedule_budget(i, t)  # a price fell since it was scheduled: later
            return
        a = self.stop(i, t, lose_work=True)
        self.exhausted[i] = True
        self.log(t, "budget", i, a, None)
        self.on_budget_exhausted(i, a, t)

    def on_vacated(self, a: int, t: float) -> None:
        """Default: the first waiting tenant (arrival order) that can use ``a`` gets it, else it is free."""
        j = self.pop_waiting(self.acc_type[a])
        if j >= 0:
            self.start(j, a, t)
        else:
            self.mark_free(a)

    # --- accounts ---------------------------------------------------------------------------------

    def progress_at(self, i: int, t: float) -> float:
        a = self.on[i]
        if a < 0:
            return self.progress[i]
        run = t - max(self.seg_t0[i], self.run_from[i])
        if run <= 0:
            return self.progress[i]
        return min(1.0, self.progress[i] + run / self.hours[i][self.acc_type[a]])

    def price_at(self, a: int, t: float) -> float:
        """Current price of accelerator ``a``: falls towards its target at the bounded rate, else jumps."""
        p0, target = self.price_p0[a], self.price_target[a]
        rate = self.opts.floor_fall_per_hour
        if p0 <= target or rate is None:
            return target
        return max(target, p0 - rate * (t - self.price_t0[a]))

    def _price_integral(self, a: int, t1: float, t2: float) -> float:
        """∫ price dt over [t1, t2] (exact for the linear fall)."""
        if t2 <= t1:
            return 0.0
        p0, target, rate = self.price_p0[a], self.price_target[a], self.opts.floor_fall_per_hour
        if p0 <= target or rate is None:
            return target * (t2 - t1)
        t_hit = self.price_t0[a] + (p0 - target) / rate  # when the fall reaches the target
        total = 0.0
        if t1 < t_hit:
            u2 = min(t2, t_hit)
            total += (self.price_at(a, t1) + self.price_at(a, u2)) / 2 * (u2 - t1)
        if t2 > t_hit:
            total += target * (t2 - max(t1, t_hit))
        return total

    def settle(self, i: int, t: float) -> None:
        """Charge tenant ``i`` for its accelerator up to ``t``."""
        a = self.on[i]
        if a >= 0 and t > self.paid_until[i]:
            self.charge(i, a, self._price_integral(a, self.paid_until[i], t))
        self.paid_until[i] = max(self.paid_until[i], t)

    def charge(self, i: int, a: int, usd: float) -> None:
        """Tenant ``i`` pays ``usd`` for accelerator ``a``: both sides of the ledger."""
        self.cost[i] += usd
        self.revenue[a] += usd

    def set_price(self, a: int, target: float, t: float) -> None:
        """Move ``a``'s price towards ``target`` (rises at once; falls at most at the bounded rate)."""
        h = self.holder[a]
        if h >= 0:
            self.settle(h, t)
        old = self.price_at(a, t)
        self.price_p0[a], self.price_t0[a], self.price_target[a] = old, t, target
        if abs(old - target) > EPS:
            self.log(t, "price", h if h >= 0 else None, a, target)
            if h >= 0 and target > old:
                self.schedule_budget(h, t)

    # --- moving tenants ---------------------------------------------------------------------------

    def start(self, i: int, a: int, t: float) -> None:
        """Put tenant ``i`` on accelerator ``a`` now; a move after the first start is a migration."""
        if self.on[i] >= 0:
            self.stop(i, t)
        # a move before any work was done (displaced the instant it started) is no migration
        # nor is taking back, at the same instant, the accelerator it has just left (nothing moved)
        back = self.left_acc[i] == a and self.seg_t0[i] == t
        migrating = self.started[i] and not back and not (self.progress[i] <= 0 and self.seg_t0[i] == t)
        b = self.budget[i]
        if migrating and b is not None and self.cost[i] + self.tenants[i].checkpoint_restart_cost > b + EPS:
            self.exhausted[i] = True  # it cannot pay to restore its checkpoint: it stops here
            self.log(t, "budget", i, a, None)
            self.on_budget_exhausted(i, -1, t)
            self.on_vacated(a, t)
            return
        self.started[i] = True
        self.on[i] = a
        self.holder[a] = i
        self.paid_until[i] = t
        self.seg_t0[i] = t
        self._load_change(self.acc_type[a], 1, t)
        tenant = self.tenants[i]
        self.run_from[i] = t + (tenant.restart_hours if migrating else 0.0)
        if migrating:
            self.migrations[i] += 1
            self.cost[i] += tenant.checkpoint_restart_cost
            self.restart_fees += tenant.checkpoint_restart_cost
        label = self.types[self.acc_type[a]]
        if not self.used[i] or self.used[i][-1] != label:
            self.used[i].append(label)
        self.log(t, "migrate" if migrating else "start", i, a, self.price_at(a, t))
        self.version[i] += 1
        ver = self.version[i]
        finish_t = self.run_from[i] + (1.0 - self.progress[i]) * self.hours[i][self.acc_type[a]]
        heapq.heappush(self._heap, (finish_t, _FINISH, i, ver, 0))
        self._schedule_checkpoint(i, t)
        self.schedule_budget(i, t)

    def _schedule_checkpoint(self, i: int, t: float) -> None:
        a = self.on[i]
        if a < 0:
            return
        remaining = (1.0 - self.progress_at(i, t)) * self.hours[i][self.acc_type[a]]
        nxt = max(t, self.run_from[i]) + self.tenants[i].checkpoint_interval_hours
        if nxt < max(t, self.run_from[i]) + remaining - EPS:
            heapq.heappush(self._heap, (nxt, _CHECKPOINT, i, self.version[i], 0))
            self.next_ckpt[i] = nxt
        else:
            self.next_ckpt[i] = math.inf  # it finishes before another checkpoint

    def stop(self, i: int, t: float, *, lose_work: bool = False, redo: bool = False) -> int:
        """Take tenant ``i`` off its accelerator now; ``lose_work`` rolls back to the last checkpoint (work
        lost), ``redo`` too, by the tenant's own choice (work it will redo, counted apart)."""
        a = self.on[i]
        if a < 0:
            return -1
        self.settle(i, t)
        f = self.progress_at(i, t)
        if self.tenants[i].stateless:
            self.ckpt[i] = f  # a service keeps everything it served
        elif (lose_work or redo) and f > self.ckpt[i]:
            hours = (f - self.ckpt[i]) * self.hours[i][self.acc_type[a]]
            if redo:
                self.redone_hours[i] += hours
            else:
                self.lost_hours[i] += hours
            f = self.ckpt[i]
        self.progress[i] = f
        self.seg_t0[i] = t
        self.left_acc[i] = a
        self.on[i] = -1
        self.holder[a] = -1
        self.version[i] += 1
        self._load_change(self.acc_type[a], -1, t)
        return a

    def _load_change(self, j: int, delta: int, t: float) -> None:
        """Account the load of type ``j`` up to ``t``, then change it by ``delta`` accelerators."""
        dt = t - self.busy_t[j]
        if dt > 0:
            self.busy_area[j] += self.busy[j] * dt
            lp = self.load_pricing[j]
            if lp is not None and lp.cap is not None and self.busy[j] > lp.cap * len(self.by_type[j]) + EPS:
                self.over_cap_hours[j] += dt
        self.busy_t[j] = max(self.busy_t[j], t)
        if delta:
            self.busy[j] += delta
            self.busy_peak[j] = max(self.busy_peak[j], self.busy[j])
            if j in self.timeline:
                self.timeline[j].append((t, self.busy[j]))

    # --- accelerators and queues ------------------------------------------------------------------

    def take_free(self, type_j: int) -> int:
        """Pop the lowest-index free accelerator of a type (-1 if none)."""
        h = self.free_heap[type_j]
        while h:
            a = heapq.heappop(h)
            if self.is_free(a):
                return a
        return -1

    def peek_free(self, type_j: int) -> int:
        h = self.free_heap[type_j]
        while h and not self.is_free(h[0]):
            heapq.heappop(h)
        return h[0] if h else -1

    def is_free(self, a: int) -> bool:
        return self.holder[a] < 0

    def mark_free(self, a: int) -> None:
        heapq.heappush(self.free_heap[self.acc_type[a]], a)

    def enqueue(self, i: int) -> None:
        for j in self.pref[i]:
            self.waiting[j].append(i)
        self.log(self.now, "wait", i, None, None)

    def pop_waiting(self, type_j: int) -> int:
        q = self.waiting[type_j]
        while q:
            i = q.popleft()
            if self.queued(i):
                return i
        return -1

    def queued(self, i: int) -> bool:
        """Whether tenant ``i`` is still waiting for an accelerator."""
        return self.on[i] < 0 and self.finish[i] is None and not self.exhausted[i] and self.waits(i)

    def waits(self, i: int) -> bool:
        """Whether a queued tenant still waits (subclasses may hold it elsewhere)."""
        return True

    def cheapest_free(self, i: int) -> int:
        """The free accelerator of the tenant's most preferred type that has one (-1 if none)."""
        for j in self.pref[i]:
            if not self.can_afford(i, j):
                continue
            a = self.take_free(j)
            if a >= 0:
                return a
        return -1

    # --- economics --------------------------------------------------------------------------------

    def floor_price(self, type_j: int) -> float:
        """The price below which nobody gets an accelerator of ``type_j`` now (fixed policies: the base)."""
        return self.base_by_type[type_j]

    def penalty(self, i: int, finish_at: float) -> float:
        """What tenant ``i``'s deadline charges for finishing at ``finish_at`` (0 without a deadline)."""
        return self.tenants[i].penalty_at(finish_at)

    def live_price(self, i: int, type_j: int) -> float:
        """What tenant ``i`` would pay an hour for ``type_j`` now (fixed policies: the floor)."""
        return self.floor_price(type_j)

    def contested(self, a: int, i: int) -> bool:
        """Whether anyone but tenant ``i`` wants accelerator ``a`` now (fixed policies: assume so)."""
        return True

    def willingness_to_pay(self, i: int, type_j: int, *, incumbent: bool = False) -> float:
        """Tenant ``i``'s bid for an accelerator of ``type_j`` now: :func:`.agent.willingness_to_pay`."""
        return agent.willingness_to_pay(self, i, type_j, incumbent=incumbent)

    # --- output -----------------------------------------------------------------------------------

    def log(self, t: float, kind: str, i: int | None, a: int | None, price: float | None) -> None:
        if self.log_events:
            self.events.append(
                {
                    "t": t,
                    "type": kind,
                    "tenant": None if i is None else self.tenants[i].id,
                    "accelerator": None if a is None or a < 0 else self.acc_label[a],
                    "price": price,
                }
            )

    def result(self) -> PolicyResult:
        out = []
        for i, tenant in enumerate(self.tenants):
            best = min(self.hours[i])
            fin = self.finish[i]
            took = None if fin is None else fin - tenant.arrival_hours
            d = tenant.deadline
            missed = None if d is None or fin is None else fin - tenant.arrival_hours > d.hours + 1e-9
            retained = None if not took else min(1.0, best / took)
            if tenant.lifetime_hours is not None:  # a service: its share served ÷ the most it could serve
                retained = min(1.0, self.progress_at(i, self.end) * best / tenant.lifetime_hours)
            out.append(
                TenantResult(
                    tenant=tenant.id,
                    arrival_hours=tenant.arrival_hours,
                    finish_hours=fin,
                    cost=self.cost[i],
                    completion_hours=took,
                    migrations=self.migrations[i],
                    work_lost_hours=self.lost_hours[i],
                    work_redone_hours=self.redone_hours[i],
                    performance_retained=retained,
                    accelerators=self.used[i],
                    deadline_missed=missed,
                    penalty=0.0 if fin is None else self.penalty(i, fin),
                    time_value=0.0 if fin is None else tenant.time_value(fin),
                    budget_exhausted=self.exhausted[i],
                    served=None if tenant.lifetime_hours is None else self.progress_at(i, self.end),
                )
            )
        listing = {t.id: k for k, t in enumerate(self.scenario.tenants)}
        out.sort(key=lambda r: listing[r.tenant])
        provider = {"accelerator_revenue": sum(self.revenue), "restart_fees": self.restart_fees}
        return PolicyResult(self.name, out, self.events, self.bid_updates, self._load_summary(), provider)

    def _load_summary(self) -> dict[str, dict[str, object]]:
        """Per load-priced pool: mean and peak share of its accelerators held, hours over its cap, timeline."""
        out: dict[str, dict[str, object]] = {}
        span = max(getattr(self, "end", self.now), EPS)
        for j, timeline in self.timeline.items():
            n = self.scenario.accelerators[j].count
            out[self.types[j]] = {
                "accelerators": n,
                "mean_load": self.busy_area[j] / span / n,
                "peak_load": self.busy_peak[j] / n,
                "hours_over_cap": self.over_cap_hours[j],
                "timeline": [[t, b / n] for t, b in timeline],
            }
        return out
