"""Decision variables of the plan: usage ``x``, commitment blocks ``n``, nodes ``N`` and unserved slack ``u``.

One ``x`` per row of the plan frame (compliant, priced, not dominated), so the solver never sees a
non-compliant pair. Units: ``x`` is GPUs in use on average during a block (GPU-hours per hour; for
an API, units per hour), ``n`` whole commitment blocks, ``N`` whole nodes running throughout a block,
``u`` units per hour not served.
"""

from __future__ import annotations

from finops_cli.planner.model import PlanModel


def define_usage(m: PlanModel) -> None:
    """``x[i] ≥ 0`` for every frame row ``i = (group, substrate, segment, block)``."""
    add = m.prob.add_variable
    m.x = [add(f"x{i}", lowBound=0) for i in range(len(m.frame.rows))]


def define_commitments(m: PlanModel) -> None:
    """``n[s] ∈ {0, …, max_blocks}`` whole blocks of each purchasable substrate (the ``commit-{s}`` bound)."""
    commitments = m.frame.commitments
    if commitments.empty:
        return
    for sid, row in commitments.iterrows():
        m.commit[str(sid)] = m.prob.add_variable(
            f"commit-{sid}", lowBound=0, upBound=int(row["max_blocks"]), cat=m.integer_category
        )


def define_nodes(m: PlanModel) -> None:
    """``N[s,b] ∈ {0, …, floor(capacity_s / gpus_per_node_s)}`` nodes of ``s`` running throughout block ``b``.

    Only for substrates in :attr:`~finops_cli.planner.frame.PlanFrame.nodes` (``integer_nodes``); an uncapped
    on-demand substrate has no upper bound.
    """
    nodes = m.frame.nodes
    if nodes.empty:
        return
    add = m.prob.add_variable
    for sid, row in nodes.iterrows():
        upper = None if row["max_nodes"] != row["max_nodes"] else int(row["max_nodes"])
        for b in range(m.frame.blocks.n):
            m.nodes[(str(sid), b)] = add(f"node-{sid}-{b}", lowBound=0, upBound=upper, cat=m.integer_category)


def define_unserved(m: PlanModel) -> None:
    """Slack ``u[g,b] ≥ 0`` (units/hour) per demand row and ``u[g] ≥ 0`` (units) per deferrable total.

    The slack makes every model feasible, so a shortage is *found* (non-zero slack, priced at a penalty
    far above any real price) and reported by workload and block, never a silent "infeasible".
    """
    add = m.prob.add_variable
    m.unserved = {key: add(f"u{i}", lowBound=0) for i, key in enumerate(m.frame.demand.index)}
    m.unserved_deferrable = {g: add(f"ud{i}", lowBound=0) for i, g in enumerate(m.frame.deferrable_units)}
