"""bench_runner.load against the paced stub: requests whose TTFT and right or wrong answer
are set by the stub's script, so every step's goodput, pass share and verdict is known
before the sweep runs.

Under ``/by-model`` the model names the script: ``stars`` answers the core suite's
``count_stars`` test right (and every other test wrong), ``paced`` answers nothing at all.
``serial=1`` makes the stub a one-slot server, so load queues and TTFT grows with it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from otelbench.bench_runner import load
from otelbench.bench_runner.goodput import Plan, highest_holding, parse_slo
from otelbench.testing.openai_stub import StubServer

SEED = 46  # its rate-2 schedule has no gap shorter than one request's service time (asserted)


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as s:
        yield s


def test_goodput_counts_only_checked_right_answers(stub: StubServer) -> None:
    """Every TTFT (30 ms) is inside the SLO; cases alternate count_stars (right) and
    json_book (wrong): exactly half pass, so half are good."""
    target = load.Target(stub.base_url("by-model", ttft_ms=30, rate=1000), "stars")
    cases = load.suite_cases(["count_stars", "json_book"])
    plan = Plan(parse_slo("ttft_p95<=1s,e2e_p95<=5s"), min_pass=0.5, rates=(20,), requests=8, seed=SEED)
    [step] = load.sweep(target, cases, plan)
    assert (step.sent, step.completed, step.passed, step.good) == (8, 8, 4, 4)
    assert step.pass_share == 0.5 and step.holds  # min_pass 0.5 is met exactly
    assert step.goodput == 4 / step.wall_s and step.throughput == 8 / step.wall_s
    assert all(step.checks.values())
    strict = Plan(parse_slo("ttft_p95<=1s"), min_pass=0.9, rates=(20,), requests=8, seed=SEED)
    assert not load.sweep(target, cases, strict)[0].holds


def test_a_wrong_answer_is_never_good_and_a_slow_right_one_neither(stub: StubServer) -> None:
    cases = load.suite_cases(["count_stars"])
    # in time by far (20 ms against 2 s, a loaded machine included), and wrong
    roomy = Plan(parse_slo("ttft_p95<=2s"), rates=(20,), requests=4, seed=SEED)
    [wrong] = load.sweep(load.Target(stub.base_url("by-model", ttft_ms=20, rate=1000, n=8), "paced"), cases, roomy)
    assert (wrong.completed, wrong.passed, wrong.good, wrong.goodput, wrong.holds) == (4, 0, 0, 0.0, False)
    assert wrong.checks == {"ttft_p95<=2000ms": True}
    # right, and never in time: the stub cannot answer sooner than 250 ms
    plan = Plan(parse_slo("ttft_p95<=100ms"), rates=(20,), requests=4, seed=SEED)
    [slow] = load.sweep(load.Target(stub.base_url("by-model", ttft_ms=250, rate=1000), "stars"), cases, plan)
    assert (slow.completed, slow.passed, slow.good, slow.goodput, slow.holds) == (4, 4, 0, 0.0, False)
    assert slow.latency["ttft"]["p50"] >= 250  # the stub cannot answer sooner than its script says
    assert slow.checks == {"ttft_p95<=100ms": False}


def test_the_highest_holding_load_is_where_queueing_breaks_the_slo(stub: StubServer) -> None:
    """A one-slot server serving 150 ms TTFT + 11 tokens at 1 ms: ~0.16 s per request.

    Rate 2 (seeded gaps all longer than that) never queues: every TTFT ~150 ms. Rate 50
    sends 8 requests within 0.25 s: the 7th in line starts after 6 others (≥ 0.96 s), so
    its TTFT and the p95 are far above 500 ms. Concurrency 1 never queues; concurrency 4
    makes each request wait for the 3 ahead of it."""
    service_s = 0.150 + 11 * 0.001
    schedule = load.poisson_arrivals(2, rng=random.Random(f"{SEED}:2"), n=8)
    assert min(b - a for a, b in zip(schedule, schedule[1:])) > service_s + 0.1
    assert load.poisson_arrivals(50, rng=random.Random(f"{SEED}:50"), n=8)[-1] < 0.25
    target = load.Target(stub.base_url("by-model", ttft_ms=150, rate=1000, serial=1), "stars")
    plan = Plan(parse_slo("ttft_p95<=500ms"), rates=(50, 2), concurrencies=(4, 1), requests=8, seed=SEED)
    seen: list[float] = []
    steps = load.sweep(target, load.suite_cases(["count_stars"]), plan, on_step=lambda s: seen.append(s.load))
    assert seen == [2, 50, 1, 4]  # rising, rates first
    by = {(s.mode, s.load): s for s in steps}
    assert by["rate", 2].holds and by["rate", 2].good == 8 and by["rate", 2].goodput == 8 / by["rate", 2].wall_s
    assert not by["rate", 50].holds and by["rate", 50].latency["ttft"]["p95"] > 500
    assert by["concurrency", 1].holds and by["concurrency", 1].good == 8
    assert not by["concurrency", 4].holds
    assert all(s.passed == 8 for s in steps)  # the answers were right throughout: latency alone failed them
    assert highest_holding([s for s in steps if s.mode == "rate"]) == 2
    assert highest_holding([s for s in steps if s.mode == "concurrency"]) == 1


def test_failed_requests_count_against_pass_share(stub: StubServer) -> None:
    target = load.Target(stub.base_url("by-model"), "http500")
    plan = Plan(parse_slo("e2e_p95<=1s"), min_pass=0.0, concurrencies=(2,), requests=4)
    [step] = load.sweep(target, load.suite_cases(["count_stars"]), plan)
    assert (step.sent, step.completed, step.passed, step.good) == (4, 0, 0, 0)
    assert step.failures == {"http-status": 4} and not step.holds


def test_the_agent_triage_is_one_request_judged_by_all_its_checks(stub: StubServer) -> None:
    cases = load.suite_cases()
    names = [c.name for c in cases]
    assert {"syslog_grounded", "syslog_format", "syslog_concise", "count_stars"} <= set(names)
    target = load.Target(stub.base_url("by-model", ttft_ms=5, rate=1000), "stars")
    plan = Plan(parse_slo("e2e_p95<=5s"), min_pass=0.0, concurrencies=(1,), requests=6)
    [step] = load.sweep(target, cases, plan)
    # 6 distinct requests (the 3 syslog tests share one); stars answers only count_stars
    assert (step.sent, step.passed) == (6, 1)


def test_a_step_of_a_duration_sends_what_falls_within_it(stub: StubServer) -> None:
    """Rate: exactly the seeded arrivals within the duration. Concurrency: one client sends
    back to back until the duration has passed; the request in flight then still finishes."""
    target = load.Target(stub.base_url("by-model", ttft_ms=100, rate=1000), "stars")
    plan = Plan(parse_slo("e2e_p95<=5s"), rates=(20,), concurrencies=(1,), requests=None, duration_s=0.5, seed=SEED)
    rate, clients = load.sweep(target, load.suite_cases(["count_stars"]), plan)
    assert rate.sent == len(load.poisson_arrivals(20, rng=random.Random(f"{SEED}:20"), duration_s=0.5))
    # each request takes ≥ 0.111 s, so at most 5 start within 0.5 s, and the last ends past it
    assert 1 <= clients.sent <= 5 and clients.wall_s >= 0.5 and clients.passed == clients.sent
