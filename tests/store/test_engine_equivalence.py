"""The DuckDB pushdown answers exactly what the old whole-dataset pandas path answered.

Two stores: the sample estate (the bundled exports and traces, ingested as ``finops demo`` does) and a
generated two-month store with messy lines (several teams and tag keys, untagged and resource-less lines,
corrections charged to the previous month, a second currency, null accelerators). On both, waste (every
grouping), the billed baseline and ``from_store`` demand are compared with :mod:`pandas_reference` to the
cent and GPU-hour.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from hypothesis_budget import examples

from finops_cli import api
from finops_cli.core.baseline import billed_baseline
from finops_cli.core.demand import Horizon, observed_demand
from finops_cli.estate.demand_io import observe
from finops_cli.estate.load import load_fleet
from finops_cli.report.waste import GROUP_BYS, waste_reports_by
from finops_cli.report.waste_rates import resource_rates
from finops_cli.schema.billing import BILLING_SCHEMA
from finops_cli.schema.estate import Fleet, Workload
from finops_cli.schema.utilization import STORE_SCHEMA
from finops_cli.store import Store, engine
from finops_cli.store.queries import (
    AGGREGATES,
    RESOURCE_COSTS,
    RESOURCE_COSTS_ATTRIBUTES,
    RESOURCE_COSTS_GROUPED,
    WASTE_DEVICE_USAGE_AGGREGATE,
    WASTE_HISTOGRAM_AGGREGATE,
)
from tests.conftest import SAMPLES
from tests.store import pandas_reference as ref
from tests.store_files import forget

CENT = 0.005


def _without_aggregates(st: Store) -> Store:
    """A copy of ``st`` as a store written before the ingest aggregates existed (detail files only)."""
    copy = st.root.parent / (st.root.name + "-detail")
    shutil.copytree(st.root, copy)
    forget(copy, *AGGREGATES)
    return Store(copy)


@pytest.fixture(scope="module")
def sample_stores(sample_ingested: Store) -> tuple[Store, Store]:
    """The sample estate's store, and the same store without its aggregates."""
    assert sample_ingested.has_aggregate("billing") and sample_ingested.has_aggregate("utilization")
    return sample_ingested, _without_aggregates(sample_ingested)


@pytest.fixture(scope="module")
def sample_store(sample_stores: tuple[Store, Store]) -> Store:
    return sample_stores[0]


GEN_FLEET = Fleet.model_validate(
    {
        "version": 1,
        "currency": "USD",
        "substrates": [
            {"id": "od", "provider": "aws", "kind": "on_demand", "accelerator": "H100", "jurisdiction": "US",
             "region": "us-east-1", "instance_type": "p5.48xlarge", "price_per_gpu_hour": 6.0},
            {"id": "spot", "provider": "aws", "kind": "spot", "accelerator": "H100", "jurisdiction": "US",
             "region": "us-east-1", "instance_type": "p5.48xlarge", "price_per_gpu_hour": 3.0,
             "interruptions_per_hour": 0.01, "gpus": 64},
            {"id": "sub7", "provider": "gcp", "kind": "on_demand", "accelerator": "A100", "jurisdiction": "US",
             "region": "us-central1", "instance_type": "a2-highgpu-8g", "price_per_gpu_hour": 3.5,
             "match": {"SubAccountId": "proj-7"}},
            {"id": "gcp", "provider": "gcp", "kind": "on_demand", "accelerator": "A100", "jurisdiction": "US",
             "region": "us-central1", "instance_type": "a2-highgpu-8g", "price_per_gpu_hour": 3.7},
        ],
    }
)  # fmt: skip

TEAMS = ["research", "product", "data.science", None]
WORKLOADS = ["pretrain", "chat", "eval"]


