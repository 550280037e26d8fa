"""The objective: what the plan optimises (money that still can change, plus steering penalties).

.. math::

    \\min \\sum_i h_b (p_i + \\rho_i) x_i + \\sum_s P_s n_s + M \\Big(\\sum_{g,b} h_b u_{g,b} + \\sum_g u_g\\Big)

``p_i`` is the marginal price per GPU-hour (congestion and the NETC multiplier included), ``ρ_i`` the
reliability penalty (not money), ``P_s`` the price of one commitment block for the whole horizon and
``M`` the price of unserved work, far above every real price. Sunk and prepaid costs are constants:
added to the plan's cost afterwards, never optimised away.
"""

from __future__ import annotations

import pulp

from finops_cli.planner.model import PlanModel


def define_objective(m: PlanModel) -> None:
    rows = m.frame.rows
    coef = (rows["hours"] * (rows["usd_per_gpu_hour"] + rows["penalty_per_gpu_hour"])).to_numpy()
    terms = [(v, float(c)) for v, c in zip(m.x, coef, strict=True)]
    commitments = m.frame.commitments
    terms += [(var, float(commitments.loc[s, "usd_per_block"])) for s, var in m.commit.items()]
    hours = m.frame.blocks.hours
    terms += [(var, m.unserved_usd_per_unit * float(hours[b])) for (_g, b), var in m.unserved.items()]
    terms += [(var, m.unserved_usd_per_unit) for var in m.unserved_deferrable.values()]
    m.prob.setObjective(pulp.LpAffineExpression(terms))
