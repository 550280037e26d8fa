"""``fcfs``: first come, first served; an allocation is fixed for life.

An arriving tenant takes a free accelerator of the compatible type that is cheapest for it to finish
on at base prices (then fastest); if none is free it queues, and each accelerator that frees up goes
to the longest-waiting tenant that can use it. Everyone pays the base price.
"""

from __future__ import annotations

from finops_cli.sim.market.base import Policy


class FCFS(Policy):
    name = "fcfs"

    def on_arrivals(self, tenants: list[int], t: float) -> None:
        for i in tenants:
            a = self.cheapest_free(i)
            if a >= 0:
                self.start(i, a, t)
            else:
                self.enqueue(i)
