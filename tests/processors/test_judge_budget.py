"""Token estimates and truncation to the judge's budget (processors/judge/budget.py)."""

from __future__ import annotations

from otelbench.processors.judge.budget import cut_middle, estimate_tokens, fit


def test_estimates_count_digits_and_punctuation() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("hello world") == 2
    assert estimate_tokens("12345") == 5  # one token a digit
    assert estimate_tokens('{"a": 1}') >= 6
    assert estimate_tokens("internationalization") == 1 + (20 - 1) // 5


def test_cut_middle_keeps_both_ends() -> None:
    text = "QUESTION " + "filler words here " * 300 + " CONCLUSION"
    cut = cut_middle(text, 60)
    assert estimate_tokens(cut) <= 60
    assert cut.startswith("QUESTION") and cut.endswith("CONCLUSION")
    assert "characters cut" in cut
    assert cut_middle("short", 60) == "short"


def test_fit_keeps_short_fields_whole() -> None:
    fields = {"task": "What is 2+2?", "output": "four " * 2000, "tools": "calc(2+2) → ok: 4"}
    out, truncated = fit(fields, 200)
    assert truncated
    assert out["task"] == fields["task"] and out["tools"] == fields["tools"]
    assert sum(estimate_tokens(v) for v in out.values()) <= 200
    same, cut = fit({"task": "a", "output": "b"}, 200)
    assert same == {"task": "a", "output": "b"} and not cut
