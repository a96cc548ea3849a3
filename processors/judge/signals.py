"""What a run says about itself: it failed, it delivered nothing, it refused.

These need no model and no judge's wisdom, and every judge — a 135M model or a hosted
one — would mark such a run down, so they bound the score from above rather than vote:
a failed run scores at most ``FAILED_CAP``, a refusal at most ``REFUSAL_CAP``, an empty
output ``EMPTY_CAP``. A run that got there after a failed tool call (it retried, or
found another way) is not capped: recovering is what a good agent does; the rubric asks
the model to look at it.

Refusals are recognised by English phrasings at the start of a short output ("I'm
sorry, but I can't…", "As an AI language model, I don't have access…"); a long answer
that mentions a limitation on the way is not one. Other languages are left to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FAILED_CAP = 0.2
REFUSAL_CAP = 0.1
EMPTY_CAP = 0.0
REFUSAL_MAX_CHARS = 400  # a refusal is short; a long answer with a caveat is an answer
REFUSAL_WITHIN_CHARS = 120  # and it says so at once

_REFUSAL = re.compile(
    r"\b(?:"
    r"I(?:'m| am) sorry,? but I (?:can(?:'t|not)|am unable|won't)"
    r"|I(?:'m| am) sorry,? I (?:can(?:'t|not)|am unable|won't)"
    r"|I (?:can(?:'t|not)|can ?not|won't|am unable to|(?:'m|am) not able to) "
    r"(?:help|assist|provide|do|comply|perform|fulfil|answer|share|give|access|summari[sz]e|extract|translate)"
    r"|I(?:'m| am) not able to help"
    r"|As an AI(?: language model)?,? I (?:can(?:'t|not)|don't|do not|am not able)"
    r"|I (?:don't|do not) have (?:access to )?(?:real-time|current|live)"
    r")",
    re.IGNORECASE,
)


def is_refusal(text: str | None) -> bool:
    """A short output that opens by declining the task."""
    if not text:
        return False
    stripped = " ".join(text.split()).replace("’", "'")
    if len(stripped) > REFUSAL_MAX_CHARS:
        return False
    match = _REFUSAL.search(stripped)
    return match is not None and match.start() <= REFUSAL_WITHIN_CHARS


@dataclass(frozen=True)
class Signals:
    failed: bool  # the run's status is error
    empty: bool  # no output text at all
    refusal: bool
    error_summary: str | None = None

    @property
    def cap(self) -> float | None:
        """The most this run can score, or None when its signals set no bound."""
        caps = [c for c, on in ((EMPTY_CAP, self.empty), (REFUSAL_CAP, self.refusal), (FAILED_CAP, self.failed)) if on]
        return min(caps) if caps else None

    def describe(self) -> str:
        said = []
        if self.failed:
            said.append("the run failed" + (f" ({self.error_summary})" if self.error_summary else ""))
        if self.empty:
            said.append("it has no output")
        if self.refusal:
            said.append("the output is a refusal")
        return "; ".join(said)


def read_signals(status: str | None, output_text: str | None, error_summary: str | None = None) -> Signals:
    return Signals(failed=status == "error", empty=not (output_text or "").strip(), refusal=is_refusal(output_text),
                   error_summary=error_summary)


def capped(score: float, signals: Signals) -> float:
    cap = signals.cap
    return score if cap is None else min(score, cap)
