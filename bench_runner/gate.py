"""``otelbench gate``: is a candidate worse than its baseline, beyond chance and beyond a
tolerance? Two suite runs, two bench results, or one agent's runs in two time windows.

Each side is read from the lake as trials (storage/queries/gate.py), then each metric is
compared with its interval (bench_runner/gate_stats.py):

- **pass rate** (suite trials passed of scored; bench tests passed; an agent's runs
  without error): Newcombe's hybrid score interval of the difference and Fisher's exact
  test, one-sided (the candidate lower);
- **latency** (median by default) and **cost** (mean): percentile bootstrap intervals of
  the difference and the ratio;
- **judge score** (mean of ``evals`` scores, agent windows): a bootstrap interval of the
  difference.

A metric is a **regression** only when its whole interval lies beyond the tolerance on the
worse side (for the pass rate, Fisher's p is also below 1 − confidence): at 95 % about a
one-sided test at 2.5 % (docs/gate.md has the simulated false-alarm rates). What each side
ran on (its manifest) is compared and every difference named; results of two suite
versions are not compared unless asked.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from otelbench.bench_runner import gate_stats as gs
from otelbench.storage.duckdb import Gateway, open_lake
from otelbench.storage.queries import gate as q

MANIFEST_PREFIX = "bench.suite.manifest."
SPEED_CASE = "medium-200"  # the bench's headline speed case (bench_results' medians)


class GateError(ValueError):
    """What the gate cannot compare (an unknown run, different suite versions): exit 2."""


@dataclass
class Side:
    """One side of a comparison, as trials."""

    label: str
    rate_name: str  # what the pass rate counts
    passed: int = 0
    scored: int = 0
    latency_ms: list[float] = field(default_factory=list)
    cost_usd: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    manifest: dict[str, str] = field(default_factory=dict)
    version: str | None = None  # results of two versions are not comparable
    complete: bool = True  # False: a suite run whose trials or root span have not all arrived
    notes: list[str] = field(default_factory=list)
    compared: str = ""  # what was compared: suite_runs | bench | agent
    key: str = ""  # its id: a run id, a trace id, a window
    suite: str | None = None  # what it is a result of: a verdict is filed under its suite and agent
    agent: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class Tolerances:
    """How much worse the candidate may be before the gate fails."""

    max_drop: float = 0.05  # pass rate, in proportion (0.05 = 5 points)
    max_slowdown: float | None = 1.2  # latency ratio candidate / baseline
    max_added_latency_ms: float | None = None  # latency difference, ms
    max_score_drop: float = 0.05  # judge score (0–1)
    max_cost_increase: float | None = 1.2  # cost ratio candidate / baseline
    latency_statistic: Literal["mean", "median"] = "median"
    confidence: float = 0.95
    resamples: int = gs.RESAMPLES
    seed: int = gs.SEED


@dataclass(frozen=True)
class Row:
    metric: str
    baseline: str
    candidate: str
    difference: gs.Interval | None
    ratio: gs.Interval | None
    test: str  # how the interval (and p) came
    p_value: float | None
    tolerance: str
    verdict: str  # regression | worse | better | no significant change | not compared
    unit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Report:
    baseline: Side
    candidate: Side
    rows: list[Row]
    differs: list[tuple[str, str, str]]  # manifest key, baseline value, candidate value
    tolerances: Tolerances

    @property
    def regression(self) -> bool:
        return any(r.verdict == "regression" for r in self.rows)

    @property
    def verdict(self) -> str:
        """The comparison in one word: ``regression`` (exit 1); ``no significant change``
        when no metric's interval excludes no difference; else ``pass`` (a metric better,
        or worse within its tolerance)."""
        if self.regression:
            return "regression"
        changed = any(r.verdict in ("better", "worse") for r in self.rows)
        return "pass" if changed else "no significant change"

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": _side_dict(self.baseline), "candidate": _side_dict(self.candidate),
                "tolerances": asdict(self.tolerances), "metrics": [r.to_dict() for r in self.rows],
                "differs": [{"key": k, "baseline": a, "candidate": b} for k, a, b in self.differs],
                "regression": self.regression, "verdict": self.verdict}


def _side_dict(s: Side) -> dict[str, Any]:
    return {"label": s.label, "version": s.version, "manifest": s.manifest, "notes": s.notes}


# -- comparing -------------------------------------------------------------------------


def compare(base: Side, cand: Side, tol: Tolerances = Tolerances(), *, allow_version_change: bool = False) -> Report:
    """Every metric both sides have, with its interval and verdict; raises GateError for
    two different versions (unless allowed)."""
    if base.version != cand.version and not allow_version_change:
        raise GateError(f"the two sides ran different versions ({base.version} → {cand.version}): their results are "
                        "not comparable; run the baseline again on the candidate's version, or pass "
                        "--allow-version-change")
    rows = [pass_rate_row(base, cand, tol),
            _bootstrap_row(f"latency {tol.latency_statistic}", base.latency_ms, cand.latency_ms, tol,
                           tol.latency_statistic, "ms", lower_is_better=True,
                           max_ratio=tol.max_slowdown, max_added=tol.max_added_latency_ms),
            _bootstrap_row("cost mean", base.cost_usd, cand.cost_usd, tol, "mean", "USD", lower_is_better=True,
                           max_ratio=tol.max_cost_increase, max_added=None),
            _bootstrap_row("judge score mean", base.scores, cand.scores, tol, "mean", "", lower_is_better=False,
                           max_ratio=None, max_added=tol.max_score_drop)]
    return Report(base, cand, rows, manifest_differences(base.manifest, cand.manifest), tol)


def pass_rate_row(base: Side, cand: Side, tol: Tolerances) -> Row:
    name = base.rate_name
    if not base.scored or not cand.scored:
        return Row(name, _count(base), _count(cand), None, None, "", None, "", "not compared")
    diff = gs.newcombe_difference(cand.passed, cand.scored, base.passed, base.scored, tol.confidence)
    p = gs.fisher_exact(cand.passed, cand.scored, base.passed, base.scored, alternative="less")
    alpha = 1 - tol.confidence
    if diff.high < -tol.max_drop and p < alpha:
        verdict = "regression"
    else:
        verdict = "worse" if diff.high < 0 else "better" if diff.low > 0 else "no significant change"
    return Row(name, _count(base), _count(cand), diff, None, "Newcombe's hybrid score interval, Fisher's exact test "
               "(one-sided)", p,
               f"a drop of at most {tol.max_drop * 100:g} points", verdict, "proportion")


def _bootstrap_row(name: str, a: Sequence[float], b: Sequence[float], tol: Tolerances, statistic: gs.Statistic,
                   unit: str, *, lower_is_better: bool, max_ratio: float | None, max_added: float | None) -> Row:
    if not a or not b:
        return Row(name, _n(a), _n(b), None, None, "", None, "", "not compared", unit)
    boot = gs.bootstrap(a, b, statistic, tol.confidence, tol.resamples, tol.seed)
    d, r = boot.difference, boot.ratio
    limits = []
    if lower_is_better:  # worse is higher: beyond every tolerance given
        beyond = []
        if max_ratio is not None:
            limits.append(f"×{max_ratio:g}")
            beyond.append(r is not None and r.low > max_ratio)
        if max_added is not None:
            limits.append(f"+{max_added:g} {unit}")
            beyond.append(d.low > max_added)
        worse, better = d.low > 0, d.high < 0
    else:  # worse is lower
        limits.append(f"a drop of {max_added:g}")
        beyond = [d.high < -(max_added or 0.0)]
        worse, better = d.high < 0, d.low > 0
    regression = worse and bool(beyond) and all(beyond)
    verdict = "regression" if regression else "worse" if worse else "better" if better else "no significant change"
    test = f"bootstrap of the {statistic}, {boot.resamples} resamples, seed {boot.seed}"
    return Row(name, _stat(boot.baseline, len(a), unit), _stat(boot.candidate, len(b), unit), d, r, test, None,
               "at most " + " and ".join(limits) if limits else "none", verdict, unit)


def manifest_differences(a: Mapping[str, str], b: Mapping[str, str]) -> list[tuple[str, str, str]]:
    return [(k, a.get(k, "—"), b.get(k, "—")) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


# -- reading the sides -----------------------------------------------------------------


def suite_run_side(gw: Gateway, run_id: str) -> Side:
    run = _one(gw, q.SUITE_RUN, {"run_id": run_id}, f"no suite run {run_id!r} in the lake (suite_runs.run_id)")
    side = Side(f"suite run {run_id}", "pass rate", version=run["suite_version"], compared="suite_runs", key=run_id,
                suite=run["suite"], agent=run["agent"])
    for t in _rows(gw, q.SUITE_TRIALS, {"run_id": run_id}):
        if t["verdict"] in ("pass", "fail"):
            side.scored += 1
            side.passed += t["verdict"] == "pass"
        if t["duration_ms"] is not None:
            side.latency_ms.append(float(t["duration_ms"]))
        if t["cost_usd"] is not None:
            side.cost_usd.append(float(t["cost_usd"]))
    if run["status"] != "complete":
        side.complete = False
        side.notes.append(f"{side.label} is incomplete ({run['trials']} trials arrived)")
    if run["partial"]:
        side.notes.append(f"{side.label} ran only some of the suite's cases (--cases)")
    if run["errors"]:
        side.notes.append(f"{side.label}: {run['errors']} trials unscored (verdict error), left out of the pass rate")
    root = _rows(gw, q.SUITE_ROOT, {"run_id": run_id})
    attrs = json.loads(root[0]["attributes"] or "{}") if root else {}
    side.manifest = {"suite version": run["suite_version"], "agent": run["agent"] or "",
                     **{k[len(MANIFEST_PREFIX):].replace("_", " "): _text(v) for k, v in attrs.items()
                        if k.startswith(MANIFEST_PREFIX)},
                     "models": _models(_rows(gw, q.SUITE_MODELS, {"run_id": run_id}))}
    if not any(k.startswith(MANIFEST_PREFIX) for k in attrs):
        side.manifest["agent command"] = run["agent_command"] or ""  # a run recorded without its manifest
    return side


def read_sides(lake: str, *, suite_runs: Sequence[str] | None = None, bench: Sequence[str] | None = None,
               agent: str | None = None, windows: Sequence[tuple[dt.datetime, dt.datetime] | None] = (None, None),
               wait_s: float = 0.0) -> tuple[Side, Side]:
    """The baseline and the candidate: two suite runs, two bench results, or an agent's two windows."""
    if suite_runs:
        return suite_run_sides(lake, suite_runs[0], suite_runs[1], wait_s)
    with open_lake(lake) as gw:
        if bench:
            return bench_side(gw, bench[0]), bench_side(gw, bench[1])
        if agent is None or None in windows:
            raise GateError("give two suite runs, two bench results, or an agent and two windows")
        (b0, b1), (c0, c1) = windows  # type: ignore[misc]
        return agent_window_side(gw, agent, b0, b1), agent_window_side(gw, agent, c0, c1)


