"""PagerDuty Events API v2: one event per budget, anomaly or gate verdict, ``trigger`` while it holds and
``resolve`` once it no longer does, each with a stable ``dedup_key`` so repeats update one incident
(``FINOPS_PAGERDUTY_ROUTING_KEY``; the integration key of an Events API v2 service)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from finops_cli.alerts.notify.message import Message
from finops_cli.alerts.notify.transport import Policy, post_json

NAME = "pagerduty"
SECRET_ENV = "FINOPS_PAGERDUTY_ROUTING_KEY"
URL_ENV = "FINOPS_PAGERDUTY_EVENTS_URL"
EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
#: Events API v2 limits: summary 1,024 characters, dedup_key 255
_SUMMARY, _DEDUP = 1024, 255
ROUTING_KEY_PLACEHOLDER = f"${{{SECRET_ENV}}}"


def _dedup(key: str) -> str:
    return key if len(key) <= _DEDUP else key[:200] + "/" + hashlib.sha256(key.encode()).hexdigest()[:32]


def payloads(message: Message, routing_key: str = ROUTING_KEY_PLACEHOLDER) -> list[dict[str, Any]]:
    """The events: one per item; a result without items (savings, a plan) is one ``info`` event keyed by the
    result itself."""
    link = [{"href": message.link, "text": "details"}] if message.link else []
    events = []
    items = message.items or []
    for item in items:
        event: dict[str, Any] = {
            "routing_key": routing_key,
            "event_action": "trigger" if item.active else "resolve",
            "dedup_key": _dedup(item.key),
        }
        if item.active:
            event["payload"] = {
                "summary": item.title[:_SUMMARY],
                "source": "finops",
                "severity": item.severity,
                "component": message.kind,
                "group": "finops",
                "class": message.kind.removeprefix("finops."),
                "custom_details": {"reproduce": message.command, **json.loads(json.dumps(item.details, default=str))},
            }
            event["links"] = link
        events.append(event)
    if not items:
        events.append({
            "routing_key": routing_key,
            "event_action": "trigger",
            "dedup_key": _dedup(f"finops/{message.kind}/{message.key}"),
            "payload": {
                "summary": message.headline[:_SUMMARY], "source": "finops", "severity": "info",
                "component": message.kind, "group": "finops", "class": message.kind.removeprefix("finops."),
                "custom_details": {"reproduce": message.command, "facts": message.lines},
            },
            "links": link,
        })  # fmt: skip
    return events


def send(payload: dict[str, Any], secret: str, policy: Policy, url: str | None = None) -> int:
    body = json.dumps({**payload, "routing_key": secret}, separators=(",", ":")).encode()
    return post_json(url or EVENTS_URL, body, {}, policy, "PagerDuty", [secret])
