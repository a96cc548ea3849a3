"""The statistics of a regression gate: is the candidate worse than the baseline, by more
than chance explains?

Pure functions over counts and samples (bench_runner/gate.py reads them from the lake):

- a **pass rate** difference gets Newcombe's hybrid Wilson score interval (Newcombe 1998,
  method 10: each proportion's Wilson interval, combined as the square root of the summed
  squared distances) and Fisher's exact test of the 2×2 table (scipy);
- a **latency, score or cost** difference gets a percentile bootstrap interval: both
  samples resampled with replacement, independently, ``resamples`` times from a generator
  seeded with ``seed`` (numpy's PCG64), the statistic (mean or median) taken on each, and
  the interval read from the percentiles of the differences (and of the ratios).

Every difference is candidate minus baseline (``b - a``); an interval at ``confidence``
is two-sided.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from otelbench.bench_runner.stats import wilson_score

RESAMPLES = 2000
SEED = 0
Statistic = Literal["mean", "median"]
Alternative = Literal["less", "greater", "two-sided"]


@dataclass(frozen=True)
class Interval:
    """An estimate and its two-sided interval at ``confidence``."""

    estimate: float
    low: float
    high: float
    confidence: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def z_value(confidence: float) -> float:
    """The two-sided normal quantile: 1.96 for 0.95."""
    _check_confidence(confidence)
    return float(stats.norm.ppf(0.5 + confidence / 2))


def wilson(passed: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` of ``total`` (total ≥ 1)."""
    _check_counts(passed, total)
    return wilson_score(passed, total, z_value(confidence))


def newcombe_difference(x1: int, n1: int, x2: int, n2: int, confidence: float = 0.95) -> Interval:
    """p1 − p2 (p1 = x1/n1, p2 = x2/n2) with Newcombe's hybrid score interval (method 10).
    For 56/70 vs 48/80: 0.1750, 95 % interval 0.0247 to 0.3159 (Newcombe 1998, table II)."""
    p1, p2 = x1 / _total(x1, n1), x2 / _total(x2, n2)
    l1, u1 = wilson(x1, n1, confidence)
    l2, u2 = wilson(x2, n2, confidence)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return Interval(d, max(-1.0, low), min(1.0, high), confidence)  # rounding can pass ±1 by an ulp


def fisher_exact(x1: int, n1: int, x2: int, n2: int, alternative: Alternative = "two-sided") -> float:
    """Fisher's exact p for the table [[x1, n1 − x1], [x2, n2 − x2]]; ``less``: the first
    group's pass rate is the lower (its odds ratio below 1)."""
    _total(x1, n1), _total(x2, n2)
    return float(stats.fisher_exact([[x1, n1 - x1], [x2, n2 - x2]], alternative=alternative).pvalue)


@dataclass(frozen=True)
class Bootstrap:
    """A bootstrap comparison of two samples: the difference and the ratio of a statistic."""

    statistic: Statistic
    baseline: float
    candidate: float
    difference: Interval  # candidate − baseline
    ratio: Interval | None  # candidate / baseline; None when the baseline's statistic is 0
    resamples: int
    seed: int


def bootstrap(a: Sequence[float], b: Sequence[float], statistic: Statistic = "mean", confidence: float = 0.95,
              resamples: int = RESAMPLES, seed: int = SEED) -> Bootstrap:
    """Percentile bootstrap of ``stat(b) − stat(a)`` and ``stat(b) / stat(a)``: ``a`` and
    ``b`` resampled independently (each at its own size) ``resamples`` times."""
    _check_confidence(confidence)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size == 0 or xb.size == 0:
        raise ValueError("bootstrap of an empty sample")
    fn = np.mean if statistic == "mean" else np.median
    rng = np.random.default_rng(seed)
    sa, sb = _resampled(xa, fn, rng, resamples), _resampled(xb, fn, rng, resamples)
    q = [50 * (1 - confidence), 50 * (1 + confidence)]
    est_a, est_b = float(fn(xa)), float(fn(xb))
    dlo, dhi = np.percentile(sb - sa, q)
    ratio = None
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        ratios = sb / sa
    if est_a != 0 and np.all(np.isfinite(ratios)):  # else no ratio: a baseline resample's statistic was 0
        rlo, rhi = np.percentile(ratios, q)
        ratio = Interval(est_b / est_a, float(rlo), float(rhi), confidence)
    return Bootstrap(statistic, est_a, est_b, Interval(est_b - est_a, float(dlo), float(dhi), confidence), ratio,
                     resamples, seed)


def _resampled(x: np.ndarray, fn: object, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The statistic of ``resamples`` resamples of ``x``, drawn in blocks (bounded memory)."""
    out = np.empty(resamples)
    block = max(1, 2_000_000 // x.size)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, x.size, size=(stop - start, x.size))
        out[start:stop] = fn(x[idx], axis=1)  # type: ignore[operator]
    return out


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def _check_counts(passed: int, total: int) -> None:
    if total < 1 or not 0 <= passed <= total:
        raise ValueError(f"need 0 <= passed <= total and total >= 1, got {passed} of {total}")


def _total(passed: int, total: int) -> int:
    _check_counts(passed, total)
    return total
