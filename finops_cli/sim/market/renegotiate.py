r"""``renegotiate``: LaissezCloud's continuous renegotiation of running allocations.

Every accelerator stays contestable while it runs:

- **Bids.** Each tenant's agent bids, for its preferred type (least generalized cost to finish on at
  base prices), its willingness to pay :meth:`~finops_cli.sim.market.base.Policy.willingness_to_pay`:
  the cost of finishing on its best alternative at live prices plus the value of the time it saves, less what a
  migration would cost now, ÷ its time on this one (``value_per_hour`` 0: the break-even bid). Agents
  re-bid at their decision points: arrival and every checkpoint.
- **Clearing.** Per accelerator, second price: the highest bid holds the claim; the claimant pays the
  best *losing* bid standing on that accelerator, never less than the base price. Ties keep the
  incumbent (then the earlier arrival). A challenger contests the weakest claim of its type.
- **Migration timing.** A holder that loses keeps running (and paying the price, now set by its own
  losing bid) until its next checkpoint, then is placed again; the winner moves in when the accelerator
  is vacated if it was not running, else it chooses to move now, hold both until its checkpoint, or
  release it (:func:`.agent.migration_timing`). The loser's bid keeps standing, so the price stays up
  until its owner finishes or withdraws.
- **Launch tables.** A tenant with nothing free contests, at live prices, the weakest claim of its next
  types in order (:meth:`Renegotiate.contest_fallback`) rather than only queueing.
- **Floor.** With no losing bids the price returns to the floor — at once, or no faster than
  ``options.floor_fall_per_hour``. The floor is the base price, or for a pool with ``load_pricing``
  the operator's price for its current load (a holder whose bid falls below it moves to a free
  alternative at its checkpoint: the operator steers load by price, never by choosing victims).
  ``options.bid_clip`` caps a bid at ``(1 + clip) ×`` the current price of the accelerator it bids
  for (both are volatility controls).

References
----------
Harith, T., Kaufmann, A. (2026). LaissezCloud: Continuous Resource Renegotiation for the Public Cloud.
arXiv:2604.22509.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from finops_cli.sim.market import agent
from finops_cli.sim.market.agent import EPS
from finops_cli.sim.market.base import Policy


class Renegotiate(Policy):
    name = "renegotiate"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        n, n_acc = len(self.tenants), len(self.acc_type)
        self.bid = [0.0] * n
        self.target = [-1] * n  # accelerator carrying the tenant's standing (losing) bid
        self.reserved_acc = [-1] * n  # accelerator won, not moved into yet
        self.displaced = [False] * n
        self.reserved_by = [-1] * n_acc
        self.challengers: list[dict[int, float]] = [{} for _ in range(n_acc)]
        self.pool: list[set[int]] = [set() for _ in self.types]  # challengers by preferred type
        self.stamp = [0] * n_acc
        self.claim_bid = [0.0] * n_acc  # the claimant's bid on each accelerator
        self.displaced_bid = [0.0] * n_acc  # a displaced holder's claim: a losing bid until it leaves
        self.claims: list[list[tuple[float, int, int]]] = [[] for _ in self.types]  # (bid, acc, stamp)
        self.idle_from = [-1.0] * n_acc  # a won accelerator vacated before its winner moved in: billed since

    # --- decision points --------------------------------------------------------------------------

    def on_arrivals(self, tenants: list[int], t: float) -> None:
        for i in tenants:
            if self.tenants[i].plans():
                self.replan(i, t)
            self.bid[i] = self._bid(i, t)
            self.log(t, "bid", i, None, self.bid[i])
        for i in sorted(tenants, key=lambda i: (-self.bid[i], i)):  # one sealed-bid round for simultaneous arrivals
            self.place(i, t)

    def on_checkpoint(self, i: int, t: float) -> None:
        r = self.reserved_acc[i]
        if r >= 0 and self.holder[r] < 0:
            self.move_in(i, r, t)
            return
        if self.displaced[i]:
            self.leave(i, t)
            return
        if self.tenants[i].plans() and r < 0:
            self.replan(i, t)
        elif self.tenants[i].value_ramp is not None:
            self.rerank(i, t)
        x = self.pref[i][0]
        a = self.on[i]
        incumbent = self.acc_type[a] == x and r < 0
        new_bid = self._bid(i, t, incumbent=incumbent)
        if abs(new_bid - self.bid[i]) > EPS:
            self.bid[i] = new_bid
            self.log(t, "bid", i, a if incumbent else (r if r >= 0 else self.target[i]), new_bid)
        if incumbent:
            self.claim_changed(a)
            self.clear(a, t)
            if self.displaced[i]:
                self.leave(i, t)
            elif self.load_pricing[x] is not None and self.bid[i] < self.floor_price(x) - EPS:
                self.priced_out(i, t)
            return
        if r >= 0:
            self.claim_changed(r)
            self.clear(r, t)
            return
        if a >= 0:  # on a fallback type: its claim there is re-priced too, and may be lost
            self.claim_changed(a)
            self.clear(a, t)
            if self.displaced[i]:
                self.leave(i, t)
                return
            if self.on[i] != a or self.reserved_acc[i] >= 0:
                return  # displaced with nothing to checkpoint, it left at once and was placed again
        self.challenge(i, t)

    def rerank(self, i: int, t: float) -> None:
        """A tenant whose value of time changes re-ranks its types at its checkpoint: least generalized cost
        to finish the rest at the floor prices and its value of time *now*. A new first choice withdraws
        its standing bid; it then bids for the new type (and may move to a cheaper one when urgency is low)."""
        tenant = self.tenants[i]
        v = tenant.value_at(t)
        rest = 1.0 - self.ckpt[i]

        def key(j: int) -> tuple[float, float, int]:
            h = rest * self.hours[i][j]
            return (h * (self.floor_price(j) + v) + tenant.penalty_at(t + h), h, j)

        old = self.pref[i][0]
        self.pref[i] = sorted(self.pref[i], key=key)
        if self.pref[i][0] != old:
            self.withdraw(i, t)
            self.pool[old].discard(i)

    def replan(self, i: int, t: float) -> None:
        """A planning agent's update (:func:`.agent.plan`): its types re-ranked at live prices within the money
        it has left. A new first choice withdraws its standing bid; it then bids for the new type."""
        old = self.pref[i][0]
        self.pref[i] = agent.plan(self, i, self.pref[i])
        if self.pref[i][0] != old:
            self.withdraw(i, t)
            self.pool[old].discard(i)

    def enqueue(self, i: int) -> None:
        super().enqueue(i)
        tenant = self.tenants[i]
        if tenant.plans():  # a waiting planner updates every period, not only when an accelerator frees
            if not any(self.can_afford(i, j) for j in self.pref[i]):
                self.exhausted[i] = True  # its money no longer finishes the job anywhere: it stops waiting
                self.log(self.now, "budget", i, None, None)
                self.on_budget_exhausted(i, -1, self.now)
                return
            self.schedule_wake(i, self.now + tenant.checkpoint_interval_hours)

    def on_wake(self, i: int, t: float) -> None:
        if self.reserved_acc[i] >= 0:
            return  # it won an accelerator: it moves in when the holder leaves
        self.replan(i, t)
        new_bid = self._bid(i, t)
        if abs(new_bid - self.bid[i]) > EPS:
            self.bid[i] = new_bid
            self.log(t, "bid", i, self.target[i], new_bid)
        self.place(i, t)

    def on_finish(self, i: int, a: int, t: float) -> None:
        self.withdraw(i, t)
        self.displaced[i] = False
        r = self.reserved_acc[i]
        if r >= 0:
            self.bill_idle(r, t)
            self.idle_from[r] = -1.0
            self.reserved_acc[i] = self.reserved_by[r] = -1
            self.claim_changed(r)
            if self.holder[r] < 0:
                self.on_vacated(r, t)
        self.displaced_bid[a] = 0.0
        self.claim_changed(a)
        self.reprice(a, t)
        self.on_vacated(a, t)

    # --- the market -------------------------------------------------------------------------------

    def _bid(self, i: int, t: float, *, incumbent: bool = False) -> float:
        x = self.pref[i][0]
        bid = self.willingness_to_pay(i, x, incumbent=incumbent)
        clip = self.opts.bid_clip
        if clip is not None and not incumbent:  # clips incoming bids, never an incumbent's defence
            ref = self.reserved_acc[i] if self.reserved_acc[i] >= 0 else self.target[i]
            current = self.price_at(ref, t) if ref >= 0 else self.floor_price(x)
            bid = min(bid, current * (1.0 + clip))
        return bid

    def start(self, i: int, a: int, t: float) -> None:
        super().start(i, a, t)
        c = self.target[i]
        if c >= 0 and self.acc_type[c] != self.pref[i][0]:  # a bid for a fallback type: it has a home now
            self.withdraw(i, t)
            if self.acc_type[a] == self.pref[i][0]:
                self.bid[i] = self._bid(i, t, incumbent=True)
        self.claim_changed(a)  # every holder has a claim others can contest

    def is_free(self, a: int) -> bool:
        return self.holder[a] < 0 and self.reserved_by[a] < 0

    def claimant(self, a: int) -> int:
        r = self.reserved_by[a]
        if r >= 0:
            return r
        h = self.holder[a]
        return h if h >= 0 and not self.displaced[h] else -1

    def claim_changed(self, a: int) -> None:
        """Record the claimant's bid on ``a``: its bid for its preferred type, or — holding a fallback
        type — its break-even for that type."""
        self.stamp[a] += 1
        c = self.claimant(a)
        if c >= 0:
            x = self.acc_type[a]
            own = self.reserved_by[a] == c or self.pref[c][0] == x
            self.claim_bid[a] = self.bid[c] if own else self.willingness_to_pay(c, x, incumbent=True)
            heapq.heappush(self.claims[x], (self.claim_bid[a], a, self.stamp[a]))

    def weakest_claim(self, type_j: int) -> int:
        """The accelerator of a type with the lowest claiming bid (lowest index on ties); -1 if none."""
        h = self.claims[type_j]
        while h:
            _bid, a, stamp = h[0]
            if stamp == self.stamp[a] and self.claimant(a) >= 0:
                return a
            heapq.heappop(h)
        return -1

    def _best(self, bidders: dict[int, float] | set[int]) -> int:
        best, key = -1, None
        for i in bidders:
            if self.finish[i] is not None or self.exhausted[i]:
                continue
            if self.on[i] >= 0 and self.next_ckpt[i] == math.inf:
                continue  # it finishes where it runs before it could move: its bid only sets the price
            k = (self.bid[i], -i)
            if key is None or k > key:
                best, key = i, k
        return best

    def place(self, i: int, t: float) -> None:
        """Find tenant ``i`` (not running) a home now: its preferred type if it can, else a fallback.

        A tenant that already won an accelerator (displaced from its fallback before the holder left) keeps
        that claim and does not bid again: a second win would leave the first accelerator reserved for it
        after it moved elsewhere, and when that one came free it restarted the tenant — even a finished one.
        """
        r = self.reserved_acc[i]
        if r >= 0:
            if self.holder[r] < 0:
                self.move_in(i, r, t)
                return
            for j in self.pref[i][1:]:  # run on a free fallback until the holder leaves at its checkpoint
                a = self.take_free(j) if self.can_afford(i, j) else -1
                if a >= 0:
                    self.start(i, a, t)
                    return
            self.enqueue(i)
            return
        self.challenge(i, t)
        if self.on[i] >= 0:
            return
        for j in self.pref[i][1:]:
            a = self.take_free(j) if self.can_afford(i, j) else -1
            if a >= 0:
                self.start(i, a, t)
                return
        x = self.pref[i][0]  # bid below the floor, no alternative free: run at the floor rather than wait
        a = self.take_free(x) if self.can_afford(i, x) else -1
        if a >= 0:
            self.start(i, a, t)
            return
        if self.reserved_acc[i] < 0:
            self.contest_fallback(i, t)
        self.enqueue(i)  # until an accelerator it won or waits for is free

    def contest_fallback(self, i: int, t: float) -> bool:
        """Nothing free it can use: bid, at live prices, for the weakest claim of its next types in order
        (its launch table) — the first whose claimant it outbids. True when it won one (it moves in when the
        holder leaves at its checkpoint); a bid that lost keeps standing there."""
        for j in self.pref[i][1:]:
            a = self.weakest_claim(j)
            if a < 0 or not self.can_afford(i, j):
                continue
            b = self.willingness_to_pay(i, j)
            if self.opts.bid_clip is not None:
                b = min(b, self.price_at(a, t) * (1.0 + self.opts.bid_clip))
            if b < self.floor_price(j) - EPS or b <= self.claim_bid[a] + EPS:
                continue
            self.withdraw(i, t)
            self.bid[i], self.target[i] = b, a
            self.pool[j].add(i)
            self.challengers[a][i] = b
            self.log(t, "bid", i, a, b)
            self.clear(a, t)
            return self.reserved_acc[i] >= 0
        return False

    def challenge(self, i: int, t: float) -> None:
        """Bid for the preferred type: take a free one now, else contest the weakest claim."""
        x = self.pref[i][0]
        if self.reserved_acc[i] >= 0:
            return  # it has won one already: a second win would leave an accelerator reserved for nobody
        if self.bid[i] < self.floor_price(x) - EPS:
            self.withdraw(i, t)  # not worth the floor price: stay on the alternative
            return
        a = self.take_free(x)
        if a >= 0:
            self.withdraw(i, t)
            self.reserved_by[a], self.reserved_acc[i] = i, a
            self.move_in(i, a, t)
            return
        a = self.weakest_claim(x)
        if a < 0:
            return
        if self.target[i] != a:
            self.withdraw(i, t)
            self.target[i] = a
            self.pool[x].add(i)
        self.challengers[a][i] = self.bid[i]
        self.clear(a, t)

    def clear(self, a: int, t: float) -> None:
        """Second-price clearing on accelerator ``a`` after a bid changed there."""
        c = self.claimant(a)
        ch = self.challengers[a]
        for j in ch:
            ch[j] = self.bid[j]
        j = self._best(ch)
        if j >= 0 and c >= 0 and self.bid[j] > self.claim_bid[a] + EPS and self.holder[a] == c:
            self.defend(c, a, t)  # the holder's agent answers the challenge with its live defence
        if j >= 0 and (c < 0 or self.bid[j] > self.claim_bid[a] + EPS):
            if c >= 0:
                won = self.reserved_by[a] == c  # a winner that had not moved in yet
                if won:
                    self.bill_idle(a, t)
                    self.idle_from[a] = -1.0
                    self.reserved_acc[c] = -1
                else:
                    self.displaced[c] = True
                self.log(t, "lose", c, a, self.bid[j])
                if won or self.pref[c][0] == self.acc_type[a]:  # it still wants this one: its bid keeps standing
                    if self.target[c] >= 0 and self.target[c] != a:
                        self.withdraw(c, t)
                    ch[c] = self.bid[c]
                    self.target[c] = a
                    self.pool[self.acc_type[a]].add(c)
                else:  # a fallback holder: its claim is a losing bid here until it leaves
                    self.displaced_bid[a] = self.claim_bid[a]
            del ch[j]
            self.target[j] = -1
            self.pool[self.acc_type[a]].discard(j)
            self.reserved_by[a], self.reserved_acc[j] = j, a
            self.claim_changed(a)
            self.reprice(a, t)
            self.log(t, "win", j, a, self.price_target[a])
            h = self.holder[a]
            if h < 0:
                if self.on[j] < 0:
                    self.move_in(j, a, t)
                else:
                    self.won_while_running(j, a, t)
            elif self.displaced[h] and self.seg_t0[h] == t and self.progress_at(h, t) <= self.ckpt[h] + EPS:
                self.leave(h, t)  # started this instant: nothing to checkpoint, it can go now
            return
        self.reprice(a, t)

    def defend(self, c: int, a: int, t: float) -> None:
        """The running holder ``c`` of ``a`` re-evaluates its claim now (mid-epoch it adds what leaving
        would cost it; see :meth:`Policy.willingness_to_pay`)."""
        if self.pref[c][0] == self.acc_type[a]:
            new_bid = self._bid(c, t, incumbent=True)
            if abs(new_bid - self.bid[c]) > EPS:
                self.bid[c] = new_bid
                self.log(t, "bid", c, a, new_bid)
        self.claim_changed(a)

    def set_price(self, a: int, target: float, t: float) -> None:
        self.bill_idle(a, t)
        super().set_price(a, target, t)
        r = self.reserved_by[a]
        if r >= 0 and self.idle_from[a] >= 0:
            self.schedule_budget(r, t)

    # --- budgets: the idle accelerator a winner reserved is part of what it spends ------------------

    def spent(self, i: int, t: float) -> float:
        r = self.reserved_acc[i]
        if r >= 0:
            self.bill_idle(r, t)
        return super().spent(i, t)

    def burn_rate(self, i: int, t: float) -> float:
        r = self.reserved_acc[i]
        idle = self.price_at(r, t) if r >= 0 and self.idle_from[r] >= 0 else 0.0
        return super().burn_rate(i, t) + idle

    def _idle(self, a: int, t: float) -> None:
        """``a`` sits vacated, reserved for a winner still running elsewhere: billed to it from ``t``."""
        self.idle_from[a] = t
        self.schedule_budget(self.reserved_by[a], t)

    def on_end_of_life(self, i: int, a: int, t: float) -> None:
        r = self.reserved_acc[i]
        if r >= 0:
            self.bill_idle(r, t)  # what it held idle for itself is paid up to its end
        if a >= 0:
            self.on_finish(i, a, t)
        else:
            self.retire(i, -1, t)

    def on_budget_exhausted(self, i: int, a: int, t: float) -> None:
        """Out of money: its bids are withdrawn, an accelerator it won is released, the one it held freed."""
        self.retire(i, a, t)

    def retire(self, i: int, a: int, t: float) -> None:
        """Tenant ``i`` leaves the market off ``a`` (-1: it held none): bids withdrawn, a won accelerator released."""
        self.withdraw(i, t)
        self.pool[self.pref[i][0]].discard(i)
        self.displaced[i] = False
        r = self.reserved_acc[i]
        if r >= 0:
            self.idle_from[r] = -1.0
            self.reserved_acc[i] = self.reserved_by[r] = -1
            self.claim_changed(r)
            if self.holder[r] < 0:
                self.on_vacated(r, t)
        if a >= 0:
            self.displaced_bid[a] = 0.0
            self.claim_changed(a)
            self.reprice(a, t)
            self.on_vacated(a, t)

    def bill_idle(self, a: int, t: float) -> None:
        """Charge the winner of ``a`` for the time ``a`` sat reserved for it, idle, up to ``t``."""
        t0 = self.idle_from[a]
        r = self.reserved_by[a]
        if t0 >= 0 and r >= 0 and t > t0:
            self.charge(r, a, self._price_integral(a, t0, t))
            self.idle_from[a] = t
        elif r < 0 or self.holder[a] >= 0:
            self.idle_from[a] = -1.0

    def reprice(self, a: int, t: float) -> None:
        """Price = max(base, best losing bid standing on ``a``)."""
        ch = self.challengers[a]
        target = max(self.floor_price(self.acc_type[a]), max(ch.values(), default=0.0))
        h = self.holder[a]
        if h >= 0 and self.displaced[h] and h not in ch:
            target = max(target, self.displaced_bid[a])
        if abs(target - self.price_target[a]) > EPS or abs(self.price_at(a, t) - target) > EPS:
            self.set_price(a, target, t)

    def withdraw(self, i: int, t: float) -> None:
        a = self.target[i]
        if a >= 0:
            self.challengers[a].pop(i, None)
            self.target[i] = -1
            self.pool[self.acc_type[a]].discard(i)
            self.reprice(a, t)

    def won_while_running(self, i: int, a: int, t: float) -> None:
        """``a`` is free and won by ``i``, which runs elsewhere: it moves now (losing the work since its
        checkpoint), holds both until its checkpoint, or waits (:func:`.agent.migration_timing`)."""
        choice = agent.migration_timing(self, i, a, t)
        self.log(t, {"now": "move-now", "hold": "hold", "wait": "release"}[choice], i, a, self.price_at(a, t))
        if choice == "hold":
            self._idle(a, t)
        elif choice == "now":
            self.move_in(i, a, t, lose_work=True)
        else:  # nobody else wants it: not held, taken at the checkpoint if still free
            self.reserved_by[a] = self.reserved_acc[i] = -1
            self.claim_changed(a)
            self.reprice(a, t)
            self.mark_free(a)

    def contested(self, a: int, i: int) -> bool:
        if any(k != i for k in self.challengers[a]) or any(k != i for k in self.pool[self.acc_type[a]]):
            return True
        q = self.waiting[self.acc_type[a]]
        while q and not self.queued(q[0]):
            q.popleft()
        return len(q) > 1 or (len(q) == 1 and q[0] != i)

    def move_in(self, i: int, a: int, t: float, *, lose_work: bool = False) -> None:
        """Tenant ``i`` takes the accelerator it won (at a checkpoint boundary, at once if idle, or now by
        choice, ``lose_work``)."""
        prev = self.stop(i, t, redo=lose_work) if self.on[i] >= 0 else -1
        self.bill_idle(a, t)
        self.idle_from[a] = -1.0
        self.reserved_by[a] = self.reserved_acc[i] = -1
        self.start(i, a, t)
        self.claim_changed(a)
        if prev >= 0:
            self.claim_changed(prev)
            self.on_vacated(prev, t)

    def leave(self, i: int, t: float) -> None:
        """A displaced holder at its checkpoint: off the accelerator, placed again (first, so that the winner
        deciding when to move in sees it as demand), then the accelerator is handed on."""
        a = self.stop(i, t)
        self.displaced[i] = False
        self.displaced_bid[a] = 0.0
        self.claim_changed(a)
        self.reprice(a, t)
        self.place(i, t)
        self.on_vacated(a, t)

    # --- the operator: a floor that rises with load -------------------------------------------------

    def floor_price(self, type_j: int) -> float:
        """The base price, or — for a pool with ``load_pricing`` — the operator's price at its load now."""
        base = self.base_by_type[type_j]
        lp = self.load_pricing[type_j]
        if lp is None:
            return base
        u = self.busy[type_j] / len(self.by_type[type_j])
        return base * (1.0 + (lp.multiple_at_full - 1.0) * max(0.0, u - lp.knee) / (1.0 - lp.knee))

    def live_price(self, i: int, type_j: int) -> float:
        """What ``type_j`` costs tenant ``i`` an hour now (the exchange table's rate): what it pays for the one
        it holds; the floor when one is free; else the current price of the one it would contest (the
        weakest claim of the type)."""
        a = self.on[i]
        if a >= 0 and self.acc_type[a] == type_j:
            return self.price_at(a, self.now)
        floor = self.floor_price(type_j)
        if self.peek_free(type_j) >= 0:
            return floor
        w = self.weakest_claim(type_j)
        return floor if w < 0 else max(floor, self.price_at(w, self.now))

    def _load_change(self, j: int, delta: int, t: float) -> None:
        super()._load_change(j, delta, t)
        if delta and self.load_pricing[j] is not None:
            for a in self.by_type[j]:  # every price in the pool follows the load (settled first)
                self.reprice(a, t)

    def priced_out(self, i: int, t: float) -> None:
        """At its checkpoint, a holder whose bid is below the load-priced floor moves to a free accelerator
        of its next types, if there is one (else it stays and pays the floor)."""
        for j in self.pref[i][1:]:
            b = self.take_free(j) if self.can_afford(i, j) else -1
            if b >= 0:
                a = self.stop(i, t)
                self.claim_changed(a)
                self.start(i, b, t)
                self.on_vacated(a, t)
                return

    def on_vacated(self, a: int, t: float) -> None:
        r = self.reserved_by[a]
        if r >= 0:
            if self.on[r] < 0:
                self.move_in(r, a, t)
            else:
                self.won_while_running(r, a, t)
            return
        x = self.acc_type[a]
        j = self._best(self.challengers[a])
        if j < 0:
            j = self._best(self.pool[x])
        if j >= 0:
            self.withdraw(j, t)
            self.reserved_by[a], self.reserved_acc[j] = j, a
            self.claim_changed(a)
            self.reprice(a, t)
            self.log(t, "win", j, a, self.price_target[a])
            if self.on[j] < 0:
                self.move_in(j, a, t)
            else:
                self.won_while_running(j, a, t)
            return
        j = self.pop_waiting(x)
        if j >= 0:
            self.start(j, a, t)
            self.claim_changed(a)
            return
        self.reprice(a, t)
        self.mark_free(a)
