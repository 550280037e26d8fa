"""The store's promises: partitioned layout, idempotent keys, partition replacement, atomic commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from finops_cli.store import Store, resolve_store_root


def _table(costs: list[float], period: str = "2026-11") -> pa.Table:
    return pa.table(
        {
            "provider": ["aws"] * len(costs),
            "billing_period": [period] * len(costs),
            "BilledCost": costs,
        }
    )


def _write(store: Store, table: pa.Table, key: str) -> None:
    with store.transaction() as tx:
        tx.write_partitioned("billing", table, key)


def test_hive_layout_and_round_trip(store: Store) -> None:
    _write(store, _table([1.0, 2.5]), "src1")
    path = store.root / "billing" / "provider=aws" / "billing_period=2026-11" / "src1.parquet"
    assert path.exists()
    got = store.read("billing")
    assert sorted(got["BilledCost"].to_pylist()) == [1.0, 2.5]
    assert set(got["provider"].to_pylist()) == {"aws"}


def test_same_key_twice_leaves_one_copy(store: Store) -> None:
    _write(store, _table([1.0, 2.0]), "src1")
    _write(store, _table([1.0, 2.0]), "src1")
    assert store.read("billing").num_rows == 2


def test_replace_partition_drops_other_files(store: Store) -> None:
    _write(store, _table([1.0]), "old-export")
    with store.transaction() as tx:
        tx.replace_partition("billing", {"provider": "aws", "billing_period": "2026-11"})
        tx.write_partitioned("billing", _table([5.0]), "corrected-export")
    assert store.read("billing")["BilledCost"].to_pylist() == [5.0]


def test_exception_inside_transaction_changes_nothing(store: Store) -> None:
    _write(store, _table([1.0]), "src1")
    before = sorted(p.relative_to(store.root) for p in store.root.rglob("*") if p.is_file())
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.write_partitioned("billing", _table([9.0]), "src1")
        tx.record({"source_key": "x"})
        raise RuntimeError("boom")
    after = sorted(p.relative_to(store.root) for p in store.root.rglob("*") if p.is_file())
    assert after == before
    assert store.read("billing")["BilledCost"].to_pylist() == [1.0]


def test_killed_writer_leaves_store_as_before(tmp_path: Path) -> None:
    """SIGKILL a process mid-transaction: the next open sees exactly the old data."""
    root = tmp_path / "s"
    s = Store(root)
    _write(s, _table([1.0]), "src1")
    script = textwrap.dedent(
        f"""
        import os, signal, pyarrow as pa
        from finops_cli.store import Store
        s = Store({str(root)!r})
        t = pa.table({{"provider": ["aws"], "billing_period": ["2026-11"], "BilledCost": [9.0]}})
        with s.transaction() as tx:
            tx.write_partitioned("billing", t, "src1")
            tx.write_partitioned("billing", t, "src2")
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], check=False)
    assert proc.returncode != 0
    reopened = Store(root)
    assert reopened.read("billing")["BilledCost"].to_pylist() == [1.0]
    assert not (root / ".staging").exists()


def test_committed_journal_is_rolled_forward(store: Store) -> None:
    """A crash after the journal is written but before the moves: the next open completes them."""
    staged = store.root / ".staging" / "tx1" / "billing" / "provider=aws" / "billing_period=2026-11"
    staged.mkdir(parents=True)
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"BilledCost": [3.0]}), staged / "k.parquet")
    journal = {
        "moves": [
            [
                ".staging/tx1/billing/provider=aws/billing_period=2026-11/k.parquet",
                "billing/provider=aws/billing_period=2026-11/k.parquet",
            ]
        ],
        "deletes": [],
        "staging": ".staging/tx1",
    }
    (store.root / ".journal-tx1.json").write_text(json.dumps(journal))
    reopened = Store(store.root)
    assert reopened.read("billing")["BilledCost"].to_pylist() == [3.0]
    assert not list(store.root.glob(".journal-*"))


def test_manifest_records_and_forgets_sources(store: Store) -> None:
    with store.transaction() as tx:
        tx.write_partitioned("billing", _table([1.0]), "k")
        tx.record({"source_key": "k", "path": "a.csv"})
    with store.transaction() as tx:
        tx.forget_source("k")
        tx.write_partitioned("billing", _table([1.0]), "k")
        tx.record({"source_key": "k", "path": "a.csv"})
    assert [e["path"] for e in store.manifest()] == ["a.csv"]


def test_store_root_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FINOPS_STORE", str(tmp_path / "env"))
    assert resolve_store_root("explicit") == Path("explicit")
    assert resolve_store_root(None) == tmp_path / "env"
    monkeypatch.delenv("FINOPS_STORE")
    assert resolve_store_root(None) == Path(os.getcwd()) / ".finops"
