"""``otelbench suite list|show|run|compare``: the agent benchmark suites under
benchmarks/suites/ (bench_runner/agent_suite.py, bench_runner/suite_run.py; at a terminal:
bench_runner/suite_console.py; docs/suites.md). ``compare`` is ``otelbench gate
--suite-runs`` (otelbench/commands/gate.py, bench_runner/gate.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from otelbench.collector import DEFAULT_URL
from otelbench.commands import gate as gate_command

DEFAULT_OUT = "~/benchmarks/suites/"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suite", help="agent benchmark suites: list, show, run one against an agent",
                       description="Versioned agent benchmark suites (benchmarks/suites/<name>-v<N>/suite.yaml).")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    listing = verbs.add_parser("list", help="the suites, their versions and case counts")
    show = verbs.add_parser("show", help="one suite: its settings and cases")
    run = verbs.add_parser("run", help="run an agent command on every case × repeat; results become spans",
                           description="Runs COMMAND once per case × repeat: the case on stdin and in "
                                       "OTELBENCH_CASE_* variables, TRACEPARENT set; its stdout is the answer.")
    compare = verbs.add_parser("compare", help="compare two suite runs; exit 1 on a regression (otelbench gate)",
                               description="Compares the CANDIDATE suite run with the BASE run as `otelbench gate "
                                           "--suite-runs` does: each metric with its interval, what differs "
                                           "between their manifests; exit 0, 1 on a regression beyond the "
                                           "tolerances, 2 on a usage error. docs/gate.md")
    compare.add_argument("base", metavar="BASE", help="the baseline's run id (suite_runs.run_id)")
    compare.add_argument("candidate", metavar="CANDIDATE", help="the candidate's run id")
    gate_command.add_comparison_args(compare)
    for verb in (show, run):
        verb.add_argument("suite", help="name (its latest version), name-vN, or a suite folder")
    for verb in (listing, show, run):
        verb.add_argument("--root", type=Path, default=None, help="where suites live (default: benchmarks/suites)")
    env = os.environ
    run.add_argument("--agent", required=True, metavar="COMMAND", help="the agent's command line (run by /bin/sh)")
    run.add_argument("--agent-name", default=None, help="file results under this agent (default: what its spans name)")
    run.add_argument("--repeats", type=int, default=None, help="repeats per case (default: the suite's)")
    run.add_argument("--concurrency", type=int, default=1, help="cases at once (default: %(default)s)")
    run.add_argument("--cases", default=None, help="only these case ids, comma-separated (a partial run)")
    run.add_argument("--judge", default="embedded",
                     help="judge cases: 'embedded' (SmolLM2, started for the run), a base URL (…/v1), or 'none'")
    run.add_argument("--judge-model", default=None, help="the judge endpoint's model (default: its first)")
    run.add_argument("--model-file", type=Path, default=None, metavar="GGUF",
                     help="the model file the agent's server serves: its name and sha256 join the run's manifest")
    run.add_argument("--otlp-endpoint", default=env.get("OTEL_EXPORTER_OTLP_ENDPOINT", DEFAULT_URL),
                     help="where results go as spans, and the agent's own (default: %(default)s)")
    run.add_argument("--key", default=env.get("OTELBENCH_KEY"), help="ingest key (default: $OTELBENCH_KEY)")
    run.add_argument("--no-otel", action="store_true", help="export no spans (the evidence JSON is still kept)")
    run.add_argument("--out", default=DEFAULT_OUT, help="folder for the evidence JSON (default: %(default)s)")
    run.add_argument("--json", action="store_true", help="print the evidence JSON")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from otelbench.bench_runner import agent_suite, suite_console

    if args.verb == "compare":
        return gate_command.compare(args, "otelbench suite compare", suite_runs=(args.base, args.candidate))
    root = args.root or agent_suite.SUITES_DIR
    try:
        if args.verb == "list":
            return suite_console.print_list(agent_suite.discover(root), root)
        suite = agent_suite.find(args.suite, root)
    except agent_suite.SuiteError as exc:
        print(f"otelbench suite: {exc}", file=sys.stderr)
        return 2
    if args.verb == "show":
        return suite_console.print_suite(suite)
    if args.model_file is not None and not args.model_file.is_file():
        print(f"otelbench suite: --model-file {args.model_file}: no such file", file=sys.stderr)
        return 2
    if args.repeats is not None and args.repeats < 1 or args.concurrency < 1:
        print("otelbench suite: --repeats and --concurrency must be at least 1", file=sys.stderr)
        return 2
    return suite_console.run(suite, suite_console.SuiteRunOptions(
        agent=args.agent, out=Path(args.out).expanduser(), agent_name=args.agent_name, repeats=args.repeats,
        concurrency=args.concurrency, cases=args.cases, judge=args.judge, judge_model=args.judge_model,
        model_file=args.model_file,
        otlp_endpoint=None if args.no_otel else args.otlp_endpoint, key=args.key, print_json=args.json))
