"""A generic JSON webhook, signed: ``X-Finops-Signature: sha256=<hex>``, the HMAC-SHA256 of
``<X-Finops-Timestamp>.<body>`` under the shared secret (``FINOPS_WEBHOOK_SECRET``), as Stripe and GitHub sign
theirs; ``Idempotency-Key`` is the result's fingerprint, so a receiver can drop a repeat. The URL comes from
``FINOPS_WEBHOOK_URL`` (or ``--url``: an address is not a secret)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from finops_cli.alerts.notify.message import Message
from finops_cli.alerts.notify.transport import Policy, post_json

NAME = "webhook"
SECRET_ENV = "FINOPS_WEBHOOK_SECRET"
URL_ENV = "FINOPS_WEBHOOK_URL"


def payloads(message: Message) -> list[dict[str, Any]]:
    return [{
        "finops_version": 1,
        "kind": message.kind,
        "id": message.key,
        "headline": message.headline,
        "lines": message.lines,
        "alerting": message.alerting,
        "items": [{"key": i.key, "title": i.title, "active": i.active, "severity": i.severity} for i in message.items],
        "command": message.command,
        "link": message.link,
    }]  # fmt: skip


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=`` + hex HMAC-SHA256 of ``timestamp.body``: what a receiver recomputes and compares."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def send(payload: dict[str, Any], secret: str, policy: Policy, url: str, now: float | None = None) -> int:
    body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    stamp = str(int(time.time() if now is None else now))
    headers = {
        "X-Finops-Timestamp": stamp,
        "X-Finops-Signature": signature(secret, stamp, body),
        "Idempotency-Key": str(payload["id"]),
    }
    return post_json(url, body, headers, policy, "webhook", [secret, url])
