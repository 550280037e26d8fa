"""The ingest promises on a real store: round trip, conservation per currency, idempotency, re-export, atomicity."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from finops_cli.errors import InputError
from finops_cli.ingest.billing import idempotency_key, ingest_billing
from finops_cli.schema.billing import BILLING_SCHEMA
from finops_cli.store import Store

REPO = Path(__file__).resolve().parents[2]
BILLING = REPO / "samples" / "billing"


def _focus(path: Path, rows: list[dict[str, object]]) -> Path:
    base = {
        "BillingPeriodStart": "2026-10-01T00:00:00Z",
        "ChargePeriodStart": "2026-10-01T00:00:00Z",
        "ChargePeriodEnd": "2026-10-02T00:00:00Z",
        "ChargeCategory": "Usage",
        "PricingCategory": "Standard",
        "ProviderName": "Lambda",
    }
    pacsv.write_csv(pa.Table.from_pylist([{**base, **r} for r in rows]), path)
    return path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_parquet_round_trip_to_pandas(store: Store) -> None:
    ingest_billing([BILLING / "focus-2026-10.csv"], "auto", store)
    files = store.files("billing")
    assert {f.parent.parent.name for f in files} == {"provider=coreweave", "provider=onprem"}
    assert all(f.parent.name == "billing_period=2026-10" for f in files)
    assert pq.read_schema(files[0]).remove_metadata() == BILLING_SCHEMA  # one schema for every engine
    frame = pd.read_parquet(store.dataset_dir("billing"))
    assert len(frame) == 620 and str(frame["ChargePeriodStart"].dtype) == "datetime64[us, UTC]"
    source = pd.read_csv(BILLING / "focus-2026-10.csv")
    assert frame["BilledCost"].sum() == pytest.approx(source["BilledCost"].sum(), abs=1e-6)


def test_conservation_to_the_cent_per_currency_on_all_samples(store: Store) -> None:
    summary = ingest_billing([BILLING], "auto", store)
    stored = store.read("billing").to_pandas()
    # independent sums of each source's own cost column
    cur = pd.read_csv(BILLING / "aws-cur-2026-10.csv.gz", dtype=str)["lineItem/UnblendedCost"].astype(float).sum()
    cur2 = pq.read_table(BILLING / "aws-cur2-2026-10.parquet")["line_item_unblended_cost"].to_pandas().sum()
    gcp_rows = [json.loads(x) for x in (BILLING / "gcp-billing-2026-10.jsonl").read_text().splitlines()]
    gcp = sum(r["cost"] + sum(c["amount"] for c in r["credits"]) for r in gcp_rows)
    azure = pd.read_csv(BILLING / "azure-amortized-2026-10.csv", encoding="utf-8-sig")["Cost"].sum()
    focus = pd.read_csv(BILLING / "focus-2026-10.csv")["BilledCost"].sum()
    expected = cur + cur2 + gcp + azure + focus
    assert round(stored["BilledCost"].sum(), 2) == round(expected, 2)
    (usd,) = summary.conservation
    assert usd["currency"] == "USD" and abs(usd["difference"]) < 0.005
    assert len(stored) == summary.rows == sum(f.rows for f in summary.files)


def test_currencies_are_never_summed_together(tmp_path: Path, store: Store) -> None:
    _focus(tmp_path / "eu.csv", [{"BillingAccountId": "eu-1", "BillingCurrency": "EUR", "BilledCost": 10.0}])
    _focus(tmp_path / "us.csv", [{"BillingAccountId": "us-1", "BillingCurrency": "USD", "BilledCost": 7.0}])
    summary = ingest_billing([tmp_path], "focus", store)
    assert {c["currency"]: c["billed_cost"] for c in summary.cost} == {"EUR": 10.0, "USD": 7.0}
    assert {c["currency"]: c["cost_in"] for c in summary.conservation} == {"EUR": 10.0, "USD": 7.0}


def test_one_account_with_two_currencies_is_refused(tmp_path: Path, store: Store) -> None:
    path = _focus(
        tmp_path / "mixed.csv",
        [
            {"BillingAccountId": "a", "BillingCurrency": "EUR", "BilledCost": 1.0},
            {"BillingAccountId": "a", "BillingCurrency": "USD", "BilledCost": 1.0},
        ],
    )
    with pytest.raises(InputError, match="one BillingCurrency per billing account") as err:
        ingest_billing([path], "focus", store)
    # issue 12: the message names the file and the row of the second currency, and where the first was
    assert f"{path}: row 2: billing account a is billed in USD here but in EUR at {path} row 1" in str(err.value)
    assert not store.has("billing")


def test_same_export_twice_leaves_one_copy(store: Store) -> None:
    first = ingest_billing([BILLING / "aws-cur-2026-10.csv.gz"], "auto", store)
    files = store.files("billing")
    second = ingest_billing([BILLING / "aws-cur-2026-10.csv.gz"], "auto", store)
    assert store.files("billing") == files and store.read("billing").num_rows == first.rows
    assert second.sources[0]["replaced_rows"] == first.rows
    assert [e["source_key"] for e in store.manifest()] == [idempotency_key("aws-cur", "111122223333", "2026-10")]


def test_reexport_replaces_the_period_and_spares_other_accounts(tmp_path: Path, store: Store) -> None:
    ingest_billing([BILLING / "aws-cur-2026-10.csv.gz", BILLING / "aws-cur2-2026-10.parquet"], "auto", store)
    other = store.read("billing").to_pandas().query("BillingAccountId == '444455556666'")
    # a corrected re-export of the legacy CUR: half the lines, costs doubled
    frame = pd.read_csv(BILLING / "aws-cur-2026-10.csv.gz", dtype=str, keep_default_na=False)
    frame = frame.iloc[: len(frame) // 2].copy()
    frame["lineItem/UnblendedCost"] = (frame["lineItem/UnblendedCost"].astype(float) * 2).map(repr)
    path = tmp_path / "corrected.csv.gz"
    path.write_bytes(gzip.compress(frame.to_csv(index=False).encode()))
    ingest_billing([path], "auto", store)
    got = store.read("billing").to_pandas()
    mine = got[got["BillingAccountId"] == "111122223333"]
    assert len(mine) == len(frame)
    assert mine["BilledCost"].sum() == pytest.approx(frame["lineItem/UnblendedCost"].astype(float).sum())
    kept = got[got["BillingAccountId"] == "444455556666"]
    assert len(kept) == len(other) and kept["BilledCost"].sum() == pytest.approx(other["BilledCost"].sum())


def test_reexport_that_loses_a_provider_drops_its_old_file(tmp_path: Path, store: Store) -> None:
    rows = [
        {"BillingAccountId": "acct", "BillingCurrency": "USD", "BilledCost": 5.0, "ProviderName": "CoreWeave"},
        {"BillingAccountId": "acct", "BillingCurrency": "USD", "BilledCost": 3.0, "ProviderName": "On-Premises"},
    ]
    ingest_billing([_focus(tmp_path / "v1.csv", rows)], "focus", store)
    assert len(store.files("billing")) == 2
    ingest_billing([_focus(tmp_path / "v2.csv", rows[:1])], "focus", store)
    got = store.read("billing")
    assert got["provider"].to_pylist() == ["coreweave"] and len(store.files("billing")) == 1


def test_bad_second_file_leaves_the_store_as_it_was(tmp_path: Path, store: Store) -> None:
    ingest_billing([BILLING / "focus-2026-10.csv"], "auto", store)
    before = _snapshot(store.root)
    bad = tmp_path / "z-bad.csv"
    bad.write_text(Path(BILLING / "focus-2026-10.csv").read_text().replace("403.2", "four hundred", 1))
    with pytest.raises(InputError, match="expected a number"):
        ingest_billing([BILLING / "aws-cur-2026-10.csv.gz", bad], "auto", store)
    assert _snapshot(Store(store.root).root) == before


def test_killed_mid_ingest_leaves_the_store_exactly_as_before(tmp_path: Path, store: Store) -> None:
    """SIGKILL the writer after it has staged batches: the next writer discards them, readers ignore them."""
    ingest_billing([BILLING / "focus-2026-10.csv"], "auto", store)
    before = _snapshot(store.root)
    script = textwrap.dedent(
        f"""
        import os, signal
        from finops_cli.store import store as st
        from finops_cli.store.staging import StagedWriter
        from finops_cli.ingest.billing import ingest_billing
        calls = {{"n": 0}}
        original = StagedWriter.write
        def write(self, *a, **k):
            original(self, *a, **k)
            calls["n"] += 1
            if calls["n"] == 3:
                os.kill(os.getpid(), signal.SIGKILL)
        StagedWriter.write = write
        ingest_billing([{str(BILLING)!r}], "auto", st.Store({str(store.root)!r}))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()[-500:]
    live = set(Store(store.root).state().files.values())
    assert {p.name for p in (store.root / "_txn").iterdir()} - live  # debris of the killed transaction ...
    reopened = Store(store.root)
    assert reopened.read("billing").num_rows == 620  # readers never see staged files
    with reopened.transaction():  # ... removed by the next writer, under the lock
        pass
    assert _snapshot(reopened.root) == before
    assert reopened.read("billing").num_rows == 620
