"""Summaries of repeated measurements, and runs under concurrent load.

No scipy: percentiles use linear interpolation between closest ranks (numpy's default,
Hyndman & Fan type 7), and the 95% confidence interval of the mean uses Student's t
from a table of two-sided critical values, interpolated in 1/df between rows.
``FORMULAS`` states every metric's definition for inclusion in a result file, so a
reader of the JSON never has to guess what "decode tok/s" meant.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Protocol, TypeVar

FORMULAS: dict[str, str] = {
    "clock": "time.perf_counter_ns, stamped as each network read returns; send = the request starts "
    "to be written (httpcore trace http11.send_request_headers.started), after any TCP connect",
    "token_event": "a stream chunk with non-empty content, reasoning (reasoning_content|reasoning), "
    "tool_calls or text; a role-only chunk is not one",
    "ttft_ms": "first token event - send",
    "ttfo_ms": "first visible content or tool call - send (excludes reasoning)",
    "e2e_ms": "last token event - send",
    "decode_ms": "e2e_ms - ttft_ms",
    "stream_ms": "end of stream ([DONE] or close) - send",
    "n_out": "output tokens: usage.completion_tokens -> server timings (llama.cpp predicted_n, "
    "LM Studio stats, Ollama eval_count) -> tokenizer -> round(chars / 4); source in n_out_source",
    "n_prompt": "uncached prompt tokens: usage.prompt_tokens - cached_tokens -> llama.cpp prompt_n "
    "-> Ollama prompt_eval_count -> tokenizer / chars/4 of the messages (no chat template)",
    "tpot_ms": "decode_ms / (n_out - 1)",
    "decode_tps": "1000 / tpot_ms",
    "e2e_tps": "n_out / (e2e_ms / 1000)  (includes TTFT)",
    "prefill_tps": "n_prompt / (ttft_ms / 1000)  (uncached prompt tokens; TTFT includes transport)",
    "itl_ms": "gaps between consecutive token events (chunks in one network read share a time)",
    "server_decode_tps": "the server's own figure: llama.cpp timings.predicted_per_second, "
    "LM Studio stats.tokens_per_second, Ollama eval_count / eval_duration",
    "server_prefill_tps": "llama.cpp timings.prompt_per_second, Ollama prompt_eval_count / prompt_eval_duration",
    "connect_ms": "TCP connect when the run opened a connection; before send, so outside TTFT",
    "client_overhead_us_per_chunk": "the read loop's own time while streaming (stamp and store a read) / chunks",
    "parse_us_per_chunk": "SSE + JSON parse time, done after the stream ended / chunks",
    "n": "number of values (successful runs only)",
    "mean": "sum(x) / n",
    "median": "p50",
    "sd": "sample standard deviation: sqrt(sum((x - mean)^2) / (n - 1))",
    "cv": "sd / mean",
    "p": "linear interpolation (type 7) on sorted x: h = (n - 1) * q, i = floor(h); "
    "x[i] + (h - i) * (x[i + 1] - x[i])",
    "min": "smallest value",
    "max": "largest value",
    "ci95": "mean -/+ t(0.975, n - 1) * sd / sqrt(n), t from a table interpolated in 1/df",
    "aggregate_tps": "sum of n_out over successful runs / wall time from the common start to the last finish",
}

# Two-sided 95% (upper 0.975) critical values of Student's t by degrees of freedom.
T_975: dict[int, float] = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
    10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
    18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
    26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 50: 2.009, 60: 2.000,
    80: 1.990, 100: 1.984, 120: 1.980,
}  # fmt: skip
Z_975 = 1.960  # df → ∞


def t_critical_95(df: int) -> float:
    """t(0.975, df); between table rows, linear in 1/df (t is nearly linear in 1/df)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df in T_975:
        return T_975[df]
    rows = sorted(T_975)
    lo = max(r for r in rows if r < df)
    hi = min((r for r in rows if r > df), default=None)
    t_lo, x_lo = T_975[lo], 1.0 / lo
    t_hi, x_hi = (T_975[hi], 1.0 / hi) if hi is not None else (Z_975, 0.0)
    return t_hi + (t_lo - t_hi) * (1.0 / df - x_hi) / (x_lo - x_hi)


def wilson_95(passed: int, total: int) -> tuple[float | None, float | None]:
    """The Wilson score 95 % interval of a pass rate (passed of total independent trials);
    (None, None) for no trials. Unlike the normal approximation it stays inside [0, 1] and
    is not zero-width at 0 or 100 %. storage/queries/suites.py computes the same in SQL."""
    if total <= 0:
        return None, None
    return wilson_score(passed, total, Z_975)


