"""The ``judge`` checker of agent suites: an OpenAI-compatible model grades the agent's
answer against the case's rubric, 1–5 with a reason; the score is (grade − 1) / 4 and 0.5
(grade 3, "meets the rubric with flaws") or more passes.

The grade is asked on the run judge's 1–5 scale because that is the scale its tolerant
reader (processors/judge/parse) maps: asked for "a number from 0 to 1", a model writing
``"score": 1`` meant full marks and was read as the lowest grade. A reply whose reasoning
is the prompt's own placeholder (``"<one sentence>"``: small models copy the template)
did not grade anything and is treated as no grade.

It reuses the run judge's endpoint handling (processors/judge: retries, the structured
output formats a server accepts, the tolerant reading of a grade) with a prompt of its
own: a suite case has a question and a rubric, not a trace. A judge that cannot be
reached, or answers with no grade, leaves the case unscored (``JudgeUnavailable`` →
verdict ``error``), never passed or failed on the judge's account.
"""

from __future__ import annotations

from typing import Any

from otelbench.bench_runner.agent_suite import Case
from otelbench.bench_runner.suite_run import JudgeUnavailable, case_input_text
from otelbench.bench_runner.suites import Verdict
from otelbench.storage.labels import model_label

PASS_SCORE = 0.5
MAX_ANSWER_CHARS = 4000
PLACEHOLDER = "<one sentence>"
SYSTEM = ("You grade an answer to a question against a rubric. Follow the rubric strictly: an answer that "
          "misses what the rubric requires gets a low grade, whatever else it says. Grades: 1 wrong or no "
          "answer, 2 misses what the rubric requires, 3 meets the rubric with flaws, 4 meets the rubric, "
          "5 meets it fully and precisely. Reply with JSON only: "
          f'{{"grade": <1, 2, 3, 4 or 5>, "reasoning": "{PLACEHOLDER}"}}')
SCHEMA = {"type": "object", "properties": {"grade": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                                           "reasoning": {"type": "string"}},
          "required": ["grade", "reasoning"], "additionalProperties": False}


def messages(case: Case, answer: str) -> list[dict[str, str]]:
    rubric = case.check.judge or ""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question:\n{case_input_text(case)}\n\nRubric:\n{rubric}\n\n"
                                        f"Answer to grade:\n{answer[:MAX_ANSWER_CHARS]}"}]


class SuiteJudge:
    """Scores judge cases on one endpoint; callable as the runner's ``Judge``."""

    def __init__(self, base_url: str, model: str | None = None, api_key: str = "local", timeout_s: float = 60.0):
        import openai

        from otelbench.processors.judge.endpoint import Endpoint  # polars: only a suite with judged cases

        client = openai.OpenAI(base_url=base_url, api_key=api_key)
        if model is None:
            try:
                model = client.models.list().data[0].id
            except Exception as exc:  # noqa: BLE001 — any failure: no judge, said once per case
                raise JudgeUnavailable(f"{base_url} lists no model: {type(exc).__name__}: {exc}"[:300]) from exc
        self.model = model
        self.base_url = base_url
        self.endpoint = Endpoint(client, model, timeout_s=timeout_s)

    def __call__(self, case: Case, answer: str) -> Verdict:
        from otelbench.processors.judge.endpoint import CallFailed, JudgeEndpointError
        from otelbench.processors.judge.parse import UnusableAnswer, is_template_slot, parse_answer

        try:
            completion = self.endpoint.complete(messages(case, answer), max_tokens=200, schema=SCHEMA, logprobs=False)
        except (CallFailed, JudgeEndpointError) as exc:
            raise JudgeUnavailable(str(exc)[:300]) from exc
        try:
            parsed = parse_answer(completion.content)
        except UnusableAnswer as exc:
            raise JudgeUnavailable(f"the judge's answer has no grade ({exc}): {completion.content[:200]!r}") from exc
        if is_template_slot(parsed.reasoning):
            raise JudgeUnavailable(f"the judge copied the prompt's template instead of grading: "
                                   f"{completion.content[:200]!r}")
        passed = parsed.score >= PASS_SCORE
        why = (parsed.reasoning or "").strip() or "no reason given"
        return Verdict(passed, f"judge {parsed.score:.2f} ({'≥' if passed else '<'} {PASS_SCORE}): {why}"[:500],
                       parsed.score)


def describe(judge: Any) -> str:
    if not isinstance(judge, SuiteJudge):
        return "none"
    return f"{model_label(judge.model)} at {judge.base_url}"
