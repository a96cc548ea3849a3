"""``otelbench suite list|show|run``: the agent benchmark suites under benchmarks/suites/
(bench_runner/agent_suite.py, bench_runner/suite_run.py; docs/suites.md)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from otelbench.collector import DEFAULT_URL

DEFAULT_OUT = "~/benchmarks/suites/"
REASON_MAX = 160  # the summary table's reasons; the evidence JSON keeps them whole


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
    run.add_argument("--otlp-endpoint", default=env.get("OTEL_EXPORTER_OTLP_ENDPOINT", DEFAULT_URL),
                     help="where results go as spans, and the agent's own (default: %(default)s)")
    run.add_argument("--key", default=env.get("OTELBENCH_KEY"), help="ingest key (default: $OTELBENCH_KEY)")
    run.add_argument("--no-otel", action="store_true", help="export no spans (the evidence JSON is still kept)")
    run.add_argument("--out", default=DEFAULT_OUT, help="folder for the evidence JSON (default: %(default)s)")
    run.add_argument("--json", action="store_true", help="print the evidence JSON")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from otelbench.bench_runner import agent_suite

    root = args.root or agent_suite.SUITES_DIR
    try:
        if args.verb == "list":
            return _list(agent_suite.discover(root), root)
        suite = agent_suite.find(args.suite, root)
    except agent_suite.SuiteError as exc:
        print(f"otelbench suite: {exc}", file=sys.stderr)
        return 2
    if args.verb == "show":
        return _show(suite)
    return _run(suite, args)


def _list(suites, root: Path) -> int:
    if not suites:
        print(f"no suites under {root}")
    for s in suites:
        print(f"{s.version:<40} {len(s.spec.cases):>3} cases × {s.spec.repeats} repeats  {s.spec.description}")
    return 0


def _show(s) -> int:
    print(f"{s.version}  ({s.folder})\n{s.spec.description}\nrepeats {s.spec.repeats}, "
          f"time limit {s.spec.time_limit_s:g} s per case\n")
    for case in s.spec.cases:
        text = case.input if isinstance(case.input, str) else str(case.input)
        print(f"  {case.id:<28} {case.check.kind:<11} {text[:60]}{'…' if len(text) > 60 else ''}")
    return 0


def _selected(suite, cases: str | None):
    """The suite with only the named cases (same version: the run is marked partial)."""
    if not cases:
        return suite, None
    wanted = [c.strip() for c in cases.split(",") if c.strip()]
    known = {c.id for c in suite.spec.cases}
    unknown = [c for c in wanted if c not in known]
    if unknown:
        raise SystemExit(f"otelbench suite: no case {', '.join(unknown)} in {suite.version} "
                         f"(cases: {', '.join(sorted(known))})")
    spec = suite.spec.model_copy(update={"cases": tuple(c for c in suite.spec.cases if c.id in wanted)})
    return dataclasses.replace(suite, spec=spec), len(suite.spec.cases)


def _judge(suite, args, stack: ExitStack, console):
    """The judge for the run's judge cases, or None (those cases then stay unscored)."""
    from otelbench.bench_runner.suite_judge import SuiteJudge
    from otelbench.bench_runner.suite_run import JudgeUnavailable

    if not any(c.check.kind == "judge" for c in suite.spec.cases) or args.judge == "none":
        return None
    url = args.judge
    if url == "embedded":
        from otelbench.bench_runner.llama_server import EmbeddedModelMissing, LlamaServer, LlamaServerError, find_embedded_model

        try:
            with console.status("starting the embedded judge (llama.cpp + SmolLM2-135M)…"):
                server = stack.enter_context(LlamaServer(find_embedded_model()))
        except (LlamaServerError, EmbeddedModelMissing, ImportError) as exc:
            console.print(f"[yellow]no judge: {exc}; judge cases stay unscored[/yellow]")
            return None
        url = server.base_url
    try:
        return SuiteJudge(url, args.judge_model)
    except JudgeUnavailable as exc:
        console.print(f"[yellow]no judge: {exc}; judge cases stay unscored[/yellow]")
        return None


