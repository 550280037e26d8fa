"""``spot``: the cloud spot class as the papers describe it — cheaper, opted into, reclaimed unilaterally.

- **Opting in.** A tenant opts into spot at launch (``Tenant.spot_opt_in``; by default a tenant with no
  value of time and no deadline does) and pays ``options.spot_price_share`` × the base price; the others
  buy on-demand at the base price. The spot decision is fixed at launch: it never sees the tenant's
  later value.
- **Placement.** Every tenant takes a free accelerator of its most preferred type that has one (spot
  tenants never displace anyone), else queues; a freed accelerator goes to the first waiting on-demand
  tenant, then the first waiting spot tenant.
- **Unilateral preemption.** An on-demand request that finds no free compatible accelerator makes the
  provider reclaim a spot instance of its preferred type (then of its next types) — the most recently
  started one, whatever the spot tenant would pay to stay (bid-blind). The evicted tenant loses the work
  since its last checkpoint, pays its checkpoint-restart when it starts again, and queues.

``fcfs-preempt`` (``--spot oracle``) is the earlier, stronger baseline: preemption by each tenant's
value-aware bid, instant re-placement, everyone at the base price.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from finops_cli.sim.market.base import Policy


class Spot(Policy):
    name = "spot"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.is_spot = [t.opts_into_spot() for t in self.tenants]
        self.spot_held: list[list[int]] = [[] for _ in self.types]  # accelerators held by spot tenants, by start
        self.spot_waiting: list[deque[int]] = [deque() for _ in self.types]

    def on_arrivals(self, tenants: list[int], t: float) -> None:
        for i in tenants:
            self.place(i, t)

    def place(self, i: int, t: float) -> None:
        a = self.cheapest_free(i)
        if a < 0 and not self.is_spot[i]:
            a = self._reclaim(i, t)
        if a >= 0:
            self._start(i, a, t)
        elif self.is_spot[i]:
            for j in self.pref[i]:
                self.spot_waiting[j].append(i)
            self.log(t, "wait", i, None, None)
        else:
            self.enqueue(i)

    def _start(self, i: int, a: int, t: float) -> None:
        self.start(i, a, t)
        if self.is_spot[i]:
            self.spot_held[self.acc_type[a]].append(a)

    def _reclaim(self, i: int, t: float) -> int:
        """The provider takes back the most recently started spot instance of the tenant's best type."""
        for j in self.pref[i]:
            held = self.spot_held[j]
            while held:
                a = held.pop()
                h = self.holder[a]
                if h >= 0 and self.is_spot[h]:
                    self.stop(h, t, lose_work=True)
                    self.log(t, "preempt", h, a, None)
                    for k in self.pref[h]:
                        self.spot_waiting[k].append(h)
                    return a
        return -1

    def price_at(self, a: int, t: float) -> float:
        h = self.holder[a]
        base = super().price_at(a, t)
        return base * self.opts.spot_price_share if h >= 0 and self.is_spot[h] else base

    def _price_integral(self, a: int, t1: float, t2: float) -> float:
        return self.price_at(a, t1) * max(0.0, t2 - t1)  # fixed prices: base or the spot share of it

    def on_vacated(self, a: int, t: float) -> None:
        j = self.pop_waiting(self.acc_type[a])
        if j < 0:
            q = self.spot_waiting[self.acc_type[a]]
            while q:
                k = q.popleft()
                if self.on[k] < 0 and self.finish[k] is None and not self.exhausted[k]:
                    j = k
                    break
        if j >= 0:
            self._start(j, a, t)
        else:
            self.mark_free(a)
