"""The objective: what the plan optimises (money that still can change, plus steering penalties).

.. math::

    \\min \\sum_i h_b (p_i + \\rho_i) x_i + \\sum_s P_s n_s
         + \\sum_{s,b} q_s h_b \\Big(G_s N_{s,b} - \\sum_{i \\in (s,b)} W_i x_i\\Big)
         + M \\Big(\\sum_{g,b} h_b u_{g,b} + \\sum_g u_g\\Big)

``p_i`` is the marginal price per GPU-hour (congestion and the NETC multiplier included), ``ρ_i`` the
reliability penalty (not money), ``P_s`` the price of one commitment block for the whole horizon and
``M`` the price of unserved work, far above every real price. The node term is the **node rounding**
(integer nodes only): the idle GPUs of provisioned nodes at ``q_s = price × preference`` per GPU-hour, so
used GPU-hours keep their congestion and NETC price and segment-0 work plus rounding is exactly
``q_s G_s N_{s,b} h_b``, the node bill. Sunk and prepaid costs are constants:
added to the plan's cost afterwards, never optimised away.
"""

from __future__ import annotations

import pulp

from finops_cli.planner.model import PlanModel

#: Tie-break on work placed on whole nodes, as a fraction of the idle price ``q_s``: a paid node's idle GPUs
#: are free in money, so without it a solver may "serve" more than the demand on them (same cost, confusing
#: report). 1e-6 of the price is far inside the MIP gap; reported money is computed from values, not this.
NODE_TIE_BREAK = 1e-6


def define_objective(m: PlanModel) -> None:
    rows = m.frame.rows
    coef = (rows["hours"] * (rows["usd_per_gpu_hour"] + rows["penalty_per_gpu_hour"])).to_numpy(copy=True)
    hours = m.frame.blocks.hours
    if m.nodes:
        nodes = m.frame.nodes
        sub = rows[rows["substrate"].isin(list(nodes.index))]
        idle_price = sub["substrate"].map(nodes["usd_per_gpu_hour"]).to_numpy(dtype=float)
        wall = sub["wall_per_gpu_hour"].to_numpy()
        coef[sub.index.to_numpy()] -= sub["hours"].to_numpy() * idle_price * wall * (1 - NODE_TIE_BREAK)
    terms = [(v, float(c)) for v, c in zip(m.x, coef, strict=True)]
    terms += [
        (var, float(m.frame.nodes.loc[s, "usd_per_gpu_hour"] * m.frame.nodes.loc[s, "gpus_per_node"] * hours[b]))
        for (s, b), var in m.nodes.items()
    ]
    commitments = m.frame.commitments
    terms += [(var, float(commitments.loc[s, "usd_per_block"])) for s, var in m.commit.items()]
    terms += [(var, m.unserved_usd_per_unit * float(hours[b])) for (_g, b), var in m.unserved.items()]
    terms += [(var, m.unserved_usd_per_unit) for var in m.unserved_deferrable.values()]
    m.prob.setObjective(pulp.LpAffineExpression(terms))
