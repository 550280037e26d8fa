"""``demand: {from_store: ...}``: busy GPU-hours from utilisation (else billed GPU-hours) × throughput."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

from finops_cli.core.demand import Horizon
from finops_cli.errors import InputError
from finops_cli.estate.demand_io import estate_demand_sources
from finops_cli.estate.load import Estate
from finops_cli.schema.estate import Fleet, Workloads
from finops_cli.store import Store

FLEET = Fleet.model_validate(
    {"version": 1, "substrates": [{"id": "od", "provider": "aws", "kind": "on_demand", "accelerator": "H100",
                                   "jurisdiction": "US", "price_per_gpu_hour": 4.0}]}
)  # fmt: skip


def _estate(tmp_path, tag: str = "team", value: str = "research", **options: str) -> Estate:  # type: ignore[no-untyped-def]
    w = {"id": "w", "unit": "h100_hours", "demand": {"from_store": {"tag": tag, "value": value, **options}},
         "throughput": {"H100": 1.0, "A100": 0.5}}  # fmt: skip
    wl = Workloads.model_validate({"version": 1, "workloads": [w]})
    return Estate(FLEET, wl, tmp_path)


def test_busy_gpu_hours_from_utilization(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from finops_cli.schema.utilization import STORE_SCHEMA

    frame = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(["2026-10-01T00:00Z", "2026-10-01T00:30Z", "2026-10-01T01:00Z",
                                         "2026-10-01T01:00Z", "2026-09-30T23:00Z"], utc=True),
            "interval_s": [1800.0, 1800.0, 3600.0, 3600.0, 3600.0],
            "device_id": ["a", "a", "a", "b", "a"],
            "host": "h", "accelerator": ["H100", "H100", "H100", "A100", "H100"],
            "utilization": [0.5, 1.0, 0.25, 1.0, 1.0],
            "team": ["research", "research", "research", "research", "research"],
            "workload": "x", "resource_id": "r", "metric": "m", "source": "s",
        }
    )  # fmt: skip
    table = pa.Table.from_pandas(frame, schema=STORE_SCHEMA, preserve_index=False)
    table = table.append_column("month", pa.array(["2026-10"] * len(frame)))
    with store.transaction() as tx:
        tx.write_partitioned("utilization", table, "t")
    demand = estate_demand_sources(_estate(tmp_path, extend="zero"), Horizon.parse("2026-10-01:3"), store)[0]
    # hour 0: 0.5×0.5 + 1.0×0.5 = 0.75; hour 1: 0.25 (H100) + 1.0 × 0.5 (A100 at half throughput); Sept row outside
    assert demand["w"].tolist() == pytest.approx([0.75, 0.75, 0.0])


def test_billed_gpu_hours_when_no_utilization(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = pa.table(
        {
            "ChargePeriodStart": pa.array(pd.to_datetime(["2026-10-01T00:00Z", "2026-10-01T02:00Z"], utc=True)),
            "ConsumedQuantity": [1.0, 1.0],
            "x_GpuCount": pa.array([8, 8], pa.int32()),
            "x_AcceleratorType": ["H100", "H100"],
            "Tags": [json.dumps({"team": "research"}), json.dumps({"team": "product"})],
            "provider": ["aws", "aws"],
            "billing_period": ["2026-10", "2026-10"],
        }
    )
    with store.transaction() as tx:
        tx.write_partitioned("billing", table, "t")
    demand = estate_demand_sources(_estate(tmp_path, extend="zero"), Horizon.parse("2026-10-01:3"), store)[0]
    assert demand["w"].tolist() == [8.0, 0.0, 0.0]


def test_nothing_in_the_store_is_a_clear_error(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"workload w: demand.from_store: no GPU-hours in the store for team=research"):
        estate_demand_sources(_estate(tmp_path), Horizon.parse("2026-10-01:3"), store)
    with pytest.raises(InputError, match="needs a store"):
        estate_demand_sources(_estate(tmp_path), Horizon.parse("2026-10-01:3"), None)


def _trace(store: Store, hours: int, start: str = "2026-10-01T00:00Z", util: float = 0.5) -> None:
    """One H100 of team research sampled every 15 minutes for ``hours`` hours at ``util``."""
    from finops_cli.schema.utilization import STORE_SCHEMA

    n = hours * 4
    frame = pd.DataFrame(
        {
            "timestamp": pd.date_range(start, periods=n, freq="15min", tz="UTC"),
            "interval_s": 900.0, "device_id": "gpu-0", "host": "h", "accelerator": "H100",
            "utilization": util, "team": "research", "workload": "x", "resource_id": "r", "metric": "m", "source": "s",
        }
    )  # fmt: skip
    table = pa.Table.from_pandas(frame, schema=STORE_SCHEMA, preserve_index=False)
    months = frame["timestamp"].dt.strftime("%Y-%m").tolist()
    with store.transaction() as tx:
        tx.write_partitioned("utilization", table.append_column("month", pa.array(months)), "t")


def test_a_trace_shorter_than_the_horizon_is_refused_naming_the_option(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _trace(store, 23)
    with pytest.raises(InputError, match=r"for 23 of the horizon's 720 hours .*demand\.from_store\.extend: repeat"):
        estate_demand_sources(_estate(tmp_path), Horizon.parse("2026-10-01:720"), store)


def test_extend_repeat_tiles_the_observed_hours(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from finops_cli.estate.demand_io import estate_demand_sources

    _trace(store, 24)
    demand, sources = estate_demand_sources(_estate(tmp_path, extend="repeat"), Horizon.parse("2026-10-01:720"), store)
    assert demand["w"].tolist() == pytest.approx([0.5] * 720)  # busy: 0.5 GPU-hours every hour, 30 days of it
    (src,) = sources
    assert src.as_dict() == {
        "workload": "w", "tag": "team", "value": "research", "quantity": "busy_gpu_hours", "source": "utilization",
        "gpu_hours": 12.0, "observed_hours": 24, "horizon_hours": 720, "extension": "repeat",
    }  # fmt: skip
    assert "busy GPU-hours" in src.note() and "24 of 720 hours; repeated" in src.note()


def test_allocated_gpu_hours_count_the_time_held_not_the_busy_fraction(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from finops_cli.estate.demand_io import estate_demand_sources

    _trace(store, 48, start="2026-09-30T00:00Z", util=0.25)  # covers Oct 1 wholly
    est = _estate(tmp_path, quantity="allocated_gpu_hours")
    demand, (src,) = estate_demand_sources(est, Horizon.parse("2026-10-01:24"), store)
    assert demand["w"].tolist() == pytest.approx([1.0] * 24)
    assert (src.quantity, src.as_dict()["extension"]) == ("allocated_gpu_hours", "none")
    busy, _ = estate_demand_sources(_estate(tmp_path), Horizon.parse("2026-10-01:24"), store)
    assert busy["w"].tolist() == pytest.approx([0.25] * 24)


def test_billing_fallback_is_named_allocated(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from finops_cli.estate.demand_io import estate_demand_sources

    table = pa.table(
        {
            "ChargePeriodStart": pa.array(pd.to_datetime(["2026-10-01T00:00Z", "2026-10-01T01:00Z"], utc=True)),
            "ChargePeriodEnd": pa.array(pd.to_datetime(["2026-10-01T01:00Z", "2026-10-01T02:00Z"], utc=True)),
            "ConsumedQuantity": [1.0, 1.0], "x_GpuCount": pa.array([8, 8], pa.int32()),
            "x_AcceleratorType": ["H100", "H100"], "Tags": [json.dumps({"team": "research"})] * 2,
            "provider": ["aws", "aws"], "billing_period": ["2026-10", "2026-10"],
        }
    )  # fmt: skip
    with store.transaction() as tx:
        tx.write_partitioned("billing", table, "t")
    _, (src,) = estate_demand_sources(_estate(tmp_path), Horizon.parse("2026-10-01:2"), store)
    assert (src.quantity, src.source, src.observed_hours) == ("allocated_gpu_hours", "billing", 2)
    assert "allocated GPU-hours (ConsumedQuantity × GPUs, billing)" in src.note()


def test_plan_cli_names_the_quantity_and_the_extension(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """End to end: a 23-hour CSV trace ingested, then planned over 720 hours (refused, then repeated)."""
    import yaml
    from typer.testing import CliRunner

    from finops_cli.cli.app import app

    times = pd.date_range("2026-10-01T00:00Z", periods=23 * 12, freq="5min")
    rows = ["timestamp,gpu_uuid,gpu_util,team"] + [f"{t.isoformat()},GPU-{d},{40 + d * 20},research"
                                                    for t in times for d in range(2)]  # fmt: skip
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    fleet = FLEET.model_dump(mode="json", exclude_none=True)
    workloads = {"version": 1, "workloads": [{"id": "w", "unit": "h100_hours", "throughput": {"H100": 1.0},
                 "demand": {"from_store": {"tag": "team", "value": "research"}}}]}  # fmt: skip
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    (tmp_path / "workloads.yaml").write_text(yaml.safe_dump(workloads))
    store = str(tmp_path / "st")
    runner = CliRunner()
    res = runner.invoke(app, ["ingest", "utilization", str(tmp_path / "trace.csv"), "--store", store])
    assert res.exit_code == 0, res.output
    plan = ["plan", "--fleet", str(tmp_path / "fleet.yaml"), "--workloads", str(tmp_path / "workloads.yaml"),
            "--store", store, "--horizon", "2026-10-01:720"]  # fmt: skip
    res = runner.invoke(app, plan)
    assert res.exit_code == 2
    assert "23 of the horizon's 720 hours" in res.output and "demand.from_store.extend: repeat" in res.output
    workloads["workloads"][0]["demand"]["from_store"]["extend"] = "repeat"
    (tmp_path / "workloads.yaml").write_text(yaml.safe_dump(workloads))
    res = runner.invoke(app, [*plan, "--format", "json"])
    assert res.exit_code == 0, res.output
    (src,) = json.loads(res.stdout)["demand_sources"]
    # two GPUs at 40 % and 60 %: one busy GPU-hour per hour, 23 hours observed
    assert src["quantity"] == "busy_gpu_hours" and src["extension"] == "repeat"
    assert (src["observed_hours"], src["horizon_hours"]) == (23, 720)
    assert src["gpu_hours"] == pytest.approx(23.0)
    res = runner.invoke(app, plan)
    assert res.exit_code == 0, res.output
    assert "23.0 busy GPU-hours observed" in res.stdout and "repeated over the horizon" in res.stdout
