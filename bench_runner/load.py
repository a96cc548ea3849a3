"""Driving a goodput sweep: Poisson arrivals at a rate (open loop) or a fixed number of
clients (closed loop), each request a checked case measured by ``client.measure_run``.

Open loop: the send times are drawn up front from a seeded ``random.Random`` (exponential
gaps of mean 1/rate), and each request is sent at its time from its own thread, whether or
not earlier ones have finished, as real users arrive. How late each send went out is kept
(``Outcome.sent_late_ms``): a driver that cannot keep up shows there, not as server latency.
Closed loop: N clients send back to back until the step's requests (or time) are used up.

The cases are the core suite's ability and agent-fitness tests (``suites``), cycled in
order, each reply judged by its own checker; ``goodput`` turns the outcomes into figures.
"""

from __future__ import annotations

import contextvars
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from otelbench.bench_runner import suites
from otelbench.bench_runner.client import RunResult, http_client, measure_run
from otelbench.bench_runner.goodput import Outcome, Plan, Step, step_figures, step_result
from otelbench.bench_runner.spans import BenchSpans, record_reply, record_run

Clock = Callable[[], int]  # ns
Sleep = Callable[[float], None]  # s


def poisson_arrivals(rate: float, *, rng: random.Random, n: int | None = None,
                     duration_s: float | None = None) -> list[float]:
    """Send times (s from the step's start) of a Poisson process of ``rate``/s: ``n`` of them,
    or as many as fall within ``duration_s``. The first request goes out at 0."""
    if rate <= 0:
        raise ValueError(f"rate must be > 0, got {rate}")
    if (n is None) == (duration_s is None):
        raise ValueError("give n or duration_s")
    times = [0.0]
    while True:
        nxt = times[-1] + rng.expovariate(rate)
        if (n is not None and len(times) >= n) or (duration_s is not None and nxt > duration_s):
            return times
        times.append(nxt)


@dataclass(frozen=True)
class Case:
    """A request with its check: the suite test it sends and judges."""

    test: suites.SuiteTest

    @property
    def name(self) -> str:
        return self.test.name


def suite_cases(names: Sequence[str] = (), suite: str = suites.DEFAULT_SUITE) -> list[Case]:
    """The suite's tests as cases, one per distinct request (tests that share a reply are
    judged on it together: the agent-fitness triage is one request, three checks), or only
    those ``names``."""
    s = suites.load_suite(suite)
    chosen = [s.test(n) for n in names] if names else list(s.tests)
    return [Case(t) for t in chosen]


@dataclass
class Target:
    """Where requests go and how each is measured and recorded."""

    base_url: str
    model: str
    provider: str = "openai_compatible"
    api_key: str | None = None
    spans: BenchSpans | None = None
    timeout_s: float = 120.0


def run_case(target: Target, case: Case, client: httpx.Client, siblings: Sequence[Case] = ()) -> tuple[RunResult, bool]:
    """Send one case, judge the reply with its checker (and the checkers of ``siblings``,
    tests sharing its request: all must pass); the request is a chat span when spans are on."""
    spans = target.spans or BenchSpans(None)
    with spans.chat(target.model, target.base_url, target.provider, case="goodput", test=case.name) as span:
        run = measure_run(target.base_url, target.model, case.test.messages(), max_tokens=case.test.max_tokens,
                          client=client, api_key=target.api_key, timeout_s=target.timeout_s)
        record_run(span, run)
        passed = False
        if run.ok:
            record_reply(span, run.text, run.finish_reason)
            passed = all(suites.check(c.test, run.text).passed for c in (case, *siblings))
            span.set_attribute("bench.goodput.check", "pass" if passed else "fail")
    return run, passed


def _outcome(case: Case, run: RunResult, passed: bool, late_ms: float) -> Outcome:
    return Outcome(case=case.name, ok=run.ok, passed=passed, ttft_ms=run.ttft_ms, e2e_ms=run.e2e_ms,
                   itl_ms=tuple(run.itl_ms), error_kind=None if run.ok else str(run.error_kind),
                   sent_late_ms=max(0.0, late_ms))


def _groups(cases: Sequence[Case]) -> list[tuple[Case, list[Case]]]:
    """One entry per distinct request: its first case and the others judged on its reply."""
    groups: dict[Any, tuple[Case, list[Case]]] = {}
    for c in cases:
        key = c.test.reply_key
        if key in groups:
            groups[key][1].append(c)
        else:
            groups[key] = (c, [])
    return list(groups.values())


