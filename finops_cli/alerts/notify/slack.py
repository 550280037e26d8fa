"""Slack: an incoming webhook (``FINOPS_SLACK_WEBHOOK_URL``) or the Web API's ``chat.postMessage``
(``FINOPS_SLACK_BOT_TOKEN`` and ``--channel``), both through slack-sdk, with a Block Kit message.

Data travels in ``plain_text`` objects (no markup is parsed in them: an id cannot bold, link or mention);
the ``mrkdwn`` parts (the fallback text, the command line) have ``&``, ``<`` and ``>`` escaped, as Slack's
formatting reference asks.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from finops_cli.alerts.notify.message import Message
from finops_cli.alerts.notify.transport import Policy, Reply, Retry, classify, deliver

NAME = "slack"
SECRET_ENV = "FINOPS_SLACK_WEBHOOK_URL"
TOKEN_ENV = "FINOPS_SLACK_BOT_TOKEN"
API_URL_ENV = "FINOPS_SLACK_API_URL"
#: Block Kit limits: header text 150 characters, section text 3,000
_HEADER, _SECTION = 150, 3000
#: slack-sdk's own log lines name the URL it posts to: they go nowhere
_QUIET = logging.getLogger("finops.alerts.slack-sdk")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def escape(text: str) -> str:
    """Slack ``mrkdwn`` escaping: the three control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def payloads(message: Message, channel: str | None = None) -> list[dict[str, Any]]:
    """One Block Kit message: header (the headline), the facts, then the command (and link) in a context block."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(message.headline, _HEADER)}}
    ]
    if message.lines:
        text = "\n".join(f"• {line}" for line in message.lines)
        blocks.append({"type": "section", "text": {"type": "plain_text", "text": _clip(text, _SECTION)}})
    context = [{"type": "mrkdwn", "text": f"`{escape(message.command)}`"}]
    if message.link:
        context.append({"type": "mrkdwn", "text": f"<{escape(message.link)}|details>"})
    blocks.append({"type": "context", "elements": context})
    body: dict[str, Any] = {"text": escape(message.headline), "blocks": blocks}
    if channel:
        body["channel"] = channel
    return [body]


def send(payload: dict[str, Any], secret: str, policy: Policy, api_url: str | None = None) -> int:
    """Post one payload: to the webhook URL ``secret``, or (with a ``channel``) as the bot token ``secret`` to
    the Web API at ``api_url`` (default Slack's)."""
    timeout = max(1, math.ceil(policy.timeout))  # slack-sdk takes whole seconds
    if "channel" in payload:
        return _send_api(payload, secret, policy, timeout, api_url)
    from slack_sdk.webhook import WebhookClient

    client = WebhookClient(secret, timeout=timeout, retry_handlers=[], logger=_QUIET)

    def attempt() -> None:
        try:
            r = client.send_dict(payload)
        except (TimeoutError, OSError) as exc:  # urllib: socket timeouts and URLError are OSErrors
            raise Retry(f"no answer within {timeout} s" if "timed out" in str(exc) else "connection failed") from None
        classify(Reply(r.status_code, dict(r.headers or {}), str(r.body or "")), "Slack", [secret])

    return deliver(attempt, policy, "Slack")


def _send_api(payload: dict[str, Any], token: str, policy: Policy, timeout: int, api_url: str | None) -> int:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    client = WebClient(
        token=token, base_url=api_url or "https://slack.com/api/", timeout=timeout, retry_handlers=[], logger=_QUIET
    )

    def attempt() -> None:
        try:
            client.chat_postMessage(**payload)
        except SlackApiError as exc:
            r = exc.response
            status = 400 if r.status_code == 200 else r.status_code  # ok: false on a 200 is a refusal
            classify(Reply(status, dict(r.headers or {}), str(r.get("error", ""))), "Slack", [token])
        except (TimeoutError, OSError) as exc:
            raise Retry(f"no answer within {timeout} s" if "timed out" in str(exc) else "connection failed") from None

    return deliver(attempt, policy, "Slack")
