"""Atomic file output: write beside the target, then rename over it.

Every finished artefact (plan.json, a report, a chart, a generated trace) goes through here, so a
crash or Ctrl-C never leaves a half-written file where a reader expects a whole one. The store has
its own multi-file transaction (:mod:`finops_cli.store.store`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from finops_cli.errors import InputError


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` if the block succeeds.

    The temporary keeps ``path``'s suffix (writers such as matplotlib pick the format from it) and is
    removed on any failure. An ``OSError`` becomes an :class:`InputError` naming ``path``.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.stem}.{os.getpid()}.tmp{target.suffix}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=target) from None
    finally:
        with suppress(OSError):  # the parent may not exist or not be a directory: nothing to clean
            tmp.unlink(missing_ok=True)


def check_writable(path: str | os.PathLike[str], *, directory: bool = False) -> Path:
    """Fail before any work if ``path`` can never be written (a file in the way, a read-only parent).

    Commands that do expensive work or write the store before their ``--out`` call this first, so a
    typo in ``--out`` costs nothing and leaves everything as it was. Returns ``path`` as a ``Path``.
    """
    target = Path(path)
    if directory and target.exists() and not target.is_dir():
        raise InputError("exists and is not a directory; expected a directory", path=target)
    if not directory and target.is_dir():
        raise InputError("is a directory; expected a file path", path=target)
    start = target if directory else target.parent
    for ancestor in (start, *start.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise InputError(f"cannot write: {ancestor} is a file, not a directory", path=target)
            if not os.access(ancestor, os.W_OK | os.X_OK):
                raise InputError(f"cannot write: {ancestor} is not writable", path=target)
            break
    return target


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8, newline-terminated) to ``path`` atomically, flushed to disk before the rename."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)


def check_not_an_input(out: str | os.PathLike[str] | None, *inputs: str | os.PathLike[str] | None) -> None:
    """``--out`` must not name a file the command reads (``gate --plan p.json --out p.json`` would replace it)."""
    if out is None:
        return
    target = Path(out).resolve()
    for given in inputs:
        if given is not None and Path(given).resolve() == target:
            raise InputError("--out names an input of this command; write the output elsewhere", path=out)