def wilson_score(passed: int, total: int, z: float) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` of ``total`` (≥ 1) at normal quantile ``z``."""
    p = passed / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) with linear interpolation; p90 of 1..10 is 9.1."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must lie in [0, 1], got {q}")
    xs = sorted(values)
    h = (len(xs) - 1) * q
    i = math.floor(h)
    if i + 1 >= len(xs):
        return float(xs[-1])
    return xs[i] + (h - i) * (xs[i + 1] - xs[i])


@dataclass(frozen=True)
class Summary:
    """Statistics of one metric over repeated runs; None where undefined for this n."""

    n: int
    mean: float | None = None
    median: float | None = None
    sd: float | None = None
    cv: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None
    ci95_low: float | None = None
    ci95_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(values: Sequence[float | None]) -> Summary:
    """Summary of the values, ignoring None (a metric a run could not produce)."""
    xs = sorted(float(v) for v in values if v is not None)
    n = len(xs)
    if n == 0:
        return Summary(n=0)
    mean = math.fsum(xs) / n
    p50 = percentile(xs, 0.5)
    sd = cv = low = high = None
    if n >= 2:
        sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
        cv = sd / mean if mean != 0 else None
        half = t_critical_95(n - 1) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    return Summary(
        n=n, mean=mean, median=p50, sd=sd, cv=cv, p50=p50, p90=percentile(xs, 0.9),
        p99=percentile(xs, 0.99), min=xs[0], max=xs[-1], ci95_low=low, ci95_high=high,
    )  # fmt: skip


# -- concurrency ----------------------------------------------------------------


class Measured(Protocol):
    """What run_concurrent needs from a run (bench_runner.client.RunResult has it)."""

    ok: bool
    error_kind: str | None
    n_out: int | None
    ttft_ms: float | None
    e2e_ms: float | None
    tpot_ms: float | None
    decode_tps: float | None


M = TypeVar("M", bound=Measured)


@dataclass
class LoadResult(Generic[M]):
    n_clients: int
    n_runs: int
    n_ok: int
    failures: dict[str, int]
    wall_s: float
    total_out_tokens: int
    aggregate_tps: float | None
    ttft_ms: Summary
    e2e_ms: Summary
    tpot_ms: Summary
    decode_tps: Summary  # per request, as each client saw it
    results: list[M] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["results"] = [r.to_dict() if hasattr(r, "to_dict") else r for r in self.results]
        return out


def run_concurrent(
    n_clients: int,
    fn: Callable[[int], M],
    *,
    runs_per_client: int = 1,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> LoadResult[M]:
    """Call ``fn(client_index)`` from ``n_clients`` threads at once, ``runs_per_client``
    times each, back to back, and summarize throughput and latency under that load.

    The threads start together behind a barrier, and the wall time runs from that
    release to the last finish. They share one interpreter: each client's parse work
    waits for the GIL, so at high concurrency the client's own overhead shows up in
    the latencies; check the per-chunk overhead the runs report.
    """
    if n_clients < 1 or runs_per_client < 1:
        raise ValueError("n_clients and runs_per_client must be >= 1")
    start: list[int] = []
    ends = [0] * n_clients
    per_client: list[list[M]] = [[] for _ in range(n_clients)]
    crashes: Counter[str] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(n_clients, action=lambda: start.append(clock()))

    def worker(i: int) -> None:
        barrier.wait()
        for _ in range(runs_per_client):
            try:
                per_client[i].append(fn(i))
            except Exception as exc:  # a crashing fn is counted, never lost silently
                with lock:
                    crashes[f"exception:{type(exc).__name__}"] += 1
        ends[i] = clock()

    threads = [threading.Thread(target=worker, args=(i,), name=f"bench-client-{i}") for i in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = [r for rs in per_client for r in rs]
    ok = [r for r in results if r.ok]
    failures = Counter(str(r.error_kind) for r in results if not r.ok) + crashes
    wall_s = (max(ends) - start[0]) / 1e9
    total = sum(r.n_out or 0 for r in ok)
    return LoadResult(
        n_clients=n_clients,
        n_runs=n_clients * runs_per_client,
        n_ok=len(ok),
        failures=dict(failures),
        wall_s=wall_s,
        total_out_tokens=total,
        aggregate_tps=total / wall_s if wall_s > 0 else None,
        ttft_ms=summarize([r.ttft_ms for r in ok]),
        e2e_ms=summarize([r.e2e_ms for r in ok]),
        tpot_ms=summarize([r.tpot_ms for r in ok]),
        decode_tps=summarize([r.decode_tps for r in ok]),
        results=results,
    )
