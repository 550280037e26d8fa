"""Worker processes: the one place that sizes them, starts them and ties their life to the parent's."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import resource_tracker
from typing import Any

#: multiprocessing's resource tracker warns when it removes the pool's semaphores after a killed (SIGKILL) parent
_TRACKER_QUIET = "ignore::UserWarning:multiprocessing.resource_tracker"


def spawn_pool(workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes, each started with ``initializer(*initargs)``.

    spawn, not fork: a forked child would inherit pyarrow's and DuckDB's thread pools mid-flight. The resource
    tracker is started with its "leaked semaphore" warning off: it prints one after a parent killed by SIGKILL.
    """
    if _TRACKER_QUIET not in sys.warnoptions:
        sys.warnoptions.append(_TRACKER_QUIET)
    resource_tracker.ensure_running()
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=initializer,
        initargs=initargs,
    )


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one, else the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def die_with_parent(parent: int) -> None:
    """Be killed with process ``parent`` (Linux: ``PR_SET_PDEATHSIG``); exit at once if it is already gone."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the line above ran
        os._exit(1)
