"""Concurrent processes on one store lose nothing (real processes, like the two-process store tests).

Each test makes the race deterministic: the first process is paused at the dangerous moment (an ingest
mid-spill, a spot merge between its read and its write) while a second real process does its work.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from finops_cli import api
from finops_cli.store import Store
from tests.conftest import SAMPLES

_WASTE = "import sys; from finops_cli.cli.app import main; sys.argv[0] = 'finops'; main()"


def _util_csv(path: Path, devices: int, samples: int) -> int:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["timestamp", "device_id", "host", "team", "utilization"])
        for t in range(samples):
            for d in range(devices):
                w.writerow(
                    [f"2026-10-01T{t // 60:02d}:{t % 60:02d}:00Z", f"GPU-{d}", f"h{d // 8}", "ml", (t * d) % 100]
                )
    return devices * samples


def test_a_reader_opening_the_store_mid_spill_does_not_lose_the_ingest(tmp_path: Path) -> None:
    """Issue 12 item 1: ``finops waste`` (another process) while a utilisation ingest spills to staging."""
    root = tmp_path / "s"
    _util_csv(tmp_path / "first.csv", 2, 3)
    first = tmp_path / "first.csv"  # another day than big.csv: no sample is stored twice (issue 11)
    first.write_text(first.read_text().replace("2026-10-01", "2026-10-02"))
    api.ingest_utilization([first], store=root)
    rows = _util_csv(tmp_path / "big.csv", 16, 600)
    spilled: list[Path] = []
    seen: list[int] = []

    def on_rows(n: int) -> None:
        if not seen:  # pass 1 has staged its first spill bucket: another process opens the store now
            spilled.extend(p for p in (root / "_txn").rglob("*.arrows"))
            proc = subprocess.run(
                [sys.executable, "-c", _WASTE, "waste", "--store", str(root)],
                capture_output=True,
                text=True,
                check=False,
            )
            assert proc.returncode in (0, 2), proc.stderr
            assert "Traceback" not in proc.stderr
        seen.append(n)

    result = api.ingest_utilization([tmp_path / "big.csv"], store=root, on_rows=on_rows)
    assert spilled, "the ingest should have spilled before the other process ran"
    assert result.rows_written == rows
    table = Store(root).read("utilization")
    assert table.num_rows == rows + 6


def test_two_spot_ingests_into_one_month_keep_both_files(tmp_path: Path) -> None:
    """Issue 12 item 2: both processes read the partition, then both replace it: one file's rows vanished."""
    root = tmp_path / "s"
    feeds = []
    for k in range(2):
        records = [
            {
                "Timestamp": f"2026-10-{day:02d}T0{k}:00:00Z",
                "SpotPrice": f"{3 + k + day / 100:.4f}",
                "InstanceType": "p5.48xlarge",
                "AvailabilityZone": f"us-east-1{'ab'[k]}",
                "ProductDescription": "Linux/UNIX",
            }
            for day in range(1, 11)
        ]
        path = tmp_path / f"feed{k}.json"
        path.write_text(json.dumps({"SpotPriceHistory": records}), encoding="utf-8")
        feeds.append(path)
    # each process pauses after reading the partition it merges into, so the reads overlap
    script = textwrap.dedent(
        """
        import sys, time
        from finops_cli.store import store as st
        read = st.Store.read
        def slow_read(self, *a, **k):
            out = read(self, *a, **k)
            time.sleep(1.0)
            return out
        st.Store.read = slow_read
        from finops_cli import api
        api.ingest_spot_prices(store=sys.argv[1], files=[sys.argv[2]])
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(root), str(f)]) for f in feeds]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    table = Store(root).read("spot_prices")
    assert table.num_rows == 20
    assert sorted(set(table["zone"].to_pylist())) == ["us-east-1a", "us-east-1b"]


_READER = textwrap.dedent(
    """
    import os, sys
    import pyarrow.compute as pc
    from finops_cli.errors import InputError
    from finops_cli.store import Store
    root, ready, stop = sys.argv[1:]
    open(ready, "w").close()
    while not os.path.exists(stop):
        try:
            table = Store(root).read("billing", columns=["BilledCost"])
        except (InputError, OSError) as exc:  # refused or vanished mid-read: not a total
            print("error", type(exc).__name__, flush=True)
            continue
        print(round(pc.sum(table["BilledCost"]).as_py() or 0.0, 2) if table is not None else 0.0, flush=True)
    """
)


def test_every_read_beside_local_commits_is_a_committed_state(tmp_path: Path) -> None:
    """Issue #27 item 2: ``costs`` beside an ingest saw $133,300.60 of $515,223.13. Readers in a loop (two
    processes) against a writer that ingests and removes the sample billing: each total read is one the writer
    committed."""
    root = tmp_path / "s"
    exports = sorted((SAMPLES / "billing").iterdir())
    committed = {0.0}
    stop = tmp_path / "stop"
    ready = [tmp_path / f"ready-{i}" for i in range(2)]
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", _READER, str(root), str(r), str(stop)], stdout=subprocess.PIPE, text=True
        )
        for r in ready
    ]
    deadline = time.time() + 120
    while not all(r.exists() for r in ready) and time.time() < deadline:
        time.sleep(0.05)
    for _ in range(2):
        api.ingest_billing(exports, store=root)
        committed.add(_total(root))
        for entry in Store(root).manifest():
            api.store_remove(entry["source_key"], store=root)
            committed.add(_total(root))
    stop.touch()
    seen = [line.split() for r in readers for line in r.communicate()[0].splitlines()]
    totals = [float(s[0]) for s in seen if s[0] != "error"]
    assert totals, "the readers read nothing"
    wrong = sorted({t for t in totals if t not in committed})
    errors = [s for s in seen if s[0] == "error"]
    assert not wrong and not errors, f"{len(wrong)} half-committed totals {wrong[:5]}, {len(errors)} failed reads"


def _total(root: Path) -> float:
    table = Store(root).read("billing", columns=["BilledCost"])
    return round(sum(table["BilledCost"].to_pylist()), 2) if table is not None else 0.0
