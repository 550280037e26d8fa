"""Public price endpoints over HTTP(S), no credentials: one GET with bounded retries on throttling, and every
failure (offline, an HTTP error, a body cut off mid-way) one :class:`InputError` line, so a caller writes nothing."""

from __future__ import annotations

import http.client
import io
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import IO

from finops_cli.errors import InputError

#: "slow down": 429, or 503 with a ``Retry-After``; retried after it (capped), at most :data:`RETRIES` times
THROTTLED = (429, 503)
RETRIES = 3
MAX_WAIT_S = 30.0
UNTOUCHED = "the pricebook is left as it was"


def short_url(url: str) -> str:
    """Scheme, host, port and path: never the query (filters can be long; tokens never belong in a log line)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


def retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds ``Retry-After`` asks for (delta-seconds or an HTTP date); None when absent or unreadable."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _wait_s(exc: urllib.error.HTTPError) -> float:
    """What ``Retry-After`` asks for, capped; unreadable: the cap; absent: one second."""
    if "Retry-After" not in exc.headers:
        return 1.0
    wait = retry_after(dict(exc.headers.items()))
    return MAX_WAIT_S if wait is None else min(wait, MAX_WAIT_S)


@contextmanager
def open_public(
    url: str, *, what: str, timeout: float, accept: str = "*/*", sleep: Callable[[float], None] = time.sleep
) -> Iterator[IO[bytes]]:
    """The response body of a GET, as a stream. Throttling (429/503) is retried after ``Retry-After``; offline,
    another HTTP error, or throttling that outlasts the retries is one line naming ``what`` and the URL."""
    request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "finops"})
    for attempt in range(RETRIES + 1):
        try:
            response = urllib.request.urlopen(request, timeout=timeout)
            break
        except urllib.error.HTTPError as exc:
            throttled = exc.code == 429 or (exc.code in THROTTLED and "Retry-After" in exc.headers)
            if throttled and attempt < RETRIES:
                sleep(_wait_s(exc))
                continue
            again = f" after {RETRIES} retries" if throttled else ""
            raise InputError(f"{what}: HTTP {exc.code} {exc.reason}{again} ({short_url(url)}); {UNTOUCHED}") from None
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:  # ValueError: a malformed URL
            reason = getattr(exc, "reason", exc)
            raise InputError(
                f"{what}: offline or unreachable: cannot reach {short_url(url)} ({reason}); {UNTOUCHED}"
            ) from None
    with response:
        yield response


def cut_off(what: str, url: str, detail: BaseException | str) -> InputError:
    """A body that ended before its length (or its last chunk) arrived."""
    if isinstance(detail, BaseException):
        detail = type(detail).__name__
    return InputError(f"{what}: the answer was cut off ({detail}, {short_url(url)}); {UNTOUCHED}")


def _check_complete(response: IO[bytes], what: str, url: str) -> None:
    """http.client ends a short body quietly (an empty read): bytes still owed by Content-Length mean a cut."""
    owed = getattr(response, "length", None)
    if owed:
        raise cut_off(what, url, f"{owed:,} bytes of the announced length missing")


#: what reading a body can raise when the connection drops mid-way
READ_ERRORS = (http.client.HTTPException, OSError, TimeoutError)


def read_body(url: str, *, what: str, timeout: float, limit: int, accept: str = "application/json") -> bytes:
    """The whole body (at most ``limit`` bytes, else one line), or one line when it is cut off."""
    with open_public(url, what=what, timeout=timeout, accept=accept) as response:
        try:
            body = response.read(limit + 1)
        except READ_ERRORS as exc:
            raise cut_off(what, url, exc) from None
        if len(body) <= limit:
            _check_complete(response, what, url)
    if len(body) > limit:
        raise InputError(f"{what}: an answer larger than {limit >> 20} MiB ({short_url(url)}); {UNTOUCHED}")
    return body


@contextmanager
def text_lines(url: str, *, what: str, timeout: float) -> Iterator[io.TextIOWrapper]:
    """The body as UTF-8 text read as it arrives (a large file is never held whole)."""
    with open_public(url, what=what, timeout=timeout, accept="text/csv") as response:
        yield io.TextIOWrapper(response, encoding="utf-8-sig", newline="")
        _check_complete(response, what, url)
