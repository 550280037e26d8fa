"""``on-demand``: fixed prices and no contention — the provider always has one more accelerator.

Every tenant runs at once, for its whole life, on the type that is cheapest for it to finish on at
base prices (then fastest). This is the reference the contended policies are compared against.
"""

from __future__ import annotations

from finops_cli.sim.market.base import Policy


class OnDemand(Policy):
    name = "on-demand"

    def on_arrivals(self, tenants: list[int], t: float) -> None:
        for i in tenants:
            j = self.pref[i][0]
            a = self.take_free(j)
            if a < 0:  # no contention: the provider adds an accelerator of this type
                a = len(self.acc_type)
                self.acc_type.append(j)
                self.acc_label.append(f"{self.types[j]}/od{a}")
                self.by_type[j].append(a)
                self.holder.append(-1)
                base = self.base_by_type[j]
                self.price_p0.append(base)
                self.price_t0.append(t)
                self.price_target.append(base)
                self.revenue.append(0.0)
            self.start(i, a, t)

    def on_vacated(self, a: int, t: float) -> None:
        self.mark_free(a)
