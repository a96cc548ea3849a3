"""The ``judge`` checker of agent suites: an OpenAI-compatible model scores the agent's
answer against the case's rubric, 0–1 with a reason; 0.5 or more passes.

It reuses the run judge's endpoint handling (processors/judge: retries, the structured
output formats a server accepts, the tolerant reading of a grade) with a prompt of its
own: a suite case has a question and a rubric, not a trace. A judge that cannot be
reached, or answers with no grade, leaves the case unscored (``JudgeUnavailable`` →
verdict ``error``), never passed or failed on the judge's account.
"""

from __future__ import annotations

from typing import Any

from bench_runner.agent_suite import Case
from bench_runner.suite_run import JudgeUnavailable, case_input_text
from bench_runner.suites import Verdict

PASS_SCORE = 0.5
MAX_ANSWER_CHARS = 4000
SYSTEM = ("You grade an answer to a question against a rubric. Follow the rubric strictly: an answer that "
          "misses what the rubric requires gets a low score, whatever else it says. Reply with JSON only: "
          '{"reasoning": "<one sentence>", "score": <a number from 0 to 1>}')
SCHEMA = {"type": "object", "properties": {"reasoning": {"type": "string"}, "score": {"type": "number"}},
          "required": ["reasoning", "score"], "additionalProperties": False}


def messages(case: Case, answer: str) -> list[dict[str, str]]:
    rubric = case.check.judge or ""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question:\n{case_input_text(case)}\n\nRubric:\n{rubric}\n\n"
                                        f"Answer to grade:\n{answer[:MAX_ANSWER_CHARS]}"}]


class SuiteJudge:
    """Scores judge cases on one endpoint; callable as the runner's ``Judge``."""

    def __init__(self, base_url: str, model: str | None = None, api_key: str = "local", timeout_s: float = 60.0):
        import openai

        from processors.judge.endpoint import Endpoint

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
        from processors.judge.endpoint import CallFailed, JudgeEndpointError
        from processors.judge.parse import UnusableAnswer, parse_answer

        try:
            completion = self.endpoint.complete(messages(case, answer), max_tokens=200, schema=SCHEMA, logprobs=False)
        except (CallFailed, JudgeEndpointError) as exc:
            raise JudgeUnavailable(str(exc)[:300]) from exc
        try:
            parsed = parse_answer(completion.content)
        except UnusableAnswer as exc:
            raise JudgeUnavailable(f"the judge's answer has no grade ({exc}): {completion.content[:200]!r}") from exc
        passed = parsed.score >= PASS_SCORE
        why = (parsed.reasoning or "").strip() or "no reason given"
        return Verdict(passed, f"judge {parsed.score:.2f} ({'≥' if passed else '<'} {PASS_SCORE}): {why}"[:500],
                       parsed.score)


def describe(judge: Any) -> str:
    if not isinstance(judge, SuiteJudge):
        return "none"
    # llama-cpp-python names a model by its GGUF's path: the file's name says which
    model = judge.model.rsplit("/", 1)[-1] if judge.model.startswith("/") else judge.model
    return f"{model} at {judge.base_url}"
