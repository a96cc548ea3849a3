"""A score from the probabilities of the grade tokens, not from the one token sampled.

Where the server returns token logprobs, the judge reads, at the position where the
model writes its grade, the probability of each grade token among the top alternatives,
and takes the expected value over the grades::

    score = Σ p(g) · value(g) / Σ p(g)        over the grade tokens g in the top-k

A model that writes "4" while giving "2" a 40 % chance scores lower than one sure of its
"4": the number is calibrated by the model's own uncertainty (G-Eval, Liu et al. 2023,
https://arxiv.org/abs/2303.16634, section 2.3). Token spellings are merged: " 4", "4" and
"4\\n" are one grade, "Yes"/" yes"/"YES" one answer. ``mass`` is Σ p(g) — how much of the
model's probability went to some grade at all; below ``MIN_MASS`` the reading is not
trusted and the parsed answer is used instead (the method says which).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TopLogprobs = Sequence[tuple[str, float]]  # one position: (token text, natural-log probability)

MIN_MASS = 0.05  # less than this on the grade tokens: the model was writing something else

# 1–5, as the rubric words it (processors/prompts/judge-run.txt), onto [0, 1]
GRADES_1_5: Mapping[str, float] = {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}
YES_NO: Mapping[str, float] = {"yes": 1.0, "no": 0.0}

_EDGE = re.compile(r"^[\s\"'`*.:,(\[]+|[\s\"'`*.:,)\]]+$")


def token_key(token: str) -> str:
    """How a token spelling maps onto a grade: no surrounding blanks, quotes or
    punctuation, lower case (``' "4'`` → ``4``, ``'Yes'`` → ``yes``)."""
    return _EDGE.sub("", token).lower()


@dataclass(frozen=True)
class Reading:
    score: float  # expected value over the grades, in [0, 1]
    mass: float  # total probability on grade tokens at that position, in [0, 1]
    probabilities: dict[str, float]  # grade → probability renormalized over the grades

    @property
    def trusted(self) -> bool:
        return self.mass >= MIN_MASS


def read_scale(top: TopLogprobs, scale: Mapping[str, float]) -> Reading | None:
    """The expected grade at one position; None when no top token is a grade."""
    mass: dict[str, float] = {}
    for token, logprob in top:
        key = token_key(token)
        if key in scale and logprob is not None and math.isfinite(logprob):
            mass[key] = mass.get(key, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    probabilities = {k: p / total for k, p in mass.items()}
    score = sum(p * scale[k] for k, p in probabilities.items())
    return Reading(min(1.0, max(0.0, score)), min(1.0, total), probabilities)


def grade_position(tokens: Sequence[str], scale: Mapping[str, float], after: re.Pattern[str] | None = None) -> int | None:
    """The index of the token that writes the grade: the first token whose key is a grade,
    after the end of the first match of ``after`` in the generated text (e.g. the
    ``"grade":`` of a JSON answer), or from the start when ``after`` is None."""
    start = 0
    if after is not None:
        match = after.search("".join(tokens))
        if match is None:
            return None
        start = match.end()
    offset = 0
    for i, token in enumerate(tokens):
        offset += len(token)
        if offset <= start:
            continue
        key = token_key(token)
        if key:  # the first token with content after the key: the grade, or no grade there
            return i if key in scale else None
    return None


def read_answer(tokens: Sequence[str], tops: Sequence[TopLogprobs], scale: Mapping[str, float],
                after: re.Pattern[str] | None = None) -> Reading | None:
    """The reading at the grade's position in a generated answer, if there is one."""
    if len(tokens) != len(tops):
        return None
    i = grade_position(tokens, scale, after)
    return None if i is None else read_scale(tops[i], scale)
