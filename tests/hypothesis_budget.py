"""How many examples a property test runs: one knob for the whole suite, set by ``HYPOTHESIS_PROFILE``.

A property test's own count (``@settings(max_examples=examples(15))``) is its budget in the default ``ci``
profile, sized so the whole suite stays within a few minutes on 2 cores; ``thorough`` (before a release, or
after touching the code a property covers) runs ten times as many. Tests that do not set a count take the
profile's own (150 in ``ci``, 2,000 in ``thorough``; see ``tests/conftest.py``).

How a ``ci`` budget is sized: cheap examples (pure functions, under ~20 ms) keep 100-300; an example that
solves MILPs or writes a store (0.1-0.7 CPU-s each) gets 6-15, so no property costs much more than ~3 CPU-s
of a CI run. Every run draws new examples (the seed is random) and a failure is saved to ``.hypothesis/`` and
replayed first next time, so a CI history covers far more than one run's budget; a failure seen once in CI
becomes an explicit regression test (as tests/sim/test_market.py's displaced-fallback case did).
"""

from __future__ import annotations

import os

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
SCALE = {"ci": 1, "thorough": 10}


def examples(ci: int) -> int:
    """``ci`` examples under the ``ci`` profile, ten times that under ``thorough``."""
    return ci * SCALE.get(PROFILE, 1)
