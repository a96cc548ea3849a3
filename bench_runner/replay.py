"""``otelbench replay``: an agent's recorded runs, each llm call sent again to a candidate model.

Open-loop (counterfactual) replay: every recorded call is sent as it was recorded — its
input messages (system instructions first), its tool definitions, and so the recorded
tool results of the earlier steps — to any OpenAI-compatible server, one call at a time,
and the candidate's answer is put beside the recorded one (bench_runner/replay_compare.py).
The agent's code and tools are never run: a candidate that would have asked for another
tool is seen to diverge at that call, and the calls after it still get the recording's
history, not the one the candidate would have made.

Runs are picked from the lake (storage/queries/replay.py). A run whose llm calls were
recorded without their input messages cannot be replayed: it is listed with the
instrumentation that sent it, for the doctor's capture-content fix.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otelbench.bench_runner import replay_request
from otelbench.bench_runner.client import DEFAULT_TIMEOUT_S, TokenSource, measure_run
from otelbench.bench_runner.replay_compare import Outcome, RunComparison, Summary, compare_run, recorded_outcome
from otelbench.bench_runner.replay_compare import final_answers, summarize, tool_call
from otelbench.normalize import pricing
from otelbench.storage.duckdb import Gateway
from otelbench.storage.queries import replay as q

DEFAULT_SAMPLE = 20
DEFAULT_MAX_TOKENS = 512  # per replayed call: a final answer of a few paragraphs
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
FAR = dt.datetime(9999, 1, 1, tzinfo=dt.timezone.utc)
_MEASURED = (TokenSource.USAGE, TokenSource.SERVER_TIMINGS)  # token counts worth comparing


class ReplayError(ValueError):
    """Nothing to replay, or an ambiguous choice: exit 2."""


@dataclass(frozen=True)
class Selection:
    agent: str | None = None
    cluster: int | None = None  # with agent: one of its failure clusters
    suite_run: str | None = None
    since: dt.datetime = EPOCH
    until: dt.datetime = FAR
    sample: int = DEFAULT_SAMPLE


@dataclass(frozen=True)
class RecordedCall:
    span_id: str
    model: str | None
    input_messages: str | None
    tool_definitions: str | None
    scope_name: str | None
    outcome: Outcome


@dataclass
class RecordedRun:
    trace_id: str
    agent: str
    calls: list[RecordedCall]

    @property
    def replayable(self) -> bool:
        return all(c.input_messages for c in self.calls)

    @property
    def task(self) -> str:
        """The first user message's text of the first call: what the answer check leaves out."""
        for m in json.loads(self.calls[0].input_messages or "[]"):
            if m.get("role") == "user":
                return " ".join(str(p.get("content") or "") for p in m.get("parts") or [] if p.get("type") == "text")
        return ""


@dataclass(frozen=True)
class Unreplayable:
    trace_id: str
    agent: str
    calls_without_content: int
    scopes: tuple[str, ...]  # the instrumentations that sent those calls


@dataclass
class Report:
    candidate: str
    base_url: str
    runs: list[RunComparison]
    summaries: list[Summary]
    unreplayable: list[Unreplayable]
    without_calls: list[str]  # picked runs that hold no llm call
    notes: list[str] = field(default_factory=list)
    judge: str | None = None  # the judge model that compared the answers, when one did

    def to_dict(self, fixes: dict[str, str] | None = None) -> dict[str, Any]:
        return {"candidate": self.candidate, "base_url": self.base_url, "judge": self.judge,
                "summaries": [s.to_dict() for s in self.summaries],
                "runs": [r.to_dict() for r in self.runs],
                "unreplayable": [{"trace_id": u.trace_id, "agent": u.agent, "link": f"/runs/{u.trace_id}",
                                  "calls_without_content": u.calls_without_content, "scopes": list(u.scopes),
                                  "fix": sorted({(fixes or {}).get(s, "") for s in u.scopes} - {""})}
                                 for u in self.unreplayable],
                "without_calls": self.without_calls, "notes": self.notes}


# -- reading the lake ---------------------------------------------------------------------


