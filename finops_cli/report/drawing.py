"""The report's charts, drawn in helper processes beside the main one while the report's other inputs are computed.

Why: importing matplotlib (≈ 0.6 s of CPU) and drawing the report's four charts (0.15-0.25 s each) is pure-Python
work that the main process used to do last, after waste, the supply curve and the markdown. With two or more
usable cores, ``finops report --out`` and ``finops demo`` call :func:`start` first. Where the platform has a fork
server (Linux, macOS) one server process imports matplotlib and draws a figure once while the main process reads
the store or plans, and two helpers forked from it (warm, with nothing imported again) draw the charts, each handed
over as soon as its inputs exist (the plan's two charts first, the supply curve and idle waste as they are
computed): the four charts take about half as long as in one helper. Elsewhere one spawned helper imports
matplotlib itself and draws them in turn. Without :func:`start` (a library caller), on one core, with
``FINOPS_CHART_PROCESSES=0``, or where no process can be started (a sandbox without semaphores) the charts are
drawn in the calling process: the same files, byte for byte.

Only the CLI starts the helpers: a helper imports the caller's main module again, which is safe for the ``finops``
script but would run a library caller's unguarded script a second time. A library caller may call :func:`start`
from code under ``if __name__ == "__main__":``.

A chart is named by its function's import path (``module:function``), not passed as a function, so the main
process never imports matplotlib to hand a chart over.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import tempfile
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finops_cli.errors import InputError

#: ``FINOPS_CHART_PROCESSES``: helper processes for the report's charts (0: draw in the main process); unset, where
#: at least two cores are usable, two forked from a fork server, or one spawned helper where there is no fork server.
PROCESSES_ENV = "FINOPS_CHART_PROCESSES"
#: What the fork server imports before it forks a helper (:mod:`finops_cli.report.preload`: matplotlib, warm).
PRELOAD = "finops_cli.report.preload"

_POOL: dict[str, Any] = {}  # "pool": the process's ProcessPoolExecutor, "pid": the process that started it


def _processes() -> int:
    value = os.environ.get(PROCESSES_ENV, "").strip()
    if value:
        if not value.isdigit():
            raise InputError(f"${PROCESSES_ENV}={value!r}: expected a whole number of processes (0: none)")
        return int(value)
    from finops_cli.cores import usable_cores

    if usable_cores() < 2:
        return 0
    return 2 if _fork_server() else 1


def _fork_server() -> bool:
    import multiprocessing

    return "forkserver" in multiprocessing.get_all_start_methods()


def _warm() -> None:
    """In a helper (or the fork server): import the chart modules (matplotlib with them) and draw once, so the Agg
    renderer, Pillow's PNG writer and the font list are ready. (A helper forked from the server opens the font files
    again: matplotlib drops its open fonts in a forked child, whose file offsets would be shared.)"""
    import io

    from finops_cli.report import charts, figures  # noqa: F401  (imported for their matplotlib import)

    fig = figures.Figure(figsize=(1, 1))
    fig.add_subplot().set_title("warm-up")
    fig.savefig(io.BytesIO(), format="png")


def _ready() -> None:
    """A first task: the pool forks its first helper for it (the fork server is started and warmed before)."""


def _helper_started(main: int, spawned: bool) -> None:
    """In a helper, first: end with the main process; a spawned one also ends without the interpreter's teardown."""
    threading.Thread(target=_end_with, args=(main,), name="end-with-main", daemon=True).start()
    if spawned:
        _exit_without_teardown()


def _end_with(main: int) -> None:
    """End this helper when process ``main`` ends, however it ends (killed, or gone without stopping the pool).

    A helper holds both ends of its task queue, so it would wait for tasks forever, and keep the fork server and
    the resource tracker alive with it. Waits on a pidfd where there is one (Linux ≥ 5.3), else asks every second.
    """
    import select
    import time

    try:
        handle = os.pidfd_open(main)
    except (AttributeError, OSError):  # no pidfd here, or ``main`` has already gone
        while _alive(main):
            time.sleep(1.0)
    else:
        select.select([handle], [], [])
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's process (the pid was reused): ours has gone
        return False
    return True


def _exit_without_teardown() -> None:
    """In a spawned helper: when the pool stops it, end the process at once rather than through the interpreter's
    teardown, which with matplotlib loaded took ≈ 0.2 s that the main process spends waiting for it to exit
    (:func:`stop` joins it). The helper holds nothing to flush but its standard streams. (A helper forked from
    the fork server ends this way already.)"""
    import atexit

    atexit.register(_end_now)


