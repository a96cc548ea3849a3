"""Speed cases: prompts of ~50, ~200 and ~800 characters and a ~2k-token prefill probe.

Each case: warm-up runs (not counted), then timed runs, each a gen_ai ``chat`` span.
Every prompt starts with a random nonce and llama.cpp gets ``cache_prompt: false``
(bench_runner.client) so prefix caches do not inflate prefill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import httpx

from otelbench.bench_runner import stats
from otelbench.bench_runner.client import RunResult, measure_run
from otelbench.bench_runner.spans import BenchSpans, record_run

SPEED_VERSION = "speed-v1"

_FACTS = (
    "The Rhine rises in the Swiss Alps and flows north to the North Sea through Germany and the "
    "Netherlands. Cargo barges carry coal, grain and containers along it. "
)


@dataclass(frozen=True)
class SpeedCase:
    name: str
    prompt: str
    max_tokens: int
    quick: bool = True  # part of --quick


CASES: tuple[SpeedCase, ...] = (
    SpeedCase("short-50", "Name three rivers of Europe in one line.", 64),
    SpeedCase("medium-200", "Explain in a short paragraph why rivers matter for trade. " + _FACTS[:140], 128),
    SpeedCase("long-800", "Summarize the following text in three sentences.\n" + (_FACTS * 6)[:750], 128, quick=False),
    # ~2k tokens of prompt, few out: the prefill probe (prefill tok/s = prompt tokens / TTFT)
    SpeedCase("prefill-2k", "Read this and answer with one word: which river?\n" + _FACTS * 52, 8),
)

# metrics summarized per case; the formulas are in stats.FORMULAS
METRICS = ("ttft_ms", "ttfo_ms", "e2e_ms", "decode_ms", "tpot_ms", "decode_tps", "e2e_tps", "prefill_tps",
           "server_decode_tps", "server_prefill_tps", "n_out", "n_prompt")


@dataclass
class CaseResult:
    case: SpeedCase
    runs: list[RunResult]
    warmups: int

    @property
    def ok_runs(self) -> list[RunResult]:
        return [r for r in self.runs if r.ok]

    def summary(self) -> dict[str, Any]:
        ok = self.ok_runs
        out: dict[str, Any] = {m: stats.summarize([getattr(r, m) for r in ok]).to_dict() for m in METRICS}
        out["itl_ms"] = stats.summarize([g for r in ok for g in r.itl_ms]).to_dict()
        out["runs"] = len(self.runs)
        out["ok"] = len(ok)
        out["failures"] = [{"kind": r.error_kind, "error": r.error, "evidence": r.evidence} for r in self.runs if not r.ok]
        out["token_source"] = sorted({r.n_out_source for r in ok})
        out["client_overhead_us_per_chunk"] = stats.summarize(
            [r.client_overhead_us_per_chunk for r in ok]).to_dict()
        return out


def run_case(
    case: SpeedCase,
    *,
    base_url: str,
    model: str,
    provider: str,
    spans: BenchSpans,
    runs: int,
    warmup: int,
    client: httpx.Client,
    api_key: str | None,
    on_run: Callable[[RunResult], None] = lambda r: None,
    count_tokens: Callable[[str], int | None] | None = None,
) -> CaseResult:
    results: list[RunResult] = []
    for i in range(warmup + runs):
        with spans.chat(model, base_url, provider, case=case.name) as span:
            if i < warmup:
                span.set_attribute("bench.warmup", True)
            run = measure_run(base_url, model, case.prompt, max_tokens=case.max_tokens, client=client, api_key=api_key,
                              count_tokens=count_tokens)
            record_run(span, run)
        if i >= warmup:
            results.append(run)
        on_run(run)
        if not run.ok and run.error_kind == "connect":
            break  # a dead server will not come back within this case
    return CaseResult(case, results, warmup)


def concurrency(
    levels: list[int], *, base_url: str, model: str, runs_per_client: int, client_factory: Callable[[], httpx.Client],
    api_key: str | None,
) -> list[dict[str, Any]]:
    """Aggregate throughput and latency percentiles with N clients at once, per level."""
    case = CASES[1]
    out = []
    for n in levels:
        clients = [client_factory() for _ in range(n)]
        try:
            load = stats.run_concurrent(
                n,
                lambda i: measure_run(base_url, model, case.prompt, max_tokens=case.max_tokens, client=clients[i],
                                      api_key=api_key),
                runs_per_client=runs_per_client,
            )
        finally:
            for c in clients:
                c.close()
        d = load.to_dict()
        d.pop("results", None)
        # the evidence of what failed under load (the successes are summarized above)
        d["failed_runs"] = [r.to_dict() for r in load.results if not r.ok]
        out.append(d)
    return out