def suite_run_sides(lake: str, base: str, cand: str, wait_s: float = 0.0,
                    clock: Callable[[], float] = time.monotonic) -> tuple[Side, Side]:
    """Both suite runs, read again (every half second, up to ``wait_s``) while either is
    missing or incomplete: ``otelbench suite run`` returns once the collector holds its
    spans, and the collector writes them to the lake up to a flush interval later."""
    deadline = clock() + wait_s
    while True:
        try:
            with open_lake(lake) as gw:
                sides = suite_run_side(gw, base), suite_run_side(gw, cand)
            if all(s.complete for s in sides) or clock() >= deadline:
                return sides
        except GateError:
            if clock() >= deadline:
                raise
        time.sleep(0.5)


def bench_side(gw: Gateway, trace_id: str) -> Side:
    run = _one(gw, q.BENCH_RESULT, {"trace_id": trace_id}, f"no bench result {trace_id!r} (bench_results.trace_id)")
    side = Side(f"bench {run['model']} {trace_id}", "tests passed",
                version=f"{run['suite_version']} {run['speed_version']}", compared="bench", key=trace_id,
                suite=run["suite"], model=run["model"])
    for t in _rows(gw, q.BENCH_TESTS, {"trace_id": trace_id}):
        side.scored += 1
        side.passed += t["verdict"] == "pass"
    side.latency_ms = [float(r["e2e_ms"]) for r in _rows(gw, q.BENCH_LATENCIES, {"trace_id": trace_id,
                                                                                  "case": SPEED_CASE})]
    if run["status"] != "ok":
        side.notes.append(f"{side.label} had failures (bench_results.status = {run['status']})")
    side.manifest = {k.replace("_", " "): _text(run[k]) for k in (
        "model", "provider", "server_kind", "server_version", "suite_version", "speed_version", "quick", "runs",
        "quantization", "architecture", "gguf_sha256", "hardware_cpu", "hardware_gpus", "hardware_ram_bytes")}
    return side


