"""``fcfs-preempt``: spot-like — a launch-time bid, and a later, higher bidder preempts at once.

Each tenant bids its willingness to pay once, at arrival (:meth:`Policy.willingness_to_pay`), for its
preferred type. It takes a free accelerator of that type, or preempts the lowest bidder holding one if
its own bid is higher (the loser loses the work since its last checkpoint and is placed again at
once, paying the checkpoint-restart cost), or falls back to a free accelerator of its next types, or
queues. Prices stay at the base (the spot price); ties never preempt.
"""

from __future__ import annotations

import heapq
from typing import Any

from finops_cli.sim.market.base import Policy


class FCFSPreempt(Policy):
    name = "fcfs-preempt"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bid = [0.0] * len(self.tenants)
        self.held: list[list[tuple[float, int, int]]] = [[] for _ in self.types]  # (bid, -order, acc)

    def on_arrivals(self, tenants: list[int], t: float) -> None:
        for i in tenants:
            self.bid[i] = self.willingness_to_pay(i, self.pref[i][0])
            self.log(t, "bid", i, None, self.bid[i])
        for i in sorted(tenants, key=lambda i: (-self.bid[i], i)):
            self.place(i, t)

    def place(self, i: int, t: float) -> None:
        x = self.pref[i][0]
        a = self.take_free(x)
        if a < 0:
            a = self._weakest(x)
            if a >= 0 and self.bid[self.holder[a]] < self.bid[i]:
                loser = self.holder[a]
                self.stop(loser, t, lose_work=True)
                self.log(t, "preempt", loser, a, self.bid[i])
                self._hold(i, a, t)
                self.place(loser, t)
                return
            a = -1
            for j in self.pref[i][1:]:
                a = self.take_free(j) if self.can_afford(i, j) else -1
                if a >= 0:
                    break
        if a >= 0:
            self._hold(i, a, t)
        else:
            self.enqueue(i)

    def _hold(self, i: int, a: int, t: float) -> None:
        self.start(i, a, t)
        heapq.heappush(self.held[self.acc_type[a]], (self.bid[i], i, a))

    def _weakest(self, type_j: int) -> int:
        """The accelerator of a type whose holder bid least (earliest tenant on ties); -1 if none held."""
        h = self.held[type_j]
        while h:
            bid, i, a = h[0]
            if self.holder[a] == i and self.bid[i] == bid:
                return a
            heapq.heappop(h)
        return -1

    def on_vacated(self, a: int, t: float) -> None:
        j = self.pop_waiting(self.acc_type[a])
        if j >= 0:
            self._hold(j, a, t)
        else:
            self.mark_free(a)
