"""``otelbench suite list|show``: the agent benchmark suites under benchmarks/suites/
(bench_runner/agent_suite.py, docs/suites.md). ``suite run`` is not built yet."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suite", help="agent benchmark suites: list them, show one",
                       description="Versioned agent benchmark suites (benchmarks/suites/<name>-v<N>/suite.yaml).")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    listing = verbs.add_parser("list", help="the suites, their versions and case counts")
    listing.add_argument("--root", type=Path, default=None, help="where suites live (default: benchmarks/suites)")
    show = verbs.add_parser("show", help="one suite: its settings and cases")
    show.add_argument("suite", help="name (its latest version), name-vN, or a suite folder")
    show.add_argument("--root", type=Path, default=None, help="where suites live (default: benchmarks/suites)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bench_runner import agent_suite

    root = args.root or agent_suite.SUITES_DIR
    try:
        if args.verb == "list":
            suites = agent_suite.discover(root)
            if not suites:
                print(f"no suites under {root}")
            for s in suites:
                print(f"{s.version:<40} {len(s.spec.cases):>3} cases × {s.spec.repeats} repeats  {s.spec.description}")
            return 0
        s = agent_suite.find(args.suite, root)
    except agent_suite.SuiteError as exc:
        print(f"otelbench suite: {exc}", file=sys.stderr)
        return 2
    print(f"{s.version}  ({s.folder})\n{s.spec.description}\nrepeats {s.spec.repeats}, "
          f"time limit {s.spec.time_limit_s:g} s per case\n")
    for case in s.spec.cases:
        text = case.input if isinstance(case.input, str) else str(case.input)
        print(f"  {case.id:<28} {case.check.kind:<11} {text[:60]}{'…' if len(text) > 60 else ''}")
    return 0
