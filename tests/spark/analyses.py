"""The analyses that read a store (``costs``, ``waste``, a ``plan``: its billed baseline, spot prices and demand),
run as JSON on either engine, and how two engines' answers are compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from finops_cli import api
from tests.conftest import SAMPLES

#: each analysis's command line (without ``--store`` and the engine)
ANALYSES = {
    "costs": ["costs", "--by", "team,provider,instance_type", "--format", "json"],
    "waste": ["waste", "--by", "team", "--format", "json", "--month", "2026-10"],
    "plan": [
        *("plan", "--fleet", str(SAMPLES / "fleet.yaml"), "--workloads", str(SAMPLES / "workloads.yaml")),
        *("--as-of", "2026-11-01", "--format", "json"),
    ],
}


def ingest_samples(store: str | Path) -> None:
    """The sample billing, utilisation and spot prices, by the local engine."""
    api.ingest_billing([SAMPLES / "billing"], store=store)
    api.ingest_utilization([SAMPLES / "utilization" / "gpu_util_hourly.csv.gz"], store=store)
    api.ingest_spot_prices(store=store, files=sorted((SAMPLES / "spot_prices").iterdir()))


def timeless(doc: object) -> object:
    """``doc`` without the solver's timings (``seconds``, ``build_seconds``), which differ from run to run."""
    if isinstance(doc, dict):
        return {k: timeless(v) for k, v in doc.items() if not k.endswith("seconds")}
    if isinstance(doc, list):
        return [timeless(v) for v in doc]
    return doc


def assert_same_json(a: object, b: object, where: str = "") -> None:
    """Equal, numbers up to float summation order (the engines add in different orders): 1e-9 relative, so
    money agrees to the cent."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), where
        for k in a:
            assert_same_json(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_json(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert b == pytest.approx(a, rel=1e-9, abs=1e-9), where
    else:
        assert a == b, where
