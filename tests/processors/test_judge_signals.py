"""A run's own signals cap its score (processors/judge/signals.py)."""

from __future__ import annotations

import pytest

from otelbench.processors.judge.signals import EMPTY_CAP, FAILED_CAP, REFUSAL_CAP, capped, is_refusal, read_signals


@pytest.mark.parametrize("text", [
    "I'm sorry, but I can't help with extracting personal or financial information.",
    "I'm sorry, but as an AI language model I don't have access to real-time weather information.",
    "As an AI, I cannot perform that task.",
    "I can't provide financial information or stock prices. Please consult a licensed financial advisor.",
    "I’m not able to help with that.",
])
def test_refusals(text: str) -> None:
    assert is_refusal(text)


@pytest.mark.parametrize("text", [
    None, "", "The capital of Australia is Canberra.",
    "Paris: 14 °C, light rain. I can't give a forecast beyond today, but " + "details " * 80,
    "Here is the summary. " + "x " * 100 + "I cannot help with the rest.",  # says it late
])
def test_not_refusals(text: str | None) -> None:
    assert not is_refusal(text)


def test_caps() -> None:
    ok = read_signals("ok", "391")
    assert ok.cap is None and capped(0.9, ok) == 0.9
    assert read_signals("error", "partial text", "boom").cap == FAILED_CAP
    assert read_signals("ok", "   ").cap == EMPTY_CAP
    assert read_signals("ok", "As an AI, I cannot perform that task.").cap == REFUSAL_CAP
    both = read_signals("error", None, "timeout")
    assert both.cap == EMPTY_CAP and "timeout" in both.describe()
    assert capped(0.05, read_signals("error", "x")) == 0.05  # a cap never raises a score
