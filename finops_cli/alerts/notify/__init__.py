"""Deliver a finops result to Slack, PagerDuty, Microsoft Teams or a signed JSON webhook.

One module per destination builds that destination's payloads from one :class:`~.message.Message` and sends
them (:mod:`.slack`, :mod:`.pagerduty`, :mod:`.teams`, :mod:`.webhook`); :mod:`.transport` bounds the time
and retries. Secrets (webhook URLs, routing keys, tokens, signing keys) come from environment variables or a
file, never from the command line, and never appear in output or errors. A payload sent successfully is
recorded in a small ledger, so the same result sent twice is delivered once; a run that fails part-way says
which payloads went and which did not.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from finops_cli.alerts.notify import pagerduty, slack, teams, webhook
from finops_cli.alerts.notify.message import Message, message_of
from finops_cli.alerts.notify.transport import NotDelivered, Policy, Rejected
from finops_cli.errors import FinopsError, InputError

DESTINATIONS = ("slack", "pagerduty", "teams", "webhook")
LEDGER_ENV = "FINOPS_NOTIFY_LEDGER"
#: entries the ledger keeps (oldest dropped first)
LEDGER_SIZE = 2000


@dataclass
class Outcome:
    """What ``notify`` did: the payloads (secrets as placeholders), how many went, how many were repeats."""

    destination: str
    message: Message
    payloads: list[dict[str, Any]]
    sent: int = 0
    repeats: int = 0
    attempts: list[int] = field(default_factory=list)


def default_ledger(env: Mapping[str, str] = os.environ) -> Path:
    """``$FINOPS_NOTIFY_LEDGER``, else ``$XDG_STATE_HOME/finops/notify-sent.json`` (``~/.local/state``)."""
    if env.get(LEDGER_ENV):
        return Path(env[LEDGER_ENV])
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "finops" / "notify-sent.json"


def _read_ledger(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        raise InputError("not a readable notify ledger (delete it to start afresh)", path=path) from None
    return [str(k) for k in data.get("sent", [])] if isinstance(data, dict) else []


def _write_ledger(path: Path, keys: list[str]) -> None:
    from finops_cli.atomic import write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({"sent": keys[-LEDGER_SIZE:]}, indent=0) + "\n", output=False)


def read_secret(env_name: str, secret_file: Path | None, env: Mapping[str, str] = os.environ) -> str:
    """The secret from ``secret_file`` (its first line) or ``$env_name``; a clear error naming both if neither."""
    if secret_file is not None:
        from finops_cli.files import read_text

        text = read_text(secret_file, kind="a secret file").strip().splitlines()
        if not text or not text[0].strip():
            raise InputError("the secret file is empty", path=secret_file)
        return text[0].strip()
    value = (env.get(env_name) or "").strip()
    if not value:
        raise InputError(
            f"no secret: set ${env_name} or pass `secret_file` FILE (never on the command line)",
            mentions=("secret_file",),
        )
    return value


def _check_url(url: str, source: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{source} is not an http(s) URL", mentions=("url",))
    return url


def payloads_for(destination: str, message: Message, *, channel: str | None = None) -> list[dict[str, Any]]:
    """The destination's payloads for ``message`` (secrets as placeholders: what ``--dry-run`` prints)."""
    if destination == "slack":
        return slack.payloads(message, channel)
    if destination == "pagerduty":
        return pagerduty.payloads(message)
    if destination == "teams":
        return teams.payloads(message)
    if destination == "webhook":
        return webhook.payloads(message)
    raise InputError(f"{destination!r}: expected one of {', '.join(DESTINATIONS)}", param="destination")


def notify(
    doc: dict[str, Any],
    destination: str,
    *,
    dry_run: bool = False,
    command: str | None = None,
    link: str | None = None,
    channel: str | None = None,
    url: str | None = None,
    secret_file: Path | None = None,
    policy: Policy | None = None,
    ledger: Path | None = None,
    force: bool = False,
    env: Mapping[str, str] = os.environ,
) -> Outcome:
    """Send the result ``doc`` (a ``--format json`` document) to ``destination``; with ``dry_run`` only build the
    payloads. ``ledger``: where sent payloads are recorded (default :func:`default_ledger`); ``force`` sends
    a repeat anyway."""
    message = message_of(doc, command=command, link=link)
    outcome = Outcome(destination, message, payloads_for(destination, message, channel=channel))
    if dry_run:
        return outcome
    policy = policy or Policy()
    send: Callable[[dict[str, Any]], int]
    if destination == "slack":
        secret = read_secret(slack.TOKEN_ENV if channel else slack.SECRET_ENV, secret_file, env)
        if not channel:
            _check_url(secret, f"${slack.SECRET_ENV}")
        api = env.get(slack.API_URL_ENV) or None
        send = lambda p: slack.send(p, secret, policy, api)  # noqa: E731
    elif destination == "pagerduty":
        secret = read_secret(pagerduty.SECRET_ENV, secret_file, env)
        events = _check_url(env.get(pagerduty.URL_ENV) or pagerduty.EVENTS_URL, f"${pagerduty.URL_ENV}")
        send = lambda p: pagerduty.send(p, secret, policy, events)  # noqa: E731
    elif destination == "teams":
        secret = _check_url(read_secret(teams.SECRET_ENV, secret_file, env), f"${teams.SECRET_ENV}")
        send = lambda p: teams.send(p, secret, policy)  # noqa: E731
    else:
        secret = read_secret(webhook.SECRET_ENV, secret_file, env)
        target = _check_url(url or env.get(webhook.URL_ENV) or "", f"`url` or ${webhook.URL_ENV}")
        send = lambda p: webhook.send(p, secret, policy, target)  # noqa: E731
    path = ledger or default_ledger()  # where, not a secret: always this process's environment
    seen = _read_ledger(path)
    done: list[str] = []
    where = hashlib.sha256(f"{secret}\n{url or ''}\n{channel or ''}".encode()).digest()  # another hook: not a repeat
    try:
        for payload in outcome.payloads:
            body = where + json.dumps(payload, sort_keys=True).encode()
            key = destination + ":" + hashlib.sha256(body).hexdigest()[:32]
            if key in seen and not force:
                outcome.repeats += 1
                continue
            outcome.attempts.append(send(payload))
            outcome.sent += 1
            done.append(key)
    except (Rejected, NotDelivered) as exc:
        total = len(outcome.payloads)
        if total > 1:
            exc.args = (f"{exc} (sent {outcome.sent} of {total} payloads; the rest were not sent)",)
        raise
    except FinopsError:
        raise
    except Exception as exc:  # a library's surprise: its text may hold the URL or key, so only its scrubbed gist
        from finops_cli.alerts.notify.transport import scrub

        raise NotDelivered(
            f"{destination}: not delivered ({type(exc).__name__}: {scrub(str(exc), [secret])}; "
            f"sent {outcome.sent} of {len(outcome.payloads)} payloads)"
        ) from None
    finally:
        if done:
            _write_ledger(path, [k for k in seen if k not in done] + done)
    return outcome
