"""match_billing converts each column to text once: the same substrate for every line as comparing per substrate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from finops_cli.core.baseline import PRICING_CATEGORY_KIND, match_billing
from finops_cli.schema.estate import Fleet

CATEGORIES = ["Dynamic", "Committed", "Other", "Standard", "Usage", None, np.nan]
KINDS = {v: k for k, v in PRICING_CATEGORY_KIND.items()}
VALUES = {
    "provider": ["aws", "gcp", "None", None, np.nan],
    "RegionId": ["us-east-1", "eu-west-1", "nan", None, np.nan],
    "x_InstanceType": ["p5.48xlarge", "a3-highgpu-8g", None, np.nan],
    "ResourceId": ["cw-node-01", "cw-node-02", "1", None, np.nan],
    "SubAccountId": ["111", "222", "None", None],
}


def _reference(billing: pd.DataFrame, fleet: Fleet) -> pd.Series:
    """The implementation before: every substrate converts and compares every column again."""
    out = pd.Series([None] * len(billing), index=billing.index, dtype=object)
    kind = billing["PricingCategory"].map(PRICING_CATEGORY_KIND) if "PricingCategory" in billing else None
    for s in fleet.substrates:
        mask = out.isna()
        if "provider" in billing:
            mask &= billing["provider"].astype(str) == s.provider
        if s.region and "RegionId" in billing:
            mask &= billing["RegionId"].astype(str) == s.region
        if s.instance_type and "x_InstanceType" in billing:
            mask &= billing["x_InstanceType"].astype(str) == s.instance_type
        if kind is not None:
            mask &= kind == s.kind
        for col, value in (s.match or {}).items():
            if col not in billing:
                mask &= False
            else:
                mask &= billing[col].astype(str) == str(value)
        out[mask] = s.id
    return out


def _pick(rng: np.random.Generator, values: list) -> object:
    return values[rng.integers(len(values))]


def _fleet(rng: np.random.Generator) -> Fleet:
    substrates = []
    for i in range(int(rng.integers(1, 9))):
        kind = str(_pick(rng, ["spot", "reserved", "owned", "on_demand"]))
        s: dict = {"id": f"s{i}", "kind": kind, "provider": str(_pick(rng, ["aws", "gcp", "None"]))}
        s |= {"jurisdiction": "US", "accelerator": "H100", "comfortable_utilization": 1.0}
        s |= {"gpus": 8, "committed_per_gpu_hour": 2.0} if kind == "reserved" else {"price_per_gpu_hour": 2.0}
        s |= {"gpus": 8, "interruptions_per_hour": 0.01} if kind == "spot" else {"gpus": 8}
        if rng.random() < 0.6:
            s["region"] = str(_pick(rng, ["us-east-1", "eu-west-1", "nan"]))
        if rng.random() < 0.6:
            s["instance_type"] = str(_pick(rng, ["p5.48xlarge", "a3-highgpu-8g"]))
        if rng.random() < 0.5:
            columns = ["ResourceId", "SubAccountId", "Missing"]
            s["match"] = {c: str(_pick(rng, ["cw-node-01", "cw-node-02", "1", "111", "None"])) for c in columns
                          if rng.random() < 0.5}  # fmt: skip
        substrates.append(s)
    congestion = [{"up_to": 1.0, "multiplier": 1.0}]
    return Fleet.model_validate({"version": 1, "substrates": substrates, "congestion": congestion})


def _billing(rng: np.random.Generator) -> pd.DataFrame:
    n = int(rng.integers(0, 60))
    columns = {c: [_pick(rng, v) for _ in range(n)] for c, v in VALUES.items() if rng.random() < 0.85}
    if rng.random() < 0.85:
        columns["PricingCategory"] = [_pick(rng, CATEGORIES) for _ in range(n)]
    frame = pd.DataFrame(columns, index=rng.permutation(n) + 100)  # not a range index
    for col in list(frame.columns):
        shape = rng.integers(3)
        if shape == 1:
            frame[col] = frame[col].astype("category")
        elif shape == 2 and col == "ResourceId":
            frame[col] = pd.array([1 if v == "1" else None for v in frame[col]], dtype="Int64")
    return frame


@pytest.mark.parametrize("seed", range(40))
def test_the_same_substrates_as_comparing_per_substrate(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(10):
        billing, fleet = _billing(rng), _fleet(rng)
        got, expected = match_billing(billing, fleet), _reference(billing, fleet)
        pd.testing.assert_series_equal(got, expected)


def test_lines_match_the_first_substrate_in_fleet_order_and_none_else() -> None:
    rng = np.random.default_rng(0)
    fleet = _fleet(rng)
    billing = pd.DataFrame({"provider": [fleet.substrates[0].provider, "azure"]})
    first = [s.id for s in fleet.substrates if s.provider == fleet.substrates[0].provider and not s.region
             and not s.instance_type and not s.match]  # fmt: skip
    got = match_billing(billing.assign(PricingCategory=KINDS.get(fleet.substrates[0].kind)), fleet).tolist()
    assert got[1] is None and (not first or got[0] == first[0])
