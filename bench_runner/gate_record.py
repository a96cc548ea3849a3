"""Each ``otelbench gate`` verdict kept as benchmark evidence: one span (``gate <subject>``,
``bench.kind = gate``) sent to the collector like the bench runner's (bench_runner/spans.py,
service ``otelbench-bench``, never counted as agent telemetry), read back by the
``gate_verdicts`` view (storage/queries/gate_verdicts.py) for the web's gate badge.

What it is filed under comes from the candidate: its suite and agent (a suite run), its
suite and model (a bench result), its agent (a time window).
"""

from __future__ import annotations

import json
from typing import Any

from otelbench.bench_runner.gate import Report
from otelbench.bench_runner.spans import BenchSpans

TEXT_CHARS = 500  # of a label kept on the span


def attributes(report: Report) -> dict[str, Any]:
    """The verdict's ``bench.*`` attributes (None left out)."""
    base, cand = report.baseline, report.candidate
    attrs: dict[str, Any] = {
        "bench.gate.verdict": report.verdict,
        "bench.gate.regression": report.regression,
        "bench.gate.compared": cand.compared,
        "bench.gate.baseline": base.key[:TEXT_CHARS],
        "bench.gate.candidate": cand.key[:TEXT_CHARS],
        "bench.gate.confidence": report.tolerances.confidence,
        "bench.gate.regressions": [r.metric for r in report.rows if r.verdict == "regression"],
        "bench.gate.differs": [key for key, _, _ in report.differs],
        "bench.gate.metrics": json.dumps({r.metric: r.verdict for r in report.rows}),
        "bench.suite": cand.suite,
        "bench.suite.version": cand.version,
        "bench.agent.name": cand.agent,
        "bench.gate.model": cand.model,
    }
    return {k: v for k, v in attrs.items() if v is not None}


def subject(report: Report) -> str:
    """What the span is named after: ``gate <suite> <agent>``, ``gate <suite> <model>``, ``gate <agent>``."""
    cand = report.candidate
    return " ".join(["gate", *(p for p in (cand.suite, cand.agent or cand.model) if p)])[:TEXT_CHARS]


def record(report: Report, endpoint: str, headers: dict[str, str] | None = None) -> dict[str, int]:
    """Send the verdict's span to ``endpoint`` (OTLP/HTTP) and wait for it: the counts of
    spans exported and failed (``BenchSpans.shutdown``)."""
    spans = BenchSpans(endpoint, headers)
    spans.gate(subject(report), attributes(report), report.regression)
    return spans.shutdown()
