"""finops store list / remove / check (issue 11, item 3): see what went in, undo one source, verify it all."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.files import file_digest
from finops_cli.store import Store
from tests.store_files import edit_log

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _run(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    """A store with three billing formats (several accounts, currencies) and two utilisation traces."""
    root = tmp_path / "s"
    bills = [SAMPLES / "billing" / n for n in ("aws-cur2-2026-10.parquet", "gcp-billing-2026-10.jsonl",
                                              "focus-2026-10.csv")]  # fmt: skip
    res = _run("ingest", "billing", *map(str, bills), "--store", str(root))
    assert res.exit_code == 0, res.output
    for n in ("prometheus-range.json.gz", "dcgm"):
        res = _run("ingest", "utilization", str(SAMPLES / "utilization" / n), "--store", str(root))
        assert res.exit_code == 0, res.output
    return root


def _listing(root: Path) -> list[dict]:
    res = _run("store", "list", "--store", str(root), "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _billed(root: Path) -> dict[str, float]:
    table = Store(root).read("billing", columns=["BilledCost", "BillingCurrency"])
    out: dict[str, float] = {}
    if table is None:
        return out
    for c, v in zip(table["BillingCurrency"].to_pylist(), table["BilledCost"].to_pylist(), strict=True):
        out[c] = out.get(c, 0.0) + v
    return out


def test_list_shows_every_source_with_money_and_fingerprint(filled: Path) -> None:
    sources = _listing(filled)
    billing = [s for s in sources if s["dataset"] == "billing"]
    assert {s["dataset"] for s in sources} == {"billing", "utilization"}
    assert len(billing) >= 3 and all(s["fingerprint"] and len(s["fingerprint"]) == 20 for s in sources)
    assert all(s["rows"] > 0 and s["period"] and s["ingested_at"] and s["stored_files"] >= 1 for s in sources)
    # the money listed per source adds up to the store's BilledCost per currency
    listed: dict[str, float] = {}
    for s in billing:
        for c, v in s["money"].items():
            listed[c] = listed.get(c, 0.0) + v
    assert listed == pytest.approx(_billed(filled), abs=0.01)
    table = _run("store", "list", "--store", str(filled))
    assert table.exit_code == 0 and billing[0]["key"] in table.stdout and "ingested at" in table.stdout


def test_remove_one_source_leaves_the_others_and_check_stays_clean(filled: Path) -> None:
    before = _listing(filled)
    victim = next(s for s in before if s["dataset"] == "billing")
    res = _run("store", "remove", victim["key"][:-3], "--store", str(filled), "--format", "json")  # a unique prefix
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["sources"][0]["key"] == victim["key"]
    after = _listing(filled)
    assert [s["key"] for s in after] == [s["key"] for s in before if s["key"] != victim["key"]]
    assert not Store(filled).source_files("billing", victim["key"])
    for c, v in victim["money"].items():
        total_before = sum(s["money"].get(c, 0.0) for s in before)
        assert _billed(filled).get(c, 0.0) == pytest.approx(total_before - v, abs=0.01)
    check = _run("store", "check", "--store", str(filled), "--format", "json")
    assert check.exit_code == 0, check.output
    assert json.loads(check.stdout)["ok"] is True
    missing = _run("store", "remove", victim["key"], "--store", str(filled))
    assert missing.exit_code == 2 and "no source" in missing.output


def test_removed_utilisation_can_be_ingested_again(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,0.5\n2026-10-01T00:01:00Z,g0,0.7\n")
    root = str(tmp_path / "s")
    assert _run("ingest", "utilization", str(trace), "--store", root).exit_code == 0
    copy = tmp_path / "copy.csv"
    copy.write_text(trace.read_text().replace("utilization", "util"))
    assert _run("ingest", "utilization", str(copy), "--store", root).exit_code == 2  # overlaps
    assert _run("store", "remove", str(trace), "--store", root).exit_code == 0  # by the file it came from
    assert _run("ingest", "utilization", str(copy), "--store", root).exit_code == 0
    assert [s["files"] for s in _listing(Path(root))] == [[str(copy)]]


def test_check_names_damage_and_exits_2(filled: Path) -> None:
    store = Store(filled)
    files = store.files("billing")
    victim = next(s for s in _listing(filled) if s["dataset"] == "billing")
    # 1. money changed inside a file (still a valid Parquet file): totals no longer match the manifest
    target = store.source_files("billing", victim["key"])[0]
    table = pq.read_table(target)
    cost = table["BilledCost"].to_pylist()
    cost[0] += 100.0
    import pyarrow as pa

    pq.write_table(table.set_column(table.schema.get_field_index("BilledCost"), "BilledCost", pa.array(cost)), target)
    # 2. another file truncated mid-way
    broken = next(f for f in files if f != target)
    data = broken.read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    # 3. a stray file nobody ingested, in the log
    txid = store.state().files[str(target.relative_to(filled))]
    stray = filled / "_txn" / txid / "utilization" / "month=2026-10" / "stray.parquet"
    stray.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": [1]}), stray)
    edit_log(filled, lambda doc: doc["files"].update({"utilization/month=2026-10/stray.parquet": txid}))
    res = _run("store", "check", "--store", str(filled))
    assert res.exit_code == 2
    out = res.output
    assert f"source {victim['key']}: BilledCost" in out and "in the manifest" in out
    assert str(broken.relative_to(filled)) in out and "unreadable" in out
    assert "stray.parquet: belongs to no source" in out
    assert "Traceback" not in out
    doc = json.loads(_run("store", "check", "--store", str(filled), "--format", "json").stdout)
    assert doc["ok"] is False and len(doc["problems"]) >= 3


def test_spot_price_ingests_cannot_be_removed_one_by_one(tmp_path: Path) -> None:
    root = str(tmp_path / "s")
    feed = sorted((SAMPLES / "spot_prices").iterdir())[0]
    assert _run("ingest", "spot-prices", "--file", str(feed), "--store", root).exit_code == 0
    (spot,) = _listing(Path(root))
    res = _run("store", "remove", spot["key"], "--store", root)
    assert res.exit_code == 2 and "merged per provider and month" in res.output


@pytest.mark.parametrize("kill_at", ["before_publish", "after_publish"])
def test_kill_during_remove_is_all_or_nothing(filled: Path, kill_at: str) -> None:
    """SIGKILL a real ``finops store remove`` just before its generation is published, and just after."""
    victim = next(s for s in _listing(filled) if s["dataset"] == "billing" and s["stored_files"] >= 1)
    before = _listing(filled)
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        import finops_cli.store.store as st
        kill_at = {kill_at!r}
        put = st.Store._put_log
        def dying_put(self, generation, body):
            if kill_at == "before_publish":
                os.kill(os.getpid(), signal.SIGKILL)
            put(self, generation, body)
            os.kill(os.getpid(), signal.SIGKILL)
        st.Store._put_log = dying_put
        from finops_cli.cli.app import app
        sys.argv = ["finops", "store", "remove", {victim["key"]!r}, "--store", {str(filled)!r}]
        app()
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    after = _listing(filled)  # readers see the before or the after state, with nothing to repair
    with Store(filled).transaction():  # the next writer sweeps what the killed one left
        pass
    assert _listing(filled) == after
    if kill_at == "before_publish":
        assert after == before
    else:
        assert [s["key"] for s in after] == [s["key"] for s in before if s["key"] != victim["key"]]
        assert not Store(filled).source_files("billing", victim["key"])
    state = Store(filled).state()
    assert {p.name for p in (filled / "_txn").iterdir()} == {*state.files.values(), *(t for _, t, _ in state.pending)}
    check = _run("store", "check", "--store", str(filled))
    assert check.exit_code == 0, check.output


def test_a_file_fingerprint_is_the_sha1_of_its_bytes(tmp_path: Path) -> None:
    """file_digest reads into one reused buffer: files shorter than it, of several buffers plus a tail, empty."""
    for size in (0, 1, (4 << 20) - 1, (9 << 20) + 7):
        data = os.urandom(size)
        path = tmp_path / f"f{size}"
        path.write_bytes(data)
        assert file_digest(path) == hashlib.sha1(data).hexdigest()
