"""Tiny estates for planner tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from finops_cli.schema.estate import Fleet, Workload

FLAT = [{"up_to": 1.0, "multiplier": 1.0}]


def fleet(*substrates: dict[str, Any], congestion: list | None = None, **kw: Any) -> Fleet:
    subs = []
    for s in substrates:
        d = {"provider": "aws", "jurisdiction": "US", "accelerator": "H100", "comfortable_utilization": 1.0}
        if s.get("kind") == "api":
            d = {"provider": "api", "jurisdiction": "US", "isolation": "shared"}
        subs.append({**d, **s})
    return Fleet.model_validate({"version": 1, "substrates": subs, "congestion": congestion or FLAT, **kw})


def workload(wid: str, **kw: Any) -> Workload:
    d = {"id": wid, "unit": "h100_hours", "demand": {"total": 1.0}, "throughput": {"H100": 1.0}}
    return Workload.model_validate({**d, **kw})


def demand(**cols: list[float]) -> pd.DataFrame:
    return pd.DataFrame({k: np.asarray(v, dtype=float) for k, v in cols.items()})