def _billing(rng: np.random.Generator, month: str, n: int, *, eur: bool) -> pa.Table:
    start = pd.Timestamp(f"{month}-01", tz="UTC")
    hours = int(((start + pd.offsets.MonthBegin(1)) - start) / pd.Timedelta(hours=1))
    res = rng.integers(0, 40, n)  # a resource keeps its provider, pricing and team; lines may lack the tag
    aws = res % 5 < 3
    spot = aws & (res % 3 == 0)
    hour = rng.integers(0, hours, n)
    charge = start + pd.to_timedelta(hour, unit="h")
    correction = rng.random(n) < 0.03  # a line of the previous month billed in this one
    charge = charge.where(~correction, charge - pd.Timedelta(days=31))
    qty = np.round(rng.uniform(0.1, 1.0, n), 4)
    gpus = np.where(aws, 8, 8)
    gpu_line = rng.random(n) < 0.85
    cost = np.round(qty * np.where(aws, np.where(spot, 24.0, 55.0), 29.0) * rng.uniform(0.9, 1.1, n), 6)
    tags = []
    for r in res:
        t = {}
        team = TEAMS[r % len(TEAMS)]
        if team is not None and rng.random() < 0.9:
            t["team"] = team
        if rng.random() < 0.7:
            t["workload"] = WORKLOADS[rng.integers(0, len(WORKLOADS))]
        if rng.random() < 0.3:
            t["cost-center"] = f"cc-{rng.integers(0, 9)}"
        tags.append(json.dumps(t, sort_keys=True) if t else None)
    provider = np.where(aws, "aws", "gcp")
    currency = np.full(n, "USD", dtype=object)
    if eur:
        provider = np.where(res % 10 == 9, "azure", provider)
        currency = np.where(provider == "azure", "EUR", currency)
    cols = {f.name: pa.nulls(n, f.type) for f in BILLING_SCHEMA}
    cols.update(
        {
            "BillingAccountId": pa.array(np.where(currency == "EUR", "ea-1", "acct-1")),
            "SubAccountId": pa.array([f"proj-{i % 9}" for i in res]),
            "BillingPeriodStart": pa.array([start] * n, pa.timestamp("us", tz="UTC")),
            "ChargePeriodStart": pa.array(charge, pa.timestamp("us", tz="UTC")),
            # hourly lines, some daily ones (their end bounds the hours observed), some without an end
            "ChargePeriodEnd": pa.array(
                (charge + pd.to_timedelta(np.where(rng.random(n) < 0.05, 24, 1), unit="h")).where(rng.random(n) > 0.02),
                pa.timestamp("us", tz="UTC"),
            ),
            "BilledCost": pa.array(cost),
            "EffectiveCost": pa.array(np.round(cost * 0.97, 6)),
            "BillingCurrency": pa.array(currency, pa.string()),
            "ChargeCategory": pa.array(["Usage"] * n),
            "PricingCategory": pa.array(np.where(spot, "Dynamic", "Standard")),
            "ConsumedQuantity": pa.array(qty),
            "ResourceId": pa.array([None if r == 39 else f"i-{r:04d}" for r in res], pa.string()),
            "RegionId": pa.array(np.where(aws, "us-east-1", "us-central1")),
            "Tags": pa.array(tags, pa.string()),
            "x_InstanceType": pa.array(np.where(aws, "p5.48xlarge", "a2-highgpu-8g")),
            "x_GpuCount": pa.array(np.where(gpu_line, gpus, 0).astype(np.int32)),
            "x_AcceleratorType": pa.array(
                [None if not g else ("H100" if a else "A100") for g, a in zip(gpu_line, aws, strict=True)], pa.string()
            ),
            "x_GpuHours": pa.array(np.where(gpu_line, qty * gpus, 0.0)),
        }
    )
    table = pa.table([cols[f.name] for f in BILLING_SCHEMA], schema=BILLING_SCHEMA)
    return table.append_column("provider", pa.array(provider, pa.string())).append_column(
        "billing_period", pa.array([month] * n)
    )


