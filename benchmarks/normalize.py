"""Normalization benchmark: µs per span, reference (per-span Python) vs the Arrow batch path.

Builds realistic agent traffic (otelbench.testing.otlp.agent_request: invoke_agent roots,
chat spans with 0.5–2 KB canonical GenAI message JSON, execute_tool spans), serializes
it as the write-ahead log holds it, and times both ways from serialized bytes to rows:

- reference: ``ExportTraceServiceRequest.FromString`` + ``normalize.rows.normalize_traces``
  per request (what the flusher did);
- arrow: ``normalize.columnar.normalize_traces_arrow`` on the whole batch, the decode
  included (``normalize.wire``: compiled, or ptars where it is not; both also shown alone,
  for scale).

Each is run once to warm up (the first Arrow call also compiles the message pattern),
then ``--runs`` times; the median is printed as wall-clock µs/span and as CPU µs/span
(user + system time of this process: polars uses both cores, so wall < CPU when the
machine is idle; the flusher runs polars on one thread beside its writer thread and the
receiver, so CPU is what bounds throughput).

``--retain-memory`` re-runs the benchmark in a child process whose allocators keep freed
memory instead of returning it to the kernel (glibc, for ptars and numpy). Each batch allocates some 150 MB of fresh buffers and
page faults on this VM cost ~8 µs/span of system time; the settings are the flusher
workers' own (``collector.flusher.ALLOCATOR_ENV``).

``--stages`` times one flusher-sized batch (``--spans 4608`` is ~5 MiB, the default
``flush.max_batch_mib``) as the flusher runs it — polars and Arrow on one thread — split
into the decode (``normalize.wire``), polars' plans (how many, and their time) and the rest (Python, numpy,
pyarrow between them); then the same batches with the decode in a thread of its own
beside the rest, to show whether a decode stage would overlap (ptars holds the GIL; the
compiled decoder releases it while it reads).

    python benchmarks/normalize.py [--spans 20480] [--per-request 512] [--runs 5] [--retain-memory]
    python benchmarks/normalize.py --stages --spans 4608 --retain-memory
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
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otelbench.collector.flusher import ALLOCATOR_ENV  # noqa: E402  (what the flusher workers start with)


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
    ap.add_argument("--stages", action="store_true", help="split a flusher-sized batch into its stages")
    ap.add_argument("--retain-memory", action="store_true",
                    help="run with allocators that keep freed memory (see the module docstring)")
    args = ap.parse_args()
    if args.retain_memory:
        argv = [a for a in sys.argv[1:] if a != "--retain-memory"]
        env = {**os.environ, **ALLOCATOR_ENV, "OTELBENCH_RETAIN_MEMORY": "1"}
        sys.exit(subprocess.call([sys.executable, __file__, *argv], env=env))

    if args.stages:
        stages(args)
        return
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otelbench.normalize.rows import normalize_traces
    from otelbench.normalize import wire
    from otelbench.normalize.columnar import normalize_traces_arrow

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
        wire.decode(payloads)

    def ptars_only() -> None:
        wire._ptars().list_to_record_batch(payloads)

    print(f"{n} spans in {len(payloads)} requests of {args.per_request} ({mib:.1f} MiB), median of {args.runs} runs,"
          f" {'allocators retaining memory' if tuned else 'default allocators'}, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results = {}
    decoder = "compiled" if wire.COMPILED else "ptars"
    for name, fn in (("reference", reference), ("arrow", arrow), (f"  of which decode ({decoder})", decode_only),
                     ("  (ptars' decode)", ptars_only)):
        wall, cpu = measure(fn, args.runs)
        results[name] = wall / n * 1e6, cpu / n * 1e6
        print(f"{name:>24}: {results[name][0]:7.2f} µs/span wall ({n / wall:9,.0f} spans/s), "
              f"{results[name][1]:7.2f} µs/span CPU")
    ref, arr = results["reference"], results["arrow"]
    print(f"{'speed-up':>24}: {ref[0] / arr[0]:7.1f}x wall, {ref[1] / arr[1]:.1f}x CPU")


def stages(args: argparse.Namespace) -> None:
    """Decode / polars plans / the rest of one batch, one thread as in the flusher; and the
    decode in a thread of its own beside the rest (a pipeline), ms per batch."""
    import queue
    import threading

    from otelbench.collector.flusher import _single_threaded

    _single_threaded()
    import polars.lazyframe.frame as lazy

    from otelbench.normalize import columnar, wire

    batches = [make_payloads(args.spans, args.per_request, seed) for seed in range(args.seed, args.seed + 4)]
    owners = [None] * len(batches[0])
    decode = wire.decode
    plans = {"n": 0, "s": 0.0}
    collect = lazy.LazyFrame._collect_eager  # what DataFrame.select / with_columns run

    def timed(self: Any, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return collect(self, *a, **k)
        finally:
            plans["n"] += 1
            plans["s"] += time.perf_counter() - t

    def rest(decoded: Any) -> None:
        columnar.normalize_decoded(decoded, owners)

    for p in batches:
        rest(decode(p))  # warm-up: the message pattern compiles
    whole, dec, plan_s, plan_n = [], [], [], []
    for _ in range(args.runs):
        for p in batches:
            plans.update(n=0, s=0.0)
            t = time.perf_counter()
            d = decode(p)
            t1 = time.perf_counter()
            lazy.LazyFrame._collect_eager = timed
            rest(d)
            lazy.LazyFrame._collect_eager = collect
            whole.append(time.perf_counter() - t)
            dec.append(t1 - t)
            plan_s.append(plans["s"])
            plan_n.append(plans["n"])

    def piped() -> float:
        q: queue.Queue[Any] = queue.Queue(2)

        def produce() -> None:
            for p in batches:
                q.put(decode(p))
            q.put(None)
        t = time.perf_counter()
        threading.Thread(target=produce).start()
        while (item := q.get()) is not None:
            rest(item)
        return (time.perf_counter() - t) / len(batches)

    def sequential() -> float:
        t = time.perf_counter()
        for p in batches:
            rest(decode(p))
        return (time.perf_counter() - t) / len(batches)

    import polars as pl

    tiny = pl.DataFrame({"a": [1, 2, 3]})
    empty = measure(lambda: tiny.with_columns(b=pl.col("a") + 1), 200)[0]  # one plan's own cost
    pairs = [(sequential(), piped()) for _ in range(args.runs)]
    med = statistics.median
    n = len(batches[0]) * args.per_request
    mib = sum(map(len, batches[0])) / 2**20
    print(f"one batch of {n} spans ({mib:.1f} MiB), polars and Arrow on one thread as in the flusher, "
          f"median of {len(whole)}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'whole batch':>28}: {med(whole) * 1e3:6.1f} ms ({med(whole) / n * 1e6:5.2f} µs/span)")
    print(f"{'decode (' + ('compiled' if wire.COMPILED else 'ptars') + ')':>28}: {med(dec) * 1e3:6.1f} ms")
    print(f"{'polars plans':>28}: {med(plan_s) * 1e3:6.1f} ms in {med(plan_n):.0f} plans "
          f"(a trivial plan costs {empty * 1e6:.0f} µs: {med(plan_n) * empty * 1e3:.1f} ms of it)")
    print(f"{'the rest':>28}: {(med(whole) - med(dec) - med(plan_s)) * 1e3:6.1f} ms")
    print(f"{'sequential / decode thread':>28}: {med(p[0] for p in pairs) * 1e3:6.1f} / "
          f"{med(p[1] for p in pairs) * 1e3:6.1f} ms per batch")


if __name__ == "__main__":
    main()
