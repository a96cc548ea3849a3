"""``judge_runs``: a frame of agent runs in, one ``evals`` row per run out.

The client and the clock come in from the caller (the pipeline, a benchmark, a test);
everything between is ``judgement.py`` (pure) and ``endpoint.py`` (the server). Runs are
judged by a pool of ``concurrency`` threads sharing one ``Endpoint`` — so the format and
logprobs negotiation happens once — and each run's result is a row whatever happened:

- a usable answer → score in [0, 1], the method (``logprobs`` | ``json`` | ``text``);
- an unusable answer, or a request that failed for good (400, or 429/5xx after the
  retries) → score NULL, ``error`` says why, ``raw_answer`` keeps what the model said;
  the pipeline judges it again on a later pass (``attempts`` counts the passes);
- the endpoint itself gone (connection refused after the retries, key rejected, model
  unknown) → ``JudgeEndpointError``: no row is worth writing when nothing can be judged.

The ``solve`` request (the judge's own answer) only adds to a judgement: if it fails, the
run is graded without it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from otelbench.processors.judge.budget import DEFAULT_MAX_INPUT_TOKENS
from otelbench.processors.judge.endpoint import DEFAULT_TIMEOUT_S, CallFailed, Completion, Endpoint, JudgeEndpointError
from otelbench.processors.judge.judgement import (GRADE_MAX_TOKENS, GRADE_SCHEMA, SOLVE_MAX_TOKENS, SOLVE_STOP, Grade, RunText,
                                        agreement_of, combine, explain, grade_messages, read_grade,
                                        reference_text, run_text, solve_messages)
from otelbench.processors.judge.parse import UnusableAnswer
from otelbench.processors.judge.prompt import Prompt
from otelbench.processors.judge.reference import Agreement
from otelbench.processors.judge.retry import RetryPolicy
from otelbench.processors.judge.telemetry import JudgeClient, judge_span, record_usage

EVALS_SCHEMA: dict[str, Any] = {
    "trace_id": pl.String,
    "agent": pl.String,
    "score": pl.Float64,
    "reasoning": pl.String,
    "judge_model": pl.String,
    "judge_version": pl.String,
    "method": pl.String,
    "error": pl.String,
    "raw_answer": pl.String,
    "attempts": pl.Int64,
    "input_truncated": pl.Boolean,
    "judged_at": pl.Datetime("us", "UTC"),
}
RAW_ANSWER_CHARS = 4000
NOTHING_TO_JUDGE = "the run has no input and no output"


@dataclass(frozen=True)
class Judgement:
    """One run's judgement with its parts (benchmarks compare the parts; the row keeps the sum)."""

    trace_id: str
    agent: str | None
    score: float | None
    reasoning: str | None
    method: str | None
    error: str | None
    raw_answer: str | None
    input_truncated: bool
    grade: Grade | None = None
    reference: str | None = None
    agreement: Agreement | None = None
    run: RunText | None = None


@dataclass
class Counters:
    """What a pass did, for the caller's one log line (no per-run logs)."""

    judged: int = 0
    errors: int = 0
    truncated: int = 0
    requests: int = 0
    by_method: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, j: Judgement, requests: int) -> None:
        with self._lock:
            self.requests += requests
            self.truncated += j.input_truncated
            if j.error is not None:
                self.errors += 1
            else:
                self.judged += 1
                self.by_method[j.method or "?"] = self.by_method.get(j.method or "?", 0) + 1


def _request(endpoint: Endpoint, tracer: Any | None, trace_id: str, step: str, messages: list[dict[str, str]],
             *, max_tokens: int, schema: dict[str, Any] | None, logprobs: bool,
             stop: list[str] | None = None) -> Completion:
    with judge_span(tracer, model=endpoint.model, base_url=endpoint.base_url, run_trace_id=trace_id,
                    step=step) as span:
        completion = endpoint.complete(messages, max_tokens=max_tokens, schema=schema, logprobs=logprobs, stop=stop)
        record_usage(span, prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens,
                     finish_reason=completion.finish_reason, tries=completion.tries)
        return completion


