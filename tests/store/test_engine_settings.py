"""DuckDB's memory and thread settings come from the environment; a bad value is exit 2, not a traceback."""

from __future__ import annotations

import pytest

from finops_cli.errors import InputError
from finops_cli.store import engine
from finops_cli.store.queries import SPOT_FEED_LATEST


@pytest.mark.parametrize(
    ("env", "value", "message"),
    [("FINOPS_DUCKDB_MEMORY", "lots", "FINOPS_DUCKDB_MEMORY"), ("FINOPS_DUCKDB_THREADS", "0", "threads >= 1")],
)
def test_a_bad_setting_is_a_clear_input_error(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, message: str
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(InputError, match=message):
        engine.run_files(SPOT_FEED_LATEST, {})


def test_settings_reach_duckdb(monkeypatch: pytest.MonkeyPatch) -> None:
    from finops_cli.store.queries import Query

    monkeypatch.setenv("FINOPS_DUCKDB_MEMORY", "300MB")
    monkeypatch.setenv("FINOPS_DUCKDB_THREADS", "1")
    q = Query("settings", (), "SELECT current_setting('threads') AS t, current_setting('memory_limit') AS m")
    row = engine.run_files(q, {}).to_pylist()[0]
    assert row["t"] == 1 and row["m"].startswith(("286", "300"))
