r"""NETC — Net Expected Training Cost of interruptible work on spot capacity.

Preemptions arrive as a Poisson process at rate :math:`\lambda` per hour; the job checkpoints every
:math:`\tau` hours, each checkpoint takes :math:`\delta` hours to write, and each preemption costs
:math:`R` hours to resume plus a fixed fee :math:`F`.

.. math::

    t_{lost} = 1/\lambda - \tau / (e^{\lambda\tau} - 1)        \quad(\approx \tau/2)

    W = (1 + \delta/\tau) / (1 - \lambda (t_{lost} + R))

    NETC = C T W + \lambda T W F

:math:`W \ge 1` is the spot substrate's cost multiplier in the merit order. Where
:math:`\lambda (t_{lost} + R) \ge 1` the job never finishes and spot is refused.

References
----------
Young, J. W. (1974). A first order approximation to the optimum checkpoint interval. CACM 17(9).
Daly, J. T. (2006). A higher order estimate of the optimum checkpoint interval. FGCS 22(3).
"""

from __future__ import annotations

import math

from finops_cli.errors import InfeasibleError


class SpotNeverFinishes(InfeasibleError):
    """λ·(t_lost + R) ≥ 1: expected losses per hour exceed an hour of progress."""


def expected_lost_hours(preemptions_per_hour: float, interval_hours: float) -> float:
    """Expected work lost per preemption, ``1/λ − τ/(e^{λτ} − 1)``; → τ/2 as λ → 0."""
    lam, tau = preemptions_per_hour, interval_hours
    x = lam * tau
    if x < 1e-6:  # series expansion: τ/2 − λτ²/12, avoids cancellation
        return tau / 2 - lam * tau * tau / 12
    return 1 / lam - tau / math.expm1(x)


def wall_hours_per_useful_hour(
    preemptions_per_hour: float, interval_hours: float, write_hours: float, resume_hours: float
) -> float:
    """The multiplier ``W = (1 + δ/τ) / (1 − λ(t_lost + R))``; raises :class:`SpotNeverFinishes`."""
    lam = preemptions_per_hour
    if interval_hours <= 0:
        raise ValueError("checkpoint interval must be > 0")
    overhead = 1 + write_hours / interval_hours
    if lam == 0:
        return overhead
    loss = lam * (expected_lost_hours(lam, interval_hours) + resume_hours)
    if loss >= 1:
        raise SpotNeverFinishes(
            f"λ·(t_lost + R) = {loss:.3f} ≥ 1: at {lam:g} preemptions/hour with a "
            f"{interval_hours * 60:g}-minute checkpoint interval the job would never finish on spot"
        )
    return overhead / (1 - loss)


def netc(
    price_per_gpu_hour: float,
    useful_gpu_hours: float,
    preemptions_per_hour: float,
    interval_hours: float,
    write_hours: float,
    resume_hours: float,
    resume_fee: float = 0.0,
) -> float:
    """``NETC = C·T·W + λ·T·W·F`` in currency."""
    w = wall_hours_per_useful_hour(preemptions_per_hour, interval_hours, write_hours, resume_hours)
    return price_per_gpu_hour * useful_gpu_hours * w + preemptions_per_hour * useful_gpu_hours * w * resume_fee


def young_daly_interval_hours(write_hours: float, preemptions_per_hour: float) -> float:
    """Young/Daly optimum ``τ* ≈ √(2δ/λ)`` (infinite when λ = 0)."""
    if preemptions_per_hour <= 0:
        return math.inf
    return math.sqrt(2 * write_hours / preemptions_per_hour)
