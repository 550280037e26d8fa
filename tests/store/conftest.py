"""The sample estate ingested once per test session (the bundled exports and traces, as ``finops demo`` does)."""

from __future__ import annotations

import pytest

from finops_cli import api
from finops_cli.store import Store
from tests.conftest import SAMPLES


@pytest.fixture(scope="session")
def sample_ingested(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """A store holding the samples' billing and utilisation (do not write to it)."""
    st = Store(tmp_path_factory.mktemp("samples") / ".finops")
    api.ingest_billing(sorted((SAMPLES / "billing").iterdir()), store=st)
    api.ingest_utilization(sorted((SAMPLES / "utilization").iterdir()), store=st)
    return st
