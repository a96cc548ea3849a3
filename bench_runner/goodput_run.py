"""One model's goodput sweep, end to end: the sweep under its root span, and the result dict
that ``--json`` prints and ``--out`` saves (``kind: goodput``, beside the bench's own
result files; ``--compare`` leaves them out).

The arithmetic is ``goodput``'s, the driving ``load``'s; this module only ties them to a
server, a model and the bench's spans.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from otelbench.bench_runner import goodput, load
from otelbench.bench_runner.servers import ServerInfo
from otelbench.bench_runner.spans import BenchSpans

RESULT_KIND = "goodput"
RESULT_SCHEMA_VERSION = 1

DEFINITIONS = {
    "good": "completed, its check passed, and its own ttft / e2e (and its own pNN of its inter-token gaps, "
            "for an itl bound) within every SLO bound",
    "goodput_rps": "good requests / wall_s",
    "throughput_rps": "completed requests / wall_s",
    "pass_share": "requests whose check passed / requests sent (a failed request counts as failed)",
    "wall_s": "first scheduled send to last finish",
    "latency_ms": "p50/p95/p99 (type 7) over completed requests; itl pools every gap of every request",
    "holds": "every SLO bound met by the step's own percentile, and pass_share >= min_pass",
    "highest": "largest load such that it and every lower load of the sweep hold",
    "late_ms_p95": "rate steps: p95 of how late the driver sent each request after its scheduled time",
}


def is_goodput(result: dict[str, Any]) -> bool:
    return result.get("kind") == RESULT_KIND


def run_sweep(model: str, server: ServerInfo, spans: BenchSpans, plan: goodput.Plan, cases: Sequence[load.Case], *,
              api_key: str | None = None, on_step: Callable[[goodput.Step], None] = lambda s: None) -> dict[str, Any]:
    """Sweep ``model`` at ``server`` through ``plan``; the result dict."""
    settings = {"slo": plan.slo.text, "min_pass": plan.min_pass, "rates": [f"{r:g}" for r in plan.rates],
                "concurrencies": [str(c) for c in plan.concurrencies], "requests": plan.requests,
                "duration_s": plan.duration_s, "seed": plan.seed, "cases": [c.name for c in cases]}
    target = load.Target(server.base_url, model, provider=server.provider, api_key=api_key, spans=spans)
    with spans.goodput_sweep(model, server.base_url, settings) as root:
        steps = load.sweep(target, cases, plan, on_step=on_step)
        highest = {mode: goodput.highest_holding([s for s in steps if s.mode == mode])
                   for mode in ("rate", "concurrency") if any(s.mode == mode for s in steps)}
        spans.record_goodput(root, {f"highest_{mode}": v for mode, v in highest.items() if v is not None})
    return {
        "kind": RESULT_KIND,
        "schema_version": RESULT_SCHEMA_VERSION,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model": model,
        "server": {"base_url": server.base_url, "kind": server.kind},
        "settings": {**settings, "rates": list(plan.rates), "concurrencies": list(plan.concurrencies)},
        "definitions": DEFINITIONS,
        "steps": [s.to_dict() for s in steps],
        "highest": highest,
    }
