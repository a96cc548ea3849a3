"""Fidelity of the bench runner's client: its measuring error against an exact stream.

Part 1 runs the stub's ``paced`` script (otelbench/testing/openai_stub.py) in its own
process — first token exactly T ms after the request arrives, then exactly R tokens/s —
and measures it with ``bench_runner.client.measure_run`` over one kept-alive connection:

- TTFT error = client TTFT − T (request transit + stub pacing + delivery, all included);
- decode tok/s error = client decode tok/s vs R;
- the stub publishes its own ``perf_counter_ns`` readings (CLOCK_MONOTONIC, shared by
  every process on Linux), which splits the error into request transit (send → the
  stub has the request), the stub's own pacing error, and delivery (the stub's write →
  the client's timestamp);
- client overhead per chunk: the read loop's own time while streaming (it only stamps
  and stores each read), the SSE/JSON parse done after the stream, and the client
  thread's whole CPU time per chunk (httpx + h11 + our code + request setup).

Part 2 streams from the real llama.cpp server (``llama-server`` with the embedded
SmolLM2-135M) and prints the client's decode/prefill tok/s beside the server's own
figures: the ``timings`` object it sends with the stream's last chunk (prompt and
predicted tokens, and the rates it measured).

    python benchmarks/bench_fidelity.py [--runs 5] [--skip-model]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otelbench.bench_runner.client import RunResult, measure_run  # noqa: E402
from otelbench.bench_runner.stats import summarize  # noqa: E402

TTFTS_MS = (50.0, 200.0)
RATES = (20.0, 100.0, 500.0, 2000.0)
DECODE_SECONDS = 1.0  # tokens per paced run: about this long, within [MIN_TOKENS, MAX_TOKENS]
MIN_TOKENS, MAX_TOKENS = 20, 500
TARGET_TTFT_MS, TARGET_DECODE_PCT, TARGET_OVERHEAD_US = 2.0, 1.0, 50.0
# The stub spins before each deadline; at 2,000 tok/s a 1 ms spin never sleeps and holds a
# whole core, which on a 2-core machine delays the client's wake-ups by ~3 ms. 0.3 ms
# still covers time.sleep's overshoot (~0.07 ms) and leaves the client a core.
STUB_SPIN_US = 300
MODEL_PROMPT = "Write a short story about a robot who learns to paint."
MODEL_MAX_TOKENS = 64


@dataclass
class PacedRun:
    ttft_err_ms: float  # client TTFT − T
    ttft_meas_err_ms: float  # client TTFT − the stub's actual TTFT (first write − arrival)
    decode_err_pct: float  # client decode tok/s vs R
    decode_meas_err_pct: float  # client decode tok/s vs the stub's actual rate (its write times)
    transit_ms: float  # client clock start → the stub has the request line
    pacing_err_ms: float  # stub's first write − (arrival + T): the reference's own error
    stub_rate_err_pct: float  # the stub's achieved rate vs R
    delivery_ms: float  # stub's first write → client's first-token timestamp
    loop_us_per_chunk: float  # the read loop's own work while streaming (stamp + store)
    parse_us_per_chunk: float  # SSE + JSON parse, after the stream
    cpu_us_per_chunk: float


@contextmanager
def stub_process() -> Iterator[str]:
    """The stub in its own interpreter, so its pacing never competes for our GIL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbench.testing.openai_stub"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening "):
            raise RuntimeError(f"stub did not start: {line!r}")
        yield line.split()[1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def paced_run(client: httpx.Client, root: str, ttft_ms: float, rate: float, n: int) -> PacedRun:
    url = f"{root}/paced;ttft_ms={ttft_ms};rate={rate};n={n};spin_us={STUB_SPIN_US}/v1"
    cpu0 = time.thread_time_ns()
    r = measure_run(url, "stub-model", "hi", client=client)
    cpu_ns = time.thread_time_ns() - cpu0
    if not r.ok or r.ttft_ms is None or r.decode_tps is None:
        raise RuntimeError(f"paced run failed: {r.error_kind} {r.error} {r.evidence}")
    trace = client.get(f"{root}/stub/last_trace").json()
    arrival, writes = trace["t_received_ns"], trace["t_token_ns"]
    stub_ttft_ms = (writes[0] - arrival) / 1e6
    stub_rate = (len(writes) - 1) / ((writes[-1] - writes[0]) / 1e9)
    return PacedRun(
        ttft_err_ms=r.ttft_ms - ttft_ms,
        ttft_meas_err_ms=r.ttft_ms - stub_ttft_ms,
        decode_err_pct=(r.decode_tps - rate) / rate * 100,
        decode_meas_err_pct=(r.decode_tps - stub_rate) / stub_rate * 100,
        transit_ms=(arrival - r.t_send_ns) / 1e6,
        pacing_err_ms=stub_ttft_ms - ttft_ms,
        stub_rate_err_pct=(stub_rate - rate) / rate * 100,
        delivery_ms=(r.t_send_ns + r.ttft_ms * 1e6 - writes[0]) / 1e6,
        loop_us_per_chunk=r.client_overhead_us_per_chunk or 0.0,
        parse_us_per_chunk=r.parse_us_per_chunk or 0.0,
        cpu_us_per_chunk=cpu_ns / max(1, r.n_chunks) / 1000,
    )


def _largest(xs: list[float]) -> float:
    return max(xs, key=abs)


def _cell(xs: list[float], fmt: str = "6.2f") -> str:
    """median and the value of largest magnitude."""
    return f"{statistics.median(xs):{fmt}} {_largest(xs):{fmt}}"


def fidelity(runs: int) -> bool:
    load1, load5, _ = os.getloadavg()
    print(f"== client vs the paced reference stream (stub in its own process), {runs} runs each; "
          f"{os.cpu_count()} CPUs, load average {load1:.1f} (1 min) {load5:.1f} (5 min)")  # fmt: skip
    print("   vs T/R: against the nominal schedule; vs stub: against what the stub really did (its own")
    print("   clock readings), i.e. the client's measuring error alone. Cells: median, largest |value|.")
    print(f"{'T':>4} {'R':>5} {'N':>4} | {'TTFT err ms':^13} | {'TTFT err ms':^13} | {'decode err %':^13} | "
          f"{'decode err %':^13} | {'transit':>7} {'deliver':>7} {'pacing':>7} {'stub R':>7} | "
          f"{'loop+parse µs':^13} | {'CPU µs':>6}")  # fmt: skip
    print(f"{'ms':>4} {'tok/s':>5} {'':>4} | {'vs T':^13} | {'vs stub':^13} | {'vs R':^13} | {'vs stub':^13} | "
          f"{'median ms':^23} {'%':>7} | {'per chunk':^13} | {'/chunk':>6}")  # fmt: skip
    cells: dict[str, list[list[float]]] = {k: [] for k in ("ttft", "decode", "ours", "ttft_nominal", "decode_nominal")}
    with stub_process() as root, httpx.Client(trust_env=False, timeout=30) as client:
        for _ in range(3):  # warm-up: connect, first-call imports and allocations
            paced_run(client, root, 5, 100, 20)
        for ttft_ms in TTFTS_MS:
            for rate in RATES:
                n = int(min(MAX_TOKENS, max(MIN_TOKENS, rate * DECODE_SECONDS)))
                rs = [paced_run(client, root, ttft_ms, rate, n) for _ in range(runs)]
                col = lambda name: [getattr(r, name) for r in rs]  # noqa: E731
                med = lambda name: statistics.median(col(name))  # noqa: E731
                ours = [r.loop_us_per_chunk + r.parse_us_per_chunk for r in rs]
                cells["ttft"].append(col("ttft_meas_err_ms"))
                cells["decode"].append(col("decode_meas_err_pct"))
                cells["ours"].append(ours)
                cells["ttft_nominal"].append(col("ttft_err_ms"))
                cells["decode_nominal"].append(col("decode_err_pct"))
                print(
                    f"{ttft_ms:>4.0f} {rate:>5.0f} {n:>4} | {_cell(col('ttft_err_ms'))} | "
                    f"{_cell(col('ttft_meas_err_ms'))} | {_cell(col('decode_err_pct'), '+6.2f')} | "
                    f"{_cell(col('decode_meas_err_pct'), '+6.2f')} | {med('transit_ms'):>7.3f} "
                    f"{med('delivery_ms'):>7.3f} {med('pacing_err_ms'):>7.3f} {med('stub_rate_err_pct'):>+7.3f} | "
                    f"{_cell(ours, '6.1f')} | {med('cpu_us_per_chunk'):>6.0f}"
                )
        # Back to back (no pacing): the parse cost with warm caches, the code's own cost.
        burst = [paced_run(client, root, 1, 1e7, MAX_TOKENS) for _ in range(runs)]
        print(f"back-to-back chunks: loop {_cell([r.loop_us_per_chunk for r in burst], '.1f')} + parse "
              f"{_cell([r.parse_us_per_chunk for r in burst], '.1f')} µs/chunk, CPU "
              f"{statistics.median(r.cpu_us_per_chunk for r in burst):.0f} µs/chunk")  # fmt: skip
    targets = {"ttft": TARGET_TTFT_MS, "decode": TARGET_DECODE_PCT, "ours": TARGET_OVERHEAD_US}
    ok = True
    for label, pick in (("typical (worst cell median)", statistics.median), ("worst single run", _largest)):
        got = {k: max(abs(pick(c)) for c in cells[k]) for k in (*targets, "ttft_nominal", "decode_nominal")}
        passed = all(got[k] < targets[k] for k in targets)
        ok = ok and passed
        print(f"{label}: vs stub TTFT {got['ttft']:.2f} ms (target < {TARGET_TTFT_MS:g}), decode "
              f"{got['decode']:.2f} % (< {TARGET_DECODE_PCT:g}); loop+parse {got['ours']:.1f} µs/chunk "
              f"(< {TARGET_OVERHEAD_US:g}) -> {'PASS' if passed else 'FAIL'}; vs nominal T/R (stub slips "
              f"included) TTFT {got['ttft_nominal']:.2f} ms, decode {got['decode_nominal']:.2f} %")  # fmt: skip
    print("loop+parse: our code per chunk (stamp+store while streaming, SSE/JSON parse after); CPU: the client")
    print("thread's CPU time per chunk (httpx + h11 + our code + the request's setup spread over its chunks)")
    return ok


# -- the real llama.cpp server ------------------------------------------------------------


def model_vs_server(runs: int) -> None:
    load1, _, _ = os.getloadavg()
    print(f"\n== client vs llama-server's own timings, SmolLM2-135M Q4_1, {runs} runs + 1 warm-up; "
          f"load average {load1:.1f}")  # fmt: skip
    from otelbench.bench_runner.llama_server import LlamaServer, LlamaServerError

    try:
        server = LlamaServer().start()
    except LlamaServerError as exc:
        print(f"skipped: {exc}")
        return
    try:
        _model_rows(server, runs)
    finally:
        server.stop()


def _model_rows(server: Any, runs: int) -> None:
    with httpx.Client(trust_env=False, timeout=120) as client:
        assert server.model_id is not None
        print(f"server: {server.n_threads} threads; client decode/prefill from this process, "
              "server figures from the stream's `timings` (predicted = decode, prompt = prefill)")  # fmt: skip
        print(f"{'run':>3} {'n_out':>5} {'events':>6} {'ttft ms':>8} | {'decode tok/s':>12} {'server':>7} | "
              f"{'prefill tok/s':>13} {'server':>8} {'n_prompt':>8} {'server':>6} | {'e2e tok/s':>9}")  # fmt: skip
        rows: list[tuple[RunResult, dict[str, float]]] = []
        for i in range(runs + 1):
            r = measure_run(server.base_url, server.model_id, MODEL_PROMPT, max_tokens=MODEL_MAX_TOKENS,
                            client=client, cache_prompt=False)  # fmt: skip
            if not r.ok:
                print(f"{i:>3} FAILED {r.error_kind}: {r.error}")
                continue
            if i == 0:
                continue  # warm-up
            t = r.server_timings.get("llama.cpp", {})
            rows.append((r, t))
            nan = float("nan")
            print(f"{i:>3} {r.n_out:>5} {r.n_token_events:>6} {r.ttft_ms:>8.1f} | {r.decode_tps:>12.1f} "
                  f"{t.get('predicted_per_second', nan):>7.1f} | {r.prefill_tps or nan:>13.1f} "
                  f"{t.get('prompt_per_second', nan):>8.1f} {r.n_prompt or 0:>8} {t.get('prompt_n', 0):>6} | "
                  f"{r.e2e_tps:>9.1f}")  # fmt: skip
        if rows:
            client_dec = summarize([r.decode_tps for r, _ in rows])
            server_dec = summarize([t["predicted_per_second"] for _, t in rows if "predicted_per_second" in t])
            print(f"decode tok/s: client mean {client_dec.mean:.1f} (CI {client_dec.ci95_low:.1f}–"
                  f"{client_dec.ci95_high:.1f}), server mean {server_dec.mean:.1f} "
                  f"({100 * client_dec.mean / server_dec.mean:.0f} %); n_out source "
                  f"{rows[0][0].n_out_source}, prompt source {rows[0][0].n_prompt_source}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-model", action="store_true")
    args = parser.parse_args()
    fidelity(args.runs)
    if not args.skip_model:
        model_vs_server(args.runs)


if __name__ == "__main__":
    main()
