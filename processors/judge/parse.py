"""Tolerant parsing of a judge's answer: JSON when it is JSON, a grade in words otherwise.

Servers differ (docs/judge.md): OpenAI and vLLM enforce a JSON schema, llama.cpp a JSON
grammar, LM Studio and Ollama sometimes, and small models wrap JSON in code fences, add a
preamble, leave a trailing comma, or answer "Grade: 4/5". ``parse_answer`` reads, in
order:

1. a JSON object — the whole text, else the first balanced ``{…}`` in it, after code
   fences are stripped and trailing commas dropped — with a ``grade`` (or ``score``) and a
   ``reasoning`` (or ``explanation``/``reason``) → method ``json``;
2. a grade in words — ``grade: 4``, ``Score = 4/5``, ``8/10``, or an answer that is only a
   digit → method ``text``.

A grade on the 1–5 scale maps onto [0, 1] as (grade − 1) / 4; ``n/10`` or ``n/100`` as n
over its scale; a fraction already in [0, 1] with a decimal point (a hosted model writing
``"score": 0.8``) is kept. Anything else raises ``UnusableAnswer``: the caller stores the
raw text as a judge error, never a guessed score.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

GRADE_KEYS = ("grade", "score", "rating")
REASON_KEYS = ("reasoning", "explanation", "reason", "rationale")
MAX_REASONING_CHARS = 2000

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_IN_WORDS = re.compile(
    r"\b(?:grade|score|rating)\b\W{0,3}(?:is|of|=|:)?\s*\**\s*(\d+(?:\.\d+)?)\s*(?:/\s*(\d+))?", re.IGNORECASE
)
_FRACTION = re.compile(r"\b(\d+(?:\.\d+)?)\s*/\s*(5|10|100)\b")
_ONLY_NUMBER = re.compile(r"^\W*(\d+(?:\.\d+)?)\W*$")


_TEMPLATE_SLOT = re.compile(r"^\s*<[^<>]*>\s*$")


def is_template_slot(text: str) -> bool:
    """Whether a judge's "reasoning" is its prompt's placeholder copied (``<one short
    sentence>``, as small models write), not a reason."""
    return bool(_TEMPLATE_SLOT.match(text))


class UnusableAnswer(ValueError):
    """The answer holds no grade the judge can read; ``raw`` is what the model said."""

    def __init__(self, reason: str, raw: str) -> None:
        super().__init__(reason)
        self.raw = raw


@dataclass(frozen=True)
class Parsed:
    score: float  # in [0, 1]
    reasoning: str
    method: str  # "json" | "text"
    grade: str  # the grade as written, e.g. "4", "0.8", "8/10"


def to_score(value: float, scale: float | None = None, *, written: str = "") -> float | None:
    """A written grade onto [0, 1]: ``n/scale`` when a scale is given, a 1–5 grade, or a
    decimal fraction in [0, 1]; None when it fits none of them."""
    if scale is not None:
        if scale <= 0 or not 0 <= value <= scale:
            return None
        if scale == 5:
            return None if value < 1 else (value - 1) / 4
        return value / scale
    if value == int(value) and 1 <= value <= 5:
        return (value - 1) / 4
    if "." in written and 0.0 <= value <= 1.0:
        return value
    if value == 0:
        return 0.0
    return None


def _objects(text: str) -> list[str]:
    """Candidate JSON object texts: fenced blocks first, then balanced ``{…}`` spans."""
    found = [m.group(1).strip() for m in _FENCE.finditer(text)]
    depth, start, quoted, escaped = 0, -1, False, False
    for i, ch in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
            continue
        if ch == '"' and depth > 0:
            quoted = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                found.append(text[start : i + 1])
    return [text.strip(), *found]


def _load(candidate: str) -> dict[str, Any] | None:
    for attempt in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
        try:
            value = json.loads(attempt)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _from_json(obj: dict[str, Any]) -> Parsed | None:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    grade = next((lowered[k] for k in GRADE_KEYS if k in lowered), None)
    reasoning = next((lowered[k] for k in REASON_KEYS if isinstance(lowered.get(k), str)), "")
    if isinstance(grade, bool) or grade is None:
        return None
    written = str(grade).strip()
    if isinstance(grade, str):
        words = _FRACTION.search(written)
        if words:
            score = to_score(float(words.group(1)), float(words.group(2)))
        else:
            only = _ONLY_NUMBER.match(written)
            score = to_score(float(only.group(1)), written=only.group(1)) if only else None
    elif isinstance(grade, (int, float)):
        score = to_score(float(grade), written=written)
    else:
        return None
    if score is None:
        return None
    return Parsed(score, reasoning.strip()[:MAX_REASONING_CHARS], "json", written)


def _from_text(text: str) -> Parsed | None:
    match = _IN_WORDS.search(text)
    if match:
        scale = float(match.group(2)) if match.group(2) else None
        score = to_score(float(match.group(1)), scale, written=match.group(1))
        written = match.group(1) + (f"/{match.group(2)}" if match.group(2) else "")
    elif (fraction := _FRACTION.search(text)) is not None:
        score = to_score(float(fraction.group(1)), float(fraction.group(2)))
        written = fraction.group(0)
    elif (only := _ONLY_NUMBER.match(text)) is not None:
        score = to_score(float(only.group(1)), written=only.group(1))
        written = only.group(1)
    else:
        return None
    if score is None:
        return None
    return Parsed(score, text.strip()[:MAX_REASONING_CHARS], "text", written)


def parse_answer(text: str | None) -> Parsed:
    """The grade and reasoning in a judge's answer, or ``UnusableAnswer``."""
    raw = text or ""
    if not raw.strip():
        raise UnusableAnswer("empty answer", raw)
    for candidate in _objects(raw):
        obj = _load(candidate)
        if obj is not None:
            parsed = _from_json(obj)
            if parsed is not None:
                return parsed
    parsed = _from_text(raw)
    if parsed is None:
        raise UnusableAnswer("no grade in the answer", raw)
    return parsed
