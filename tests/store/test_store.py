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
from finops_cli.store.engine import stage_aggregates


def _table(costs: list[float], period: str = "2026-11") -> pa.Table:
    return pa.table(
        {
            "provider": ["aws"] * len(costs),
            "billing_period": [period] * len(costs),
            "BilledCost": costs,
        }
    )


def _write(store: Store, table: pa.Table, key: str) -> None:
    with store.transaction(aggregates=stage_aggregates) as tx:
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
    with reopened.transaction():  # readers leave debris alone; the next writer (under the lock) sweeps it
        pass
    assert not (root / ".staging").exists()


def test_committed_journal_is_rolled_forward(store: Store) -> None:
    """A crash after the journal is written but before the moves: the next writer completes them."""
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
    with reopened.transaction():
        pass
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


def test_opening_the_store_during_a_live_transaction_leaves_its_staging_alone(tmp_path: Path) -> None:
    """Another process (``finops waste`` while an ingest runs) must not sweep away the writer's staged files."""
    root = tmp_path / "s"
    s = Store(root)
    _write(s, _table([1.0]), "src1")  # creates the store and its lock file
    with s.transaction() as tx:
        tx.write_partitioned("billing", _table([2.0]), "src2")
        staged = list(tx.staging.rglob("*.parquet"))
        assert staged
        reader = f"from finops_cli.store import Store; print(Store({str(root)!r}).read('billing').num_rows)"
        proc = subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True, check=True)
        assert proc.stdout.strip() == "1"  # sees the committed data only
        assert all(p.exists() for p in staged)  # and did not "recover" the live transaction's files
    assert sorted(Store(root).read("billing")["BilledCost"].to_pylist()) == [1.0, 2.0]


def test_writers_are_serialised(tmp_path: Path) -> None:
    """Two processes ingesting at once: the second waits for the first, and both manifest entries survive."""
    root = tmp_path / "s"
    Store(root)
    script = textwrap.dedent(
        """
        import sys, time, pyarrow as pa
        from finops_cli.store import Store
        s = Store(sys.argv[1])
        t = pa.table({"provider": ["aws"], "billing_period": ["2026-11"], "BilledCost": [1.0]})
        with s.transaction() as tx:
            tx.write_partitioned("billing", t, sys.argv[2])
            time.sleep(0.5)
            tx.record({"source_key": sys.argv[2]})
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(root), key]) for key in ("a", "b")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    store = Store(root)
    assert sorted(e["source_key"] for e in store.manifest()) == ["a", "b"]
    assert store.read("billing").num_rows == 2


def test_a_replaced_file_outlives_its_replacement_by_the_grace_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that resolved the older generation can still read its files; they go only after GRACE."""
    from finops_cli.store import store as store_mod

    s = Store(tmp_path / "s")
    _write(s, _table([1.0]), "src1")
    old_reader = Store(s.root)
    (old,) = [old_reader.locate(p) for p in old_reader.files("billing")]
    _write(s, _table([2.0]), "src1")  # replaces the file
    assert Path(old).is_file() and old_reader.read("billing")["BilledCost"].to_pylist() == [1.0]
    assert Store(s.root).read("billing")["BilledCost"].to_pylist() == [2.0]
    pending = sorted(p[0] for p in Store(s.root).state().pending)
    assert pending == [f"{d}/provider=aws/billing_period=2026-11/src1.parquet" for d in ("billing", "billing_hourly")]
    monkeypatch.setattr(store_mod, "GRACE", store_mod.timedelta(0))
    _write(s, _table([3.0]), "src2")  # the next commit after the grace period deletes it, and old generations
    assert not Path(old).exists()
    assert len(list((s.root / "_log").iterdir())) == 1
    assert sorted(Store(s.root).read("billing")["BilledCost"].to_pylist()) == [2.0, 3.0]


def test_a_store_written_before_the_log_is_read_then_converted(tmp_path: Path) -> None:
    from tests.store_files import to_legacy

    s = Store(tmp_path / "s")
    _write(s, _table([1.0, 2.0]), "src1")
    to_legacy(s.root)
    assert Store(s.root).read("billing")["BilledCost"].to_pylist() == [1.0, 2.0]  # read in place
    assert not (s.root / "_log").exists()
    _write(Store(s.root), _table([5.0], "2026-12"), "src2")  # the first writer converts it
    assert not (s.root / "manifest.json").exists() and len(list((s.root / "_log").iterdir())) == 2
    assert sorted(Store(s.root).read("billing")["BilledCost"].to_pylist()) == [1.0, 2.0, 5.0]
    assert sorted(p.name for p in (s.root / "billing").rglob("*.parquet")) == ["src1.parquet", "src2.parquet"]
