"""Goodput: the request rate a server sustains with answers that are both fast enough and
right, as pure arithmetic over measured requests (``load`` drives the requests).

Definitions (docs/bench.md "Goodput" states them for readers):

- An SLO is a list of bounds ``METRIC_pNN<=VALUE`` on ``ttft``, ``e2e`` or ``itl``
  (``--slo "ttft_p95<=1s,e2e_p95<=10s"``); values in ``ms`` or ``s``.
- A request is **good** when it completed, its check passed, and each of its own
  latencies is within every bound: its TTFT, its end-to-end time, and for ``itl`` its own
  NN-th percentile of its inter-token gaps. The percentile a bound names applies to the
  step, below; a single request has one TTFT and one e2e.
- A step's **goodput** is its good requests / the step's wall time (first scheduled
  send to last finish); its throughput is completed requests / the same wall time; its
  pass share is passed checks / requests sent (a failed request counts as failed).
- A step **holds** when every bound holds for the step's NN-th percentile (type 7,
  ``stats.percentile``, over completed requests; the ``itl`` percentile pools every gap)
  and the pass share is at least ``min_pass``. A step with no completed request does not
  hold.
- The sweep's **highest holding** load is the largest rate (or concurrency) such that it
  and every lower one hold: a load above a failing step is not counted as sustained,
  however it measured.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from otelbench.bench_runner.stats import percentile

METRICS = ("ttft", "e2e", "itl")
UNITS_MS = {"ms": 1.0, "s": 1000.0}
REPORTED_QUANTILES = (0.5, 0.95, 0.99)
_TERM = re.compile(r"(?P<metric>[a-z0-9]+)_p(?P<pct>\d{1,2}(?:\.\d+)?)\s*<=\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>ms|s)")


class SloError(ValueError):
    """An SLO string that does not parse; the message names the bad term and the grammar."""


@dataclass(frozen=True)
class Bound:
    """``metric`` at percentile ``q`` (0–1) must be at most ``limit_ms``."""

    metric: str
    q: float
    limit_ms: float

    @property
    def label(self) -> str:
        return f"{self.metric}_p{self.q * 100:g}<={self.limit_ms:g}ms"


@dataclass(frozen=True)
class Slo:
    bounds: tuple[Bound, ...]

    @property
    def text(self) -> str:
        return ",".join(b.label for b in self.bounds)


def parse_slo(text: str) -> Slo:
    """``"ttft_p95<=1s,e2e_p95<=10s"`` → an ``Slo``; raises ``SloError`` naming what is wrong.

    Every comma-separated term must match ``METRIC_pNN<=NUMBER(ms|s)`` whole, with METRIC one
    of ttft, e2e, itl and 0 < NN < 100; a metric may be bounded once."""
    grammar = "terms like ttft_p95<=1s or e2e_p99<=2500ms, comma-separated (metrics: " + ", ".join(METRICS) + ")"
    terms = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in terms):
        raise SloError(f"--slo {text!r}: empty term; want {grammar}")
    bounds: list[Bound] = []
    for term in terms:
        m = _TERM.fullmatch(term)
        if m is None:
            raise SloError(f"--slo: cannot read {term!r}; want {grammar}")
        metric, pct = m["metric"], float(m["pct"])
        if metric not in METRICS:
            raise SloError(f"--slo: unknown metric {metric!r} in {term!r}; want one of {', '.join(METRICS)}")
        if not 0 < pct < 100:
            raise SloError(f"--slo: percentile p{m['pct']} in {term!r} is not between 0 and 100")
        if any(b.metric == metric for b in bounds):
            raise SloError(f"--slo: {metric} is bounded twice")
        bounds.append(Bound(metric, pct / 100, float(m["value"]) * UNITS_MS[m["unit"]]))
    return Slo(tuple(bounds))


DEFAULT_SEED = 38
DEFAULT_REQUESTS = 20


@dataclass(frozen=True)
class Plan:
    """A sweep: the rates (requests/s, Poisson arrivals) and concurrencies (clients) to step
    through, each step ``requests`` long or ``duration_s`` long, judged by ``slo``."""

    slo: Slo
    min_pass: float = 0.9
    rates: tuple[float, ...] = ()
    concurrencies: tuple[int, ...] = ()
    requests: int | None = DEFAULT_REQUESTS  # per step; None when ``duration_s`` sets the length
    duration_s: float | None = None
    seed: int = DEFAULT_SEED


def parse_rates(text: str) -> tuple[float, ...]:
    """``"0.5,1,2"`` → rates; each a number > 0, no repeats. Raises ValueError saying why."""
    try:
        rates = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"want rates in requests/s like 0.5,1,2,4 (got {text!r})") from None
    if any(not (r > 0 and r < float("inf")) for r in rates) or len(set(rates)) != len(rates):
        raise ValueError(f"want distinct rates > 0 like 0.5,1,2,4 (got {text!r})")
    return rates


def parse_concurrencies(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` → client counts; each a whole number ≥ 1, no repeats."""
    try:
        levels = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"want client counts like 1,2,4 (got {text!r})") from None
    if any(c < 1 for c in levels) or len(set(levels)) != len(levels):
        raise ValueError(f"want distinct client counts >= 1 like 1,2,4 (got {text!r})")
    return levels


