"""When and how long the judge waits before sending a request again (processors/judge/retry.py)."""

from __future__ import annotations

import random

import httpx
import openai
import pytest

from otelbench.processors.judge.retry import RetryPolicy, retry_after_s, retryable

REQUEST = httpx.Request("POST", "http://judge.test/v1/chat/completions")


def status_error(code: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    response = httpx.Response(code, headers=headers or {}, request=REQUEST)
    cls = {429: openai.RateLimitError, 400: openai.BadRequestError, 500: openai.InternalServerError}.get(
        code, openai.APIStatusError)
    return cls("failed", response=response, body=None)


def test_what_is_retried() -> None:
    assert retryable(status_error(429)) and retryable(status_error(500)) and retryable(status_error(503))
    assert retryable(openai.APIConnectionError(request=REQUEST))
    assert retryable(openai.APITimeoutError(request=REQUEST))
    assert not retryable(status_error(400)) and not retryable(status_error(422))
    assert not retryable(ValueError("not a request error"))


def test_backoff_grows_with_jitter_and_a_cap() -> None:
    slept: list[float] = []
    policy = RetryPolicy(tries=6, base_s=1.0, max_s=4.0, sleep=slept.append, rng=random.Random(7))
    for retry in range(1, 6):
        policy.wait(retry)
    steps = [1.0, 2.0, 4.0, 4.0, 4.0]
    assert all(step / 2 <= s <= step for s, step in zip(slept, steps)), slept
    assert len(set(slept)) == len(slept)  # jittered, not lock-step


def test_retry_after_is_honoured_up_to_a_limit() -> None:
    policy = RetryPolicy(base_s=0.1, max_s=0.2, max_retry_after_s=5.0, sleep=lambda s: None, rng=random.Random(1))
    assert policy.delay(1, status_error(429, {"retry-after": "3"})) == pytest.approx(3.0)
    assert policy.delay(1, status_error(429, {"retry-after": "600"})) == pytest.approx(5.0)
    assert retry_after_s(status_error(429, {"retry-after-ms": "250"})) == pytest.approx(0.25)
    assert retry_after_s(status_error(429, {"retry-after": "soon"})) is None
    assert policy.delay(1, status_error(500)) <= 0.1


def test_bad_policies() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(tries=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_s=2, max_s=1)
