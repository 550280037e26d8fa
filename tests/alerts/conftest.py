"""Stores the alerts tests share: the generated three-month company (tests/alerts/alerts_company.py) and the
sample company's October, each built once per run."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def company_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from alerts_company import build_store

    return build_store(tmp_path_factory.mktemp("alerts-company"))


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finops_cli import api

    store = tmp_path_factory.mktemp("alerts-samples") / "store"
    api.ingest_billing([REPO / "samples" / "billing"], store=store)
    return store


@pytest.fixture(autouse=True)
def _own_ledger(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never let a test read or write the developer's notify ledger."""
    monkeypatch.setenv("FINOPS_NOTIFY_LEDGER", str(tmp_path / "ledger.json"))
    for name in ("FINOPS_SLACK_WEBHOOK_URL", "FINOPS_SLACK_BOT_TOKEN", "FINOPS_PAGERDUTY_ROUTING_KEY",
                 "FINOPS_TEAMS_WEBHOOK_URL", "FINOPS_WEBHOOK_URL", "FINOPS_WEBHOOK_SECRET"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    """pytest-httpserver's local server on 127.0.0.1 (not whatever ``localhost`` resolves to)."""
    return ("127.0.0.1", 0)
