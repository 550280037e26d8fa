"""Parallel billing ingest (#15 item 4): the files of one export convert in worker processes, the parent
checks conservation over their tallies and commits once.

- the store holds the same files, byte for byte, and the summary the same totals, with 1 or 2 workers;
- a later ingest of the same export with fewer files leaves none of the earlier parts behind;
- a parallel ingest killed after a worker's files were adopted leaves nothing a reader sees;
- a bad file, or a worker killed mid-export, is one line and exit 2, and the store is left as it was.
"""

from __future__ import annotations

import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.ingest.billing import executors, ingest_billing
from finops_cli.store import Store

HEADER = [
    "identity/LineItemId",
    "bill/PayerAccountId",
    "bill/BillingPeriodStartDate",
    "bill/BillingPeriodEndDate",
    "lineItem/UsageAccountId",
    "lineItem/LineItemType",
    "lineItem/UsageStartDate",
    "lineItem/UsageEndDate",
    "lineItem/ProductCode",
    "lineItem/UsageType",
    "lineItem/AvailabilityZone",
    "lineItem/ResourceId",
    "lineItem/UsageAmount",
    "lineItem/CurrencyCode",
    "lineItem/UnblendedCost",
    "product/instanceType",
    "product/region",
    "pricing/unit",
    "pricing/publicOnDemandCost",
    "resourceTags/user:team",
    "resourceTags/user:name",
]
TYPES = [("p5.48xlarge", 55.04), ("p4d.24xlarge", 21.96), ("g6.12xlarge", 4.6016), ("m7i.large", 0.1008)]


