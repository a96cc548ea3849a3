"""Reading a score from the grade tokens' probabilities (processors/judge/logprobs.py)."""

from __future__ import annotations

import math
import re

import pytest

from otelbench.processors.judge.logprobs import GRADES_1_5, YES_NO, grade_position, read_answer, read_scale, token_key

ln = math.log


def test_expected_grade_over_the_grade_tokens() -> None:
    reading = read_scale([("5", ln(0.6)), ("4", ln(0.3)), ("}", ln(0.05)), ("1", ln(0.05))], GRADES_1_5)
    assert reading is not None
    # renormalized over grades: 5 → 0.6/0.95, 4 → 0.3/0.95, 1 → 0.05/0.95
    assert reading.score == pytest.approx((0.6 * 1.0 + 0.3 * 0.75 + 0.05 * 0.0) / 0.95)
    assert reading.mass == pytest.approx(0.95)
    assert reading.trusted


def test_spellings_merge() -> None:
    reading = read_scale([(" 4", ln(0.25)), ("4", ln(0.25)), ('"2', ln(0.5))], GRADES_1_5)
    assert reading is not None
    assert reading.probabilities == {"4": pytest.approx(0.5), "2": pytest.approx(0.5)}
    assert token_key(" Yes") == "yes" and read_scale([("YES", ln(0.9)), ("no", ln(0.1))], YES_NO).score == \
        pytest.approx(0.9)


def test_no_grade_or_little_mass() -> None:
    assert read_scale([("the", ln(0.9)), ("a", ln(0.1))], GRADES_1_5) is None
    low = read_scale([("the", ln(0.97)), ("3", ln(0.03))], GRADES_1_5)
    assert low is not None and not low.trusted


def test_grade_position_after_the_key() -> None:
    tokens = ["{", '"', "grade", '":', " ", "4", ",", ' "', "reasoning", '":', ' "', "3", " of", '"}']
    after = re.compile(r'grade"?\s*[:=]\s*')
    assert grade_position(tokens, GRADES_1_5, after) == 5
    assert grade_position(tokens, GRADES_1_5, re.compile("nothing")) is None
    # the first token with content after the key is not a grade: no reading, not a later digit
    assert grade_position(["grade", ":", " high", " 3"], GRADES_1_5, after) is None


def test_read_answer_needs_aligned_tops() -> None:
    tokens = ["4"]
    assert read_answer(tokens, [], GRADES_1_5) is None
    reading = read_answer(tokens, [[("4", ln(0.5)), ("5", ln(0.5))]], GRADES_1_5)
    assert reading is not None and reading.score == pytest.approx(0.875)
