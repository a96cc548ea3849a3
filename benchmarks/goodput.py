"""A goodput sweep of the embedded model: the core suite's checked requests at rising
Poisson rates and fixed concurrencies, on ``llama-server`` as ``LlamaServer()`` starts it
(4 slots), the same code path as ``otelbench bench --local --goodput-…``.

    python benchmarks/goodput.py [--rates 0.25,0.5,1,2] [--concurrency 1,2,4] [--requests 6]
                                 [--slo "ttft_p95<=2s,e2e_p95<=10s"] [--min-pass 0.2]
                                 [--cases count_stars,json_book,summary_tunnel]

The default cases are the core suite's short-prompt tests: the agent-fitness triage's
~1,000-token prompt alone takes seconds of prefill on two cores (``--cases ""`` sends all).

Printed: the sweep's table (latency percentiles, throughput, pass share, goodput, whether
each step holds) and the highest rate and concurrency that hold, then the wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from otelbench.bench_runner import goodput, goodput_report, goodput_run, load, servers  # noqa: E402
from otelbench.bench_runner.llama_server import LlamaServer, find_embedded_model  # noqa: E402
from otelbench.bench_runner.spans import BenchSpans  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rates", type=goodput.parse_rates, default=(0.25, 0.5, 1.0, 2.0))
    parser.add_argument("--concurrency", type=goodput.parse_concurrencies, default=(1, 2, 4))
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--slo", type=goodput.parse_slo, default=goodput.parse_slo("ttft_p95<=2s,e2e_p95<=10s"))
    parser.add_argument("--min-pass", type=float, default=0.2)
    parser.add_argument("--cases", default="count_stars,json_book,summary_tunnel",
                        help="core suite tests, comma-separated; empty: all (default: %(default)s)")
    args = parser.parse_args(argv)
    plan = goodput.Plan(slo=args.slo, min_pass=args.min_pass, rates=args.rates, concurrencies=args.concurrency,
                        requests=args.requests)
    cases = load.suite_cases([c for c in args.cases.split(",") if c])
    console = Console()
    with LlamaServer(find_embedded_model()) as server:
        info = servers.probe(server.base_url)
        began = time.perf_counter()
        result = goodput_run.run_sweep(server.model_id, info, BenchSpans(None), plan, cases,
                                       on_step=lambda s: console.print(f"  {s.mode} {s.load:g}: done", style="dim"))
        wall = time.perf_counter() - began
    goodput_report.print_sweeps([result], console)
    console.print(f"cases: {', '.join(c.name for c in cases)}; sweep wall time {wall:.1f} s")


if __name__ == "__main__":
    main()
