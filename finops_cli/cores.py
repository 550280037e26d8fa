"""The cores this process may use: what every parallel part is sized to (the parallel ingest's workers, the scrape
parser's threads, the report's chart helper). Its own module so that asking costs no import of pyarrow."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one, else the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
