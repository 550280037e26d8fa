"""Shared fixtures: a throwaway store and the repository's paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from finops_cli.store import Store

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture(autouse=True)
def _no_ambient_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never let a test touch the developer's ``.finops/`` or ``$FINOPS_STORE``."""
    monkeypatch.setenv("FINOPS_STORE", str(tmp_path / "default-store"))
    monkeypatch.setenv("NO_COLOR", "1")
