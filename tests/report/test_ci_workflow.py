"""docs/examples/finops-gate.yml: run the workflow's own finops commands locally, in order, on the samples."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.report.gate import MARKER

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "docs" / "examples" / "finops-gate.yml"
runner = CliRunner()


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _finops_lines(job: dict) -> list[str]:
    lines = []
    for step in job["steps"]:
        for line in str(step.get("run", "")).splitlines():
            line = line.strip()
            if line.startswith("finops "):
                lines.append(line)
    return lines


def _expand(line: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env[m.group(1)], line)


def test_workflow_is_a_valid_pull_request_workflow() -> None:
    wf = _workflow()
    assert "pull_request" in (wf.get("on") or wf.get(True))  # YAML 1.1 reads the key `on` as True
    assert wf["permissions"]["pull-requests"] == "write"
    job = wf["jobs"]["gate"]
    script = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/github-script"))["with"]["script"]
    gate_line = next(line for line in _finops_lines(job) if line.startswith("finops gate"))
    out = shlex.split(gate_line)[shlex.split(gate_line).index("--out") + 1]
    assert f"'{MARKER}'" in script  # the script finds the previous comment by the marker the gate writes
    assert f"readFileSync('{out}'" in script and "--format github" in gate_line
    assert "updateComment" in script and "createComment" in script
    assert job["steps"][-1]["if"] == "steps.gate.outcome == 'failure'"


def test_workflow_commands_run_locally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _workflow()["jobs"]["gate"]
    for side in ("base", "head"):
        shutil.copytree(REPO / "samples", tmp_path / side / "samples", ignore=shutil.ignore_patterns("*.py", "market"))
    # the PR: the 70B pre-training run needs 60 % more H100-hours this month
    workloads = tmp_path / "head" / "samples" / "workloads.yaml"
    text = workloads.read_text()
    assert "demand: {total: 100000}" in text
    workloads.write_text(text.replace("demand: {total: 100000}", "demand: {total: 160000}", 1))

    env = {k: str(v) for k, v in job["env"].items()} | {"FINOPS_STORE": str(tmp_path / ".finops")}
    monkeypatch.chdir(tmp_path)
    lines = _finops_lines(job)
    assert [shlex.split(line)[1] for line in lines] == ["ingest", "ingest", "plan", "plan", "gate"]
    codes = []
    for line in lines:
        result = runner.invoke(app, shlex.split(_expand(line, env))[1:], env=env)
        codes.append(result.exit_code)
        if not line.startswith("finops gate"):
            assert result.exit_code == 0, (line, result.output)
    gate_code = codes[-1]
    assert gate_code in (0, 1)
    comment = (tmp_path / "finops-comment.md").read_text()
    first = comment.splitlines()[0]
    assert "\\$" in first  # money in the summary line is escaped (no GitHub inline maths)
    first = first.replace("\\$", "$")
    assert MARKER in comment and len(comment) < 65_536
    assert ("FAILED" in first) is (gate_code == 1)
    assert "(+$" in first  # more demand never makes the plan cheaper
    assert "| pretrain-70b |" in comment
    assert (tmp_path / "base-plan.json").exists() and (tmp_path / "head-plan.json").exists()
