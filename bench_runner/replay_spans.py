"""A replay's results as spans: benchmark evidence in the lake, never an agent's telemetry.

Sent with the bench runner's own exporter (bench_runner/spans.py: its service and
instrumentation scope, which the lake's views use to keep bench traces out of
``agent_runs``), as one trace per replay once it has ended::

    replay <candidate>          bench.kind=replay: the candidate, its server, how many runs
    ├── replay run <trace_id>   bench.kind=replay_run: one replayed run, compared
    └── …

No span carries a ``gen_ai.*`` attribute, so none counts as a model call. The
``replay_runs`` view (storage/queries/replay.py) reads the run spans back.
"""

from __future__ import annotations

import secrets
from typing import Any

from opentelemetry.context import Context

from otelbench.bench_runner.replay import Report
from otelbench.bench_runner.replay_compare import RunComparison
from otelbench.bench_runner.spans import REPLY_CHARS, BenchSpans, _bench_attrs, _server_attrs


def run_attributes(replay_id: str, candidate: str, r: RunComparison) -> dict[str, Any]:
    """The ``bench.replay.*`` attributes of one replayed run (None values left out)."""
    return _bench_attrs({
        "kind": "replay_run", "replay.id": replay_id, "replay.candidate": candidate,
        "replay.trace_id": r.trace_id, "replay.agent": r.agent, "replay.calls": r.calls,
        "replay.calls_matching": r.calls_matching, "replay.behaviour_matches": r.behaviour_matches,
        "replay.at_least_as_good": r.at_least_as_good, "replay.answer_agrees": r.answer_agrees,
        "replay.answer_agreement": r.answer.value if r.answer is not None else None,
        "replay.divergence": r.divergence,
        "replay.recorded.ttft_ms": r.recorded_ttft_ms, "replay.candidate.ttft_ms": r.candidate_ttft_ms,
        "replay.recorded.model_ms": r.recorded_model_ms, "replay.candidate.model_ms": r.candidate_model_ms,
        "replay.recorded.output_tokens": r.recorded_output_tokens,
        "replay.candidate.output_tokens": r.candidate_output_tokens,
        "replay.recorded.cost_usd": r.recorded_cost_usd, "replay.candidate.cost_usd": r.candidate_cost_usd,
        "replay.candidate.answer": r.candidate_answer[:REPLY_CHARS],
        "replay.errors": r.errors,
        "replay.judge_score": r.judge_score,
    })


def export(report: Report, endpoint: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Send ``report`` as one trace to the OTLP/HTTP ``endpoint``; returns the replay's id
    (``replay_id``) and the exporter's counts (``exported``, ``failures``)."""
    spans = BenchSpans(endpoint, headers)
    assert spans.tracer is not None
    replay_id = secrets.token_hex(8)
    root_attrs = {**_bench_attrs({"kind": "replay", "replay.id": replay_id, "replay.candidate": report.candidate,
                                  "replay.runs": len(report.runs), "replay.unreplayable": len(report.unreplayable)}),
                  **_server_attrs(report.base_url)}
    with spans.tracer.start_as_current_span(f"replay {report.candidate}", context=Context(), attributes=root_attrs):
        for r in report.runs:
            with spans.tracer.start_as_current_span(f"replay run {r.trace_id}",
                                                    attributes=run_attributes(replay_id, report.candidate, r)):
                pass
    counts = spans.shutdown()
    return {"replay_id": replay_id, **counts}