def _export(directory: Path, files: int = 4, rows: int = 700, seed: int = 5) -> list[Path]:
    """A CUR split into ``files`` parts: two payer accounts (USD and EUR), spot and on-demand GPU hours,
    credits and tax, wide tags with escapes and many user names."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for f in range(files):
        path = directory / f"cur-2026-10-{f + 1:05d}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(HEADER)
            for i in range(rows):
                payer, currency = rng.choice([("111122223333", "USD"), ("444455556666", "EUR")])
                itype, rate = rng.choice(TYPES)
                kind = rng.choices(["Usage", "Credit", "Tax"], [0.9, 0.05, 0.05])[0]
                spot = rng.random() < 0.3
                hour = rng.randrange(0, 744)
                amount = round(rng.uniform(0.1, 1.0), 4)
                cost = (
                    round(rate * amount * (0.4 if spot else 1.0), 8)
                    if kind == "Usage"
                    else -round(rng.uniform(1, 50), 4)
                )
                if kind == "Tax":
                    cost = abs(cost)
                w.writerow(
                    [
                        f"{f}-{i}",
                        payer,
                        "2026-10-01T00:00:00Z",
                        "2026-11-01T00:00:00Z",
                        f"0000{rng.randrange(10):08d}",
                        kind,
                        f"2026-10-{1 + hour // 24:02d}T{hour % 24:02d}:00:00Z",
                        f"2026-10-{1 + hour // 24:02d}T{hour % 24:02d}:59:59Z",
                        "AmazonEC2",
                        ("SpotUsage:" if spot else "BoxUsage:") + itype,
                        "us-east-1a",
                        f"i-{rng.randrange(200):08x}",
                        amount,
                        currency,
                        cost,
                        itype if kind == "Usage" else "",
                        "us-east-1",
                        "Hrs",
                        round(rate * amount, 8),
                        rng.choice(["research", "prod", 'say "hi"', "", "équipe"]),
                        f"user-{rng.randrange(100000)}" if rng.random() < 0.4 else "",
                    ]
                )
        out.append(path)
    return out


def _bytes(root: Path, dataset: str) -> dict[str, bytes]:
    d = root / dataset
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*.parquet"))}


def _totals(summary: object) -> dict:
    out = summary.to_dict()  # type: ignore[attr-defined]
    out.pop("store")
    return out


@pytest.fixture(scope="module")
def one_and_two(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path, Path, object, object]:
    """One 4-file export ingested with one worker and with two (spawned worker processes cost about a second of
    CPU each, so the tests below share these two ingests and copy a store before writing to it)."""
    tmp = tmp_path_factory.mktemp("one-and-two")
    files = _export(tmp / "export")
    one = ingest_billing(files, "auto", Store(tmp / "one"), stager=executors.LocalStager(1))
    two = ingest_billing(files, "auto", Store(tmp / "two"), stager=executors.LocalStager(2))
    return files, tmp / "one", tmp / "two", one, two


def test_two_workers_store_the_bytes_and_totals_of_one(one_and_two: tuple) -> None:
    _, one_root, two_root, one, two = one_and_two
    assert _totals(one) == _totals(two)
    assert _bytes(one_root, "billing") == _bytes(two_root, "billing")
    assert len(_bytes(one_root, "billing")) == 8  # 2 accounts × 4 files (one part per file)
    for root in (one_root, two_root):  # every detail file has its aggregate, built by whoever staged it
        assert Store(root).has_aggregate("billing")
    hourly = [Store(r).read("billing_hourly").sort_by([("hour", "ascending")]) for r in (one_root, two_root)]
    assert hourly[0].num_rows == hourly[1].num_rows
    assert abs(pc.sum(hourly[0]["billed_cost"]).as_py() - pc.sum(hourly[1]["billed_cost"]).as_py()) < 1e-6
    assert {c["currency"] for c in one.conservation} == {"EUR", "USD"}
    assert all(c["difference"] == 0 for c in two.conservation)
    assert Store(two_root).read("billing").num_rows == 4 * 700


def test_a_re_ingest_with_two_workers_rewrites_the_same_bytes(one_and_two: tuple, tmp_path: Path) -> None:
    files, one_root, _, first, _ = one_and_two
    store = Store(tmp_path / "store")
    shutil.copytree(one_root, store.root)  # ingested with one worker
    before = _bytes(store.root, "billing")
    again = ingest_billing(files, "auto", store, stager=executors.LocalStager(2))
    assert _bytes(store.root, "billing") == before
    assert again.conservation == first.conservation
    assert {s["replaced_rows"] for s in again.sources} == {s["rows"] for s in first.sources}
    entries = Store(store.root).manifest()
    assert len(entries) == 2  # one entry per (payer, period), replaced, never duplicated


def test_a_smaller_re_export_leaves_no_earlier_part(one_and_two: tuple, tmp_path: Path) -> None:
    files, _, two_root, _, _ = one_and_two
    store = Store(tmp_path / "store")
    shutil.copytree(two_root, store.root)  # ingested with two workers
    again = ingest_billing(files[:2], "auto", store, stager=executors.LocalStager(2))
    assert store.read("billing").num_rows == 2 * 700 == again.rows
    assert not [p for p in store.files("billing") if p.stem.endswith(("-part2", "-part3"))]
    assert store.has_aggregate("billing")


def test_jobs_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="jobs 0"):
        executors.LocalStager(0)


def test_a_killed_parallel_ingest_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    """SIGKILL the parent after it adopted a worker's staged files: readers see the previous state, and
    the next writer removes the debris. Nothing is printed: multiprocessing's resource tracker, which
    outlives the parent to remove the pool's semaphores, warned of "leaked semaphore objects" (#27 item 17)."""
    files = _export(tmp_path / "export")
    store = Store(tmp_path / "store")
    ingest_billing(files[:1], "auto", store)
    before = {k: v for k, v in _snapshot(store.root).items() if not k.startswith(".staging")}
    script = textwrap.dedent(
        f"""
        import os, signal
        from multiprocessing import resource_tracker
        from finops_cli.store import store as st
        from finops_cli.ingest.billing import executors, ingest_billing
        original = st.Transaction.adopt
        def adopt(self, *a, **k):
            original(self, *a, **k)
            with open({str(tmp_path / "tracker.pid")!r}, "w") as fh:
                fh.write(str(resource_tracker._resource_tracker._pid))
            os.kill(os.getpid(), signal.SIGKILL)
        st.Transaction.adopt = adopt
        store = st.Store({str(store.root)!r})
        ingest_billing({[str(f) for f in files]!r}, "auto", store, stager=executors.LocalStager(2))
        """
    )
    log = tmp_path / "stderr.txt"
    with open(log, "wb") as err:  # a file, not a pipe: a worker outliving its parent could hold a pipe open
        proc = subprocess.run([sys.executable, "-c", script], stdout=err, stderr=err, timeout=300)
    assert proc.returncode == -signal.SIGKILL, log.read_text()[-500:]
    _wait_for_exit(int((tmp_path / "tracker.pid").read_text()))
    assert log.read_text() == ""  # no "resource_tracker: ... leaked semaphore objects" warning
    reopened = Store(store.root)
    assert reopened.read("billing").num_rows == 700  # readers never see staged files
    with reopened.transaction():  # the next writer removes the debris, under the lock
        pass
    after = _snapshot(reopened.root)
    assert after == before


