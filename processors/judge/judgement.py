"""One run's judgement, without I/O: the requests it needs and the score its answers give.

A judgement has up to three parts, each measured on the calibration set
(benchmarks/judge_agreement.py, docs/judge.md):

- the **grade**: the prompt's ``system`` section (the rubric), then its ``run`` section
  (task, tool calls, errors, final output) and its ``grade`` question; the model answers
  ``{"grade", "reasoning"}`` with a grade from 1 to 5 — the grade first, so that it is
  read before a small model talks itself into anything, and so that an answer cut short
  still holds it; the reasoning is one sentence (``REASONING_MAX_CHARS``): every token
  generated is time a small CPU spends on each run. Where the server returned token
  logprobs, the score is the expected grade at the position where the model wrote it
  (``logprobs.py``), else the parsed grade (``parse.py``);
- the **reference**: when the prompt has a ``solve`` section, the judge answers the task
  itself (from the task and the tool results, never seeing the agent's output) and
  ``reference.agreement`` says how far the output agrees — a check a small model does
  far better than it grades;
- the **signals** (``signals.py``): a failed, empty or refused run is capped whatever the
  model said.

The score is ``REFERENCE_WEIGHT`` × agreement + the rest × grade (the grade alone when
there is no agreement to compute), capped by the signals. Every judge model, a 135M one
or a hosted one, is asked the same questions, so the score means the same thing — how
good the run was — whichever answered them; a stronger model only answers them better.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from otelbench.processors.judge.budget import fit
from otelbench.processors.judge.endpoint import Completion
from otelbench.processors.judge.logprobs import GRADES_1_5, Reading, read_answer
from otelbench.processors.judge.parse import MAX_REASONING_CHARS, UnusableAnswer, is_template_slot, parse_answer
from otelbench.processors.judge.prompt import Prompt
from otelbench.processors.judge.reference import Agreement, agreement
from otelbench.processors.judge.runs import message_text
from otelbench.processors.judge.signals import Signals, capped, read_signals

REFERENCE_WEIGHT = 0.5  # of the agreement with the judge's own answer, when there is one
# ``{"grade": N, "reasoning": "…"}`` with a 100-character sentence is ~35 tokens; a small
# model that fills the sentence with digits (a token each) is cut at this, grade kept
GRADE_MAX_TOKENS = 48
SOLVE_MAX_TOKENS = 64
REASONING_MAX_CHARS = 100  # a sentence
NONE_TEXT = "(none)"

GRADE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "grade": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        "reasoning": {"type": "string", "maxLength": REASONING_MAX_CHARS},
    },
    "required": ["grade", "reasoning"],
    "additionalProperties": False,
}
_GRADE_KEY = re.compile(r"\b(?:grade|score|rating)\"?\s*[:=]\s*", re.IGNORECASE)


@dataclass(frozen=True)
class RunText:
    """What the judge shows the model about one run, already cut to the budget."""

    task: str
    output: str
    tools: str
    errors: str
    truncated: bool
    signals: Signals

    @property
    def tool_results(self) -> str:
        """The tool lines for the ``solve`` request, or nothing when there were no tools."""
        return "" if self.tools == NONE_TEXT else f" TOOL RESULTS: {self.tools}"


def run_text(row: Mapping[str, Any], max_input_tokens: int) -> RunText:
    """A runs-frame row (``runs.RUNS_SCHEMA``) as the texts the prompt is filled with."""
    task = message_text(row.get("input")) or ""
    output = message_text(row.get("output")) or ""
    signals = read_signals(row.get("status"), output, row.get("error_summary"))
    fields = {"task": task, "tools": row.get("tool_summary") or "", "errors": row.get("error_summary") or "",
              "output": output}
    cut, truncated = fit(fields, max_input_tokens)
    return RunText(cut["task"] or NONE_TEXT, cut["output"] or NONE_TEXT, cut["tools"] or NONE_TEXT,
                   cut["errors"] or NONE_TEXT, truncated, signals)


def grade_messages(prompt: Prompt, run: RunText) -> list[dict[str, str]]:
    """The grade request: the fixed rubric first (a prefix the server can cache), then the run."""
    body = prompt.render("run", task=run.task, tools=run.tools, errors=run.errors, output=run.output)
    return [{"role": "system", "content": prompt.text("system")},
            {"role": "user", "content": f"{body}\n\n{prompt.text('grade')}"}]


def solve_messages(prompt: Prompt, run: RunText) -> list[dict[str, str]] | None:
    """The request for the judge's own answer to the task; None when the prompt has no
    ``solve`` section (the judge then grades only)."""
    if not prompt.has("solve"):
        return None
    system = prompt.text("solve:system") if prompt.has("solve:system") else ""
    if prompt.has("solve:example"):
        system = f"{system}\n\n{prompt.text('solve:example')}".strip()
    return [{"role": "system", "content": system},
            {"role": "user", "content": prompt.render("solve", task=run.task, tools=run.tool_results)}]


@dataclass(frozen=True)
class Grade:
    score: float  # in [0, 1]
    reasoning: str
    method: str  # logprobs | json | text
    reading: Reading | None  # the grade tokens' probabilities, when logprobs came back


def read_grade(completion: Completion) -> Grade:
    """The grade in an answer: by logprobs where they came back and are trusted, else as
    parsed; ``UnusableAnswer`` when neither finds one."""
    reading = read_answer(completion.tokens, completion.tops, GRADES_1_5, after=_GRADE_KEY) \
        if completion.tokens else None
    try:
        parsed = parse_answer(completion.content)
    except UnusableAnswer:
        if reading is None or not reading.trusted:
            raise
        return Grade(reading.score, completion.content.strip()[:MAX_REASONING_CHARS], "logprobs", reading)
    if reading is not None and reading.trusted:
        return Grade(reading.score, parsed.reasoning, "logprobs", reading)
    return Grade(parsed.score, parsed.reasoning, parsed.method, reading)


SOLVE_STOP = ["\nTASK:", "TASK:"]  # a small model goes on with the examples' pattern


def reference_text(completion: Completion | None) -> str | None:
    """The judge's own answer: the first line after any ``ANSWER:`` it repeated, nothing
    once it starts writing a new task."""
    if completion is None:
        return None
    text = completion.content.strip()
    text = re.sub(r"^\s*ANSWER:\s*", "", text, flags=re.IGNORECASE)
    text = re.split(r"\bTASK:", text, maxsplit=1)[0].strip()
    if not text.startswith("{"):
        text = text.split("\n", 1)[0]
    return text.strip() or None


def combine(grade: float, agreed: Agreement | None, signals: Signals,
            reference_weight: float = REFERENCE_WEIGHT) -> float:
    """The run's score from its parts (see the module doc), in [0, 1]."""
    score = grade if agreed is None else reference_weight * agreed.value + (1 - reference_weight) * grade
    return min(1.0, max(0.0, capped(score, signals)))


def explain(grade: Grade, reference: str | None, agreed: Agreement | None, signals: Signals) -> str:
    """The reasoning stored with the score: the model's, then what the judge checked itself."""
    reasoning = grade.reasoning.strip()
    said = [("(no reasoning given: the judge copied its prompt's placeholder)" if is_template_slot(reasoning) else
             reasoning) or "(no reasoning given)"]
    if agreed is not None:
        said.append(f"Judge's own answer: {reference} ({agreed.detail}).")
    if signals.cap is not None:
        said.append(f"Capped at {signals.cap:g}: {signals.describe()}.")
    return " ".join(said)[: MAX_REASONING_CHARS]


def agreement_of(run: RunText, reference: str | None) -> Agreement | None:
    """How far the run's output agrees with the judge's answer (None: nothing to compare)."""
    if run.signals.empty:
        return None
    return agreement(run.output, reference, run.task)

