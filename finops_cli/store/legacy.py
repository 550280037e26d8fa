"""Directory stores written before the log: read in place, converted by their next writer.

Such a store keeps its live files in the dataset directories, its manifest in ``manifest.json`` and, when
a commit was interrupted, a journal ``.journal-<txid>.json`` of renames from ``.staging/<txid>/``. Readers
list it as before (refusing a journal no live writer owns: they never replay one). The next writer, under
the lock, rolls any journal forward (after checking all of it), hard-links every file into
``_txn/<txid>/`` and commits that as generation 1; the dataset directories stay as the hard-linked view for
tools outside finops. Remove this module once no such store is left.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from finops_cli.errors import InputError
from finops_cli.store.layout import (
    DATASETS,
    LOG_DIR,
    TXN_DIR,
    check_manifest,
    check_rel,
    generation_name,
    new_txid,
    read_document,
)
from finops_cli.store.log import IN_PLACE, State, create_if_absent, read_bounded, writer_is_live

_MANIFEST = "manifest.json"
_STAGING = ".staging"


def _files(root: Path) -> list[str]:
    """Every data file in the dataset directories (logical paths); a symlink anywhere is refused by name."""
    found = []
    for dataset in DATASETS:
        d = root / dataset
        if d.is_symlink():
            raise InputError("is a symlink; a store's datasets are real directories (nothing was read)", path=d)
        for top, dirs, names in os.walk(d):
            for n in [*dirs, *names]:
                if os.path.islink(os.path.join(top, n)):
                    raise InputError(
                        "is a symlink; a store's partitions and files are real (nothing was read or changed)",
                        path=Path(top, n),
                    )
            for n in names:
                rel = Path(top, n).relative_to(root).as_posix()
                if n.endswith(".parquet") and not n.startswith((".", "_")):
                    try:
                        found.append(check_rel(rel))
                    except ValueError:
                        raise InputError("is not a data file of a finops store", path=Path(top, n)) from None
    return sorted(found)


def _manifest(root: Path) -> list[dict[str, Any]]:
    path = root / _MANIFEST
    if not path.exists() and not path.is_symlink():
        return []
    return check_manifest(read_document(read_bounded(path), path, what="store manifest"), path)


def legacy_state(root: Path) -> State | None:
    """A store without ``_log/`` read in place (None when there is nothing to read)."""
    journals = sorted(root.glob(".journal-*.json"))
    if journals and not writer_is_live(root):
        raise InputError(
            f"an ingest was interrupted while committing ({journals[0].name}); "
            "the next ingest into this store finishes it (readers never replay journals)",
            path=root,
        )
    manifest = _manifest(root)
    files = _files(root)
    if not files and not manifest:
        return None
    return State(0, dict.fromkeys(files, IN_PLACE), manifest)


def convert(root: Path) -> None:
    """Under the writer lock: finish any journal, then commit the store as it stands as generation 1."""
    staging = root / _STAGING
    if staging.is_symlink() or (staging.exists() and not staging.is_dir()):
        raise InputError(f"{_STAGING} is not a directory of this store; refusing to use the store", path=root)
    for journal in sorted(root.glob(".journal-*.json")):
        _apply_journal(root, journal)
    if staging.is_dir():
        shutil.rmtree(staging)
    manifest, files = _manifest(root), _files(root)
    if not files and not manifest:
        return
    txid = new_txid()
    for rel in files:  # committed as they are (no aggregate rebuilt)
        target = root / TXN_DIR / txid / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(root / rel, target)
        except OSError:  # a file system without hard links
            shutil.copy2(root / rel, target)
    state = State(1, dict.fromkeys(files, txid), manifest)
    if not create_if_absent(root / LOG_DIR / generation_name(1), state.document(txid, datetime.now(UTC))):
        raise InputError("another writer converted the store while this one ran; run the command again", path=root)
    (root / _MANIFEST).unlink(missing_ok=True)


def _inside(root: Path, rel: object, *, under: tuple[str, ...], what: str, journal: Path) -> Path:
    """``root / rel`` if ``rel`` is a relative path below one of ``under`` that stays inside the store."""
    bad = InputError(
        f"{what} {rel!r} leads outside the store's data; the store needs a manual look (nothing was changed)",
        path=journal,
    )
    if not isinstance(rel, str) or not rel or "\0" in rel or "\\" in rel:
        raise bad
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or any(p in ("..", ".", "") for p in parts) or parts[0] not in under:
        raise bad
    real_root = os.path.realpath(root)
    real_parent = os.path.realpath(root / Path(rel).parent)
    if os.path.commonpath([real_root, real_parent]) != real_root:
        raise bad
    return root / rel


def _read_journal(root: Path, journal: Path) -> tuple[list[Path], list[tuple[Path, Path]], Path]:
    """A journal's deletes, moves and staging directory, refused (before anything is touched) unless it has the
    writer's shape and every path stays inside the store."""
    plan = read_document(read_bounded(journal), journal, what="transaction journal; the store needs a manual look")

    def refuse(problem: str) -> InputError:
        return InputError(f"{problem}; the store needs a manual look (nothing was changed)", path=journal)

    if not isinstance(plan, dict) or set(plan) != {"deletes", "moves", "staging"}:
        raise refuse("not a transaction journal (expected {deletes, moves, staging})")
    if not isinstance(plan["deletes"], list) or not isinstance(plan["moves"], list):
        raise refuse("not a transaction journal (deletes and moves must be lists)")
    if not all(isinstance(m, list) and len(m) == 2 for m in plan["moves"]):
        raise refuse("not a transaction journal (each move must be [source, destination])")
    staging = _inside(root, plan["staging"], under=(_STAGING,), what="staging", journal=journal)
    if len(Path(plan["staging"]).parts) != 2:
        raise refuse(f"staging {plan['staging']!r} is not a transaction directory")
    data = tuple(DATASETS)
    deletes = [_inside(root, d, under=data, what="deleted file", journal=journal) for d in plan["deletes"]]
    moves = []
    for src, dst in plan["moves"]:
        s = _inside(root, src, under=(_STAGING,), what="staged file", journal=journal)
        if os.path.realpath(s) != os.path.join(os.path.realpath(root), src):
            raise refuse(f"staged file {src!r} is or passes through a symlink")
        if Path(src).parts[:2] != Path(plan["staging"]).parts:
            raise refuse(f"staged file {src!r} is not in the journal's staging directory")
        d = (
            root / _MANIFEST
            if dst == _MANIFEST
            else _inside(root, dst, under=data, what="destination", journal=journal)
        )
        moves.append((s, d))
    for p in [*deletes, *(d for _, d in moves)]:
        if p != root / _MANIFEST and not p.name.endswith(".parquet"):
            raise refuse(f"{p.relative_to(root)} is not a data file of a finops store")
    return deletes, moves, staging


def _apply_journal(root: Path, journal: Path) -> None:
    """Roll a committed transaction forward; every step is idempotent. The whole journal is checked first."""
    deletes, moves, staging = _read_journal(root, journal)
    for path in deletes:
        path.unlink(missing_ok=True)
    for s, d in moves:
        if s.exists():
            d.parent.mkdir(parents=True, exist_ok=True)
            os.replace(s, d)
    shutil.rmtree(staging, ignore_errors=True)
    journal.unlink(missing_ok=True)
