"""What the charts plot, from the rows the queries return: pure functions, no I/O.

- Latencies span decades (a cached answer in 40 ms, a tool loop in 4 minutes), so their
  histogram has log-spaced buckets: bucket ``i`` holds ``[10^(i/k), 10^((i+1)/k))`` ms,
  ``k = PER_DECADE``; the SQL returns ``i`` and a count, this fills the gaps between.
- Runs over time come from the SQL as hourly counts (what a rollup keeps, too); here they
  are regrouped into the smallest of hour, day, week or month that fits ``max_bars``
  bars, with empty periods filled in, so a quiet day shows as a gap and not as nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PER_DECADE = 4  # buckets per power of ten: each 1.78x wider than the last
MIN_LATENCY_MS = 0.01  # shorter (or zero) durations fall into the first bucket
UNITS = ("hour", "day", "week", "month")
MAX_BARS = 48  # runs over time: the most bars before the next unit up is used


@dataclass(frozen=True)
class Bucket:
    """One bar of a histogram: ``count`` values in ``[lower, upper)``."""

    lower: float
    upper: float
    count: int


@dataclass(frozen=True)
class Period:
    """One bar over time: what started in ``[start, start + one unit)``."""

    start: dt.datetime
    runs: int
    failures: int = 0


def log_bucket(value_ms: float, per_decade: int = PER_DECADE) -> int:
    """The bucket a latency falls in (the SQL's rule, for tests and one-off values)."""
    import math

    return math.floor(math.log10(max(value_ms, MIN_LATENCY_MS)) * per_decade)


def log_buckets(counts: Mapping[int, int], per_decade: int = PER_DECADE) -> list[Bucket]:
    """The histogram's bars from ``{bucket index: count}``, from the lowest index with a
    count to the highest, empty buckets between included."""
    if not counts:
        return []
    lo, hi = min(counts), max(counts)
    return [Bucket(10 ** (i / per_decade), 10 ** ((i + 1) / per_decade), int(counts.get(i, 0)))
            for i in range(lo, hi + 1)]


def truncate(t: dt.datetime, unit: str) -> dt.datetime:
    """The start of the period of ``unit`` holding ``t`` (weeks start on Monday)."""
    t = t.replace(minute=0, second=0, microsecond=0)
    if unit == "hour":
        return t
    t = t.replace(hour=0)
    if unit == "day":
        return t
    if unit == "week":
        return t - dt.timedelta(days=t.weekday())
    return t.replace(day=1)


def following(t: dt.datetime, unit: str) -> dt.datetime:
    """The start of the period after the one starting at ``t``."""
    if unit == "month":
        return t.replace(year=t.year + t.month // 12, month=t.month % 12 + 1)
    return t + {"hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1), "week": dt.timedelta(weeks=1)}[unit]


def periods_between(first: dt.datetime, last: dt.datetime, unit: str) -> list[dt.datetime]:
    starts, t = [], truncate(first, unit)
    while t <= last:
        starts.append(t)
        t = following(t, unit)
    return starts


def unit_for(first: dt.datetime, last: dt.datetime, max_bars: int = MAX_BARS) -> str:
    """The smallest unit that shows ``first .. last`` in at most ``max_bars`` bars (months
    when none does)."""
    for unit in UNITS[:-1]:
        t, n = truncate(first, unit), 0
        while t <= last and n <= max_bars:
            t, n = following(t, unit), n + 1
        if n <= max_bars:
            return unit
    return "month"


def over_time(hourly: Iterable[tuple[dt.datetime, int, int]], *, max_bars: int = MAX_BARS,
              span: tuple[dt.datetime, dt.datetime] | None = None) -> tuple[str, list[Period]]:
    """``(unit, periods)`` from ``(hour, runs, failures)`` rows: every period of the unit
    between the first and the last hour (or over ``span``, to share one time axis between
    several series), empty ones with zero runs."""
    rows = list(hourly)
    if span is None:
        if not rows:
            return "hour", []
        span = (min(r[0] for r in rows), max(r[0] for r in rows))
    unit = unit_for(*span, max_bars=max_bars)
    totals: dict[dt.datetime, list[int]] = {t: [0, 0] for t in periods_between(*span, unit)}
    for hour, runs, failures in rows:
        bar = totals.get(truncate(hour, unit))
        if bar is not None:  # outside the span: not drawn
            bar[0] += int(runs)
            bar[1] += int(failures or 0)
    return unit, [Period(t, runs, failures) for t, (runs, failures) in totals.items()]
