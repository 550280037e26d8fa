"""Atomic file output: write beside the target, then rename over it, so a crash or Ctrl-C never leaves a
half-written plan, report or chart; and no output may replace a file the command read.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path

from finops_cli.errors import InputError

#: What the running command has read so far: (resolved path, whole tree below it?). None outside a command.
_INPUTS: ContextVar[list[tuple[Path, bool]] | None] = ContextVar("finops_inputs", default=None)


@contextmanager
def guard_inputs() -> Iterator[None]:
    """Within this block no output may replace a file the block has read (or land inside a tree it read): the CLI
    wraps every command in it, so ``--out`` never overwrites an input found on the way (a demand profile, the store).
    """
    token = _INPUTS.set([])
    try:
        yield
    finally:
        _INPUTS.reset(token)


def note_input(path: str | os.PathLike[str], *, tree: bool = False) -> None:
    """Record that the running command reads ``path`` (``tree``: every file below it, as for the store)."""
    inputs = _INPUTS.get()
    if inputs is not None:
        with suppress(OSError, RuntimeError):  # a symlink loop cannot be an output's target either
            inputs.append((Path(path).resolve(), tree))


def _refuse_inputs(target: Path, extra: list[tuple[Path, bool]] = ()) -> None:  # type: ignore[assignment]
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError):
        raise InputError("cannot resolve the output path (a symlink loop?)", path=target) from None
    for given, tree in [*(_INPUTS.get() or []), *extra]:
        if resolved == given or (tree and resolved.is_relative_to(given)):
            where = "is" if resolved == given else "is inside"
            raise InputError(
                f"{where} an input of this command ({given}); write the output elsewhere", path=target, param="out"
            )


def check_output(path: str | os.PathLike[str], *, output: bool = True) -> str | None:
    """For writers that place files themselves: refuse an input of the running command (``output``) or an odd
    special file; return ``"stream"`` for a character device or FIFO (write through it, never rename over it)."""
    target = Path(path)
    if output:
        _refuse_inputs(target)
    kind = _special(target)
    if kind == "other":
        raise InputError("is not a regular file; expected a file path", path=target)
    return kind


def _special(target: Path) -> str | None:
    """``"stream"`` for a character device or FIFO (written through), ``"other"`` for any other non-file."""
    try:
        mode = target.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=target) from None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    return "other"


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, output: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix: matplotlib picks the format from it); rename it over
    ``path`` if the block succeeds. A device or FIFO is written through; :func:`check_output` judges the target.
    """
    target = Path(path)
    if check_output(target, output=output) == "stream":
        with tempfile.TemporaryDirectory(prefix="finops-out-") as scratch:
            tmp = Path(scratch) / f"out{target.suffix}"
            yield tmp
            try:
                with open(tmp, "rb") as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            except OSError as exc:
                raise InputError(f"cannot write: {exc.strerror or exc}", path=target) from None
        return
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
    """``path``, or fail before any work if it can never be written (a file in the way, a read-only parent): a
    typo in ``--out`` then costs nothing."""
    target = Path(path)
    if not directory:
        kind = _special(target)
        if kind == "stream" and os.access(target, os.W_OK):
            return target  # written through (atomic_path), so its directory need not be writable
        if kind == "other" and not target.is_dir():
            raise InputError("is not a regular file; expected a file path", path=target)
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


def write_text(path: str | os.PathLike[str], text: str, *, output: bool = True) -> Path:
    """Write ``text`` (UTF-8, newline-terminated) to ``path`` atomically, flushed before the rename;
    ``output=False`` for the store's own files, which live where no output may go."""
    with atomic_path(path, output=output) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)


def check_not_an_input(
    out: str | os.PathLike[str] | None,
    *inputs: str | os.PathLike[str] | None,
    store: str | os.PathLike[str] | None = None,
) -> None:
    """Before any work: ``--out`` must not name an input, a file inside an input directory, or the store
    (inputs found later are caught when the output is written, :func:`guard_inputs`)."""
    if out is None:
        return
    given = [Path(p) for p in inputs if p is not None]
    extra = [(p.resolve(), p.is_dir()) for p in given]
    if store is not None:
        extra.append((Path(store).resolve(), True))
    _refuse_inputs(Path(out), extra)
