"""Row families of the plan. Each ``define_<family>`` groups the plan frame once and emits one
``LpAffineExpression`` per row (never Python ``sum()``/``+=`` in a loop), and returns early when its
subset is empty.

Notation: ``x[i]`` GPUs (API: units/hour) of frame row ``i = (g, s, k, b)``; ``a_i`` units per
GPU-hour; ``h_b`` hours in block ``b``; ``n_s`` commitment blocks bought; ``N_{s,b}`` nodes provisioned;
``u`` unserved slack.
"""

from __future__ import annotations

import numpy as np
import pulp

from finops_cli.planner.model import PlanModel


def _expr(
    variables: list[pulp.LpVariable],
    positions: np.ndarray,
    coefs: np.ndarray,
    extra: tuple[tuple[pulp.LpVariable, float], ...] = (),
) -> pulp.LpAffineExpression:
    """One row's left-hand side: ``Σ coefs[j]·variables[positions[j]]`` plus ``extra`` terms."""
    terms = [(variables[int(i)], float(c)) for i, c in zip(positions, coefs, strict=True)]
    return pulp.LpAffineExpression(terms + list(extra))


def _add(m: PlanModel, expr: pulp.LpAffineExpression, sense: int, rhs: float, name: str) -> pulp.LpConstraint:
    row = pulp.LpConstraint(expr, sense, name=name, rhs=rhs)
    m.prob.addConstraint(row)
    return row


def define_demand(m: PlanModel) -> None:
    """``demand-{g}-{b}``: ``Σ_{s,k} a_i x_i + u[g,b] ≥ d[g,b]`` (units per hour) for non-deferrable groups.

    The dual of this row, divided by ``h_b``, is the clearing price: the marginal cost of one more unit
    of the group's usable output in block ``b``.
    """
    demand = m.frame.demand
    if demand.empty:
        return
    rows = m.frame.rows
    thr = rows["units_per_gpu_hour"].to_numpy()
    positions = rows.groupby(["group", "block"], sort=False).indices
    for (g, b), d in demand.items():
        pos = positions.get((g, b), np.empty(0, dtype=int))
        expr = _expr(m.x, pos, thr[pos], ((m.unserved[(g, b)], 1.0),))
        m.demand_rows[(g, b)] = _add(m, expr, pulp.LpConstraintGE, float(d), f"demand-{g}-{b}")


def define_deferrable(m: PlanModel) -> None:
    """``defer-{g}``: ``Σ_{s,k,b} h_b a_i x_i + u[g] ≥ D_g`` (units over the horizon): deferrable work may
    run in any block."""
    if not m.frame.deferrable_units:
        return
    rows = m.frame.rows
    coef = (rows["units_per_gpu_hour"] * rows["hours"]).to_numpy()
    positions = rows.groupby("group", sort=False).indices
    for g, total in m.frame.deferrable_units.items():
        pos = positions[g]
        expr = _expr(m.x, pos, coef[pos], ((m.unserved_deferrable[g], 1.0),))
        m.defer_rows[g] = _add(m, expr, pulp.LpConstraintGE, float(total), f"defer-{g}")


def define_parallel(m: PlanModel) -> None:
    """``parallel-{g}-{b}``: ``Σ_{s,k} x_i ≤ max_parallel_gpus[g]`` over GPU rows (APIs use no GPUs)."""
    caps = m.frame.max_parallel_gpus
    if not caps:
        return
    rows = m.frame.rows
    sub = rows[rows["group"].isin(list(caps)) & ~rows["is_api"]]
    ones = np.ones(len(rows))
    for (g, b), pos in sub.groupby(["group", "block"], sort=False).indices.items():
        idx = sub.index.to_numpy()[pos]
        m.parallel_rows[(g, b)] = _add(m, _expr(m.x, idx, ones[idx]), pulp.LpConstraintLE, caps[g], f"parallel-{g}-{b}")


def define_capacity(m: PlanModel) -> None:
    """``cap-{s}-{k}-{b}``: ``Σ_g W_{g,s}·x[g,s,k,b] − c_{s,k}·n_s ≤ C_{s,k}`` (GPUs).

    ``C_{s,k}`` is segment ``k``'s share of the substrate's installed (degraded) GPUs and ``c_{s,k}`` the
    share each purchased block adds; unbounded segments (APIs, uncapped on-demand) get no row. ``x`` is
    useful GPU-hours, so on spot each one occupies ``W`` (the NETC multiplier) GPU-hours of the pool:
    preemption re-work, resumes and checkpoint writes run on the same GPUs.
    """
    cap = m.frame.capacity
    bounded = cap[cap["fixed_gpus"].notna()]
    if bounded.empty:
        return
    rows = m.frame.rows
    keys = set(bounded.index)
    mask = np.fromiter(
        ((s, k) in keys for s, k in zip(rows["substrate"], rows["segment"], strict=True)), bool, len(rows)
    )
    sub = rows[mask]
    wall = rows["wall_per_gpu_hour"].to_numpy(dtype=float)
    index = sub.index.to_numpy()
    fixed_gpus = bounded["fixed_gpus"].astype(float).to_dict()
    per_block_gpus = bounded["gpus_per_commit_block"].astype(float).to_dict()
    for (s, k, b), pos in sub.groupby(["substrate", "segment", "block"], sort=False).indices.items():
        idx = index[pos]
        fixed, per_block = fixed_gpus[(s, k)], per_block_gpus[(s, k)]
        extra = ((m.commit[s], -per_block),) if per_block > 0 and s in m.commit else ()
        expr = _expr(m.x, idx, wall[idx], extra)
        m.cap_rows[(s, k, b)] = _add(m, expr, pulp.LpConstraintLE, float(fixed), f"cap-{s}-{k}-{b}")


def define_nodes(m: PlanModel) -> None:
    """``nodes-{s}-{b}``: ``Σ_{g,k} W_{g,s} x[g,s,k,b] − G_s·N[s,b] ≤ 0`` (GPUs): the work fits on whole nodes.

    ``G_s`` is ``gpus_per_node``; ``W`` counts the wall GPU-hours spot work occupies (preemption re-work and
    checkpoint writes run on the node too). Only substrates provisioned in whole nodes get rows.
    """
    if not m.nodes:
        return
    rows = m.frame.rows
    sub = rows[rows["substrate"].isin(list(m.frame.nodes.index))]
    coef = rows["wall_per_gpu_hour"].to_numpy(dtype=float)
    per_node = m.frame.nodes["gpus_per_node"].astype(float).to_dict()
    positions = sub.groupby(["substrate", "block"], sort=False).indices
    index = sub.index.to_numpy()
    for (s, b), var in m.nodes.items():
        idx = index[positions[(s, b)]] if (s, b) in positions else np.empty(0, dtype=int)
        expr = _expr(m.x, idx, coef[idx], ((var, -per_node[s]),))
        m.node_rows[(s, b)] = _add(m, expr, pulp.LpConstraintLE, 0.0, f"nodes-{s}-{b}")
