"""Worker processes: the one place that starts them and ties their life to the parent's.

A ``--jobs N`` ingest stages files in spawned worker processes (:func:`spawn_pool`); each worker calls
:func:`die_with_parent` first, so a killed command leaves no writer behind.
"""

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

    spawn, not fork: a forked child would inherit pyarrow's and DuckDB's thread pools mid-flight. The pool's
    queues hold named semaphores registered with multiprocessing's resource tracker, a process of its own
    that outlives a parent killed with SIGKILL, removes them (as it should) and then printed a "leaked
    semaphore objects" UserWarning on the user's terminal. The tracker takes its warning options from this
    process's ``sys.warnoptions`` when it starts: it is started here with that one warning ignored.
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


def die_with_parent(parent: int) -> None:
    """Be killed with process ``parent`` (Linux: ``PR_SET_PDEATHSIG``); exit at once if it is already gone."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the line above ran
        os._exit(1)
