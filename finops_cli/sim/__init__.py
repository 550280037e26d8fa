"""Simulators: request-level merit-order dispatch and a continuous-renegotiation market.

Documented in docs/dispatch.md and docs/market.md.

Both are pure (no I/O, no CLI): they take validated models and arrays and return result objects. The
dispatch simulator reuses the compliance gate and the merit-order prices of :mod:`finops_cli.core`;
the market simulator has one policy per module under :mod:`finops_cli.sim.market`.
"""

from __future__ import annotations

import numpy as np

#: The concerns that draw random numbers; each gets its own stream so changing one leaves the others.
STREAMS = ("arrivals", "mix", "sizes", "preemptions", "losses")


def streams(seed: int) -> dict[str, np.random.Generator]:
    """One independent numpy ``Generator`` per concern, all derived from ``seed`` (Gavel-style).

    Adding draws to one stream (say, a larger trace) never shifts another (say, the preemptions).
    """
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: np.random.default_rng(child) for name, child in zip(STREAMS, children, strict=True)}
