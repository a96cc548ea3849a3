"""Normalization benchmark: µs per span, reference (per-span Python) vs the Arrow batch path.

Builds realistic agent traffic (otelbench.testing.otlp.agent_request: invoke_agent roots,
chat spans with 0.5–2 KB canonical GenAI message JSON, execute_tool spans), serializes
it as the write-ahead log holds it, and times both ways from serialized bytes to rows:

- reference: ``ExportTraceServiceRequest.FromString`` + ``normalize.rows.normalize_traces``
  per request (what the flusher did);
- arrow: ``normalize.columnar.normalize_traces_arrow`` on the whole batch, ptars'
  decode included (also shown alone, for scale).

Each is run once to warm up (the first Arrow call also compiles the message pattern),
then ``--runs`` times; the median is printed as wall-clock µs/span and as CPU µs/span
(user + system time of this process: polars uses both cores, so wall < CPU when the
machine is idle; the flusher runs polars on one thread beside its writer thread and the
receiver, so CPU is what bounds throughput).

``--retain-memory`` re-runs the benchmark in a child process whose allocators keep freed
memory instead of returning it to the kernel (glibc, for ptars and numpy). Each batch allocates some 150 MB of fresh buffers and
page faults on this VM cost ~8 µs/span of system time; the settings are the flusher
workers' own (``collector.flusher.ALLOCATOR_ENV``).

    python benchmarks/normalize.py [--spans 20480] [--per-request 512] [--runs 5] [--retain-memory]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from collector.flusher import ALLOCATOR_ENV  # noqa: E402  (what the flusher workers start with)


def make_payloads(n_spans: int, per_request: int, seed: int) -> list[bytes]:
    from otelbench.testing.otlp import agent_request

    rng = random.Random(seed)
    agents = ["triage", "coder", "researcher", "planner"]
    return [agent_request(rng, per_request, agent=agents[i % 4]).SerializeToString()
            for i in range(n_spans // per_request)]


def measure(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of ``runs`` calls after a warm-up call."""
    fn()
    wall, cpu = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spans", type=int, default=20480)
    ap.add_argument("--per-request", type=int, default=512)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--retain-memory", action="store_true",
                    help="run with allocators that keep freed memory (see the module docstring)")
    args = ap.parse_args()
    if args.retain_memory:
        argv = [a for a in sys.argv[1:] if a != "--retain-memory"]
        env = {**os.environ, **ALLOCATOR_ENV, "OTELBENCH_RETAIN_MEMORY": "1"}
        sys.exit(subprocess.call([sys.executable, __file__, *argv], env=env))

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from normalize.rows import normalize_traces
    from normalize.columnar import normalize_traces_arrow, ptars_handler

    payloads = make_payloads(args.spans, args.per_request, args.seed)
    owners = ["bench"] * len(payloads)
    n = len(payloads) * args.per_request
    mib = sum(map(len, payloads)) / 2**20
    tuned = os.environ.get("OTELBENCH_RETAIN_MEMORY") == "1"

    def reference() -> None:
        for p in payloads:
            normalize_traces(ExportTraceServiceRequest.FromString(p), "bench")

    def arrow() -> None:
        normalize_traces_arrow(payloads, owners)

    def decode_only() -> None:
        ptars_handler().list_to_record_batch(payloads)

    print(f"{n} spans in {len(payloads)} requests of {args.per_request} ({mib:.1f} MiB), median of {args.runs} runs,"
          f" {'allocators retaining memory' if tuned else 'default allocators'}, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results = {}
    for name, fn in (("reference", reference), ("arrow", arrow), ("  of which ptars decode", decode_only)):
        wall, cpu = measure(fn, args.runs)
        results[name] = wall / n * 1e6, cpu / n * 1e6
        print(f"{name:>24}: {results[name][0]:7.2f} µs/span wall ({n / wall:9,.0f} spans/s), "
              f"{results[name][1]:7.2f} µs/span CPU")
    ref, arr = results["reference"], results["arrow"]
    print(f"{'speed-up':>24}: {ref[0] / arr[0]:7.1f}x wall, {ref[1] / arr[1]:.1f}x CPU")


if __name__ == "__main__":
    main()
