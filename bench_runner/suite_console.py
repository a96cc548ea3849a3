"""``otelbench suite`` at a terminal: the suites listed, one shown, and a run of an agent on
one (``SuiteRunOptions``): the judge set up for its judge cases, every case × repeat under
a progress bar with its verdict, the evidence JSON saved, the summary printed.

The run itself is headless: ``suite_run.SuiteRun`` runs the agent and checks its answers,
``suite_judge`` asks the judge, ``agent_suite`` reads the suites."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from otelbench.bench_runner.agent_suite import AgentSuite

if TYPE_CHECKING:
    from rich.console import Console

    from otelbench.bench_runner.suite_judge import SuiteJudge

REASON_MAX = 160  # the summary table's reasons; the evidence JSON keeps them whole


@dataclass(frozen=True)
class SuiteRunOptions:
    """One ``otelbench suite run``: the agent, how often and how many at once, the judge,
    where the spans and the evidence go."""

    agent: str  # the agent's command line (run by /bin/sh)
    out: Path  # the folder for the evidence JSON
    agent_name: str | None = None  # file results under this agent (None: what its spans name)
    repeats: int | None = None  # per case (None: the suite's)
    concurrency: int = 1
    cases: str | None = None  # only these case ids, comma-separated (a partial run)
    judge: str = "embedded"  # 'embedded' (SmolLM2, started for the run), a base URL (…/v1), or 'none'
    judge_model: str | None = None  # the judge endpoint's model (None: its first)
    model_file: Path | None = None  # the agent's model file: its name and sha256 join the manifest
    otlp_endpoint: str | None = None  # where results go as spans, and the agent's own; None exports none
    key: str | None = None  # the collector's ingest key
    print_json: bool = False  # the evidence JSON on stdout (everything else then goes to stderr)


def print_list(suites: Sequence[AgentSuite], root: Path) -> int:
    if not suites:
        print(f"no suites under {root}")
    for s in suites:
        print(f"{s.version:<40} {len(s.spec.cases):>3} cases × {s.spec.repeats} repeats  {s.spec.description}")
    return 0


def print_suite(s: AgentSuite) -> int:
    print(f"{s.version}  ({s.folder})\n{s.spec.description}\nrepeats {s.spec.repeats}, "
          f"time limit {s.spec.time_limit_s:g} s per case\n")
    for case in s.spec.cases:
        text = case.input if isinstance(case.input, str) else str(case.input)
        print(f"  {case.id:<28} {case.check.kind:<11} {text[:60]}{'…' if len(text) > 60 else ''}")
    return 0


def _selected(suite: AgentSuite, cases: str | None) -> tuple[AgentSuite, int | None]:
    """The suite with only the named cases (same version: the run is marked partial), and
    how many cases the whole suite has (None: all of them run)."""
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


def _start_judge(suite: AgentSuite, judge: str, judge_model: str | None, stack: ExitStack,
                console: Console) -> SuiteJudge | None:
    """The judge for the run's judge cases, or None (those cases then stay unscored). An
    embedded judge's server stops when ``stack`` closes."""
    from otelbench.bench_runner.suite_judge import SuiteJudge
    from otelbench.bench_runner.suite_run import JudgeUnavailable

    if not any(c.check.kind == "judge" for c in suite.spec.cases) or judge == "none":
        return None
    url = judge
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
        return SuiteJudge(url, judge_model)
    except JudgeUnavailable as exc:
        console.print(f"[yellow]no judge: {exc}; judge cases stay unscored[/yellow]")
        return None


def run(suite: AgentSuite, opts: SuiteRunOptions) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.text import Text

    from otelbench.bench_runner.spans import BenchSpans
    from otelbench.bench_runner.suite_judge import describe
    from otelbench.bench_runner.suite_run import SuiteRun, evidence
    from otelbench.bench_runner.tables import shorten

    console = Console(stderr=opts.print_json)
    suite, of_total = _selected(suite, opts.cases)
    endpoint = opts.otlp_endpoint
    with ExitStack() as stack:
        judge = _start_judge(suite, opts.judge, opts.judge_model, stack, console)
        run = SuiteRun(suite, opts.agent, agent=opts.agent_name, repeats=opts.repeats, concurrency=opts.concurrency,
                       otlp_endpoint=endpoint, judge=judge, cases_in_suite=of_total,
                       model_file=opts.model_file)
        spans = BenchSpans(endpoint, {"X-Bench-Key": opts.key} if opts.key else None)
        planned = len(run.trials_planned())
        console.print(f"[bold]{suite.version}[/bold]: {len(suite.spec.cases)} cases × {run.repeats_each} "
                      f"repeats = {planned} runs", highlight=False)
        console.print(Text(f"  agent  {opts.agent}\n  judge  {describe(judge)}\n  limit  "
                           f"{suite.spec.time_limit_s:g} s per case, {opts.concurrency} at once"), soft_wrap=True)
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
    path = save_evidence(record, opts.out)
    if opts.print_json:
        print(json.dumps(record, indent=2))
    print_summary(console, record, time.monotonic() - started, path, exported, endpoint)
    return 0


def save_evidence(record: dict, folder: Path) -> Path:
    """``record`` as ``folder/<suite version>-<run id>.json`` (folder made if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record['suite_version'].replace('+', '_')}-{record['run_id']}.json"
    path.write_text(json.dumps(record, indent=2))
    return path


def print_summary(console: Console, record: dict, elapsed: float, path: Path, exported: dict,
                  endpoint: str | None) -> None:
    """Each case's verdicts in a table that fits the console (reasons wrapped, shortened past
    ``REASON_MAX``: the evidence file has them whole), the pass rate, where things went."""
    from rich.text import Text

    from otelbench.bench_runner.tables import Column, fitting_tables, shorten

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
