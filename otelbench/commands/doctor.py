"""``otelbench doctor``: what your instrumentation sends, and what it leaves out, with the
fix (docs/doctor.md).

Reads the conventions rollup when a web server has built it, else the lake's views (one
scan: a lake no server has rolled up yet still gets its report). Text wraps at its spaces
to the terminal's width (80 in a pipe); a fix (an environment variable, a setting) is
never cut.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from typing import Any, TextIO

from otelbench.storage import DEFAULT_LAKE

FORMATS = ("text", "json")
CALL_LABELS = {"request_model": "request model", "response_model": "response model", "tokens": "tokens",
               "reported_cost": "reported cost", "input_messages": "input messages",
               "output_messages": "output messages", "finish_reasons": "finish reasons", "ttft": "TTFT"}
RUN_LABELS = {"agent": "agent named", "input": "input", "output": "output", "tokens": "tokens", "cost": "cost"}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="report what your instrumentation sends and leaves out, with the fix",
        description="Per service and instrumentation scope: the conventions its spans speak, the share of "
                    "runs and llm calls with each GenAI field, deprecated attributes, attributes nothing "
                    "reads, and for each gap the setting that closes it (docs/doctor.md).",
    )
    parser.add_argument("--lake", default=DEFAULT_LAKE, help=f"lake folder or s3://bucket/prefix (default: {DEFAULT_LAKE})")
    parser.add_argument("--since", default="7d", metavar="WINDOW",
                        help="how far back: 24h, 7d, 2w or all (whole UTC days; default: 7d)")
    parser.add_argument("--service", default=None, help="only this service")
    parser.add_argument("--agent", default=None, help="only this agent's spans and runs")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text or json (default: text)")
    parser.add_argument("--width", type=int, default=None, metavar="N",
                        help="wrap text at N columns (default: the terminal's, 80 in a pipe)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from otelbench.storage.duckdb import QueryError, open_lake
    from otelbench.storage.values import json_value
    from otelbench.web import doctor_report as doctor

    try:
        with open_lake(args.lake) as gateway:
            data = doctor.read(args.lake, doctor.gateway_rows(gateway), args.since, service=args.service,
                               agent=args.agent)
    except (QueryError, ValueError) as exc:
        print(f"otelbench doctor: error: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        sys.stdout.write(json.dumps(json_value(data), indent=2) + "\n")
    else:
        width = args.width or (shutil.get_terminal_size().columns if sys.stdout.isatty() else 80)
        render(data, sys.stdout, width=max(width, 40))
    return 0


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{round(v * 100)}%"


def render(data: dict[str, Any], out: TextIO, *, width: int = 80) -> None:
    """The report as text, wrapped at ``width`` (words are never cut)."""
    def say(text: str, indent: int = 0, hang: int = 2) -> None:
        pad = " " * indent
        out.write(textwrap.fill(text, width, initial_indent=pad, subsequent_indent=pad + " " * hang,
                                break_long_words=False, break_on_hyphens=False) + "\n")

    source = "the rollup" if data["source"] == "rollup" else "the lake (no rollup yet: a full scan)"
    say(f"otelbench doctor: since {data['since']} ({data['window']}), from {source}"
        + (f", agent {data['agent']}" if data.get("agent") else ""))
    if not data["services"]:
        say("no spans in this window.")
        return
    for svc in data["services"]:
        out.write("\n")
        say(f"service {svc['service']}: {svc['runs']} runs; agents: {', '.join(svc['agents']) or '–'}")
        if svc["runs"]:
            say("runs with: " + ", ".join(f"{RUN_LABELS[k]} {_pct(v)}" for k, v in svc["run_shares"].items()), 2)
        for f in svc["findings"]:
            _finding(say, f, 2)
        for sc in svc["scopes"]:
            out.write("\n")
            say(f"scope {sc['scope'] or '(none)'} {sc['version'] or ''}".rstrip()
                + f": {sc['spans']} spans, {sc['llm_calls']} llm calls, {sc['tool_calls']} tool spans", 2)
            conv = ", ".join(sc["conventions"]) or "no GenAI convention"
            say(f"conventions: {conv}" + (f"; semconv {sc['semconv']}" if sc["semconv"] else ""), 4)
            if sc["llm_calls"]:
                say("llm calls with: " + ", ".join(f"{CALL_LABELS[k]} {_pct(v)}" for k, v in sc["shares"].items()), 4)
            if sc["tool_calls"]:
                say(f"tool spans with: arguments {_pct(sc['tool_arguments_share'])}, result "
                    f"{_pct(sc['tool_result_share'])}, call id {_pct(sc['tool_call_id_share'])}", 4)
            if sc["deprecated"]:
                say("deprecated: " + ", ".join(f"{d['key']} → {d['current']} ({d['spans']})"
                                               for d in sc["deprecated"]), 4)
            if sc["unread"]:
                more = sc["unread_keys"] - len(sc["unread"])
                say("not read: " + ", ".join(f"{u['key']} ({u['spans']})" for u in sc["unread"])
                    + (f", and {more} more" if more > 0 else ""), 4)
            for f in sc["findings"]:
                _finding(say, f, 4)


def _finding(say: Any, f: dict[str, Any], indent: int) -> None:
    say(f"! {f['what']}", indent)
    say(f"fix: {f['fix']}", indent + 2, hang=5)
