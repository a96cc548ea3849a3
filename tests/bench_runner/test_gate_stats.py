"""The gate's statistics: against published values, by simulation of runs with known
effects (the false-alarm rate and the power the gate claims), and as properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.bench_runner import gate_stats as gs
from otelbench.bench_runner.gate import Side, Tolerances, compare, pass_rate_row
from otelbench.bench_runner.stats import wilson_95


# -- known values ----------------------------------------------------------------------


@pytest.mark.parametrize(("x1", "n1", "x2", "n2", "low", "high"), [
    (56, 70, 48, 80, 0.0524, 0.3339),  # Newcombe 1998, Statistics in Medicine 17:873, table II, example (a)
    (9, 10, 3, 10, 0.1705, 0.8090),    # example (b)
])
def test_newcombe_interval_is_the_papers_method_10(x1: int, n1: int, x2: int, n2: int, low: float,
                                                   high: float) -> None:
    d = gs.newcombe_difference(x1, n1, x2, n2, 0.95)
    assert d.estimate == pytest.approx(x1 / n1 - x2 / n2)
    assert (round(d.low, 4), round(d.high, 4)) == (low, high)


def test_fisher_exact_is_the_lady_tasting_tea() -> None:
    # Fisher (1935): 3 of 4 cups right each way; two-sided p = 34/70, one-sided 17/70
    assert gs.fisher_exact(3, 4, 1, 4) == pytest.approx(34 / 70)
    assert gs.fisher_exact(1, 4, 3, 4, alternative="less") == pytest.approx(17 / 70)
    assert gs.fisher_exact(3, 4, 1, 4, alternative="less") == pytest.approx(69 / 70)


def test_one_sided_fisher_is_the_hypergeometric_tail() -> None:
    # P(X <= 2) for X hypergeometric: 10 passes among 20 trials, 10 of them the candidate's
    tail = sum(math.comb(10, k) * math.comb(10, 10 - k) for k in range(3)) / math.comb(20, 10)
    assert gs.fisher_exact(2, 10, 8, 10, alternative="less") == pytest.approx(tail)


def test_wilson_at_95_is_the_suite_views_interval() -> None:
    for passed, total in [(0, 5), (24, 60), (60, 60), (1, 1)]:
        assert gs.wilson(passed, total, 0.95) == pytest.approx(wilson_95(passed, total), abs=1e-4)


def test_bootstrap_is_fixed_by_its_seed_and_says_what_it_did() -> None:
    a, b = [10.0, 12, 11, 13, 40], [14.0, 15, 13, 16, 50]
    one, two = gs.bootstrap(a, b, "median", seed=7), gs.bootstrap(a, b, "median", seed=7)
    assert one == two and one.resamples == 2000 and one.statistic == "median"
    assert one.difference.estimate == 3.0 and one.ratio is not None and one.ratio.estimate == pytest.approx(15 / 12)
    assert gs.bootstrap(a, b, "median", seed=8) != one


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5])
def test_a_confidence_outside_0_1_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        gs.z_value(bad)


# -- simulation: false alarms and power ------------------------------------------------

ALPHA = 0.05
PAIRS = 400


def _margin(rate: float, n: int) -> float:
    """Three binomial standard deviations of an observed rate over n simulations."""
    return 3 * math.sqrt(rate * (1 - rate) / n)


def _sides(rng: np.random.Generator, p_base: float, p_cand: float, n: int) -> tuple[Side, Side]:
    return (Side("base", "pass rate", passed=int(rng.binomial(n, p_base)), scored=n),
            Side("cand", "pass rate", passed=int(rng.binomial(n, p_cand)), scored=n))


@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
def test_with_no_effect_the_pass_rate_gate_flags_at_most_alpha(p: float) -> None:
    rng, tol = np.random.default_rng(2026), Tolerances(max_drop=0.0, confidence=1 - ALPHA)
    flagged = sum(pass_rate_row(*_sides(rng, p, p, 60), tol).verdict == "regression" for _ in range(PAIRS))
    assert flagged / PAIRS <= ALPHA + _margin(ALPHA, PAIRS)


def test_a_real_drop_from_90_to_60_percent_is_flagged_with_high_power() -> None:
    rng = np.random.default_rng(2027)
    for max_drop, power in ((0.0, 0.97), (0.05, 0.85)):
        tol = Tolerances(max_drop=max_drop, confidence=0.95)
        flagged = sum(pass_rate_row(*_sides(rng, 0.9, 0.6, 60), tol).verdict == "regression" for _ in range(200))
        assert flagged / 200 >= power, (max_drop, flagged)


def test_a_drop_within_the_tolerance_is_not_a_regression() -> None:
    rng, tol = np.random.default_rng(2028), Tolerances(max_drop=0.10)
    flagged = sum(pass_rate_row(*_sides(rng, 0.9, 0.87, 200), tol).verdict == "regression" for _ in range(PAIRS))
    assert flagged / PAIRS <= ALPHA + _margin(ALPHA, PAIRS)


def _latencies(rng: np.random.Generator, scale: float, n: int = 60) -> list[float]:
    return list(1000 * scale * rng.lognormal(0.0, 0.5, n))


def test_with_no_effect_the_latency_gate_flags_at_most_alpha() -> None:
    rng = np.random.default_rng(2029)
    tol = Tolerances(max_slowdown=1.0, confidence=1 - ALPHA, resamples=500)
    flagged = 0
    for _ in range(PAIRS):
        base = Side("base", "pass rate", latency_ms=_latencies(rng, 1.0))
        cand = Side("cand", "pass rate", latency_ms=_latencies(rng, 1.0))
        flagged += compare(base, cand, tol).regression
    assert flagged / PAIRS <= ALPHA + _margin(ALPHA, PAIRS)


def test_a_real_slowdown_of_60_percent_is_flagged_beyond_a_20_percent_tolerance() -> None:
    rng, tol = np.random.default_rng(2030), Tolerances(max_slowdown=1.2, resamples=500)
    flagged = 0
    for _ in range(100):
        base = Side("base", "pass rate", latency_ms=_latencies(rng, 1.0, 120))
        cand = Side("cand", "pass rate", latency_ms=_latencies(rng, 1.6, 120))
        flagged += compare(base, cand, tol).regression
    assert flagged >= 80


def test_the_judge_score_and_cost_gates() -> None:
    rng = np.random.default_rng(2031)
    base = Side("base", "ok", scores=list(rng.beta(8, 2, 80)), cost_usd=list(rng.gamma(2, 0.01, 80)))
    worse = Side("cand", "ok", scores=list(rng.beta(4, 4, 80)), cost_usd=list(rng.gamma(2, 0.02, 80)))
    rows = {r.metric: r for r in compare(base, worse, Tolerances()).rows}
    assert rows["judge score mean"].verdict == "regression"
    assert rows["cost mean"].verdict == "regression"
    assert rows["ok"].verdict == "not compared" and rows["latency median"].verdict == "not compared"
    same = {r.metric: r for r in compare(base, base, Tolerances()).rows}
    assert same["judge score mean"].verdict == same["cost mean"].verdict == "no significant change"


# -- properties ------------------------------------------------------------------------

counts = st.integers(1, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@settings(max_examples=300, deadline=None)
@given(counts, counts, st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_newcombe_contains_the_difference_stays_in_bounds_and_negates_when_swapped(
        a: tuple[int, int], b: tuple[int, int], confidence: float) -> None:
    d = gs.newcombe_difference(*a, *b, confidence)
    swapped = gs.newcombe_difference(*b, *a, confidence)
    assert d.contains(d.estimate) and -1 <= d.low <= d.high <= 1
    assert (swapped.estimate, swapped.low, swapped.high) == pytest.approx((-d.estimate, -d.high, -d.low))
    wider = gs.newcombe_difference(*a, *b, min(0.999, confidence + 0.005))
    assert wider.low <= d.low and wider.high >= d.high


@settings(max_examples=200, deadline=None)
@given(counts, counts)
def test_fisher_one_sided_tails_swap_and_are_probabilities(a: tuple[int, int], b: tuple[int, int]) -> None:
    less = gs.fisher_exact(*a, *b, alternative="less")
    assert 0 <= less <= 1 + 1e-12
    assert gs.fisher_exact(*b, *a, alternative="greater") == pytest.approx(less)


samples = st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=40)


@settings(max_examples=100, deadline=None)
@given(samples, samples, st.sampled_from(["mean", "median"]))
def test_bootstrap_interval_is_ordered_and_within_what_resampling_can_reach(
        a: list[float], b: list[float], statistic: gs.Statistic) -> None:
    boot = gs.bootstrap(a, b, statistic, resamples=200)
    d = boot.difference
    assert d.low <= d.high
    slack = 1e-6 * (1 + max(a + b))
    assert min(b) - max(a) - slack <= d.low and d.high <= max(b) - min(a) + slack


@settings(max_examples=100, deadline=None)
@given(counts, counts)
def test_the_pass_rate_verdict_agrees_with_its_interval(a: tuple[int, int], b: tuple[int, int]) -> None:
    row = pass_rate_row(Side("a", "r", passed=a[0], scored=a[1]), Side("b", "r", passed=b[0], scored=b[1]),
                        Tolerances(max_drop=0.05))
    assert row.difference is not None
    if row.verdict == "regression":
        assert row.difference.high < -0.05 and row.p_value is not None and row.p_value < 0.05
    if row.difference.low > 0:
        assert row.verdict == "better"
