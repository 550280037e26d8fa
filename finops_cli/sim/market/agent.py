r"""The tenant's economic agent: what an accelerator is worth to it now, and when to move.

Shared by every policy that asks a tenant for a bid (``renegotiate`` continuously, ``fcfs-preempt`` once
at launch). Functions of a running :class:`~finops_cli.sim.market.base.Policy` (they read its state), kept apart
because they are the tenant's side of the market, not the accounts.
"""

from __future__ import annotations

import math
from typing import Literal, Protocol

from finops_cli.sim.market.scenario import MarketOptions, Tenant


class Market(Protocol):
    """What an agent reads of the running market (a :class:`~finops_cli.sim.market.base.Policy`)."""

    tenants: list[Tenant]
    types: list[str]
    opts: MarketOptions
    hours: list[list[float]]
    pref: list[list[int]]
    base_by_type: list[float]
    acc_type: list[int]
    on: list[int]
    started: list[bool]
    ckpt: list[float]
    run_from: list[float]
    next_ckpt: list[float]
    now: float
    bid_updates: int

    def progress_at(self, i: int, t: float) -> float: ...
    def price_at(self, a: int, t: float) -> float: ...
    def spent(self, i: int, t: float) -> float: ...
    def penalty(self, i: int, finish_at: float) -> float: ...
    def live_price(self, i: int, type_j: int) -> float: ...
    def contested(self, a: int, i: int) -> bool: ...
    def floor_price(self, type_j: int) -> float: ...


EPS = 1e-12


def alternative(p: Market, i: int, others: list[int], f: float, v: float) -> tuple[int, float]:
    """Tenant ``i``'s best alternative among ``others`` and its live price: with a launch table, the
    first listed whose live price is within its ``max_price``; for a planning agent, the next in its plan
    (:func:`plan`) that it can afford; otherwise the least generalized cost to finish (from progress
    ``f``, value of time ``v``) at live prices, then preference order."""
    tenant = p.tenants[i]
    if tenant.launch_table is not None or tenant.plans():
        for j in others:
            price = p.live_price(i, j)
            cap = tenant.max_price(p.types[j])
            if cap is None or price <= cap + EPS:
                return j, price
        return others[0], p.live_price(i, others[0])
    hours, timed = p.hours[i], tenant.deadline is not None
    best_g, best_j, best_p = math.inf, others[0], 0.0
    for j in others:
        price = p.live_price(i, j)
        rem = (1.0 - f) * hours[j]
        g = rem * (price + v)
        if timed:
            g += tenant.penalty_at(p.now + rem)
        if g < best_g - EPS:
            best_g, best_j, best_p = g, j, price
    return best_j, best_p


def willingness_to_pay(p: Market, i: int, type_j: int, *, incumbent: bool = False) -> float:
    r"""Tenant ``i``'s bid for an accelerator of ``type_j`` now, USD per hour: its willingness to pay.

    .. math::

        b = \frac{R_Y p_Y + v\,(R_Y - R_X) + \pi(t + R_Y) - \pi(t + R_X) \mp \hat M}{R_X},
        \qquad R_k = (1 - f)\,H_k

    — the cost of finishing on its best alternative :math:`Y` (:func:`alternative`, at that type's
    live price :math:`p_Y`: the floor when one is free, else the current price of the one it would
    contest), plus the
    value of the time it saves (``value_per_hour`` :math:`v` and the deadline penalty :math:`\pi`
    avoided), adjusted by what a migration would cost now, all divided by its remaining time on
    :math:`X`. :math:`f` is the progress it keeps (its last checkpoint) and :math:`\hat M` =
    ``overhead_estimate`` × (``checkpoint_restart_cost`` + ``restart_hours`` × (:math:`p_Y + v`)),
    counted only once the tenant has started.

    A challenger subtracts :math:`\hat M` (moving costs it that). An incumbent (``incumbent``: it
    holds ``type_j``) with ``options.incumbent_migration`` = ``add`` (the default, the workshop
    paper's App B) *adds* it while it is past its last checkpoint — leaving now would cost it a
    checkpoint-restart — and bids its plain break-even at a checkpoint boundary; ``subtract`` (an
    ablation) subtracts it like a challenger. Capped by the launch table's ``max_price`` for the
    type and by the remaining budget ÷ :math:`R_X`; a tenant without an alternative (a planning agent:
    none it can still afford, :func:`affordable`) bids ``max_bid_multiple × base``. With :math:`v = 0`
    and no deadline this is the break-even bid.
    """
    p.bid_updates += 1
    f = p.ckpt[i] if p.started[i] else 0.0
    rem_x = (1.0 - f) * p.hours[i][type_j]
    if rem_x <= EPS:
        return 0.0
    tenant = p.tenants[i]
    others = [j for j in p.pref[i] if j != type_j]
    if tenant.plans():  # a planner's alternatives are the types its money can still finish on
        others = [j for j in others if affordable(p, i, j)]
    if not others:
        bid = p.opts.max_bid_multiple * p.base_by_type[type_j]
    else:
        v = tenant.value_at(p.now)  # a continuous bid uses the value of time now
        y, p_y = alternative(p, i, others, f, v)
        rem_y = (1.0 - f) * p.hours[i][y]
        value = rem_y * p_y
        if v or tenant.deadline is not None:
            value += v * (rem_y - rem_x) + p.penalty(i, p.now + rem_y) - p.penalty(i, p.now + rem_x)
        if p.started[i]:
            m = tenant.checkpoint_restart_cost + tenant.restart_hours * (p_y + v)
            m *= tenant.overhead_estimate
            if incumbent and p.opts.incumbent_migration == "add":
                if p.progress_at(i, p.now) > p.ckpt[i] + 1e-9:
                    value += m  # mid-epoch: moving now means a checkpoint-restart
            else:
                value -= m
        bid = max(0.0, value / rem_x)
    cap = tenant.max_price(p.types[type_j])
    if cap is not None:
        bid = min(bid, cap)
    if tenant.budget is not None:
        bid = min(bid, max(0.0, tenant.budget - p.spent(i, p.now)) / rem_x)
    return bid


