"""docs/examples/finops-alerts.yml and finops-alerts-cronjob.yaml: the schedules' own finops commands run locally, in
order, on the generated company's exports, notifying a local Slack and PagerDuty on 127.0.0.1."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from pytest_httpserver import HTTPServer
from typer.testing import CliRunner
from werkzeug import Request, Response

from finops_cli.cli.app import app

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "docs" / "examples" / "finops-alerts.yml"
CRONJOB = REPO / "docs" / "examples" / "finops-alerts-cronjob.yaml"
runner = CliRunner()

BUDGETS = """\
version: 1
budgets:
  - name: data-team
    scope: {team: data}
    amount: 20000
  - name: all-gpu
    amount: 400000
"""


def _finops_lines(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if line.strip().startswith("finops ")]


def _expand(line: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env[m.group(1)], line)


def test_workflow_is_scheduled_and_keeps_secrets_out_of_command_lines() -> None:
    wf = yaml.safe_load(WORKFLOW.read_text())
    on = wf.get("on") or wf.get(True)  # YAML 1.1 reads the key `on` as True
    assert on["schedule"][0]["cron"] == "30 6 * * *" and "workflow_dispatch" in on
    job = wf["jobs"]["alerts"]
    for name in ("FINOPS_SLACK_WEBHOOK_URL", "FINOPS_PAGERDUTY_ROUTING_KEY"):
        assert job["env"][name] == f"${{{{ secrets.{name} }}}}"
    scripts = "\n".join(str(s.get("run", "")) for s in job["steps"])
    assert "secrets." not in scripts and "--secret" not in scripts.replace("--secret-file", "")
    budgets = next(s for s in job["steps"] if s.get("id") == "budgets")
    assert budgets["continue-on-error"] is True
    assert job["steps"][-1]["if"] == "steps.budgets.outcome == 'failure'"
    assert "pip install gpu-fleet-finops==" in scripts


def _servers(httpserver: HTTPServer) -> tuple[list[dict], list[dict]]:
    slack: list[dict] = []
    pagerduty: list[dict] = []

    def take(into: list[dict], status: int) -> object:
        def handler(request: Request) -> Response:
            into.append(json.loads(request.get_data(as_text=True)))
            return Response("{}", status)

        return handler

    httpserver.expect_request("/slack", method="POST").respond_with_handler(take(slack, 200))
    httpserver.expect_request("/pd", method="POST").respond_with_handler(take(pagerduty, 202))
    return slack, pagerduty


def _exports(company_store: Path, into: Path) -> None:
    shutil.copytree(company_store.parent / "exports", into)


def test_workflow_commands_run_locally(
    company_store: Path, httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["alerts"]
    slack, pagerduty = _servers(httpserver)
    _exports(company_store, tmp_path / "exports")
    (tmp_path / "budgets.yaml").write_text(BUDGETS)
    env = {k: str(v) for k, v in job["env"].items() if "${{" not in str(v)} | {
        "FINOPS_STORE": str(tmp_path / ".finops"),
        "FINOPS_NOTIFY_LEDGER": str(tmp_path / ".finops-notify" / "sent.json"),
        "RUN_URL": "https://github.example/runs/1",
        "FINOPS_SLACK_WEBHOOK_URL": httpserver.url_for("/slack"),
        "FINOPS_PAGERDUTY_ROUTING_KEY": "routing-key",
        "FINOPS_PAGERDUTY_EVENTS_URL": httpserver.url_for("/pd"),
    }
    monkeypatch.chdir(tmp_path)
    lines = [line for step in job["steps"] for line in _finops_lines(str(step.get("run", "")))]
    assert [shlex.split(line)[1] for line in lines] == ["ingest", "budget", "anomalies", *["notify"] * 4]
    codes = {}
    for line in lines:
        result = runner.invoke(app, shlex.split(_expand(line, env))[1:], env=env)
        codes[line] = result.exit_code
        assert result.exit_code in ((0, 1) if " budget " in line else (0,)), (line, result.output)
        assert "routing-key" not in result.output and "/slack" not in result.output
    assert list(codes.values())[1] == 1  # the data team's overrun crosses its forecast threshold
    check = json.loads((tmp_path / "budget-check.json").read_text())
    assert not check["passed"]
    assert len(slack) == 2 and slack[0]["text"].endswith("budgets over a threshold")
    triggers = {e["dedup_key"] for e in pagerduty if e["event_action"] == "trigger"}
    assert "finops/budget/data-team/2026-10-01" in triggers
    assert any(k.startswith("finops/anomaly/team=product/") for k in triggers)  # 2026-10-16's runaway, within --days 7
    # the next morning's run with nothing new: nothing is sent twice
    before = (len(slack), len(pagerduty))
    for line in lines[-4:]:
        assert runner.invoke(app, shlex.split(_expand(line, env))[1:], env=env).exit_code == 0
    assert (len(slack), len(pagerduty)) == before


def test_cronjob_is_a_valid_cronjob_running_the_same_commands() -> None:
    doc = yaml.safe_load(CRONJOB.read_text())
    assert doc["apiVersion"] == "batch/v1" and doc["kind"] == "CronJob"
    assert doc["spec"]["schedule"] == "30 6 * * *" and doc["spec"]["concurrencyPolicy"] == "Forbid"
    pod = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    for name in ("FINOPS_SLACK_WEBHOOK_URL", "FINOPS_PAGERDUTY_ROUTING_KEY"):
        assert "secretKeyRef" in env[name]["valueFrom"] and "value" not in env[name]
    script = container["args"][0]
    workflow = yaml.safe_load(WORKFLOW.read_text())["jobs"]["alerts"]
    wf_lines = [line for s in workflow["steps"] for line in _finops_lines(str(s.get("run", "")))]
    verbs = lambda lines: [shlex.split(line)[1] for line in lines]  # noqa: E731
    assert verbs(_finops_lines(script)) == verbs(wf_lines)
    assert "exit $budgets" in script and pod["restartPolicy"] == "Never"
