"""``demand: {from_store: ...}``: busy GPU-hours from utilisation (else billed GPU-hours) × throughput."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

from finops_cli.core.demand import Horizon
from finops_cli.errors import InputError
from finops_cli.estate import Estate
from finops_cli.estate.demand_io import estate_demand
from finops_cli.schema.estate import Fleet, Workloads
from finops_cli.store import Store

FLEET = Fleet.model_validate(
    {"version": 1, "substrates": [{"id": "od", "provider": "aws", "kind": "on_demand", "accelerator": "H100",
                                   "jurisdiction": "US", "price_per_gpu_hour": 4.0}]}
)  # fmt: skip


def _estate(tmp_path, tag: str = "team", value: str = "research") -> Estate:  # type: ignore[no-untyped-def]
    w = {"id": "w", "unit": "h100_hours", "demand": {"from_store": {"tag": tag, "value": value}},
         "throughput": {"H100": 1.0, "A100": 0.5}}  # fmt: skip
    wl = Workloads.model_validate({"version": 1, "workloads": [w]})
    return Estate(FLEET, wl, tmp_path)


def test_busy_gpu_hours_from_utilization(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from finops_cli.ingest.utilization.common import STORE_SCHEMA

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
    demand = estate_demand(_estate(tmp_path), Horizon.parse("2026-10-01:3"), store)
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
    demand = estate_demand(_estate(tmp_path), Horizon.parse("2026-10-01:3"), store)
    assert demand["w"].tolist() == [8.0, 0.0, 0.0]


def test_nothing_in_the_store_is_a_clear_error(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=r"workload w: demand.from_store: no GPU-hours in the store for team=research"):
        estate_demand(_estate(tmp_path), Horizon.parse("2026-10-01:3"), store)
    with pytest.raises(InputError, match="needs a store"):
        estate_demand(_estate(tmp_path), Horizon.parse("2026-10-01:3"), None)
