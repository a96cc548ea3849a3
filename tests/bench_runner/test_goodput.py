"""bench_runner.goodput: the SLO grammar and the goodput arithmetic as pure functions, on
outcomes whose truth is written down beside them."""

from __future__ import annotations

import random

import pytest

from otelbench.bench_runner.goodput import (
    Bound, Outcome, Slo, SloError, highest_holding, is_good, parse_slo, step_result,
)
from otelbench.bench_runner.load import poisson_arrivals


@pytest.mark.parametrize(("text", "bounds"), [
    ("ttft_p95<=1s", [Bound("ttft", 0.95, 1000.0)]),
    ("ttft_p95<=1s,e2e_p95<=10s", [Bound("ttft", 0.95, 1000.0), Bound("e2e", 0.95, 10000.0)]),
    (" e2e_p99 <= 2500ms , itl_p50<=40ms ", [Bound("e2e", 0.99, 2500.0), Bound("itl", 0.5, 40.0)]),
    ("ttft_p99.9<=0.25s", [Bound("ttft", 0.999, 250.0)]),
])
def test_slo_terms_parse(text: str, bounds: list[Bound]) -> None:
    got = parse_slo(text).bounds
    assert [(b.metric, b.limit_ms) for b in got] == [(b.metric, b.limit_ms) for b in bounds]
    assert [b.q for b in got] == pytest.approx([b.q for b in bounds])


@pytest.mark.parametrize(("text", "says"), [
    ("", "empty term"),
    ("ttft_p95<=1s,", "empty term"),
    ("ttft<=1s", "cannot read 'ttft<=1s'"),
    ("ttft_p95<1s", "cannot read"),
    ("ttft_p95<=1", "cannot read"),  # a unit is required
    ("ttft_p95<=1min", "cannot read"),
    ("tpot_p95<=1s", "unknown metric 'tpot'"),
    ("ttft_p0<=1s", "not between 0 and 100"),
    ("ttft_p95<=1s,ttft_p99<=2s", "ttft is bounded twice"),
])
def test_bad_slo_is_refused_with_the_term_named(text: str, says: str) -> None:
    with pytest.raises(SloError, match=None) as err:
        parse_slo(text)
    assert says in str(err.value)


SLO = Slo((Bound("ttft", 0.95, 100.0), Bound("e2e", 0.95, 1000.0)))


def ok(ttft: float, e2e: float, passed: bool = True, itl: tuple[float, ...] = ()) -> Outcome:
    return Outcome(case="c", ok=True, passed=passed, ttft_ms=ttft, e2e_ms=e2e, itl_ms=itl)


FAILED = Outcome(case="c", ok=False, passed=False, error_kind="http-status")


def test_a_request_is_good_only_fast_and_right() -> None:
    assert is_good(ok(100, 1000), SLO)  # the bounds are inclusive
    assert not is_good(ok(100.1, 500), SLO)
    assert not is_good(ok(50, 1000.1), SLO)
    assert not is_good(ok(50, 500, passed=False), SLO)
    assert not is_good(FAILED, SLO)


def test_itl_bound_uses_the_requests_own_percentile_of_its_gaps() -> None:
    slo = Slo((Bound("itl", 0.5, 10.0),))
    assert is_good(ok(1, 1, itl=(5, 9, 50)), slo)  # median gap 9
    assert not is_good(ok(1, 1, itl=(5, 11, 50)), slo)
    assert is_good(ok(1, 1), slo)  # one token event: no gap


def test_step_figures_from_known_outcomes() -> None:
    # 10 sent over 4 s: 6 fast and right, 1 fast and wrong, 2 slow and right, 1 failed
    outcomes = [ok(50, 500)] * 6 + [ok(50, 500, passed=False)] + [ok(300, 900)] * 2 + [FAILED]
    step = step_result("rate", 2.0, outcomes, 4.0, SLO, min_pass=0.8)
    assert (step.sent, step.completed, step.passed, step.good) == (10, 9, 8, 6)
    assert step.goodput == 6 / 4.0
    assert step.throughput == 9 / 4.0
    assert step.pass_share == 0.8
    assert step.failures == {"http-status": 1}
    # TTFT over the 9 completed, sorted [50]*7 + [300]*2; type 7: p50 at h = 4 (50), p95 at
    # h = 8*0.95 = 7.6, between xs[7] = xs[8] = 300; e2e [500]*7 + [900]*2 the same way
    assert step.latency["ttft"] == {"p50": 50, "p95": 300, "p99": 300}
    assert step.latency["e2e"]["p95"] == 900
    assert step.checks == {"ttft_p95<=100ms": False, "e2e_p95<=1000ms": True}
    assert not step.holds