def _rows(gw: Gateway, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    result = gw.query(sql, params, max_rows=None)
    return [dict(zip(result.columns, row)) for row in result.rows]


def select(gw: Gateway, sel: Selection) -> list[tuple[str, str]]:
    """The (trace id, agent) of each run picked."""
    window = {"start": sel.since, "end": sel.until, "limit": sel.sample}
    if sel.suite_run is not None:
        rows = _rows(gw, q.RUNS_OF_SUITE_RUN, {"run_id": sel.suite_run, "limit": sel.sample})
        what = f"suite run {sel.suite_run!r}"
    elif sel.cluster is not None:
        if sel.agent is None:
            raise ReplayError("--cluster needs --agent: a cluster id is one agent's")
        rows = _rows(gw, q.RUNS_OF_CLUSTER, {"agent": sel.agent, "cluster": sel.cluster, **window})
        what = f"cluster {sel.cluster} of agent {sel.agent!r}"
    elif sel.agent is not None:
        rows = _rows(gw, q.RUNS_OF_AGENT, {"agent": sel.agent, **window})
        what = f"agent {sel.agent!r}"
    else:
        rows = _rows(gw, q.RUNS_OF_EVERY_AGENT, window)
        what = "any agent"
    if not rows:
        raise ReplayError(f"no recorded runs of {what} in the lake in that window")
    return [(r["trace_id"], r["agent"] or "") for r in rows]


def read_runs(gw: Gateway, picked: Sequence[tuple[str, str]]) -> list[RecordedRun]:
    """The picked runs with their llm calls, in the order picked."""
    calls: dict[str, list[RecordedCall]] = {}
    for r in _rows(gw, q.CALLS_OF_RUNS, {"trace_ids": [t for t, _ in picked]}):
        outcome = recorded_outcome(r["output_messages"], ttft_ms=r["ttft_ms"], e2e_ms=r["duration_ms"],
                                   input_tokens=r["input_tokens"], output_tokens=r["output_tokens"],
                                   cost_usd=r["cost_usd"])
        calls.setdefault(r["trace_id"], []).append(RecordedCall(
            r["span_id"], r["model"], r["input_messages"], r["tool_definitions"], r["scope_name"], outcome))
    return [RecordedRun(t, agent, calls.get(t, [])) for t, agent in picked]


# -- replaying ----------------------------------------------------------------------------


def candidate_outcome(result: Any) -> Outcome:
    """A measured run (client.RunResult) as one side of a call."""
    tokens = result.n_out if result.n_out_source in _MEASURED else None
    prompt = result.n_prompt if result.n_prompt_source in _MEASURED else None
    return Outcome(tuple(tool_call(c.get("name"), c.get("arguments")) for c in result.tool_calls), result.text,
                   result.ttft_ms, result.e2e_ms if result.ok else None, prompt, tokens,
                   None if result.ok else f"{result.error_kind}: {result.error}")


def priced(outcome: Outcome, model: str) -> Outcome:
    """``outcome`` with its cost, when ``model`` has a price (normalize/prices.json, the
    table the lake's computed costs use) and the server counted its tokens; a local
    model has none."""
    price = pricing.lookup(model)
    if price is None or outcome.output_tokens is None:
        return outcome
    return dataclasses.replace(outcome, cost_usd=pricing.cost(price, outcome.input_tokens, outcome.output_tokens))


Send = Callable[[replay_request.Request], Outcome]
# (task, recorded answer, candidate answer) → a judge model's (score 0–1 or None, reason)
Judge = Callable[[str, str, str], tuple[float | None, str]]


def sender(base_url: str, model: str, *, api_key: str | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
           timeout_s: float = DEFAULT_TIMEOUT_S, client: Any = None) -> Send:
    """Sends one rebuilt request to the candidate, streamed and timed (bench_runner/client.py),
    with the messages exactly as recorded (no nonce) and greedy decoding."""

    def send(request: replay_request.Request) -> Outcome:
        extra = {"tools": request.tools} if request.tools else None
        result = measure_run(base_url, model, request.messages, max_tokens=max_tokens, extra_body=extra,
                             client=client, timeout_s=timeout_s, api_key=api_key, nonce_in_prompt=False)
        return priced(candidate_outcome(result), model)

    return send


def replay_run(run: RecordedRun, send: Send, candidate: str, notes: list[str],
               judge: Judge | None = None) -> RunComparison:
    """Each recorded call of ``run`` sent again, then compared with the recording (and the
    final answers by ``judge``, when given and the candidate did not fail)."""
    replayed = []
    for call in run.calls:
        request = replay_request.build(call.input_messages or "[]", call.tool_definitions)
        if request.dropped:
            left_out = ", ".join(sorted(set(request.dropped)))
            notes.append(f"{run.trace_id} {call.span_id}: parts not sent again: {left_out}")
        if call.outcome.tool_calls and not request.tools:
            notes.append(f"{run.trace_id} {call.span_id}: the recorded call asked for a tool but its span carries "
                         "no gen_ai.tool.definitions: the candidate was offered no tools")
        replayed.append(send(request))
    recorded = [c.outcome for c in run.calls]
    score, reason = None, None
    if judge is not None and not any(o.error for o in replayed):
        score, reason = judge(run.task, *final_answers(recorded, replayed))
        if score is None:
            notes.append(f"{run.trace_id}: not judged, the deterministic checks decide: {reason}")
    return compare_run(run.trace_id, run.agent, candidate, run.task, recorded, replayed, judge_score=score,
                       judge_reason=reason)


def pick(gw: Gateway, sel: Selection) -> list[RecordedRun]:
    """The runs ``sel`` picks, with their recorded calls."""
    return read_runs(gw, select(gw, sel))


def replay(runs: Sequence[RecordedRun], send: Send, candidate: str, base_url: str, judge: Judge | None = None,
           judge_name: str | None = None, progress: Callable[[int, int], None] = lambda done, total: None) -> Report:
    """Refuse the runs without content, replay the rest, sum them up."""
    without_calls = [r.trace_id for r in runs if not r.calls]
    unreplayable = [Unreplayable(r.trace_id, r.agent, sum(not c.input_messages for c in r.calls),
                                 tuple(sorted({c.scope_name or "" for c in r.calls if not c.input_messages})))
                    for r in runs if r.calls and not r.replayable]
    todo = [r for r in runs if r.calls and r.replayable]
    notes: list[str] = []
    comparisons = []
    for i, run in enumerate(todo):
        comparisons.append(replay_run(run, send, candidate, notes, judge))
        progress(i + 1, len(todo))
    return Report(candidate, base_url, comparisons, summarize(comparisons), unreplayable, without_calls, notes,
                  judge_name if judge is not None else None)