def judge_one(row: Mapping[str, Any], endpoint: Endpoint, prompt: Prompt, *, max_input_tokens: int,
              tracer: Any | None = None, counters: Counters | None = None) -> Judgement:
    """Judge one runs-frame row; raises only ``JudgeEndpointError``."""
    trace_id, agent = str(row["trace_id"]), row.get("agent")
    if row.get("input") is None and row.get("output") is None:
        j = Judgement(trace_id, agent, None, None, None, NOTHING_TO_JUDGE, None, False)
        if counters is not None:
            counters.add(j, 0)
        return j
    run = run_text(row, max_input_tokens)
    requests = 0
    reference: str | None = None
    solve = solve_messages(prompt, run)
    if solve is not None:
        requests += 1
        try:
            reference = reference_text(_request(endpoint, tracer, trace_id, "solve", solve,
                                                max_tokens=SOLVE_MAX_TOKENS, schema=None, logprobs=False,
                                                stop=SOLVE_STOP))
        except CallFailed:
            reference = None
    agreed = agreement_of(run, reference)
    raw: str | None = None
    try:
        completion = _request(endpoint, tracer, trace_id, "grade", grade_messages(prompt, run),
                              max_tokens=GRADE_MAX_TOKENS, schema=GRADE_SCHEMA, logprobs=True)
        requests += completion.tries
        raw = completion.content
        grade = read_grade(completion)
    except CallFailed as exc:
        j = Judgement(trace_id, agent, None, None, None, f"judge request failed: {exc}", None, run.truncated,
                      None, reference, agreed, run)
    except UnusableAnswer as exc:
        j = Judgement(trace_id, agent, None, None, None, f"unusable answer: {exc}",
                      (raw or "")[:RAW_ANSWER_CHARS], run.truncated, None, reference, agreed, run)
    else:
        j = Judgement(trace_id, agent, combine(grade.score, agreed, run.signals),
                      explain(grade, reference, agreed, run.signals), grade.method, None, None, run.truncated,
                      grade, reference, agreed, run)
    if counters is not None:
        counters.add(j, requests)
    return j


def client_parts(client: Any) -> tuple[Any, Any | None]:
    """(OpenAI client, tracer) from what ``traced`` yields, or from a bare client."""
    if isinstance(client, JudgeClient):
        return client.client, client.tracer
    return client, None


def judgements(runs: pl.DataFrame, *, client: Any, model: str, prompt: Prompt, concurrency: int = 1,
               max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS, retry: RetryPolicy | None = None,
               counters: Counters | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Judgement]:
    """Every run judged, in the frame's order; ``JudgeEndpointError`` stops the pass."""
    openai_client, tracer = client_parts(client)
    endpoint = Endpoint(openai_client, model, retry=retry or RetryPolicy(), timeout_s=timeout_s)
    rows = runs.to_dicts()
    if concurrency <= 1 or len(rows) <= 1:
        return [judge_one(r, endpoint, prompt, max_input_tokens=max_input_tokens, tracer=tracer,
                          counters=counters) for r in rows]
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge") as pool:
        futures = [pool.submit(judge_one, r, endpoint, prompt, max_input_tokens=max_input_tokens, tracer=tracer,
                               counters=counters) for r in rows]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f for f in done if f.exception() is not None), None)
        if failed is not None:
            for f in futures:
                f.cancel()
            raise failed.exception()  # type: ignore[misc]
        return [f.result() for f in futures]


def judge_runs(runs: pl.DataFrame, *, client: Any, model: str, prompt: Prompt, now: Callable[[], datetime],
               concurrency: int = 1, max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
               attempts_so_far: Mapping[str, int] | None = None, retry: RetryPolicy | None = None,
               counters: Counters | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> pl.DataFrame:
    """One ``evals`` row (``EVALS_SCHEMA``) per run of ``runs``; see the module doc."""
    results = judgements(runs, client=client, model=model, prompt=prompt, concurrency=concurrency,
                         max_input_tokens=max_input_tokens, retry=retry, counters=counters, timeout_s=timeout_s)
    previous = dict(attempts_so_far or {})
    if "attempts_so_far" in runs.columns:
        for trace_id, n in zip(runs["trace_id"].to_list(), runs["attempts_so_far"].to_list()):
            previous.setdefault(trace_id, int(n or 0))
    at = now()
    return pl.DataFrame(
        [{"trace_id": j.trace_id, "agent": j.agent, "score": j.score, "reasoning": j.reasoning, "judge_model": model,
          "judge_version": prompt.version, "method": j.method, "error": j.error, "raw_answer": j.raw_answer,
          "attempts": previous.get(j.trace_id, 0) + 1, "input_truncated": j.input_truncated, "judged_at": at}
         for j in results],
        schema=EVALS_SCHEMA,
    )


__all__ = ["EVALS_SCHEMA", "Counters", "Judgement", "JudgeEndpointError", "judge_one", "judge_runs", "judgements"]
