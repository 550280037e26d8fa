"""How many examples a property test runs: one knob for the whole suite, set by ``HYPOTHESIS_PROFILE``.

A property test's own count (``@settings(max_examples=examples(15))``) is its budget in the default ``ci``
profile, sized so the whole suite stays within a few minutes on 2 cores; ``thorough`` (before a release, or
after touching the code a property covers) runs ten times as many. Tests that do not set a count take the
profile's own (150 in ``ci``, 2,000 in ``thorough``; see ``tests/conftest.py``).
"""

from __future__ import annotations

import os

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
SCALE = {"ci": 1, "thorough": 10}


def examples(ci: int) -> int:
    """``ci`` examples under the ``ci`` profile, ten times that under ``thorough``."""
    return ci * SCALE.get(PROFILE, 1)
