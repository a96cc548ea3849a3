"""A judge model's comparison of a replayed run's final answer with the recorded one.

The deterministic checks (bench_runner/replay_compare.py) see whether the candidate's
answer holds what the recorded one says; a judge model can also see that a different
answer is as good, or better. Asked on the run judge's 1–5 scale, relative to the
recording (1 much worse … 3 as good … 5 better), and read by the judge's tolerant parser
(processors/judge/parse.py); ``score`` = (grade − 1) / 4, so "at least as good" is a
score of 0.5 or more (replay_compare.AS_GOOD_SCORE). It reuses the judge's endpoint
handling (retries, the structured output formats a server accepts), as the suite judge
does (bench_runner/suite_judge.py).

A judge that cannot be reached or answers with no grade leaves the run to the
deterministic checks (a score of None, with the reason), never rated on its account.
"""

from __future__ import annotations

from otelbench.bench_runner.suite_judge import MAX_ANSWER_CHARS, PLACEHOLDER, SCHEMA  # the suite judge's form

SYSTEM = ("You compare two answers to the same task: a reference answer, and a candidate's. Grade the candidate "
          "against the reference: 1 much worse (wrong, or misses what the reference gets right), 2 worse, 3 as "
          "good, 4 better, 5 much better. Judge correctness and completeness, not style or length. Reply with "
          f'JSON only: {{"grade": <1, 2, 3, 4 or 5>, "reasoning": "{PLACEHOLDER}"}}')


def messages(task: str, recorded: str, candidate: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Task:\n{task[:MAX_ANSWER_CHARS]}\n\n"
                                        f"Reference answer:\n{recorded[:MAX_ANSWER_CHARS]}\n\n"
                                        f"Candidate answer:\n{candidate[:MAX_ANSWER_CHARS]}"}]


class ReplayJudge:
    """Compares answers on one OpenAI-compatible endpoint; callable per run."""

    def __init__(self, base_url: str, model: str | None = None, api_key: str = "local", timeout_s: float = 60.0):
        import openai

        from otelbench.processors.judge.endpoint import Endpoint

        client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
        if model is None:
            try:
                model = client.models.list().data[0].id
            except Exception as exc:  # noqa: BLE001 — any failure: the judge is not there
                raise ValueError(f"the judge at {base_url} lists no model: {type(exc).__name__}: {exc}"[:300]) from exc
        self.model, self.base_url = model, base_url
        self.endpoint = Endpoint(client, model, timeout_s=timeout_s)

    def __call__(self, task: str, recorded: str, candidate: str) -> tuple[float | None, str]:
        """(score 0–1, the judge's reasoning), or (None, why there is no grade)."""
        from otelbench.processors.judge.endpoint import CallFailed, JudgeEndpointError
        from otelbench.processors.judge.parse import UnusableAnswer, is_template_slot, parse_answer

        try:
            completion = self.endpoint.complete(messages(task, recorded, candidate), max_tokens=200, schema=SCHEMA,
                                                logprobs=False)
        except (CallFailed, JudgeEndpointError) as exc:
            return None, f"no judge: {exc}"[:300]
        try:
            parsed = parse_answer(completion.content)
        except UnusableAnswer as exc:
            return None, f"the judge's answer has no grade ({exc})"[:300]
        if is_template_slot(parsed.reasoning):
            return None, "the judge copied the prompt's template instead of grading"
        return parsed.score, (parsed.reasoning or "").strip()[:500] or "no reason given"
