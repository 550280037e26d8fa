"""NETC formulas checked by hand."""

from __future__ import annotations

import math

import pytest

from finops_cli.core.netc import (
    SpotNeverFinishes,
    expected_lost_hours,
    netc_breakdown,
    wall_hours_per_useful_hour,
    young_daly_interval_hours,
)


def test_lost_work_is_about_half_the_interval_for_rare_preemptions() -> None:
    assert expected_lost_hours(1e-9, 0.5) == pytest.approx(0.25, rel=1e-6)
    # λ=1/h, τ=1h: 1 − 1/(e − 1) = 0.418023...
    assert expected_lost_hours(1.0, 1.0) == pytest.approx(1 - 1 / (math.e - 1))


def test_multiplier_by_hand() -> None:
    lam, tau, delta, r = 0.02, 0.5, 0.5 / 60, 0.1
    t_lost = 1 / lam - tau / math.expm1(lam * tau)
    expected = (1 + delta / tau) / (1 - lam * (t_lost + r))
    assert wall_hours_per_useful_hour(lam, tau, delta, r) == pytest.approx(expected)
    assert netc_breakdown(3.9, 100, lam, tau, delta, r, resume_fee=2.0).netc == pytest.approx(
        3.9 * 100 * expected + lam * 100 * expected * 2
    )


def test_no_preemptions_no_write_is_one() -> None:
    assert wall_hours_per_useful_hour(0.0, 0.5, 0.0, 0.1) == 1.0


def test_never_finishes_is_refused() -> None:
    with pytest.raises(SpotNeverFinishes, match="never finish"):
        wall_hours_per_useful_hour(2.0, 1.0, 0.0, 1.0)


def test_young_daly() -> None:
    assert young_daly_interval_hours(0.01, 0.02) == pytest.approx(1.0)
    assert young_daly_interval_hours(0.01, 0.0) == math.inf
