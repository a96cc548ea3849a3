"""The LLM judge: scores each agent run from 0 to 1 with any OpenAI-compatible model.

The pipeline (processors/pipeline.py) calls exactly this:

- ``load_prompt(name)`` → ``Prompt`` (``.name``, ``.version`` = name@content-hash);
  ``DEFAULT_PROMPT`` names the prompt file measured best (docs/judge.md);
- ``check_endpoint(client, model)``: one cheap request, or ``JudgeEndpointError`` with a
  one-line reason;
- ``traced(client, telemetry_endpoint)``: a context manager yielding the client to pass
  to ``judge_runs``, its requests traced as the service ``otelbench-judge``;
- ``judge_runs(runs, client=, model=, prompt=, now=, concurrency=, max_input_tokens=,
  attempts_so_far=)`` → one ``evals`` row per run (``EVALS_SCHEMA``);
- ``rejudge_sample(candidates, n)`` and ``as_repeats(evals, chosen)``: the judged runs
  judged again and their ``judge_repeats`` rows (``REPEATS_SCHEMA``; repeats.py).

How a run is judged: processors/judge/judgement.py; the requests: endpoint.py; docs/judge.md.
"""

from __future__ import annotations

from typing import Any

from otelbench.processors.judge.budget import DEFAULT_MAX_INPUT_TOKENS
from otelbench.processors.judge.endpoint import Endpoint, JudgeEndpointError
from otelbench.processors.judge.judge import EVALS_SCHEMA, Counters, Judgement, judge_runs, judgements
from otelbench.processors.judge.prompt import DEFAULT_PROMPT, Prompt, PromptError, load_prompt
from otelbench.processors.judge.repeats import REPEATS_SCHEMA, as_repeats, rejudge_sample
from otelbench.processors.judge.retry import RetryPolicy
from otelbench.processors.judge.runs import with_summaries
from otelbench.processors.judge.telemetry import JUDGE_SERVICE_NAME, JudgeClient, traced


def check_endpoint(client: Any, model: str) -> None:
    """Raise ``JudgeEndpointError`` (one line) unless ``client`` answers and serves ``model``."""
    if isinstance(client, JudgeClient):
        client = client.client
    Endpoint(client, model, retry=RetryPolicy(tries=1)).check()


__all__ = [
    "DEFAULT_MAX_INPUT_TOKENS", "DEFAULT_PROMPT", "EVALS_SCHEMA", "REPEATS_SCHEMA", "as_repeats", "rejudge_sample", "JUDGE_SERVICE_NAME", "Counters", "JudgeClient",
    "JudgeEndpointError", "Judgement", "Prompt", "PromptError", "RetryPolicy", "check_endpoint", "judge_runs",
    "judgements", "load_prompt", "traced", "with_summaries",
]