def _utilization(
    rng: np.random.Generator, month: str, devices: int, samples_per_device: int, *, day: int = 1, retag: int = 0
) -> pa.Table:
    """Samples of ``devices`` GPUs from ``day`` of ``month`` on; ``retag`` shifts the teams (a GPU handed over)."""
    start = pd.Timestamp(f"{month}-{day:02d}", tz="UTC")
    frames = []
    for d in range(devices):
        step = [60, 300, 900][d % 3]
        ts = start + pd.to_timedelta(np.arange(samples_per_device) * step + int(rng.integers(0, 3600)), unit="s")
        util = np.round(rng.beta(0.6, 0.8, samples_per_device), 3)
        util[rng.random(samples_per_device) < 0.2] = 0.0
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": ts,
                    "interval_s": np.where(rng.random(samples_per_device) < 0.05, step * 1.5, float(step)),
                    "device_id": f"i-{d // 2:04d}/gpu{d % 2}",
                    "host": f"host-{d // 2}",
                    "accelerator": None if d % 11 == 0 else ("H100" if d % 3 else "A100"),
                    "utilization": util,
                    "team": TEAMS[(d + retag * (d % 2)) % len(TEAMS)],
                    "workload": WORKLOADS[d % len(WORKLOADS)],
                    "resource_id": None if d % 13 == 0 else f"i-{d // 2:04d}",
                    "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                    "source": "gen",
                }
            )
        )
    table = pa.Table.from_pandas(pd.concat(frames, ignore_index=True), schema=STORE_SCHEMA, preserve_index=False)
    return table.append_column("month", pa.array([month] * table.num_rows))


@pytest.fixture(scope="module")
def generated_stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Store]:
    """Two generated months, and the same store without its aggregates."""
    st = Store(tmp_path_factory.mktemp("generated") / "store")
    rng = np.random.default_rng(15)
    for month, eur in (("2026-10", False), ("2026-11", True)):
        with st.transaction(aggregates=engine.stage_aggregates) as tx:
            tx.write_partitioned("billing", _billing(rng, month, 6_000, eur=eur), key=f"gen-{month}")
            tx.write_partitioned("utilization", _utilization(rng, month, 48, 400), key=f"gen-{month}")
    # a later trace of the same GPUs in October, half of them with another team: a device's figures span two
    # files (the aggregates are per file) and some devices have a group in each
    with st.transaction(aggregates=engine.stage_aggregates) as tx:
        tx.write_partitioned("utilization", _utilization(rng, "2026-10", 48, 300, day=12, retag=1), key="gen-late")
    assert len(st.files("utilization")) == 3
    return st, _without_aggregates(st)


@pytest.fixture(scope="module")
def generated_store(generated_stores: tuple[Store, Store]) -> Store:
    return generated_stores[0]


def _close(a: object, b: object, tol: float = CENT) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), abs_tol=tol)  # type: ignore[arg-type]
    return a == b


