"""Delivery with bounded time: a timeout per attempt, retries with exponential backoff on 429 and 5xx (honouring
``Retry-After``), and errors that never show a URL or a secret.

A 2xx is delivered. 429, 5xx, a timeout or a dropped connection is retried up to ``attempts`` times, then
:class:`NotDelivered` (exit 1). Any other status is the destination refusing the payload: :class:`Rejected`
(exit 2), at once, since sending it again cannot help.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from finops_cli.adapters.public_http import retry_after
from finops_cli.errors import EXIT_GATE_FAILED, EXIT_INVALID_INPUT, FinopsError
from finops_cli.text import one_line


class Rejected(FinopsError):
    """The destination refused the payload (HTTP 4xx other than 429): exit 2."""

    exit_code = EXIT_INVALID_INPUT


class NotDelivered(FinopsError):
    """Retries ran out (timeouts, 429, 5xx, connection errors): exit 1."""

    exit_code = EXIT_GATE_FAILED


class Retry(Exception):
    """One attempt failed in a way worth retrying; ``wait``: what the destination asked for (Retry-After)."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.wait = reason, wait


@dataclass(frozen=True)
class Policy:
    """Seconds per attempt, attempts, first backoff (doubling), the longest wait honoured, and the sleep."""

    timeout: float = 10.0
    attempts: int = 4
    backoff: float = 1.0
    max_wait: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: str


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` on one line with every secret (URL, key, token) replaced by ``***``."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return one_line(text, 200)


def classify(reply: Reply, what: str, secrets: Sequence[str]) -> None:
    """Return on 2xx; raise :class:`Retry` on 429/5xx, :class:`Rejected` otherwise."""
    if 200 <= reply.status < 300:
        return
    if reply.status == 429 or reply.status >= 500:
        raise Retry(f"HTTP {reply.status}", retry_after(reply.headers))
    detail = scrub(reply.body, secrets)
    raise Rejected(f"{what} rejected the payload: HTTP {reply.status}" + (f": {detail}" if detail else ""))


def deliver(attempt: Callable[[], None], policy: Policy, what: str) -> int:
    """Run ``attempt`` (which raises :class:`Retry` or :class:`Rejected`) until it succeeds; the attempts it took."""
    reason = "no attempt"
    for n in range(1, max(1, policy.attempts) + 1):
        try:
            attempt()
            return n
        except Retry as exc:
            reason = exc.reason
            if n == policy.attempts:
                break
            wait = exc.wait if exc.wait is not None else policy.backoff * 2 ** (n - 1)
            policy.sleep(min(wait, policy.max_wait))
    raise NotDelivered(f"{what}: not delivered after {policy.attempts} attempts (last: {reason})")


def post_json(
    url: str, body: bytes, headers: Mapping[str, str], policy: Policy, what: str, secrets: Sequence[str]
) -> int:
    """POST ``body`` (JSON) to ``url`` with httpx under ``policy``; the attempts it took."""
    import httpx

    def attempt() -> None:
        try:
            with httpx.Client(timeout=policy.timeout, follow_redirects=False) as client:
                r = client.post(url, content=body, headers={"Content-Type": "application/json", **headers})
        except httpx.TimeoutException:
            raise Retry(f"no answer within {policy.timeout:g} s") from None
        except httpx.TransportError as exc:
            raise Retry(f"connection failed ({type(exc).__name__})") from None
        classify(Reply(r.status_code, dict(r.headers), r.text), what, secrets)

    return deliver(attempt, policy, what)