def _wait_for_exit(pid: int, timeout: float = 60.0) -> None:
    """Until ``pid`` has exited (gone, or a zombie nobody reaps in a container)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still running after {timeout} s")


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _lines(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in _snapshot(root).items() if k != ".lock"}


def test_a_bad_file_among_workers_is_one_line_exit_2_and_nothing_written(tmp_path: Path) -> None:
    files = _export(tmp_path / "export", files=4, rows=300)
    root = tmp_path / "store"
    ingest_billing(files[:1], "auto", Store(root))
    before = _lines(root)
    with files[2].open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows[7][HEADER.index("lineItem/UnblendedCost")] = "12,5"  # a decimal comma, in the third file
    with files[2].open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    result = CliRunner().invoke(app, ["ingest", "billing", *map(str, files), "--store", str(root), "--jobs", "2"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert files[2].name in message and "row" in message and "Traceback" not in message
    assert len(message.splitlines()) == 1
    assert _lines(root) == before


def _killed_on_the_second_file(job: executors.FileJob, staging: Path, *args: object) -> executors.FileResult:
    """Run in a worker process (imported there by name): the worker staging file 2 is killed midway."""
    if job.index == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return _REAL_STAGE(job, staging, *args)


_REAL_STAGE = executors.stage_file


def test_a_killed_worker_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _export(tmp_path / "export", files=4, rows=300)
    root = tmp_path / "store"
    ingest_billing(files[:1], "auto", Store(root))
    before = _lines(root)
    monkeypatch.setattr(executors, "stage_file", _killed_on_the_second_file)
    result = CliRunner().invoke(app, ["ingest", "billing", *map(str, files), "--store", str(root), "--jobs", "2"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "worker process died" in message and "nothing was written" in message
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert _lines(root) == before


def test_jobs_with_spark_is_refused() -> None:
    from finops_cli.engines import billing_stager

    with pytest.raises(InputError, match="jobs applies to `engine` local"):
        billing_stager("spark", None, 2)


@pytest.mark.parametrize("given, expected", [(None, "1"), ("3", "3")])
def test_a_worker_sizes_its_thread_pools_to_its_share_of_the_cores(
    monkeypatch: pytest.MonkeyPatch, given: str | None, expected: str
) -> None:
    """Two workers on two cores: pyarrow's pool and DuckDB one thread each, unless the user set DuckDB's."""
    import pyarrow as pa

    from finops_cli.store.engine import THREADS_ENV

    calls: list[int] = []
    monkeypatch.setattr(executors, "die_with_parent", lambda parent: None)
    monkeypatch.setattr(pa, "set_cpu_count", calls.append)
    if given is None:
        monkeypatch.delenv(THREADS_ENV, raising=False)
    else:
        monkeypatch.setenv(THREADS_ENV, given)
    executors._start_worker(12345, 1)
    assert calls == [1] and os.environ[THREADS_ENV] == expected
