"""The 95 % interval of an agent's mean judge score: Student's t over its judged runs.

The leaderboard's figures are one GROUP BY over the runs rollup (storage/queries/web.py),
which gives each agent's judged runs n, their mean and their sample SD; the t-interval
needs nothing more, where a bootstrap (bench_runner/gate_stats.py, for the gate's window
comparisons) would need every run's score per agent and window. Each run's score already
carries the judge's own noise, so the spread over runs holds it: the interval needs no
term of its own for the judge (docs/judge.md, "Judge noise").
"""

from __future__ import annotations

import math
from typing import Any

CONFIDENCE = 0.95


def mean_interval(mean: float | None, sd: float | None, n: int,
                  confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """``mean ± t(n − 1) · sd / √n``, kept within the scores' range [0, 1]; None below
    two runs (no spread to read)."""
    if mean is None or sd is None or n < 2:
        return None
    from scipy import stats  # loaded on the first figures, not with the web app

    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return max(0.0, mean - half), min(1.0, mean + half)


def with_score_interval(figures: dict[str, Any]) -> dict[str, Any]:
    """An agent's figures (``score``, ``score_sd``, ``judged``) with ``score_low`` and
    ``score_high``: the mean score's 95 % interval (None when there is none)."""
    found = mean_interval(figures.get("score"), figures.get("score_sd"), int(figures.get("judged") or 0))
    figures["score_low"], figures["score_high"] = found if found else (None, None)
    return figures