def open_loop(target: Target, cases: Sequence[Case], schedule: Sequence[float], *,
              clock: Clock = time.perf_counter_ns, sleep: Sleep = time.sleep) -> tuple[list[Outcome], float]:
    """Send request i at ``schedule[i]`` s after the start, case i mod the distinct requests;
    returns the outcomes in send order and the wall time (start → last finish), s."""
    groups = _groups(cases)
    outcomes: list[Outcome | None] = [None] * len(schedule)
    ends = [0] * len(schedule)
    threads: list[threading.Thread] = []
    # one client for every request in flight: its pool has no connection limit
    # (client.http_client), so no request waits for a connection, untimed
    with http_client(httpx.Timeout(target.timeout_s, connect=5)) as client:

        def send(i: int, due_ns: int) -> None:
            case, siblings = groups[i % len(groups)]
            late_ms = (clock() - due_ns) / 1e6
            run, passed = run_case(target, case, client, siblings)
            ends[i] = clock()
            outcomes[i] = _outcome(case, run, passed, late_ms)

        start = clock()
        for i, at in enumerate(schedule):
            due = start + round(at * 1e9)
            while (wait := due - clock()) > 0:
                sleep(wait / 1e9)
            # each thread in a copy of this one's context: its chat span is the step span's child
            t = threading.Thread(target=contextvars.copy_context().run, args=(send, i, due), name=f"goodput-{i}",
                                 daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
    return [o for o in outcomes if o is not None], (max(ends, default=start) - start) / 1e9


def closed_loop(target: Target, cases: Sequence[Case], concurrency: int, *, n: int | None = None,
                duration_s: float | None = None, clock: Clock = time.perf_counter_ns) -> tuple[list[Outcome], float]:
    """``concurrency`` clients send back to back until ``n`` requests were sent, or until
    ``duration_s`` has passed (a request in flight then still finishes)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if (n is None) == (duration_s is None):
        raise ValueError("give n or duration_s")
    groups = _groups(cases)
    lock = threading.Lock()
    taken = [0]
    outcomes: dict[int, Outcome] = {}
    ends = [0] * concurrency
    start = clock()
    stop_at = start + round((duration_s or 0) * 1e9)

    def worker(w: int) -> None:
        with http_client(httpx.Timeout(target.timeout_s, connect=5)) as client:
            while True:
                with lock:
                    i = taken[0]
                    if (n is not None and i >= n) or (duration_s is not None and clock() >= stop_at):
                        break
                    taken[0] += 1
                case, siblings = groups[i % len(groups)]
                run, passed = run_case(target, case, client, siblings)
                outcomes[i] = _outcome(case, run, passed, 0.0)
        ends[w] = clock()

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker, w), name=f"goodput-client-{w}",
                                daemon=True) for w in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [outcomes[i] for i in sorted(outcomes)], (max(ends) - start) / 1e9


def sweep(target: Target, cases: Sequence[Case], plan: Plan,
          on_step: Callable[[Step], None] = lambda s: None) -> list[Step]:
    """Every rate step (rising), then every concurrency step; each step's figures as it ends.
    Each rate's arrivals come from its own generator seeded by (seed, rate), so a step's
    schedule does not depend on which other rates were asked for."""
    spans = target.spans or BenchSpans(None)
    steps = []

    def step(mode: str, load: float, run: Callable[[], tuple[list[Outcome], float]]) -> None:
        with spans.goodput_step(target.model, mode, load) as span:
            outcomes, wall = run()
            steps.append(step_result(mode, load, outcomes, wall, plan.slo, plan.min_pass))
            spans.record_goodput(span, step_figures(steps[-1]))
        on_step(steps[-1])

    for rate in sorted(plan.rates):
        rng = random.Random(f"{plan.seed}:{rate:g}")
        schedule = poisson_arrivals(rate, rng=rng, n=plan.requests, duration_s=plan.duration_s)
        step("rate", rate, lambda: open_loop(target, cases, schedule))
    for c in sorted(plan.concurrencies):
        step("concurrency", c, lambda: closed_loop(target, cases, c, n=plan.requests, duration_s=plan.duration_s))
    return steps
