"""What the suite runner costs per case, apart from the agent: a process started, its
stdin fed, its stdout and stderr read, the verdict checked, the case span exported.

    python benchmarks/suite_runner.py [--cases 40] [--repeats 3] [--trials 3]

A suite of ``--cases`` exact-checker cases is written to a temporary folder; the agent is
``/bin/sh -c 'echo Paris'`` (the cheapest agent there is), so what is measured is the
runner. Run with spans exported to a real collector at concurrency 1 and 4, and without
spans (``--no-otel``) at concurrency 1. Prints, per setting, the median over ``--trials``
of wall time per case × repeat in ms (and cases per second).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otelbench.bench_runner.agent_suite import load  # noqa: E402
from otelbench.bench_runner.spans import BenchSpans  # noqa: E402
from otelbench.bench_runner.suite_run import SuiteRun  # noqa: E402


def _suite(folder: Path, cases: int, repeats: int) -> Path:
    lines = ["name: overhead", "version: 1", "description: runner overhead", f"repeats: {repeats}",
             "time_limit_s: 30", "cases:"]
    lines += [f"  - {{id: c{i}, input: 'Capital of France? ({i})', check: {{exact: Paris}}}}" for i in range(cases)]
    (folder / "overhead-v1").mkdir(parents=True)
    (folder / "overhead-v1" / "suite.yaml").write_text("\n".join(lines) + "\n")
    return folder / "overhead-v1"


def _once(suite, endpoint: str | None, concurrency: int) -> float:
    spans = BenchSpans(endpoint)
    began = time.perf_counter()
    trials = SuiteRun(suite, "echo Paris", concurrency=concurrency, otlp_endpoint=endpoint).run(spans)
    spans.shutdown()
    elapsed = time.perf_counter() - began
    assert all(t.passed for t in trials), [t.reason for t in trials if not t.passed][:3]
    return elapsed / len(trials) * 1000


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=40)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--trials", type=int, default=3)
    args = p.parse_args()
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    with tempfile.TemporaryDirectory() as tmp:
        suite = load(_suite(Path(tmp) / "suites", args.cases, args.repeats))
        collector = Collector(collector_config(Path(tmp))).start()
        endpoint = f"http://127.0.0.1:{collector.http_port}"
        try:
            settings = {"spans, 1 at once": (endpoint, 1), "spans, 4 at once": (endpoint, 4),
                        "no spans, 1 at once": (None, 1)}
            per_case = {name: [] for name in settings}
            for _ in range(args.trials):  # settings interleaved: a noisy machine hits them alike
                for name, (ep, conc) in settings.items():
                    per_case[name].append(_once(suite, ep, conc))
        finally:
            collector.stop()
    n = args.cases * args.repeats
    print(f"suite runner overhead: {args.cases} cases × {args.repeats} repeats = {n} agent runs per trial, "
          f"median of {args.trials} trials")
    for name, values in per_case.items():
        ms = statistics.median(values)
        print(f"  {name:<20} {ms:7.1f} ms per case × repeat  ({1000 / ms:5.1f} per second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