def plan(p: Market, i: int, candidates: list[int]) -> list[int]:
    """The planning agent's ranking of its types now (the paper's economic agent that "monitors market prices
    of compatible cluster hardware" and migrates "to a more cost-effective platform" before a price exceeds
    its budget): the types whose remaining work it can pay for at their *live* price with the money it has
    left (:func:`affordable`) come first, by least generalized cost to finish there (money + value of time +
    deadline penalty: a cheaper type wins whenever the time it costs is worth less than the money it saves,
    i.e. when the tenant's slack allows), then the rest in the same order. Its bid on the first is capped by
    the remaining budget ÷ the remaining hours there (:func:`willingness_to_pay`): the budget is spread over
    the remaining work and never overspent.
    """
    tenant = p.tenants[i]
    t = p.now
    v = tenant.value_at(t)
    rank = {j: n for n, j in enumerate(candidates)}

    def key(j: int) -> tuple[bool, float, float, int]:
        hours, money = _to_finish(p, i, j)
        g = money + v * hours + p.penalty(i, t + hours)
        return (not affordable(p, i, j), g, hours, rank[j])

    return sorted(candidates, key=key)


def _to_finish(p: Market, i: int, type_j: int) -> tuple[float, float]:
    """Hours and USD to finish on ``type_j`` at its live price from the last checkpoint; moving there (not the
    type it runs on, once it has started) adds the restart hours and the checkpoint-restart fee."""
    tenant = p.tenants[i]
    f = p.ckpt[i] if p.started[i] else 0.0
    hours, fee = (1.0 - f) * p.hours[i][type_j], 0.0
    if p.started[i] and f > 0 and (p.on[i] < 0 or p.acc_type[p.on[i]] != type_j):
        hours += tenant.restart_hours
        fee = tenant.checkpoint_restart_cost
    return hours, hours * p.live_price(i, type_j) + fee


def affordable(p: Market, i: int, type_j: int) -> bool:
    """Whether tenant ``i``'s remaining budget pays to finish on ``type_j`` at its live price (no budget: yes)."""
    budget = p.tenants[i].budget
    return budget is None or _to_finish(p, i, type_j)[1] <= budget - p.spent(i, p.now) + EPS


def migration_timing(p: Market, i: int, a: int, t: float) -> Literal["now", "hold", "wait"]:
    """Tenant ``i``, running elsewhere, has won ``a`` and ``a`` is free: when does it move?

    ``wait`` — nobody else wants ``a`` now (no other bid on it, nobody queued for its type): do not hold
    it; stay, and take it at the next checkpoint if it is still free. Otherwise the least generalized
    cost (money + value of time + deadline penalty) to finish from now: ``now`` — move at once and redo
    the work since the last checkpoint on ``a``; ``hold`` — keep running to the next checkpoint and pay
    for both accelerators meanwhile (the workshop paper's App A: "rather double-paying than losing
    progress"). The restart is the same both ways and left out.
    """
    tenant, src = p.tenants[i], p.on[i]
    if tenant.stateless:
        return "now"  # a service loses nothing by moving
    if not p.contested(a, i):
        return "wait"
    v = tenant.value_at(t)
    h_x, h_s = p.hours[i][p.acc_type[a]], p.hours[i][p.acc_type[src]]
    p_x, p_s = p.price_at(a, t), p.price_at(src, t)
    r = tenant.restart_hours
    tc = p.next_ckpt[i]
    saved = min(1.0, p.progress_at(i, t) + max(0.0, tc - max(t, p.run_from[i])) / h_s)
    now_h = r + (1.0 - p.ckpt[i]) * h_x
    hold_h = r + (1.0 - saved) * h_x
    now = now_h * (p_x + v) + p.penalty(i, t + now_h)
    hold = (tc - t) * (p_s + p_x + v) + hold_h * (p_x + v) + p.penalty(i, tc + hold_h)
    return "now" if now < hold - EPS else "hold"
