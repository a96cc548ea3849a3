"""``otelbench replay``: an agent's recorded runs replayed, call by call, on a candidate model
behind an OpenAI-compatible server (the embedded one by default), and compared with the
recording (bench_runner/replay.py; docs/replay.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from otelbench.collector import DEFAULT_URL
from otelbench.storage import DEFAULT_LAKE
if TYPE_CHECKING:
    from otelbench.bench_runner.replay import RecordedRun, Report


def add_parser(sub: argparse._SubParsersAction) -> None:
    from otelbench.commands.gate import _time, window

    p = sub.add_parser(
        "replay", help="replay an agent's recorded runs on a candidate model and compare",
        description="Sends each llm call of an agent's recorded runs again, with its recorded messages, tool "
                    "definitions and tool results (open loop: the agent's code and tools are not run), to a "
                    "candidate model, and compares tool calls, final answers, latency and tokens with the "
                    "recording. Exit 0: runs replayed; 1: none could be replayed; 2: usage error. docs/replay.md")
    what = p.add_argument_group("which runs")
    what.add_argument("--agent", metavar="NAME", help="the agent whose runs to replay (agent_runs.agent; default: every agent's)")
    what.add_argument("--cluster", type=int, metavar="ID", help="with --agent: the runs of one failure cluster")
    what.add_argument("--suite-run", metavar="RUN_ID", help="the traces of one suite run (suite_cases.run_id)")
    what.add_argument("--sample", type=_count, default=20, metavar="N",
                      help="at most N runs (of each agent), the same ones each time (default: %(default)s)")
    what.add_argument("--since", type=_time_arg(_time), metavar="TIME", help="runs started at or after (ISO, UTC)")
    what.add_argument("--until", type=_time_arg(_time), metavar="TIME", help="runs started before (ISO, UTC)")
    what.add_argument("--window", type=window, metavar="START..END", help="both at once, as `otelbench gate` takes")
    cand = p.add_argument_group("the candidate")
    cand.add_argument("--base-url", help="OpenAI-compatible base URL (default: the embedded model, started for "
                                         "the replay)")
    cand.add_argument("--model", help="the model id the server knows (default: the one it offers; with no "
                                      "--base-url, the embedded model)")
    cand.add_argument("--api-key", default=None, help="sent as a bearer token, when the server wants one")
    cand.add_argument("--max-tokens", type=_count, default=512, help="per replayed call (default: %(default)s)")
    cand.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                      help="the longest silence within one reply (default: %(default)s)")
    judge = p.add_argument_group("the judge")
    judge.add_argument("--judge", metavar="URL", help="an OpenAI-compatible base URL whose model grades each "
                                                      "candidate answer against the recorded one (default: none, "
                                                      "the deterministic checks only)")
    judge.add_argument("--judge-model", help="the judge endpoint's model (default: its first)")
    p.add_argument("--lake", default=DEFAULT_LAKE, help=f"lake folder or s3://bucket/prefix (default: {DEFAULT_LAKE})")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--otlp-endpoint", default=os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", DEFAULT_URL),
                   help="where the results go as spans, read back by the replay_runs view (default: "
                        "$OTEL_EXPORTER_OTLP_ENDPOINT, else %(default)s)")
    p.add_argument("--no-otel", action="store_true", help="do not export the results as spans")
    p.set_defaults(func=main)


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: give a whole number of at least 1")
    return value


def _time_arg(parse: Callable[[str], dt.datetime]) -> Callable[[str], dt.datetime]:
    def arg(text: str) -> dt.datetime:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text}: {exc}") from None
    return arg


def main(args: argparse.Namespace) -> int:
    from otelbench.bench_runner import replay
    from otelbench.storage.duckdb import QueryError, open_lake
    from otelbench.web.doctor_fixes import fix

    if args.window and (args.since or args.until):
        return _usage("give --window or --since/--until, not both")
    if args.base_url is None and args.model is not None:
        return _usage("--model needs --base-url (the embedded server serves its own model)")
    since, until = args.window or (args.since, args.until)
    sel = replay.Selection(agent=args.agent, cluster=args.cluster, suite_run=args.suite_run,
                           since=since or replay.EPOCH, until=until or replay.FAR, sample=args.sample)
    try:
        with open_lake(args.lake) as gw:
            runs = replay.pick(gw, sel)  # before a server starts: a wrong choice fails at once
    except (replay.ReplayError, QueryError) as exc:
        return _usage(str(exc))
    try:
        report = _replay(runs, args)
    except ValueError as exc:
        return _usage(str(exc))
    fixes = {scope: fix("messages", scope) for u in report.unreplayable for scope in u.scopes}
    exported = None
    if report.runs and not args.no_otel:
        from otelbench.bench_runner.replay_spans import export

        exported = export(report, args.otlp_endpoint)
        if exported["failures"]:
            print(f"otelbench replay: the results did not all reach {args.otlp_endpoint} as spans "
                  f"({exported['failures']} failed exports); is the collector running? (--no-otel: do not send)",
                  file=sys.stderr)
    if args.json:
        print(json.dumps({**report.to_dict(fixes), "spans": exported}, indent=2, default=str))
    else:
        from rich.console import Console

        from otelbench.bench_runner.replay_report import render

        sys.stdout.write(render(report, fixes, Console().width))  # the terminal's, else $COLUMNS, else 80
        if exported and not exported["failures"]:
            print(f"results sent as spans to {args.otlp_endpoint}: otelbench sql \"SELECT * FROM replay_runs "
                  f"WHERE replay_id = '{exported['replay_id']}'\"")
    return 0 if report.runs else 1


def _only_model(base_url: str, api_key: str | None) -> str:
    """The model a server offers, when it offers one; else a usage error naming them."""
    from otelbench.bench_runner.servers import ServerDown, probe

    try:
        models = [m.id for m in probe(base_url, api_key or "local").models]
    except ServerDown as exc:
        raise ValueError(str(exc)) from exc
    if len(models) != 1:
        raise ValueError(f"name the candidate with --model; {base_url} offers {', '.join(models) or 'no model'}")
    return models[0]


def _progress(done: int, total: int) -> None:
    """How many runs are replayed, on stderr (the embedded model takes seconds a call): one
    line rewritten on a terminal, a line each in a log."""
    if sys.stderr.isatty():
        print(f"\rreplayed {done}/{total} runs", end="\n" if done == total else "", file=sys.stderr, flush=True)
    else:
        print(f"replayed {done}/{total} runs", file=sys.stderr, flush=True)


def _usage(message: str) -> int:
    print(f"otelbench replay: error: {message}", file=sys.stderr)
    return 2


def _replay(runs: Sequence[RecordedRun], args: argparse.Namespace) -> Report:
    """On ``--base-url``, else on the embedded model started for the replay."""
    from otelbench.bench_runner import replay
    from otelbench.bench_runner.client import http_client
    from otelbench.bench_runner.llama_files import EmbeddedModelMissing, LlamaServerError
    from otelbench.bench_runner.llama_server import LlamaServer, find_embedded_model

    judge = None
    if args.judge:
        from otelbench.bench_runner.replay_judge import ReplayJudge

        judge = ReplayJudge(args.judge, args.judge_model)

    def on(base_url: str, model: str) -> Report:
        with http_client(args.timeout) as client:
            send = replay.sender(base_url, model, api_key=args.api_key, max_tokens=args.max_tokens,
                                 timeout_s=args.timeout, client=client)
            return replay.replay(runs, send, model, base_url, judge, judge and f"{judge.model} at {judge.base_url}",
                                 progress=_progress)

    if args.base_url is not None:
        return on(args.base_url, args.model or _only_model(args.base_url, args.api_key))
    if all(not r.calls or not r.replayable for r in runs):  # nothing to send: no server needed
        return replay.replay(runs, lambda request: replay.Outcome(), "embedded", "")
    print("starting the embedded model (llama.cpp + SmolLM2-135M)…", file=sys.stderr)
    try:
        server = LlamaServer(find_embedded_model()).start()
    except (EmbeddedModelMissing, LlamaServerError) as exc:
        raise ValueError(f"no --base-url, and the embedded model cannot start: {exc}") from exc
    try:
        return on(server.base_url, server.model_id or "")
    finally:
        server.stop()
