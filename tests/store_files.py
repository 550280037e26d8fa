"""Test helpers that reach into a store's committed state (its newest ``_log/`` generation) directly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any


def newest_log(root: Path) -> Path:
    return max((root / "_log").glob("*.json"))


def edit_log(root: Path, edit: Any) -> None:
    """Rewrite the newest generation in place with ``edit(doc)`` (a planted or an older store)."""
    path = newest_log(root)
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def forget(root: Path, *datasets: str) -> None:
    """Make the store at ``root`` hold no file of ``datasets`` (as one written before they existed)."""

    def drop(doc: dict[str, Any]) -> None:
        doc["files"] = {r: t for r, t in doc["files"].items() if r.split("/")[0] not in datasets}

    edit_log(root, drop)
    for name in datasets:
        shutil.rmtree(root / name, ignore_errors=True)


def to_legacy(root: Path) -> None:
    """Turn the store at ``root`` into one written before the log: files in place, ``manifest.json``."""
    doc = json.loads(newest_log(root).read_text(encoding="utf-8"))
    for rel, txid in doc["files"].items():
        if not (root / rel).exists():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / "_txn" / txid / rel, root / rel)
    (root / "manifest.json").write_text(json.dumps(doc["manifest"]), encoding="utf-8")
    shutil.rmtree(root / "_log")
    shutil.rmtree(root / "_txn")
