"""Issue 10 item 7: ``finops stack`` on a workload with nowhere compliant to run exits 3, like ``plan``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.core.compliance import NoCompliantDestination

FLEET = """version: 1
substrates:
  - {id: us-own, provider: onprem, kind: owned, accelerator: H100, jurisdiction: US, gpus: 8, price_per_gpu_hour: 1}
  - {id: eu-spot, provider: aws, kind: spot, accelerator: H100, jurisdiction: EU, gpus: 8, price_per_gpu_hour: 2,
     interruptions_per_hour: 0.05, isolation: shared}
  - {id: llm, provider: openai, kind: api, jurisdiction: US, isolation: shared, price_per_unit: {Mtokens: 9}}
"""
WORKLOADS = """version: 1
workloads:
  - {id: ok, unit: h100_hours, demand: {total: 100}, throughput: {H100: 1}}
  - {id: stranded, unit: h100_hours, demand: {total: 100}, throughput: {H100: 1},
     requires: {jurisdictions: [EU], isolation: dedicated}}
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "workloads.yaml").write_text(WORKLOADS)
    return str(tmp_path / "fleet.yaml"), str(tmp_path / "workloads.yaml")


@pytest.mark.parametrize("only", [None, "stranded"])
def test_stack_exits_3_naming_the_workload_and_each_exclusion(files, only) -> None:
    fl, wl = files
    args = ["stack", "--fleet", fl, "--workloads", wl, "--horizon", "2026-10"]
    if only:
        args += ["--workload", only]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 3, r.stdout
    err = " ".join(r.stderr.split())
    assert "workload stranded: no compliant destination" in err
    for sid, why in (("us-own", "jurisdiction"), ("eu-spot", "shared"), ("llm", "jurisdiction")):
        assert sid in err and why in err
    assert "Traceback" not in r.stderr


def test_stack_and_plan_raise_the_same_error(files) -> None:
    fl, wl = files
    with pytest.raises(NoCompliantDestination) as stack_err:
        api.stack(api.estate(fl, wl), workload="stranded", horizon="2026-10")
    with pytest.raises(NoCompliantDestination) as plan_err:
        api.plan(api.estate(fl, wl), horizon="2026-10-01:24")
    assert str(stack_err.value) == str(plan_err.value)
    assert api.stack(api.estate(fl, wl), workload="ok", horizon="2026-10").stacks[0].steps  # a runnable one still works
