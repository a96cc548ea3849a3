"""``otelbench demo``: every part of otelbench working together on the embedded default
(the steps: ``otelbench.demo.steps``, docs/demo.md)."""

from __future__ import annotations

import argparse

from otelbench.collector import DEFAULT_WAL_DIR
from otelbench.storage import DEFAULT_LAKE


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="everything at once: serve, bench the embedded model, run agents and a "
                                    "suite, judge, cluster, then keep serving")
    p.add_argument("--lake", default=DEFAULT_LAKE, help="lake folder (default: %(default)s)")
    p.add_argument("--wal", default=DEFAULT_WAL_DIR, help="write-ahead log folder (default: %(default)s)")
    p.add_argument("--runs", type=int, default=60, help="simulated sample runs (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="a small version of every step, then exit (CI)")
    p.add_argument("--no-model", action="store_true", help="skip everything that needs the embedded model")
    p.add_argument("--two-models", action="store_true", help="bench Qwen2.5-Coder-0.5B too (otelbench model fetch)")
    p.add_argument("--web-port", type=int, default=8000, help="web UI port, another if taken (default: %(default)s)")
    p.add_argument("--http-port", type=int, default=4318, help="OTLP/HTTP port, another if taken (default: %(default)s)")
    p.add_argument("--grpc-port", type=int, default=4317, help="OTLP/gRPC port, another if taken (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from otelbench.demo import steps

    return steps.run(args)