def _run(suite, args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.text import Text

    from otelbench.terminal import shorten

    from otelbench.bench_runner.spans import BenchSpans
    from otelbench.bench_runner.suite_judge import describe
    from otelbench.bench_runner.suite_run import SuiteRun, evidence

    console = Console(stderr=args.json)
    if args.repeats is not None and args.repeats < 1 or args.concurrency < 1:
        print("otelbench suite: --repeats and --concurrency must be at least 1", file=sys.stderr)
        return 2
    suite, of_total = _selected(suite, args.cases)
    endpoint = None if args.no_otel else args.otlp_endpoint
    with ExitStack() as stack:
        judge = _judge(suite, args, stack, console)
        run = SuiteRun(suite, args.agent, agent=args.agent_name, repeats=args.repeats, concurrency=args.concurrency,
                       otlp_endpoint=endpoint, judge=judge, cases_in_suite=of_total)
        spans = BenchSpans(endpoint, {"X-Bench-Key": args.key} if args.key else None)
        planned = len(run.trials_planned())
        console.print(f"[bold]{suite.version}[/bold]: {len(suite.spec.cases)} cases × {run.repeats_each} "
                      f"repeats = {planned} runs", highlight=False)
        console.print(Text(f"  agent  {args.agent}\n  judge  {describe(judge)}\n  limit  "
                           f"{suite.spec.time_limit_s:g} s per case, {args.concurrency} at once"), soft_wrap=True)
        started = time.monotonic()
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True) as progress:
            bar = progress.add_task("cases", total=planned)

            def done(trial) -> None:
                mark = {"pass": "pass ", "fail": "fail "}.get(trial.verdict, "error")
                line = Text.assemble("  ", (mark, {"pass": "green", "fail": "red"}.get(trial.verdict, "yellow")),
                                     f" {trial.case_id} #{trial.repeat} {trial.duration_s:.1f}s  ")
                line.append(shorten(trial.reason, console.width - len(line)))
                progress.console.print(line)
                progress.advance(bar)

            trials = run.run(spans, on_trial=done)
        exported = spans.shutdown()
    record = evidence(run, trials)
    path = _save(record, args.out)
    if args.json:
        print(json.dumps(record, indent=2))
    _print_summary(console, record, time.monotonic() - started, path, exported, endpoint)
    return 0


def _save(record: dict, out: str) -> Path:
    folder = Path(out).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record['suite_version'].replace('+', '_')}-{record['run_id']}.json"
    path.write_text(json.dumps(record, indent=2))
    return path


def _print_summary(console, record: dict, elapsed: float, path: Path, exported: dict, endpoint: str | None) -> None:
    """Each case's verdicts in a table that fits the console (reasons wrapped, shortened past
    ``REASON_MAX``: the evidence file has them whole), the pass rate, where things went."""
    from rich.text import Text

    from otelbench.bench_runner.tables import Column, fitting_tables
    from otelbench.terminal import shorten

    s = record["summary"]
    by_case: dict[str, list[dict]] = {}
    for t in record["trials"]:
        by_case.setdefault(t["case_id"], []).append(t)
    rows = [[case_id, ts[0]["checker"], f"{sum(t['verdict'] == 'pass' for t in ts)}/{len(ts)}",
             shorten(ts[-1]["reason"], REASON_MAX)] for case_id, ts in by_case.items()]
    columns = [Column("case"), Column("checker"), Column("passed", right=True), Column("last reason", wrap=True)]
    console.print()
    for part in fitting_tables(columns, rows, console.width, title=record["suite_version"]):
        console.print(part)
    if s["pass_rate"] is None:
        console.print("pass rate: none scored")
    else:
        console.print(f"pass rate [bold]{s['pass_rate']:.0%}[/bold] ({s['passed']}/{s['scored']} scored runs; "
                      f"95% CI {s['pass_rate_low']:.0%}–{s['pass_rate_high']:.0%})"
                      + (f"; {s['errors']} unscored" if s["errors"] else "") + f"; {elapsed:.0f} s")
    console.print(Text(f"evidence: {path}"), soft_wrap=True)  # one line: a path cut in two cannot be copied
    if endpoint:
        console.print(f"spans: {exported['exported']} sent to {endpoint}"
                      + (f", [red]{exported['failures']} exports failed[/red]" if exported["failures"] else ""))
        console.print(Text(f"  otelbench sql \"SELECT * FROM suite_runs WHERE run_id = '{record['run_id']}'\""),
                      soft_wrap=True)
