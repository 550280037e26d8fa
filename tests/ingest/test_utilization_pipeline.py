"""Utilisation pipeline: interval inference, gaps, coverage, months, idempotency, atomicity, spilling."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from finops_cli.errors import InputError
from finops_cli.ingest.utilization import ingest_utilization, pipeline, spill
from finops_cli.store import Store


def _csv(path: Path, rows: list[tuple[str, str, float]]) -> Path:
    path.write_text("timestamp,device_id,utilization\n" + "".join(f"{t},{d},{u}\n" for t, d, u in rows))
    return path


def _rows(store: Store) -> list[dict]:
    table = store.read("utilization")
    assert table is not None
    return sorted(table.to_pylist(), key=lambda r: (r["device_id"], r["timestamp"]))


def test_interval_is_the_cadence_and_gaps_are_not_counted(tmp_path: Path, store: Store) -> None:
    # 60-s cadence, then a 10-minute hole (exporter down), then 60 s again
    times = ["00:00:00", "00:01:00", "00:02:00", "00:12:00", "00:13:00"]
    f = _csv(tmp_path / "t.csv", [(f"2026-10-01T{t}Z", "g0", 0.5) for t in times])
    result = ingest_utilization(store, [f])
    assert [r["interval_s"] for r in _rows(store)] == [60.0, 60.0, 60.0, 60.0, 60.0]
    src = result.sources[0]
    assert src.observed_seconds == 300.0
    assert src.span_seconds == 14 * 60.0  # 00:00 → 00:13 plus one cadence
    assert src.coverage == pytest.approx(300 / 840)


def test_jitter_within_the_cap_is_kept(tmp_path: Path, store: Store) -> None:
    times = ["00:00:00", "00:01:00", "00:02:05", "00:03:05"]
    f = _csv(tmp_path / "t.csv", [(f"2026-10-01T{t}Z", "g0", 1.0) for t in times])
    ingest_utilization(store, [f])
    assert [r["interval_s"] for r in _rows(store)] == [60.0, 65.0, 60.0, 60.0]


def test_single_sample_device_gets_the_source_cadence(tmp_path: Path, store: Store) -> None:
    f = _csv(
        tmp_path / "t.csv",
        [("2026-10-01T00:00:00Z", "g0", 0.1), ("2026-10-01T00:05:00Z", "g0", 0.1), ("2026-10-01T00:00:00Z", "g1", 0.2)],
    )
    ingest_utilization(store, [f])
    assert {r["device_id"]: r["interval_s"] for r in _rows(store)}["g1"] == 300.0


def test_duplicate_samples_are_dropped(tmp_path: Path, store: Store) -> None:
    f = _csv(
        tmp_path / "t.csv",
        [("2026-10-01T00:00:00Z", "g0", 0.1), ("2026-10-01T00:00:00Z", "g0", 0.3), ("2026-10-01T00:01:00Z", "g0", 0.2)],
    )
    result = ingest_utilization(store, [f])
    assert result.sources[0].duplicates_dropped == 1
    assert [r["utilization"] for r in _rows(store)] == [0.3, 0.2]


def test_samples_split_by_month(tmp_path: Path, store: Store) -> None:
    f = _csv(tmp_path / "t.csv", [("2026-10-31T23:30:00Z", "g0", 0.1), ("2026-11-01T00:30:00Z", "g0", 0.2)])
    result = ingest_utilization(store, [f])
    assert result.sources[0].months == ["2026-10", "2026-11"]
    assert sorted(p.parent.name for p in store.files("utilization")) == ["month=2026-10", "month=2026-11"]
    # the interval crosses the month boundary: computed before the split
    assert [r["interval_s"] for r in _rows(store)] == [3600.0, 3600.0]


def test_reingest_is_idempotent(tmp_path: Path, store: Store) -> None:
    f = _csv(tmp_path / "t.csv", [("2026-10-01T00:00:00Z", "g0", 0.1), ("2026-10-01T00:01:00Z", "g0", 0.2)])
    ingest_utilization(store, [f])
    ingest_utilization(store, [f])
    assert len(_rows(store)) == 2
    assert len(store.files("utilization")) == 1
    assert len([e for e in store.manifest() if e["dataset"] == "utilization"]) == 1


def test_error_in_a_later_source_leaves_the_store_unchanged(tmp_path: Path, store: Store) -> None:
    good = _csv(tmp_path / "a.csv", [("2026-10-01T00:00:00Z", "g0", 0.1)])
    bad = _csv(tmp_path / "b.csv", [("2026-10-01T00:00:00Z", "g1", 0.1), ("not-a-time", "g1", 0.2)])
    with pytest.raises(InputError, match=r"b\.csv: row 2"):
        ingest_utilization(store, [good, bad])
    assert store.read("utilization") is None
    assert not (store.root / ".staging").exists() or not any((store.root / ".staging").iterdir())


def test_missing_path(store: Store, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        ingest_utilization(store, [tmp_path / "nope.csv"])


@settings(max_examples=examples(10), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 2000), st.floats(0, 1, allow_nan=False)), min_size=1, max_size=60
    )
)
def test_spilled_buckets_give_the_same_result(tmp_path_factory: pytest.TempPathFactory, rows: list) -> None:
    """Bounded memory (many buckets) must not change a single stored value."""
    tmp = tmp_path_factory.mktemp("spill")
    f = tmp / "t.csv"
    f.write_text(
        "timestamp,device_id,utilization\n" + "".join(f"{1_790_000_000 + 60 * t},dev{d},{u}\n" for d, t, u in rows)
    )
    one = Store(tmp / "one")
    ingest_utilization(one, [f])
    many = Store(tmp / "many")
    old = pipeline.BUCKET_BYTES
    pipeline.BUCKET_BYTES = spill.BUCKET_BYTES = 64  # → dozens of buckets for this file
    try:
        ingest_utilization(many, [f])
    finally:
        pipeline.BUCKET_BYTES = spill.BUCKET_BYTES = old

    def key(s: Store) -> list:
        t = s.read("utilization", columns=["device_id", "timestamp", "interval_s", "utilization"])
        return sorted(t.to_pylist(), key=lambda r: (r["device_id"], r["timestamp"]))

    assert key(one) == key(many)
    # every device's observed time never exceeds its span
    total = sum(r["interval_s"] for r in key(one))
    assert total > 0
