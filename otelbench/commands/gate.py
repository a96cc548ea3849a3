"""``otelbench gate``: compare a candidate with its baseline — two suite runs, two bench
results, or an agent's runs in two time windows — and exit 1 on a regression beyond the
tolerances (bench_runner/gate.py; docs/gate.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Sequence

from otelbench.storage import DEFAULT_LAKE


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate", help="compare two suite runs, bench results or time windows; exit 1 on a regression",
        description="Compares a candidate with its baseline, each difference with its interval, and exits 1 "
                    "only when a metric is worse beyond its tolerance at the stated confidence (0: no "
                    "regression, 2: usage error). docs/gate.md")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--suite-runs", nargs=2, metavar=("BASE", "CANDIDATE"), help="two suite run ids (suite_runs)")
    what.add_argument("--bench", nargs=2, metavar=("BASE", "CANDIDATE"),
                      help="two bench results' trace ids (bench_results)")
    what.add_argument("--agent", metavar="NAME", help="an agent's runs (agent_runs, evals) in two windows: "
                                                      "--baseline and --candidate")
    p.add_argument("--baseline", type=window, metavar="START..END", help="with --agent: ISO times or dates, UTC")
    p.add_argument("--candidate", type=window, metavar="START..END", help="with --agent: ISO times or dates, UTC")
    add_comparison_args(p)
    p.set_defaults(func=main)


def add_comparison_args(p: argparse.ArgumentParser) -> None:
    """The lake, tolerances and output flags of a comparison (``gate``, ``suite compare``)."""
    p.add_argument("--lake", default=DEFAULT_LAKE, help=f"lake folder or s3://bucket/prefix (default: {DEFAULT_LAKE})")
    p.add_argument("--confidence", type=fraction, default=0.95, help="of every interval (default: %(default)s)")
    p.add_argument("--max-drop", type=fraction, default=0.05,
                   help="pass rate: the largest tolerated drop, as a proportion (default: %(default)s = 5 points)")
    p.add_argument("--max-slowdown", type=ratio, default=1.2,
                   help="latency: the largest tolerated ratio candidate / baseline (default: %(default)s)")
    p.add_argument("--max-added-latency-ms", type=positive, default=None, metavar="MS",
                   help="latency: the largest tolerated increase in ms (with --max-slowdown, beyond both fails)")
    p.add_argument("--latency-statistic", choices=("median", "mean"), default="median",
                   help="of the latencies compared (default: %(default)s)")
    p.add_argument("--max-score-drop", type=fraction, default=0.05,
                   help="judge score (0–1): the largest tolerated drop of the mean (default: %(default)s)")
    p.add_argument("--max-cost-increase", type=ratio, default=1.2,
                   help="cost: the largest tolerated ratio of the means, candidate / baseline (default: %(default)s)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default: %(default)s)")
    p.add_argument("--allow-version-change", action="store_true",
                   help="compare results of two different suite versions anyway")
    p.add_argument("--wait", type=positive, default=15, metavar="SECONDS",
                   help="suite runs: read again while one is missing or incomplete, up to this long (its last "
                        "spans reach the lake up to a flush interval after `suite run` returns; default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--otlp-endpoint", default=os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"), metavar="URL",
                   help="record the verdict there as a span (the web's gate badge reads it; default: "
                        "$OTEL_EXPORTER_OTLP_ENDPOINT, else not recorded)")
    p.add_argument("--key", default=os.environ.get("OTELBENCH_KEY"), help="ingest key (default: $OTELBENCH_KEY)")


def fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text}: give a number from 0 to below 1")
    return value


def ratio(text: str) -> float:
    value = float(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: a ratio of at least 1 (1.2 tolerates 20 % worse)")
    return value


def positive(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of at least 0")
    return value


def window(text: str) -> tuple[dt.datetime, dt.datetime]:
    start, sep, end = text.partition("..")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text}: give START..END (ISO times or dates, e.g. 2026-12-01..2026-12-07)")
    try:
        return _time(start), _time(end)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc}") from None


def _time(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text.strip())
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def main(args: argparse.Namespace) -> int:
    if args.agent and (args.baseline is None or args.candidate is None):
        print("otelbench gate: error: --agent needs --baseline START..END and --candidate START..END", file=sys.stderr)
        return 2
    return compare(args, "otelbench gate", suite_runs=args.suite_runs, bench=args.bench, agent=args.agent,
                   windows=(args.baseline, args.candidate))


def compare(args: argparse.Namespace, prog: str, *, suite_runs: Sequence[str] | None = None,
            bench: Sequence[str] | None = None, agent: str | None = None,
            windows: Sequence[tuple[dt.datetime, dt.datetime] | None] = (None, None)) -> int:
    """Read both sides, compare them, print the report: exit 0, 1 on a regression, 2 on a
    usage error (the flags of ``add_comparison_args``)."""
    from otelbench.bench_runner import gate
    from otelbench.storage.duckdb import QueryError

    if args.resamples < 100:
        print(f"{prog}: error: --resamples must be at least 100", file=sys.stderr)
        return 2
    confidence = args.confidence
    if confidence <= 0:
        print(f"{prog}: error: --confidence must lie between 0 and 1", file=sys.stderr)
        return 2
    tol = gate.Tolerances(max_drop=args.max_drop, max_slowdown=args.max_slowdown,
                          max_added_latency_ms=args.max_added_latency_ms, max_score_drop=args.max_score_drop,
                          max_cost_increase=args.max_cost_increase, latency_statistic=args.latency_statistic,
                          confidence=confidence, resamples=args.resamples, seed=args.seed)
    try:
        base, cand = gate.read_sides(args.lake, suite_runs=suite_runs, bench=bench, agent=agent,
                                     windows=windows, wait_s=args.wait)
        report = gate.compare(base, cand, tol, allow_version_change=args.allow_version_change)
    except (gate.GateError, QueryError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        from rich.console import Console

        sys.stdout.write(gate.render(report, Console().width))  # the terminal's, else $COLUMNS, else 80
    if args.otlp_endpoint:
        from otelbench.bench_runner import gate_record

        sent = gate_record.record(report, args.otlp_endpoint, {"X-Bench-Key": args.key} if args.key else None)
        print(f"{prog}: verdict {report.verdict!r} " + (f"recorded at {args.otlp_endpoint}" if not sent["failures"]
              else f"not recorded: {args.otlp_endpoint} did not take its span"), file=sys.stderr)
    return 1 if report.regression else 0
