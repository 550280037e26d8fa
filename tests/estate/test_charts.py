"""The merit-order chart: a real PNG from a Stack or from its JSON shape."""

from __future__ import annotations

from pathlib import Path

from finops_cli.core.stack import build_stack
from finops_cli.report.charts import merit_order_chart
from finops_cli.schema.estate import Fleet, Workload

PNG = b"\x89PNG\r\n\x1a\n"


def test_chart_from_stack_and_from_json(tmp_path: Path) -> None:
    fleet = Fleet.model_validate(
        {"version": 1, "substrates": [
            {"id": "own", "provider": "onprem", "kind": "owned", "accelerator": "H100", "jurisdiction": "US",
             "gpus": 8, "price_per_gpu_hour": 0.0},
            {"id": "api", "provider": "x", "kind": "api", "jurisdiction": "US", "price_per_unit": {"Mtokens": 15.0}},
        ]}
    )  # fmt: skip
    w = Workload.model_validate({"id": "chat", "unit": "Mtokens", "demand": {"total": 1}, "throughput": {"H100": 40}})
    stack = build_stack(w, fleet, demand_units=400.0)
    a = merit_order_chart(stack, tmp_path / "a.png", currency="EUR")
    b = merit_order_chart(stack.as_dict(), tmp_path / "sub" / "b.png")
    for p in (a, b):
        assert p.read_bytes()[:8] == PNG and p.stat().st_size > 5_000
    assert not list(tmp_path.glob(".*.tmp*"))
