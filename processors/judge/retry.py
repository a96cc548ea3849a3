"""When the judge tries a request again, and how long it waits first.

Retryable: 429 (rate limited), 5xx (the server failed or is overloaded), timeouts and
refused or dropped connections. Permanent: every other 4xx — a bad request stays bad.
Waits grow exponentially with "equal jitter" (half the step fixed, half random), so
concurrent workers that failed together do not come back together
(https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/); a server's
``Retry-After`` is honoured when it asks for longer, up to ``max_retry_after_s``.

The policy owns its ``sleep`` and its random source, so tests pass a recording sleep and
a seeded ``random.Random`` and wait for nothing.

The ``openai`` client retries on its own too (twice, by default): the judge turns that
off for its calls (``client.with_options(max_retries=0)``) so that this policy is the only
one, and its count is the one recorded.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

import openai

DEFAULT_TRIES = 4
DEFAULT_BASE_S = 0.5
DEFAULT_MAX_S = 8.0
DEFAULT_MAX_RETRY_AFTER_S = 60.0


def retryable(exc: BaseException) -> bool:
    """Whether a failed request may succeed when sent again."""
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def retry_after_s(exc: BaseException) -> float | None:
    """The wait a 429/503 answer asked for (``Retry-After``: seconds or an HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    tries: int = DEFAULT_TRIES  # per request, the first one included
    base_s: float = DEFAULT_BASE_S
    max_s: float = DEFAULT_MAX_S
    max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def __post_init__(self) -> None:
        if self.tries < 1:
            raise ValueError(f"tries must be at least 1, not {self.tries}")
        if self.base_s < 0 or self.max_s < self.base_s:
            raise ValueError(f"need 0 <= base_s <= max_s, got {self.base_s}, {self.max_s}")

    def delay(self, retry: int, exc: BaseException | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        step = min(self.max_s, self.base_s * 2 ** (retry - 1))
        wait = step / 2 + self.rng.uniform(0, step / 2)
        asked = retry_after_s(exc) if exc is not None else None
        if asked is not None:
            wait = max(wait, min(asked, self.max_retry_after_s))
        return wait

    def wait(self, retry: int, exc: BaseException | None = None) -> float:
        seconds = self.delay(retry, exc)
        self.sleep(seconds)
        return seconds
