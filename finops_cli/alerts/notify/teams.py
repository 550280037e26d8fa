"""Microsoft Teams: a workflow webhook (Power Automate "When a Teams webhook request is received",
``FINOPS_TEAMS_WEBHOOK_URL``) posting an Adaptive Card 1.4.

Data goes in ``TextBlock`` text, which Teams reads as a Markdown subset and as template functions (``{{DATE(…)}}``):
Markdown's punctuation is backslash-escaped and ``{{`` broken, so an id renders as typed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from finops_cli.alerts.notify.message import Message
from finops_cli.alerts.notify.transport import Policy, post_json

NAME = "teams"
SECRET_ENV = "FINOPS_TEAMS_WEBHOOK_URL"
_INLINE = re.compile(r"([\\`*_\[\]~])")
_LINE_START = re.compile(r"^(\s*)([-+#>]|\d+\.)", re.M)


def escape(text: str) -> str:
    """Backslash-escape what Markdown would format (emphasis, code, links; a list or heading marker starting a
    line) and break ``{{``, the template-function opener."""
    text = _LINE_START.sub(r"\1\\\2", _INLINE.sub(r"\\\1", text))
    return text.replace("{{", "{\u200b{")


def payloads(message: Message) -> list[dict[str, Any]]:
    body: list[dict[str, Any]] = [
        {"type": "TextBlock", "text": escape(message.headline), "weight": "Bolder", "size": "Medium", "wrap": True}
    ]
    body += [
        {"type": "TextBlock", "text": escape(f"• {line}"), "wrap": True, "spacing": "Small"} for line in message.lines
    ]
    body.append({"type": "TextBlock", "text": escape(message.command), "fontType": "Monospace", "isSubtle": True,
                 "wrap": True})  # fmt: skip
    card: dict[str, Any] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    }
    if message.link:
        card["actions"] = [{"type": "Action.OpenUrl", "title": "Details", "url": message.link}]
    return [{
        "type": "message",
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}
        ],
    }]  # fmt: skip


def send(payload: dict[str, Any], secret: str, policy: Policy) -> int:
    return post_json(secret, json.dumps(payload).encode(), {}, policy, "Teams", [secret])