def agent_window_side(gw: Gateway, agent: str, start: dt.datetime, end: dt.datetime) -> Side:
    if end <= start:
        raise GateError(f"the window {start.isoformat()}..{end.isoformat()} is empty (its end is not after its start)")
    params = {"agent": agent, "start": start, "end": end}
    runs = _rows(gw, q.AGENT_RUNS, params)
    label = f"{agent} {start.isoformat()}..{end.isoformat()}"
    if not runs:
        raise GateError(f"no runs of agent {agent!r} in {start.isoformat()}..{end.isoformat()} (agent_runs)")
    side = Side(label, "runs without error", scored=len(runs), passed=sum(r["status"] == "ok" for r in runs),
                compared="agent", key=f"{start.isoformat()}..{end.isoformat()}", agent=agent)
    side.latency_ms = [float(r["duration_ms"]) for r in runs if r["duration_ms"] is not None]
    side.cost_usd = [float(r["cost_usd"]) for r in runs if r["cost_usd"] is not None]
    side.scores = [float(r["eval_score"]) for r in runs if r["eval_score"] is not None]
    side.manifest = {"models": _models(_rows(gw, q.AGENT_MODELS, params)),
                     "judges": ", ".join(f"{r['judge_model']} {r['judge_version']}"
                                         for r in _rows(gw, q.AGENT_JUDGES, params))}
    return side