def test_a_step_holds_on_percentiles_and_pass_share() -> None:
    # type 7 p95 of n values reads between the two largest from n = 20 down: one slow
    # request in 20 moves it (h = 19*0.95 = 18.05), one in 40 does not (h = 37.05)
    slow = ok(5000, 6000)
    in_20 = step_result("rate", 1.0, [ok(50, 500)] * 19 + [slow], 10.0, SLO, min_pass=0.9)
    assert in_20.latency["ttft"]["p95"] == pytest.approx(50 + 0.05 * 4950)
    assert not in_20.holds and in_20.good == 19
    in_40 = step_result("rate", 1.0, [ok(50, 500)] * 39 + [slow], 10.0, SLO, min_pass=0.9)
    assert in_40.latency["ttft"]["p95"] == 50 and in_40.holds and in_40.good == 39
    wrong = step_result("rate", 1.0, [ok(50, 500)] * 8 + [ok(50, 500, passed=False)] * 2, 10.0, SLO, min_pass=0.9)
    assert wrong.checks == {"ttft_p95<=100ms": True, "e2e_p95<=1000ms": True}
    assert wrong.pass_share == 0.8 and not wrong.holds
    assert step_result("rate", 1.0, [ok(50, 500)] * 8 + [ok(50, 500, passed=False)] * 2, 10.0, SLO, 0.8).holds
    assert not step_result("rate", 1.0, [FAILED] * 3, 10.0, SLO, min_pass=0.0).holds  # nothing completed


def test_highest_holding_stops_at_the_first_failing_load() -> None:
    def step(load: float, holds: bool):  # type: ignore[no-untyped-def]
        good = [ok(50, 500)] * 4
        bad = [ok(500, 500)] * 4
        return step_result("rate", load, good if holds else bad, 1.0, SLO, 0.9)

    assert highest_holding([step(4, True), step(1, True), step(2, True)]) == 4
    assert highest_holding([step(1, True), step(2, False), step(4, True)]) == 1  # 4 is above a failure
    assert highest_holding([step(1, False), step(2, True)]) is None
    assert highest_holding([]) is None


def test_poisson_arrivals_are_seeded_and_at_the_rate() -> None:
    a = poisson_arrivals(4.0, rng=random.Random(7), n=20_000)
    assert a == poisson_arrivals(4.0, rng=random.Random(7), n=20_000)
    assert a[0] == 0.0 and a == sorted(a) and len(a) == 20_000
    # mean gap 1/rate: with 19,999 exponential gaps the sample mean is within ±2 % at > 5 sigma
    assert (a[-1] / (len(a) - 1)) == pytest.approx(0.25, rel=0.02)
    timed = poisson_arrivals(4.0, rng=random.Random(7), duration_s=10.0)
    assert timed == [t for t in a if t <= 10.0]
    with pytest.raises(ValueError):
        poisson_arrivals(0, rng=random.Random(7), n=3)


def test_the_table_row_says_why_a_step_does_not_hold() -> None:
    from otelbench.bench_runner.goodput_report import step_row

    slow_and_wrong = step_result("rate", 0.5, [ok(500, 500, passed=False)] * 4, 8.0, SLO, min_pass=0.9)
    row = step_row(slow_and_wrong.to_dict())
    assert row[0] == "0.5/s" and row[3] == "0%" and row[6] == "0.00"
    assert row[-1] == "no (ttft_p95<=100ms ✗, pass<90% ✗)"
    fine = step_result("concurrency", 2, [ok(50, 500)] * 4, 2.0, SLO, min_pass=0.9)
    assert step_row(fine.to_dict())[0] == "2 clients" and step_row(fine.to_dict())[-1] == "yes"
    assert step_row(fine.to_dict())[7] == "50/50/50"  # TTFT p50/p95/p99, ms
    nothing = step_result("rate", 1, [FAILED], 1.0, SLO, min_pass=0.0)
    assert step_row(nothing.to_dict())[-1] == "no (ttft_p95<=100ms ✗, e2e_p95<=1000ms ✗)"
