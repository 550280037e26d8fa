"""``finops notify`` end to end against a local server on 127.0.0.1: each destination's documented payload shape,
429 with Retry-After, 500, a rejected payload, a server that never answers, idempotency and secrecy."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from typer.testing import CliRunner
from werkzeug import Request, Response

from finops_cli.adapters.public_http import retry_after
from finops_cli.alerts.notify import notify
from finops_cli.alerts.notify.transport import NotDelivered, Policy, Rejected
from finops_cli.cli.app import app

runner = CliRunner()
HOSTILE = "<!channel> *bold* _x_ [link](https://evil.example) {{DATE(2026-01-01)}} & `code`"


def _budget_check(names: tuple[str, ...] = ("research", "platform", "data"), over: tuple[str, ...] = ("data",)) -> dict:
    rows = []
    for name in names:
        crossed = [{"spend": "forecast", "percent": 100.0, "value": 30000.0}] if name in over else []
        rows.append({
            "name": name, "scope": f"team={name}", "period": {"start": "2026-10-01", "end": "2026-10-31"},
            "currency": "USD", "amount": 20000.0, "actual": 15000.0, "actual_pct": 75.0,
            "forecast": {"actual": 15000.0, "expected": 30000.0, "low": 28000.0, "high": 32000.0,
                         "remaining_days": 11, "history_days": 60, "level": 0.9, "reason": None},
            "thresholds": [], "crossed": crossed, "status": "alert" if crossed else "ok",
            "dedup_key": f"finops/budget/{name}/2026-10-01", "notes": [],
        })  # fmt: skip
    return {"kind": "finops.budget_check", "schema_version": 1, "as_of": "2026-10-20T13:00:00+00:00",
            "forecast_method": "ETS", "passed": not over, "budgets": rows}  # fmt: skip


def _anomalies(scope: str = "team=research") -> dict:
    return {
        "kind": "finops.anomalies", "schema_version": 1, "as_of": "2026-10-20T00:00:00+00:00",
        "window": {"start": "2026-10-01", "end": "2026-10-19"}, "method": "STL", "parameters": {"by": ["team"]},
        "notes": [],
        "anomalies": [{"team": scope, "currency": "USD", "scope": scope, "day": "2026-10-16", "actual": 3310.0,
                       "expected": 2662.7, "impact": 647.3, "score": 24.7,
                       "contributors": [{"dimension": "instance_type", "value": "g6.12xlarge", "impact": 598.2}],
                       "dedup_key": f"finops/anomaly/{scope}/USD/2026-10-16"}],
    }  # fmt: skip


def _write(tmp_path: Path, doc: dict, name: str = "result.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _json(request: Request) -> Any:
    return json.loads(request.get_data(as_text=True))


NO_WAIT = Policy(timeout=2.0, attempts=3, sleep=lambda _s: None)


# --- each destination's documented shape ------------------------------------------------------------------------


def _check_block_kit(body: dict) -> None:
    """Slack's documented shape: fallback ``text`` and at most 50 blocks; header plain_text <= 150 characters;
    section text <= 3,000; context elements are text objects."""
    assert isinstance(body["text"], str) and body["text"]
    blocks = body["blocks"]
    assert 1 <= len(blocks) <= 50
    assert blocks[0]["type"] == "header" and blocks[0]["text"]["type"] == "plain_text"
    assert len(blocks[0]["text"]["text"]) <= 150
    for b in blocks:
        assert b["type"] in ("header", "section", "context")
        if b["type"] == "section":
            assert b["text"]["type"] in ("plain_text", "mrkdwn") and len(b["text"]["text"]) <= 3000
        if b["type"] == "context":
            assert all(e["type"] in ("mrkdwn", "plain_text") for e in b["elements"])


def test_slack_webhook_gets_block_kit_with_the_headline_first(
    httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict] = []

    def handler(request: Request) -> Response:
        seen.append(_json(request))
        return Response("ok", 200)

    httpserver.expect_request("/services/T0/B0/secret", method="POST").respond_with_handler(handler)
    monkeypatch.setenv("FINOPS_SLACK_WEBHOOK_URL", httpserver.url_for("/services/T0/B0/secret"))
    result = runner.invoke(app, ["notify", "--to", "slack", "--result", str(_write(tmp_path, _budget_check())),
                                 "--link", "https://ci.example/run/1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (body,) = seen
    _check_block_kit(body)
    assert body["blocks"][0]["text"]["text"] == "1 of 3 budgets over a threshold"
    assert "data (team=data): $15,000.00 of $20,000.00" in body["blocks"][1]["text"]["text"]
    assert "finops budget check" in json.dumps(body["blocks"][-1]) and "https://ci.example/run/1" in json.dumps(body)
    assert "secret" not in result.output


def test_slack_web_api_posts_to_the_channel(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict] = []

    def handler(request: Request) -> Response:
        assert request.headers["Authorization"] == "Bearer xoxb-test-token"
        seen.append(dict(request.form) or _json(request))
        return Response(json.dumps({"ok": True, "ts": "1.2"}), 200, content_type="application/json")

    httpserver.expect_request("/api/chat.postMessage", method="POST").respond_with_handler(handler)
    env = {"FINOPS_SLACK_BOT_TOKEN": "xoxb-test-token", "FINOPS_SLACK_API_URL": httpserver.url_for("/api/")}
    out = notify(_anomalies(), "slack", channel="#finops", env=env, policy=NO_WAIT)
    assert out.sent == 1 and seen[0]["channel"] == "#finops"
    httpserver.clear()
    httpserver.expect_request("/api/chat.postMessage").respond_with_json({"ok": False, "error": "channel_not_found"})
    with pytest.raises(Rejected, match="channel_not_found"):
        notify(_anomalies("team=other"), "slack", channel="#gone", env=env, policy=NO_WAIT)


def test_pagerduty_events_v2_one_incident_per_budget(httpserver: HTTPServer) -> None:
    events: list[dict] = []

    def handler(request: Request) -> Response:
        e = _json(request)
        events.append(e)
        assert set(e) <= {"routing_key", "event_action", "dedup_key", "payload", "links", "images", "client",
                          "client_url"}  # fmt: skip
        assert e["routing_key"] == "R0UTINGKEY" and e["event_action"] in ("trigger", "acknowledge", "resolve")
        assert 0 < len(e["dedup_key"]) <= 255
        if e["event_action"] == "trigger":
            p = e["payload"]
            assert p["summary"] and len(p["summary"]) <= 1024 and p["source"]
            assert p["severity"] in ("critical", "error", "warning", "info")
        return Response(json.dumps({"status": "success", "dedup_key": e["dedup_key"]}), 202)

    httpserver.expect_request("/v2/enqueue", method="POST").respond_with_handler(handler)
    env = {
        "FINOPS_PAGERDUTY_ROUTING_KEY": "R0UTINGKEY",
        "FINOPS_PAGERDUTY_EVENTS_URL": httpserver.url_for("/v2/enqueue"),
    }
    out = notify(_budget_check(), "pagerduty", env=env, policy=NO_WAIT)
    assert out.sent == 3
    actions = {e["dedup_key"]: e["event_action"] for e in events}
    assert actions == {
        "finops/budget/research/2026-10-01": "resolve",
        "finops/budget/platform/2026-10-01": "resolve",
        "finops/budget/data/2026-10-01": "trigger",
    }
    # the next day's check: the data budget again (new numbers), same incident
    later = _budget_check()
    later["as_of"] = "2026-10-21T13:00:00+00:00"
    later["budgets"][2]["actual"] = 16500.0
    again = notify(later, "pagerduty", env=env, policy=NO_WAIT)
    assert (again.sent, again.repeats) == (1, 2)  # the unchanged resolves are not sent twice
    triggers = [e["dedup_key"] for e in events if e["event_action"] == "trigger"]
    assert triggers == ["finops/budget/data/2026-10-01"] * 2


def test_teams_gets_an_adaptive_card(httpserver: HTTPServer) -> None:
    seen: list[dict] = []
    httpserver.expect_request("/workflows/abc", method="POST").respond_with_handler(
        lambda r: (seen.append(_json(r)), Response("", 202))[1]
    )
    out = notify(_anomalies(HOSTILE), "teams", env={"FINOPS_TEAMS_WEBHOOK_URL": httpserver.url_for("/workflows/abc")},
                 link="https://ci.example/1", policy=NO_WAIT)  # fmt: skip
    assert out.sent == 1
    (msg,) = seen
    assert msg["type"] == "message"
    (att,) = msg["attachments"]
    assert att["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = att["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.4" and card["$schema"].startswith("http")
    assert all(b["type"] == "TextBlock" and isinstance(b["text"], str) for b in card["body"])
    assert card["actions"] == [{"type": "Action.OpenUrl", "title": "Details", "url": "https://ci.example/1"}]
    text = json.dumps(card["body"])
    assert "{{DATE" not in text and "\\\\*bold\\\\*" in text and "\\\\[link\\\\]" in text


def test_signed_webhook_verifies(httpserver: HTTPServer) -> None:
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        body = request.get_data()
        stamp = request.headers["X-Finops-Timestamp"]
        expected = "sha256=" + hmac.new(b"s3cret", stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(request.headers["X-Finops-Signature"], expected)
        seen.append(request)
        return Response("", 204)

    httpserver.expect_request("/hook", method="POST").respond_with_handler(handler)
    env = {"FINOPS_WEBHOOK_SECRET": "s3cret", "FINOPS_WEBHOOK_URL": httpserver.url_for("/hook")}
    out = notify(_budget_check(), "webhook", env=env, policy=NO_WAIT)
    assert out.sent == 1
    doc = json.loads(seen[0].get_data())
    assert doc["kind"] == "finops.budget_check" and doc["alerting"] is True
    assert seen[0].headers["Idempotency-Key"] == doc["id"]


# --- failures ------------------------------------------------------------------------------------------------------


def test_429_waits_as_retry_after_says_then_delivers(httpserver: HTTPServer) -> None:
    httpserver.expect_ordered_request("/hook").respond_with_data("slow down", 429, headers={"Retry-After": "7"})
    httpserver.expect_ordered_request("/hook").respond_with_data("busy", 503)
    httpserver.expect_ordered_request("/hook").respond_with_data("ok", 200)
    waits: list[float] = []
    policy = Policy(timeout=2, attempts=4, backoff=0.5, sleep=waits.append)
    env = {"FINOPS_TEAMS_WEBHOOK_URL": httpserver.url_for("/hook")}
    out = notify(_budget_check(), "teams", env=env, policy=policy)
    assert out.sent == 1 and out.attempts == [3]
    assert waits == [7.0, 1.0]  # Retry-After, then the backoff of the second attempt (0.5 × 2)


def test_500_until_retries_run_out_is_exit_1_and_nothing_recorded(
    httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    httpserver.expect_request("/hook").respond_with_data("down", 500, headers={"Retry-After": "0"})
    monkeypatch.setenv("FINOPS_TEAMS_WEBHOOK_URL", httpserver.url_for("/hook"))
    result = runner.invoke(app, ["notify", "--to", "teams", "--result", str(_write(tmp_path, _budget_check())),
                                 "--retries", "2"])  # fmt: skip
    assert result.exit_code == 1
    assert "not delivered after 3 attempts (last: HTTP 500)" in result.output
    assert len(httpserver.log) == 3 and not (tmp_path / "ledger.json").exists()


def test_a_rejected_payload_is_exit_2_at_once_without_the_secret(
    httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = httpserver.url_for("/services/T0/B0/SUPERSECRET")
    httpserver.expect_request("/services/T0/B0/SUPERSECRET").respond_with_data(f"invalid_blocks at {url}", 400)
    monkeypatch.setenv("FINOPS_SLACK_WEBHOOK_URL", url)
    result = runner.invoke(app, ["--debug", "notify", "--to", "slack", "--result",
                                 str(_write(tmp_path, _budget_check()))])  # fmt: skip
    assert result.exit_code == 2
    assert "Slack rejected the payload: HTTP 400: invalid_blocks" in result.output
    assert "SUPERSECRET" not in result.output and len(httpserver.log) == 1


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server on 127.0.0.1 that takes connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
    finally:
        sock.close()


@pytest.mark.parametrize("destination", ["slack", "pagerduty", "teams", "webhook"])
def test_a_server_that_hangs_times_out_and_is_exit_1(silent_server: str, destination: str) -> None:
    env = {
        "FINOPS_SLACK_WEBHOOK_URL": silent_server, "FINOPS_TEAMS_WEBHOOK_URL": silent_server,
        "FINOPS_PAGERDUTY_ROUTING_KEY": "k", "FINOPS_PAGERDUTY_EVENTS_URL": silent_server,
        "FINOPS_WEBHOOK_SECRET": "s", "FINOPS_WEBHOOK_URL": silent_server,
    }  # fmt: skip
    with pytest.raises(NotDelivered, match=r"not delivered after 2 attempts \(last: no answer within 1 s\)") as err:
        notify(_anomalies(), destination, env=env, policy=Policy(timeout=1, attempts=2, sleep=lambda _s: None))
    assert err.value.exit_code == 1 and "127.0.0.1" not in str(err.value)


def test_a_run_failing_part_way_says_what_went_and_records_only_that(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_ordered_request("/e").respond_with_data("{}", 202)
    httpserver.expect_ordered_request("/e").respond_with_data("{}", 202)
    httpserver.expect_ordered_request("/e").respond_with_data('{"status":"invalid event"}', 400)
    env = {"FINOPS_PAGERDUTY_ROUTING_KEY": "k", "FINOPS_PAGERDUTY_EVENTS_URL": httpserver.url_for("/e")}
    ledger = tmp_path / "sent.json"
    with pytest.raises(Rejected, match=r"sent 2 of 3 payloads; the rest were not sent"):
        notify(_budget_check(), "pagerduty", env=env, policy=NO_WAIT, ledger=ledger)
    assert len(json.loads(ledger.read_text())["sent"]) == 2
    httpserver.clear()
    httpserver.expect_request("/e").respond_with_data("{}", 202)
    out = notify(_budget_check(), "pagerduty", env=env, policy=NO_WAIT, ledger=ledger)
    assert (out.sent, out.repeats) == (1, 2) and len(httpserver.log) == 1


def test_the_same_result_twice_is_one_message(
    httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok", 200)
    monkeypatch.setenv("FINOPS_SLACK_WEBHOOK_URL", httpserver.url_for("/hook"))
    args = ["notify", "--to", "slack", "--result", str(_write(tmp_path, _anomalies()))]
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "1 already sent, skipped" in again.output
    assert len(httpserver.log) == 1
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0 and len(httpserver.log) == 2


# --- secrets and markup --------------------------------------------------------------------------------------------


def test_dry_run_prints_the_payload_never_the_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FINOPS_PAGERDUTY_ROUTING_KEY", "TOPSECRETKEY")
    result = runner.invoke(app, ["--debug", "notify", "--to", "pagerduty", "--dry-run", "--result",
                                 str(_write(tmp_path, _budget_check()))])  # fmt: skip
    assert result.exit_code == 0, result.output
    events = json.loads(result.stdout)
    assert [e["routing_key"] for e in events] == ["${FINOPS_PAGERDUTY_ROUTING_KEY}"] * 3
    assert "TOPSECRETKEY" not in result.output


def test_secrets_from_a_file_and_a_clear_error_without_one(httpserver: HTTPServer, tmp_path: Path) -> None:
    doc = _write(tmp_path, _anomalies())
    missing = runner.invoke(app, ["notify", "--to", "webhook", "--result", str(doc), "--url", "http://127.0.0.1:9/"])
    assert missing.exit_code == 2 and "set $FINOPS_WEBHOOK_SECRET or pass --secret-file" in missing.output
    httpserver.expect_request("/hook").respond_with_data("", 204)
    secret = tmp_path / "slack-url"
    secret.write_text(httpserver.url_for("/hook") + "\n")
    ok = runner.invoke(app, ["notify", "--to", "slack", "--result", str(doc), "--secret-file", str(secret)])
    assert ok.exit_code == 0, ok.output
    assert "/hook" not in ok.output
    bad = runner.invoke(app, ["notify", "--to", "email", "--result", str(doc), "--dry-run"])
    assert bad.exit_code == 2 and "slack, pagerduty, teams, webhook" in bad.output
    not_a_result = runner.invoke(app, ["notify", "--to", "slack", "--dry-run", "--result",
                                       str(_write(tmp_path, {"a": 1}, "x.json"))])  # fmt: skip
    assert not_a_result.exit_code == 2 and "not a finops result" in not_a_result.output


def test_ids_are_escaped_for_each_destinations_markup(tmp_path: Path) -> None:
    doc = str(_write(tmp_path, _anomalies(HOSTILE)))
    args = [
        "notify",
        "--to",
        "slack",
        "--dry-run",
        "--result",
        doc,
        "--command",
        f"finops anomalies --where team={HOSTILE}",
    ]
    slack = json.loads(runner.invoke(app, args).stdout)
    texts = [slack["blocks"][1]["text"]] + slack["blocks"][-1]["elements"]
    assert texts[0]["type"] == "plain_text" and HOSTILE in texts[0]["text"]  # no markup parsed in plain_text
    (context,) = [t["text"] for t in texts if t["type"] == "mrkdwn"]
    assert "<!channel>" not in context and "&lt;!channel&gt;" in context and "&amp;" in context
    hook = json.loads(runner.invoke(app, ["notify", "--to", "webhook", "--dry-run", "--result", doc]).stdout)
    assert HOSTILE in hook["lines"][0]  # JSON carries the id as it is


@pytest.mark.parametrize(
    ("doc", "headline"),
    [
        ({"passed": False, "rules": [{"name": "max-increase-pct", "passed": False}], "planned_cost": 120.0,
          "baseline_cost": 100.0, "delta": 20.0, "delta_pct": 20.0, "currency": "USD",
          "horizon": {"start": "2026-10-01"}}, "Cost gate FAILED: planned $120.00 vs $100.00 ($20.00, +20.0 %)"),
        ({"currency": "USD", "totals": {"planned_cost": 80.0, "baseline_cost": 100.0, "savings": 20.0,
          "savings_pct": 20.0}, "allocations": []}, "Plan saves $20.00 (20.0 %): $80.00 planned vs $100.00 baseline"),
    ],
)  # fmt: skip
def test_gate_and_plan_results_can_be_sent(doc: dict, headline: str) -> None:
    out = notify(doc, "webhook", dry_run=True)
    assert out.payloads[0]["headline"] == headline


def test_retry_after_reads_seconds_and_http_dates() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 10, 20, 12, 0, 0, tzinfo=UTC)
    assert retry_after({"Retry-After": "12"}, now) == 12.0
    assert retry_after({"retry-after": "Tue, 20 Oct 2026 12:00:30 GMT"}, now) == 30.0
    assert retry_after({"Retry-After": "soon"}, now) is None and retry_after({}, now) is None