def _rows(gw: Gateway, sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    result = gw.query(sql, dict(params), max_rows=None, timeout_s=None)
    return [dict(zip(result.columns, row)) for row in result.rows]


def _one(gw: Gateway, sql: str, params: Mapping[str, Any], missing: str) -> dict[str, Any]:
    rows = _rows(gw, sql, params)
    if not rows:
        raise GateError(missing)
    return rows[0]


def _models(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['model']} ({r['provider']})" if r["provider"] else r["model"] for r in rows)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


def _count(s: Side) -> str:
    return f"{s.passed}/{s.scored} = {s.passed / s.scored:.1%}" if s.scored else "no trials"


def _n(xs: Sequence[float]) -> str:
    return f"n={len(xs)}" if xs else "no values"


def _stat(value: float, n: int, unit: str) -> str:
    return f"{_num(value, unit)} (n={n})"


def _num(value: float, unit: str, signed: bool = False) -> str:
    sign = "+" if signed else ""
    if unit == "ms":
        return f"{value:{sign},.0f} ms"
    if unit == "USD":
        return ("-" if value < 0 else sign) + f"${abs(value):.4g}"
    return f"{value:{sign}.3f}"


# -- printing --------------------------------------------------------------------------


def render(report: Report, width: int = 80) -> str:
    """The comparison as text at most ``width`` wide (bench_runner/tables.py: nothing cut,
    columns that do not fit go on to a second table): a row per metric, then what differs
    between the two sides' manifests, notes, the tests used and the result."""
    import io

    from rich.console import Console

    from otelbench.bench_runner.tables import Column, fitting_tables

    conf = f"{report.tolerances.confidence * 100:g} %"
    columns = [Column("metric"), Column("verdict"), Column(f"difference [{conf}]", right=True),
               Column("ratio or p", right=True), Column("baseline", right=True), Column("candidate", right=True),
               Column("tolerance", wrap=True)]
    rows = [[r.metric, r.verdict.upper() if r.verdict == "regression" else r.verdict, *_cells(r), r.baseline,
             r.candidate, r.tolerance] for r in report.rows]
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(f"baseline:  {report.baseline.label}", highlight=False, markup=False)
    console.print(f"candidate: {report.candidate.label}", highlight=False, markup=False)
    console.print("differences: candidate − baseline", highlight=False, markup=False)
    for part in fitting_tables(columns, rows, width):
        console.print(part)
    lines = [f"differs: {key} {_short(a)} → {_short(b)}" for key, a, b in report.differs] or [
        "same manifest: nothing recorded differs between the two sides"]
    lines += [f"note: {note}" for note in report.baseline.notes + report.candidate.notes]
    lines += [f"{r.metric}: {r.test}" for r in report.rows if r.test]
    lines.append("result: REGRESSION (exit 1)" if report.regression
                 else f"result: {report.verdict}, no regression beyond the tolerances (exit 0)")
    for line in lines:
        console.print(line, highlight=False, markup=False)
    return console.export_text()


def _cells(r: Row) -> list[str]:
    """The difference with its interval, and the ratio (or Fisher's p) with its."""
    d = r.difference
    if d is None:
        return ["not compared", ""]
    if r.unit == "proportion":
        return [f"{d.estimate * 100:+.1f} pts [{d.low * 100:+.1f}, {d.high * 100:+.1f}]",
                f"Fisher p = {r.p_value:.3g}"]
    ratio = f"×{r.ratio.estimate:.2f} [{r.ratio.low:.2f}, {r.ratio.high:.2f}]" if r.ratio else ""
    return [f"{_num(d.estimate, r.unit, True)} [{_num(d.low, r.unit, True)}, {_num(d.high, r.unit, True)}]", ratio]


def _short(value: str) -> str:
    """A sha256 (64 hex digits) as its first 12 and an ellipsis; other values whole."""
    if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return value[:12] + "…"
    return value or "—"
