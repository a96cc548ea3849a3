"""The judge's answer parser (processors/judge/parse.py): what each server and model writes."""

from __future__ import annotations

import pytest

from otelbench.processors.judge.parse import UnusableAnswer, parse_answer, to_score


@pytest.mark.parametrize("text, score, method", [
    ('{"grade": 4, "reasoning": "right"}', 0.75, "json"),
    ('{"reasoning": "wrong number", "grade": 1}', 0.0, "json"),
    ('```json\n{"grade": 5, "reasoning": "ok",}\n```', 1.0, "json"),  # fence and trailing comma
    ('Sure! Here is my verdict: {"grade": "3", "reasoning": "half"} Hope it helps.', 0.5, "json"),
    ('{"score": 0.8, "explanation": "hosted models write fractions"}', 0.8, "json"),
    ('{"grade": "8/10", "reasoning": "x"}', 0.8, "json"),
    ("Grade: 4/5. The answer is right.", 0.75, "text"),
    ("The score is 2", 0.25, "text"),
    ("I would say 7/10 overall.", 0.7, "text"),
    ("5", 1.0, "text"),
    ('{"grade": 4, "reasoning": "cut sho', 0.75, "text"),  # an answer cut at max_tokens
])
def test_reads_grades(text: str, score: float, method: str) -> None:
    parsed = parse_answer(text)
    assert parsed.score == pytest.approx(score)
    assert parsed.method == method


def test_reasoning_is_kept() -> None:
    assert parse_answer('{"grade": 2, "reasoning": "  says 381, not 391 "}').reasoning == "says 381, not 391"


@pytest.mark.parametrize("text", ["", "   ", "I cannot grade this.", '{"grade": 9, "reasoning": "x"}',
                                  '{"grade": true}', '{"reasoning": "no grade"}', "grade: 0/0"])
def test_unusable_answers_keep_the_raw_text(text: str) -> None:
    with pytest.raises(UnusableAnswer) as info:
        parse_answer(text)
    assert info.value.raw == text


def test_to_score_scales() -> None:
    assert to_score(1) == 0.0 and to_score(5) == 1.0
    assert to_score(3, 5) == 0.5 and to_score(50, 100) == 0.5
    assert to_score(0.3, written="0.3") == pytest.approx(0.3)
    assert to_score(7) is None  # no scale: 7 is neither a grade nor a fraction
    assert to_score(11, 10) is None