def _end_now() -> None:
    import contextlib
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(0)


def start() -> None:
    """Start the helpers now (matplotlib is imported meanwhile); a no-op when charts are drawn in-process."""
    processes = 0 if _POOL.get("pid") == os.getpid() else _processes()
    if processes == 0:
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        if _fork_server():
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload([PRELOAD])
            pool = ProcessPoolExecutor(
                max_workers=processes, mp_context=context, initializer=_helper_started, initargs=(os.getpid(), False)
            )
            # The first helper is forked once the server has imported matplotlib (≈ 0.6 s): wait for that on a
            # thread, not here. Further helpers are forked, warm, when charts arrive faster than one draws them.
            threading.Thread(target=_start_first, args=(pool,), name="chart-helpers", daemon=True).start()
        else:
            spawn = multiprocessing.get_context("spawn")
            pool = ProcessPoolExecutor(
                max_workers=processes, mp_context=spawn, initializer=_helper_started, initargs=(os.getpid(), True)
            )
            for _ in range(processes):
                pool.submit(_warm)  # starts a helper: it imports matplotlib now
    except (OSError, ImportError, RuntimeError):  # no semaphores or no process start here: draw in-process
        _POOL.update(pool=None, pid=os.getpid())
        return
    _POOL.update(pool=pool, pid=os.getpid())


def _start_first(pool: Any) -> None:
    # A failure to start is met again by the first chart handed over: it is then drawn in-process (Drawing.wait).
    with contextlib.suppress(Exception):
        pool.submit(_ready)


def stop() -> None:
    """Shut the helpers down (they also end with the process); charts are drawn in-process until :func:`start`."""
    pool = _POOL.get("pool") if _POOL.get("pid") == os.getpid() else None
    _POOL.clear()
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _pool() -> Any:
    return _POOL.get("pool") if _POOL.get("pid") == os.getpid() else None


def _call(target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Path:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)(*args, **kwargs)


@dataclass
class _Chart:
    name: str  # the file name
    target: str  # module:function
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    future: Future[Path] | None  # None: drawn in-process at wait()


class Drawing:
    """Charts being drawn into a private staging folder beside the report (``<folder>/.<stem>-…``).

    :meth:`submit` hands a chart over as soon as its inputs exist; :meth:`wait` collects them: the file names
    drawn and, per chart that failed, its error. :meth:`close` removes the staging folder (the report moves the
    files out first), after the helper has finished with it.
    """

    def __init__(self, out: Path) -> None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.stage = Path(tempfile.mkdtemp(prefix=f".{out.stem}-", dir=out.parent))
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", path=out) from None
        self.stem = out.stem
        self._charts: dict[str, _Chart] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._charts

    def submit(self, key: str, name: str, target: str, *args: Any, **kwargs: Any) -> None:
        """Draw chart ``key`` as file ``name`` by calling ``target`` (``module:function``) with ``args``,
        ``path=`` the staged file and ``kwargs``: in the helper process when there is one, else at :meth:`wait`."""
        kwargs = {**kwargs, "path": self.stage / name}
        pool, future = _pool(), None
        if pool is not None:
            try:
                future = pool.submit(_call, target, args, kwargs)
            except RuntimeError:  # the pool broke (a helper was killed) or is shutting down: draw in-process
                future = None
        self._charts[key] = _Chart(name, target, args, kwargs, future)

    def wait(self) -> tuple[dict[str, str], dict[str, Exception]]:
        """Every submitted chart finished: {key: file name} of those drawn, {key: error} of those that failed."""
        from concurrent.futures.process import BrokenProcessPool

        drawn: dict[str, str] = {}
        failed: dict[str, Exception] = {}
        for key, chart in self._charts.items():
            try:
                try:
                    if chart.future is None:
                        raise BrokenProcessPool
                    chart.future.result()
                except BrokenProcessPool:  # no helper, or it died: draw here
                    _call(chart.target, chart.args, chart.kwargs)
                drawn[key] = chart.name
            except Exception as exc:  # handed back: the report decides what a failed chart means
                failed[key] = exc
        return drawn, failed

    def close(self) -> None:
        """Stop charts not started, let the helper finish the one it draws, then remove the staging folder."""
        for chart in self._charts.values():
            if chart.future is not None and not chart.future.cancel():
                chart.future.exception()  # waits; the chart is discarded with the folder
        shutil.rmtree(self.stage, ignore_errors=True)
