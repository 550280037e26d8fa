"""Estate values that validated as numbers but broke the solver are refused with their limit (issue 12).

``price_per_gpu_hour: 1e308``, ``throughput: 1e-308``, ``interruptions_per_hour: 1e300`` and extreme
checkpoint settings used to reach the planner and end in an overflow traceback. Each is exit 2 naming
the field and the bound; the bounds are far beyond any real fleet.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from finops_cli.cli.app import app

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
FLEET = yaml.safe_load((SAMPLES / "fleet.yaml").read_text(encoding="utf-8"))
WORKLOADS = yaml.safe_load((SAMPLES / "workloads.yaml").read_text(encoding="utf-8"))


def _first(items: list[dict], **match: object) -> int:
    return next(i for i, x in enumerate(items) if all(x.get(k) == v for k, v in match.items()))


SPOT = _first(FLEET["substrates"], kind="spot")
CKPT = next(i for i, w in enumerate(WORKLOADS["workloads"]) if w.get("checkpoint"))
THRU = next(i for i, w in enumerate(WORKLOADS["workloads"]) if w.get("throughput"))


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda f, w: f["substrates"][0].update(price_per_gpu_hour=1e308), "substrates[0].price_per_gpu_hour"),
        (
            lambda f, w: f["substrates"][SPOT].update(interruptions_per_hour=1e300),
            f"substrates[{SPOT}].interruptions_per_hour",
        ),
        (lambda f, w: f["substrates"][SPOT].update(resume_minutes=1e200), f"substrates[{SPOT}].resume_minutes"),
        (lambda f, w: f["substrates"][0].update(gpus=1e300), "substrates[0].gpus"),
        (lambda f, w: f.update(reliability_penalty_per_gpu_hour=1e300), "reliability_penalty_per_gpu_hour"),
        (
            lambda f, w: w["workloads"][THRU]["throughput"].update(
                {next(iter(w["workloads"][THRU]["throughput"])): 1e-308}
            ),
            f"workloads[{THRU}].throughput",
        ),
        (
            lambda f, w: w["workloads"][CKPT]["checkpoint"].update(interval_minutes=1e-300),
            f"workloads[{CKPT}].checkpoint.interval_minutes",
        ),
        (
            lambda f, w: w["workloads"][CKPT]["checkpoint"].update(write_minutes=1e300),
            f"workloads[{CKPT}].checkpoint.write_minutes",
        ),
        (lambda f, w: w["workloads"][0].update(demand={"total": 1e300}), "workloads[0].demand.total"),
    ],
)
def test_values_beyond_the_solvers_range_are_refused_with_their_limit(tmp_path: Path, edit, field: str) -> None:
    fleet, workloads = copy.deepcopy(FLEET), copy.deepcopy(WORKLOADS)
    edit(fleet, workloads)
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet), encoding="utf-8")
    (tmp_path / "workloads.yaml").write_text(yaml.safe_dump(workloads), encoding="utf-8")
    (tmp_path / "demand").symlink_to(SAMPLES / "demand")
    args = ["validate", "--fleet", str(tmp_path / "fleet.yaml"), "--workloads", str(tmp_path / "workloads.yaml")]
    result = CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert field in result.stderr and "must be" in result.stderr, result.stderr