def _assert_same(new: object, old: object, where: str = "") -> None:
    if isinstance(new, dict):
        assert isinstance(old, dict) and new.keys() == old.keys(), where
        for k in new:
            _assert_same(new[k], old[k], f"{where}.{k}")
    elif isinstance(new, list):
        assert isinstance(old, list) and len(new) == len(old), where
        for i, (x, y) in enumerate(zip(new, old, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert _close(new, old), f"{where}: {new!r} != {old!r}"


def _reference_waste(st: Store, month: str, by: str, fleet: Fleet | None) -> dict:
    usage, hist, span = ref.device_usage(st, month)
    rates = ref.rates_table(ref.resource_rates(ref.billing_lines(st, month), fleet))
    report = waste_reports_by(usage, [by], rates=rates, fleet=fleet, histogram=hist, span_hours=span)[by]  # type: ignore[list-item]
    report.totals["month"] = month
    return report.to_dict()


def _sort(report: dict) -> dict:
    """Groups with equal idle cost come in either order: compare them by key."""
    report["groups"] = sorted(report["groups"], key=lambda g: g["key"])
    report["unobserved"] = sorted(report["unobserved"], key=lambda g: g["key"])
    return report


def _waste(st: Store, by: str, fleet: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, set[str]]:
    """``api.waste`` of October and the names of the queries it ran."""
    ran: set[str] = set()
    run = engine.run

    def spy(store: Store, query: engine.Query, *args: object, **kwargs: str) -> pa.Table | None:
        ran.add(query.name)
        return run(store, query, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "run", spy)
    report = api.waste(store=st, by=by, fleet=fleet, month="2026-10").to_dict()
    monkeypatch.setattr(engine, "run", run)
    return report, ran


_AGGREGATE_QUERIES = {WASTE_DEVICE_USAGE_AGGREGATE.name, WASTE_HISTOGRAM_AGGREGATE.name}


@pytest.mark.parametrize("by", GROUP_BYS)
def test_waste_on_the_sample_estate(
    sample_stores: tuple[Store, Store], by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the ingest aggregates and, in a store without them, from the samples: both equal the reference."""
    fleet = load_fleet(SAMPLES / "fleet.yaml")
    old = _sort(_reference_waste(sample_stores[0], "2026-10", by, fleet))
    for st, aggregated in zip(sample_stores, (True, False), strict=True):
        new, ran = _waste(st, by, SAMPLES / "fleet.yaml", monkeypatch)
        assert (ran >= _AGGREGATE_QUERIES) is aggregated
        assert new["totals"]["idle_cost"] > 0 and new["totals"]["samples"] > 1000
        _assert_same(_sort(new), old)


@pytest.mark.parametrize("by", GROUP_BYS)
def test_waste_on_a_generated_month(
    generated_stores: tuple[Store, Store], by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet_path = tmp_path / "fleet.yaml"
    fleet_path.write_text(json.dumps(GEN_FLEET.model_dump(mode="json", exclude_none=True)))
    old = _sort(_reference_waste(generated_stores[0], "2026-10", by, GEN_FLEET))
    for st, aggregated in zip(generated_stores, (True, False), strict=True):
        new, ran = _waste(st, by, fleet_path, monkeypatch)
        assert (ran >= _AGGREGATE_QUERIES) is aggregated
        assert new["unobserved"] and new["priced_by"]["billing"] > 0
        _assert_same(_sort(new), old)


def test_a_store_missing_a_new_aggregate_reads_the_samples(
    generated_stores: tuple[Store, Store], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store ingested before ``utilization_devices`` existed (it has ``utilization_hourly`` only) reads the
    samples for waste, then the aggregates once ``finops store aggregate`` built them: the same report."""
    st = Store(tmp_path / "store")
    shutil.copytree(generated_stores[0].root, st.root)
    forget(st.root, "utilization_devices", "utilization_histogram")
    fleet_path = tmp_path / "fleet.yaml"
    fleet_path.write_text(json.dumps(GEN_FLEET.model_dump(mode="json", exclude_none=True)))
    before, ran = _waste(st, "device", fleet_path, monkeypatch)
    assert not ran & _AGGREGATE_QUERIES and st.has_aggregate("utilization_hourly")
    assert api.store_aggregate(st).built == {"billing": 0, "utilization": 3}
    after, ran = _waste(st, "device", fleet_path, monkeypatch)
    assert ran >= _AGGREGATE_QUERIES
    _assert_same(_sort(after), _sort(before))


def _baselines(stores: tuple[Store, Store], fleet: Fleet, horizon: Horizon) -> tuple[dict, dict, dict]:
    """The baseline from the aggregate, from the detail lines, and from the pandas reference."""

    def summary(groups: pd.DataFrame) -> dict:
        b = billed_baseline(groups, fleet)
        cost = b.cost_by_substrate.sort_index().to_dict()
        return {"cost": cost, "matched": b.lines_matched, "in": b.lines_in_horizon}

    st, detail = stores
    cost, matched, inside = ref.billed_baseline(ref.billing_lines(st), fleet, horizon.start, horizon.end)
    return (
        summary(engine.baseline_groups(st, fleet, horizon.start, horizon.end)),
        summary(engine.baseline_groups(detail, fleet, horizon.start, horizon.end)),
        {"cost": cost.sort_index().to_dict(), "matched": matched, "in": inside},
    )


@pytest.mark.parametrize("horizon", ["2026-10", "2026-10-03T05:00:200"])
def test_billed_baseline_on_the_sample_estate(sample_stores: tuple[Store, Store], horizon: str) -> None:
    hourly, detail, old = _baselines(sample_stores, load_fleet(SAMPLES / "fleet.yaml"), Horizon.parse(horizon))
    assert hourly["matched"] > 100 and len(hourly["cost"]) >= 5
    _assert_same(hourly, old)
    _assert_same(detail, old)


@pytest.mark.parametrize("horizon", ["2026-10", "2026-11", "2026-10-20T00:00:400"])
def test_billed_baseline_on_generated_months(generated_stores: tuple[Store, Store], horizon: str) -> None:
    hourly, detail, old = _baselines(generated_stores, GEN_FLEET, Horizon.parse(horizon))
    assert set(hourly["cost"]) == {"od", "spot", "sub7", "gcp"}
    _assert_same(hourly, old)
    _assert_same(detail, old)


def test_a_match_on_a_column_the_aggregate_lacks_reads_the_detail(generated_stores: tuple[Store, Store]) -> None:
    subs = [s.model_dump(exclude_none=True) for s in GEN_FLEET.substrates]
    subs[2]["match"] = {"ResourceId": "i-0008"}
    fleet = Fleet.model_validate({"version": 1, "currency": "USD", "substrates": subs})
    hourly, detail, old = _baselines(generated_stores, fleet, Horizon.parse("2026-10"))
    assert hourly["cost"]["sub7"] > 0
    _assert_same(hourly, old)
    _assert_same(detail, old)


def _assert_same_rates(new: pd.DataFrame, old: pd.DataFrame) -> None:
    """The same resources in the same order, attributes equal, sums to the cent and GPU-hour."""
    assert list(new.columns) == list(old.columns) and len(new) == len(old)
    for col in new.columns:
        for i, (a, b) in enumerate(zip(new[col].tolist(), old[col].tolist(), strict=True)):
            if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
                continue
            assert _close(a, b, 1e-9), f"{col}[{i}]: {a!r} != {b!r}"


@pytest.mark.parametrize("which", ["sample", "generated"])
def test_resource_rates_in_arrow_equal_the_pandas_reduction(
    sample_store: Store, generated_store: Store, which: str
) -> None:
    """Per-resource rates from the store's per-group rows, reduced in Arrow, equal the pandas reduction they
    replace (largest group's attributes, substrate per group, sums), on both estates."""
    store, fleet = (generated_store, GEN_FLEET) if which == "generated" else (sample_store, None)
    fleet = fleet or load_fleet(SAMPLES / "fleet.yaml")
    costs = engine.run_arrow(
        store,
        RESOURCE_COSTS,
        {"month": "2026-10"},
        categories=RESOURCE_COSTS_ATTRIBUTES,
        match_columns=engine.match_columns(fleet, RESOURCE_COSTS_GROUPED),
    )
    assert costs is not None and costs.num_rows > 10
    split = engine.run_arrow(
        store,
        RESOURCE_COSTS,
        {"month": "2026-10"},
        split_by="provider",
        match_columns=engine.match_columns(fleet, RESOURCE_COSTS_GROUPED),
    )
    assert split is not None and len({*split["provider"].to_pylist()}) > 1  # one query per provider, concatenated
    assert sorted(split.to_pylist(), key=repr) == sorted(costs.cast(split.schema).to_pylist(), key=repr)
    old = ref.resource_rates_from_groups(costs.to_pandas(), fleet)
    assert len(old) > 5 and old["substrate"].notna().any()
    _assert_same_rates(resource_rates(costs, fleet), old)


_GROUP = hs.fixed_dictionaries(
    {
        "ResourceId": hs.sampled_from(["i-1", "i-2", "I-1", "//compute.googleapis.com/projects/p/i-3", None]),
        "provider": hs.sampled_from(["aws", "gcp", None]),
        "RegionId": hs.sampled_from(["us-east-1", "us-central1", None]),
        "x_InstanceType": hs.sampled_from(["p5.48xlarge", "a2-highgpu-8g", None]),
        "x_AcceleratorType": hs.sampled_from(["H100", "A100", None]),
        "PricingCategory": hs.sampled_from(["Standard", "Dynamic", None]),
        "BillingCurrency": hs.sampled_from(["USD", None]),
        "team": hs.sampled_from(["research", "", None]),
        "SubAccountId": hs.sampled_from(["proj-7", "proj-1", None]),
        "gpu_hours": hs.sampled_from([0.0, 8.0, 16.0, 2.5]),  # ties: the input order decides, in both
        "cost": hs.one_of(hs.none(), hs.sampled_from([10.0, 20.0, 0.0, -3.0])),
        "billed_cost": hs.sampled_from([10.0, 12.5]),
        "lines": hs.integers(1, 5),
    }
)


@settings(max_examples=examples(60), deadline=None)
@given(
    groups=hs.lists(_GROUP, min_size=1, max_size=14),
    with_fleet=hs.booleans(),
    dictionaries=hs.booleans(),
    split=hs.integers(0, 14),
)
def test_resource_rates_property(groups: list[dict], with_fleet: bool, dictionaries: bool, split: int) -> None:
    """Any per-group rows (resources whose lines disagree on attributes, nulls, ties, no cost): the Arrow
    reduction gives the pandas one's resources, attributes, substrates and sums."""
    numbers = {"gpu_hours": pa.float64(), "cost": pa.float64(), "billed_cost": pa.float64(), "lines": pa.int64()}
    table = pa.Table.from_pylist(groups, pa.schema([(k, numbers.get(k, pa.string())) for k in groups[0]]))
    if dictionaries:  # as the engine hands them over (categories)
        for name in RESOURCE_COSTS_ATTRIBUTES:
            table = table.set_column(table.schema.get_field_index(name), name, table[name].dictionary_encode())
    table = pa.concat_tables([table.slice(0, split), table.slice(split)])  # two chunks, as a query's result may be
    fleet = GEN_FLEET if with_fleet else None
    _assert_same_rates(resource_rates(table, fleet), ref.resource_rates_from_groups(table.to_pandas(), fleet))


@pytest.mark.parametrize("by", GROUP_BYS)
def test_waste_groups_add_up_to_the_totals(generated_store: Store, by: str, tmp_path: Path) -> None:
    """Devices whose team neither the trace nor the bill names are grouped under (unknown), not dropped.

    Under pandas 3 the old path turned a missing billed team into NaN, a key ``groupby`` drops: the team
    groups then summed to less than the total.
    """
    fleet_path = tmp_path / "fleet.yaml"
    fleet_path.write_text(json.dumps(GEN_FLEET.model_dump(mode="json", exclude_none=True)))
    report = api.waste(store=generated_store, by=by, fleet=fleet_path, month="2026-10").to_dict()
    t = report["totals"]
    assert sum(g["device_hours"] for g in report["groups"]) == pytest.approx(t["device_hours"])
    assert sum(g["idle_cost"] or 0.0 for g in report["groups"]) == pytest.approx(t["idle_cost"])


def _observed(st: Store, tag: str, value: str, horizon: Horizon, quantity: str) -> dict | None:
    """What ``observe`` answers, in GPU-hours per hour of the horizon (throughput 1 on one accelerator and
    0.5 on the rest, so the accelerator split counts too)."""
    w = Workload.model_validate(
        {"id": "w", "unit": "u", "throughput": {"H100": 1.0, "A100": 0.5},
         "demand": {"from_store": {"tag": tag, "value": value, "quantity": quantity, "extend": "zero"}}}
    )  # fmt: skip
    obs = observe(st, w, horizon)
    if obs is None:
        return None
    hourly = observed_demand(w, obs.frame, horizon)
    return {"source": obs.source, "first": obs.first_hour, "end": obs.end_hour, "hourly": hourly.tolist(),
            "gpu_hours": float(obs.frame["gpu_hours"].sum())}  # fmt: skip


def _reference_observed(st: Store, tag: str, value: str, horizon: Horizon, quantity: str) -> dict | None:
    source, frame, first, end = ref.observe(st, tag, value, horizon, quantity)
    if not source:
        return None
    w = Workload.model_validate(
        {"id": "w", "unit": "u", "throughput": {"H100": 1.0, "A100": 0.5}, "demand": {"total": 1}}
    )
    hourly = observed_demand(w, frame, horizon)
    return {"source": source, "first": first, "end": end, "hourly": hourly.tolist(),
            "gpu_hours": float(frame["gpu_hours"].sum())}  # fmt: skip


GEN_DEMANDS = [
    ("team", "research", "2026-10", "busy_gpu_hours"),  # utilisation_hourly
    ("team", "data.science", "2026-11", "allocated_gpu_hours"),
    ("workload", "chat", "2026-10-02T05:00:48", "busy_gpu_hours"),
    ("team", "product", "2026-10-08T00:00:300", "busy_gpu_hours"),  # no trace there: billing_hourly (team)
    ("workload", "eval", "2026-10-08T00:00:300", "allocated_gpu_hours"),  # billing detail, tag in the engine
    ("cost-center", "cc-3", "2026-11", "busy_gpu_hours"),  # a tag only the bill carries
    ("team", "nobody", "2026-10", "busy_gpu_hours"),
]


@pytest.mark.parametrize(("tag", "value", "horizon", "quantity"), GEN_DEMANDS)
def test_demand_from_store_on_generated_months(
    generated_stores: tuple[Store, Store], tag: str, value: str, horizon: str, quantity: str
) -> None:
    st, detail = generated_stores
    hz = Horizon.parse(horizon)
    old = _reference_observed(st, tag, value, hz, quantity)
    for store in (st, detail):  # from the aggregates, and from the detail files of a store without them
        new = _observed(store, tag, value, hz, quantity)
        if value == "nobody":
            assert new is None and old is None
            continue
        assert new is not None and new["gpu_hours"] > 0
        assert (new["source"], new["first"], new["end"]) == (old["source"], old["first"], old["end"])
        assert new["hourly"] == pytest.approx(old["hourly"], abs=1e-9)
        assert new["gpu_hours"] == pytest.approx(old["gpu_hours"], abs=1e-9)


def test_demand_sources_cover_both_paths_and_partial_windows(generated_stores: tuple[Store, Store]) -> None:
    """The cases above reach every reader, and some observed windows end early or late (``observed_until``)."""
    st, _ = generated_stores
    seen = [_observed(st, *case[:2], Horizon.parse(case[2]), case[3]) for case in GEN_DEMANDS[:-1]]
    assert {s["source"] for s in seen if s} == {"utilization", "billing"}
    assert any(s["end"] < Horizon.parse(c[2]).hours for s, c in zip(seen, GEN_DEMANDS, strict=False) if s)


@pytest.mark.parametrize(("tag", "value"), [("team", "research"), ("workload", "chat-serving"), ("team", "product")])
def test_demand_from_store_on_the_sample_estate(sample_stores: tuple[Store, Store], tag: str, value: str) -> None:
    st, detail = sample_stores
    hz = Horizon.parse("2026-10")
    old = _reference_observed(st, tag, value, hz, "busy_gpu_hours")
    assert old is not None
    for store in (st, detail):
        new = _observed(store, tag, value, hz, "busy_gpu_hours")
        assert new is not None
        assert (new["source"], new["first"], new["end"]) == (old["source"], old["first"], old["end"])
        assert new["hourly"] == pytest.approx(old["hourly"], abs=1e-9)


@pytest.mark.parametrize("which", ["sample", "generated"])
def test_estate_draft_on_the_engine_matches_the_line_by_line_draft(
    sample_store: Store, generated_store: Store, which: str
) -> None:
    from finops_cli.estate.draft import _substrate_rows, _workload_rows

    st = sample_store if which == "sample" else generated_store
    month, currency = "2026-10", "USD"
    old_subs, old_billed = ref.draft_numbers(st, month, currency)
    rows = _substrate_rows(st, month, currency, Horizon.month(month).hours)
    new_subs = {
        (r["provider"], r["account"], r["region"], r["instance_type"], r["category"]): {
            k: r[k] for k in ("gpu_hours", "effective_cost", "billed_cost", "gpus", "lines")
        }
        for r in rows
    }
    assert len(new_subs) >= 3 and any(s["lines"] > 100 for s in new_subs.values())
    _assert_same(new_subs, old_subs)
    work = _workload_rows(st, month, currency, Horizon.month(month).hours)
    billed = {r["tag"]: r["billed"] for r in work if r["billed"] > 0}
    assert billed == pytest.approx({k: v for k, v in old_billed.items() if v > 0})