@dataclass(frozen=True)
class Outcome:
    """One request of a step, measured and checked. ``ok`` False: it got no whole answer."""

    case: str
    ok: bool
    passed: bool
    ttft_ms: float | None = None
    e2e_ms: float | None = None
    itl_ms: tuple[float, ...] = ()
    error_kind: str | None = None
    sent_late_ms: float = 0.0  # how far after its scheduled time it was sent (the driver's lag)


def request_value(outcome: Outcome, bound: Bound) -> float | None:
    """The request's own value for ``bound``: its TTFT, its e2e, or its q-th ITL percentile
    (0 ms for an answer of one token event: it had no gap)."""
    if bound.metric == "ttft":
        return outcome.ttft_ms
    if bound.metric == "e2e":
        return outcome.e2e_ms
    return percentile(outcome.itl_ms, bound.q) if outcome.itl_ms else (0.0 if outcome.ok else None)


def is_good(outcome: Outcome, slo: Slo) -> bool:
    """Completed, its check passed, and its own latencies within every bound."""
    if not (outcome.ok and outcome.passed):
        return False
    values = [(request_value(outcome, b), b.limit_ms) for b in slo.bounds]
    return all(v is not None and v <= limit for v, limit in values)


def quantiles(values: Sequence[float]) -> dict[str, float | None]:
    """p50, p95, p99 (type 7), None for no values."""
    return {f"p{q * 100:g}": percentile(values, q) if values else None for q in REPORTED_QUANTILES}


@dataclass(frozen=True)
class Step:
    """One load level's result; ``load`` is the rate (requests/s) or the concurrency."""

    mode: str  # "rate" or "concurrency"
    load: float
    sent: int
    completed: int
    passed: int
    good: int
    wall_s: float
    latency: dict[str, dict[str, float | None]]  # metric → p50/p95/p99, ms
    checks: dict[str, bool]  # each bound's label → whether the step's percentile meets it
    holds: bool
    min_pass: float = 0.0
    failures: dict[str, int] = field(default_factory=dict)
    late_ms_p95: float | None = None  # the driver's own lag behind the schedule

    @property
    def throughput(self) -> float:
        return self.completed / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def goodput(self) -> float:
        return self.good / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def pass_share(self) -> float:
        return self.passed / self.sent if self.sent else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "load": self.load, "sent": self.sent, "completed": self.completed,
                "passed": self.passed, "good": self.good, "wall_s": self.wall_s,
                "throughput_rps": self.throughput, "goodput_rps": self.goodput, "pass_share": self.pass_share,
                "latency_ms": self.latency, "slo_checks": self.checks, "min_pass": self.min_pass,
                "pass_share_met": self.pass_share >= self.min_pass, "holds": self.holds,
                "failures": self.failures, "late_ms_p95": self.late_ms_p95}


def step_result(mode: str, load: float, outcomes: Sequence[Outcome], wall_s: float, slo: Slo,
                min_pass: float) -> Step:
    """One step's figures and verdict from its requests (definitions in the module doc)."""
    done = [o for o in outcomes if o.ok]
    series = {
        "ttft": [o.ttft_ms for o in done if o.ttft_ms is not None],
        "e2e": [o.e2e_ms for o in done if o.e2e_ms is not None],
        "itl": [g for o in done for g in o.itl_ms],
    }
    checks = {}
    for b in slo.bounds:
        values = series[b.metric] or ([0.0] * len(done) if b.metric == "itl" else [])
        checks[b.label] = bool(values) and percentile(values, b.q) <= b.limit_ms
    passed = sum(o.ok and o.passed for o in outcomes)
    sent = len(outcomes)
    failures: dict[str, int] = {}
    for o in outcomes:
        if not o.ok:
            failures[str(o.error_kind)] = failures.get(str(o.error_kind), 0) + 1
    holds = bool(done) and all(checks.values()) and sent > 0 and passed / sent >= min_pass
    late = [o.sent_late_ms for o in outcomes]
    return Step(mode=mode, load=load, sent=sent, completed=len(done), passed=passed,
                good=sum(is_good(o, slo) for o in outcomes), wall_s=wall_s,
                latency={m: quantiles(v) for m, v in series.items()}, checks=checks, holds=holds,
                min_pass=min_pass, failures=failures, late_ms_p95=percentile(late, 0.95) if late else None)


def step_figures(step: Step) -> dict[str, Any]:
    """A step flat (name → number, bool or text), as its span carries it: the counts, the
    rates, each latency percentile as ``<metric>_ms.<pNN>``."""
    flat: dict[str, Any] = {k: v for k, v in step.to_dict().items() if isinstance(v, (int, float, str, bool))}
    for metric, qs in step.latency.items():
        flat |= {f"{metric}_ms.{q}": v for q, v in qs.items() if v is not None}
    return flat


def highest_holding(steps: Sequence[Step]) -> float | None:
    """The largest load such that it and every lower load of the sweep hold; None when the
    lowest does not."""
    best = None
    for step in sorted(steps, key=lambda s: s.load):
        if not step.holds:
            break
        best = step.load
    return best
