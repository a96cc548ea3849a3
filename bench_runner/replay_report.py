"""``otelbench replay``'s report on a terminal: one row per agent and candidate, the runs that
diverge most (each linkable as ``/runs/<trace_id>``), and the runs that could not be
replayed with the fix that makes them replayable."""

from __future__ import annotations

import io

from otelbench.bench_runner.replay import Report
from otelbench.bench_runner.replay_compare import Change
from otelbench.bench_runner.tables import Column, fitting_tables, shorten


def _share(n: int, of: int) -> str:
    return f"{n}/{of} ({n / of * 100:.0f} %)" if of else "—"


def _change(c: Change, unit: str = "") -> str:
    if c.runs == 0 or c.recorded is None or c.candidate is None:
        return "—"
    ratio = f" ×{c.ratio:.2f}" if c.ratio is not None else ""
    return f"{c.recorded:,.0f} → {c.candidate:,.0f}{unit}{ratio} (n={c.runs})"


def _usd(value: float | None, missing: str) -> str:
    return missing if value is None else f"${value:.4g}"


def _cost(c: Change) -> str:
    """Mean cost per run, each side over the runs that have one."""
    if c.recorded is None and c.candidate is None:
        return "—"
    ratio = f" ×{c.ratio:.2f}" if c.ratio is not None else ""
    return f"{_usd(c.recorded, 'none')} → {_usd(c.candidate, 'no price')}{ratio}"


def render(report: Report, fixes: dict[str, str] | None = None, width: int = 80) -> str:
    """The report as text at most ``width`` wide. ``fixes``: instrumentation scope → the
    doctor's fix for calls recorded without their messages."""
    from rich.console import Console

    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False)

    say(f"candidate: {report.candidate} at {report.base_url}")
    say("open-loop replay: each recorded call sent again with its recorded history and tool results")
    columns = [Column("agent"), Column("runs", right=True), Column("behaviour matches", right=True),
               Column("at least as good", right=True), Column("tool calls same", right=True),
               Column("TTFT ms (median)", right=True), Column("model time ms (median)", right=True),
               Column("output tokens (mean)", right=True), Column("cost per run (mean)", right=True)]
    rows = [[s.agent, str(s.runs), _share(s.behaviour_matches, s.runs), _share(s.at_least_as_good, s.runs),
             _share(s.calls_matching, s.calls), _change(s.ttft_ms), _change(s.model_ms), _change(s.output_tokens),
             _cost(s.cost_usd)]
            for s in report.summaries]
    if rows:
        for part in fitting_tables(columns, rows, width):
            console.print(part)
    else:
        say("no run could be replayed")
    for s in report.summaries:
        if s.most_divergent:
            say(f"most divergent runs of {s.agent}:")
        for r in s.most_divergent:
            answer = shorten(r.candidate_answer or (r.errors[0] if r.errors else "(no text)"), max(width - 40, 20))
            say(f"  /runs/{r.trace_id}  divergence {r.divergence:.2f}  tool calls {r.calls_matching}/{r.calls} "
                f"same; answer: {answer}")
    if report.unreplayable:
        say(f"{len(report.unreplayable)} run(s) not replayed: recorded without message content")
        for u in report.unreplayable:
            say(f"  /runs/{u.trace_id}  {u.agent}: {u.calls_without_content} llm call(s) without input messages "
                f"({', '.join(u.scopes) or 'unknown instrumentation'})")
        for scope in sorted({s for u in report.unreplayable for s in u.scopes}):
            if (fixes or {}).get(scope):
                say(f"  fix for {scope or 'unknown instrumentation'} (otelbench doctor): {(fixes or {})[scope]}")
    if report.without_calls:
        say(f"{len(report.without_calls)} run(s) hold no llm call: nothing to replay")
    for note in dict.fromkeys(report.notes):
        say(f"note: {note}")
    judged = sum(s.judged for s in report.summaries)
    say("answers compared with the judge's deterministic checks (numbers, JSON values, answer words); "
        + (f"'at least as good' by {report.judge}'s grade for {judged} of {len(report.runs)} run(s)" if report.judge
           else "no judge model asked (--judge URL)"))
    return console.export_text()
