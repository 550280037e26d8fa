"""docs/schema.md's DuckDB examples run as written against the sample store and return rows."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from finops_cli.store import Store
from tests.conftest import REPO


def _duckdb_statements() -> list[str]:
    text = (REPO / "docs" / "schema.md").read_text(encoding="utf-8")
    section = text.split("### DuckDB", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```sql\n(.*?)```", section, flags=re.S)
    return [s.strip() for block in blocks for s in block.split(";") if s.strip()]


def test_the_docs_have_duckdb_examples_for_the_detail_and_the_aggregates() -> None:
    statements = _duckdb_statements()
    assert len(statements) >= 5
    for aggregate in ("billing_hourly", "utilization_hourly", "utilization_devices", "utilization_histogram"):
        assert any(aggregate in s for s in statements), aggregate


@pytest.mark.parametrize("statement", _duckdb_statements(), ids=lambda s: " ".join(s.split())[:60])
def test_duckdb_example_runs_on_the_sample_store(
    sample_ingested: Store, statement: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(sample_ingested.root).parent)  # the examples read .finops/ in the working directory
    rows = duckdb.connect().execute(statement).fetchall()
    assert rows, statement
