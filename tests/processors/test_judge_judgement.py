"""One run's judgement without I/O (processors/judge/judgement.py): grades read from an
answer, the judge's own answer, and how the parts make the score."""

from __future__ import annotations

import math

import pytest

from otelbench.processors.judge.endpoint import Completion
from otelbench.processors.judge.judgement import (RunText, agreement_of, combine, explain, read_grade, reference_text,
                                        run_text)
from otelbench.processors.judge.parse import UnusableAnswer
from otelbench.processors.judge.reference import Agreement
from otelbench.processors.judge.signals import read_signals

ln = math.log


def answer(content: str, tokens: tuple[str, ...] = (), tops: tuple = ()) -> Completion:
    return Completion(content, tokens, tops, 10, 5, "stop", "json_object", 1)


def test_grade_by_logprobs_where_they_came_back() -> None:
    tokens = ("{", '"grade', '":', " ", "4", ",", ' "reasoning": "ok"}')
    tops = tuple([("x", 0.0)] for _ in tokens[:4]) + ([("4", ln(0.5)), ("2", ln(0.5))],) + \
        tuple([("x", 0.0)] for _ in tokens[5:])
    grade = read_grade(answer('{"grade": 4, "reasoning": "ok"}', tokens, tops))
    assert grade.method == "logprobs" and grade.score == pytest.approx(0.5) and grade.reasoning == "ok"
    plain = read_grade(answer('{"grade": 4, "reasoning": "ok"}'))
    assert plain.method == "json" and plain.score == 0.75


def test_unusable_without_logprobs_or_grade() -> None:
    with pytest.raises(UnusableAnswer):
        read_grade(answer("no idea"))


def test_reference_text() -> None:
    assert reference_text(answer("ANSWER: 17 * 23\nTASK: next")) == "17 * 23"
    assert reference_text(answer("TASK: What is the maximum number of people?")) is None
    assert reference_text(answer('{"city": "Lisbon",\n "date": "May 14"}')) == '{"city": "Lisbon",\n "date": "May 14"}'
    assert reference_text(None) is None


def test_combine_weights_and_caps() -> None:
    ok = read_signals("ok", "391")
    assert combine(0.5, None, ok) == 0.5
    assert combine(0.5, Agreement(1.0, "number", ""), ok) == pytest.approx(0.75)
    assert combine(1.0, Agreement(0.0, "number", ""), ok) == pytest.approx(0.5)
    assert combine(1.0, Agreement(1.0, "number", ""), read_signals("error", "x")) == 0.2


def test_run_text_reads_messages_and_cuts_to_the_budget() -> None:
    row = {"input": '[{"role":"user","parts":[{"type":"text","content":"What is 2+2?"}]}]',
           "output": '[{"role":"assistant","parts":[{"type":"text","content":"' + "4 " * 3000 + '"}]}]',
           "status": "ok", "tool_summary": None, "error_summary": None}
    run = run_text(row, 200)
    assert run.task == "What is 2+2?" and run.truncated and "characters cut" in run.output
    assert run.tools == "(none)" and run.tool_results == ""
    assert not run_text(row | {"output": None}, 200).truncated


def test_agreement_and_explanation() -> None:
    run = RunText("What is 17 × 23?", "17 × 23 = 381.", "(none)", "(none)", False, read_signals("ok", "381"))
    agreed = agreement_of(run, "17 * 23")
    assert agreed is not None and agreed.value == 0.0 and "391" in agreed.detail
    grade = read_grade(answer('{"grade": 5, "reasoning": "looks right"}'))
    text = explain(grade, "17 * 23", agreed, run.signals)
    assert text.startswith("looks right") and "Judge's own answer: 17 * 23" in text
    empty = RunText("t", "(none)", "(none)", "(none)", False, read_signals("ok", ""))
    assert agreement_of(empty, "4") is None
    # SmolLM2 copies the prompt's placeholder as its reasoning: said so, not shown as a reason
    echoed = read_grade(answer('{"grade": 4, "reasoning": "<one short sentence>"}'))
    assert explain(echoed, None, None, run.signals).startswith("(no reasoning given: the judge copied")


@pytest.mark.parametrize("text, value", [
    ("17 × 23 = 349", 391.0),  # the expression, not the small model's result
    ("15% of 240 is 0.15 * 240 = 32", 36.0),
    ("The average of 12, 15 and 21 is (12 + 15 + 21) / 3 = 18", 16.0),
    ("2 to the power of 10 is 2^10 = 1024.", 1024.0),
    ("1,234 * 56", 69104.0),
    ("Canberra", None),
    ("2024-03-05", None),
    ("3.5 hours is 120 minutes", None),
    ("2 ** 100000", None),
])
def test_evaluate_prefers_the_written_computation(text: str, value: float | None) -> None:
    from otelbench.processors.judge.reference import evaluate

    assert evaluate(text) == value
