"""web.series: latency buckets and runs over time, as tables of input → expected."""

from __future__ import annotations

import datetime as dt

import pytest

from otelbench.web.series import Bucket, Period, following, log_bucket, log_buckets, over_time, truncate, unit_for

UTC = dt.timezone.utc


def t(day: int, hour: int = 0, month: int = 3, year: int = 2026) -> dt.datetime:
    return dt.datetime(year, month, day, hour, tzinfo=UTC)


@pytest.mark.parametrize("ms, bucket", [
    (1.0, 0), (1.77, 0), (1.78, 1), (10.0, 4), (99.9, 7), (100.0, 8), (1500.0, 12), (0.5, -2),
    (0.0, -8), (-3.0, -8),  # zero and nonsense fall into the first bucket (0.01 ms)
])
def test_log_bucket(ms: float, bucket: int) -> None:
    assert log_bucket(ms) == bucket


def test_log_buckets_fill_the_gaps_and_carry_their_edges() -> None:
    got = log_buckets({4: 3, 7: 1})
    assert [b.count for b in got] == [3, 0, 0, 1]
    assert got[0] == Bucket(pytest.approx(10.0), pytest.approx(10 ** 1.25), 3)
    assert got[-1].upper == pytest.approx(100.0)
    assert all(a.upper == pytest.approx(b.lower) for a, b in zip(got, got[1:]))
    assert log_buckets({}) == []


@pytest.mark.parametrize("when, unit, start", [
    (dt.datetime(2026, 3, 11, 14, 35, 9, tzinfo=UTC), "hour", t(11, 14)),
    (dt.datetime(2026, 3, 11, 14, 35, tzinfo=UTC), "day", t(11)),
    (dt.datetime(2026, 3, 11, 14, 35, tzinfo=UTC), "week", t(9)),  # a Wednesday → Monday the 9th
    (dt.datetime(2026, 3, 9, 0, 0, tzinfo=UTC), "week", t(9)),
    (dt.datetime(2026, 3, 31, 23, 59, tzinfo=UTC), "month", t(1)),
])
def test_truncate(when: dt.datetime, unit: str, start: dt.datetime) -> None:
    assert truncate(when, unit) == start


@pytest.mark.parametrize("start, unit, after", [
    (t(11, 23), "hour", t(12, 0)), (t(31), "day", t(1, month=4)), (t(30), "week", t(6, month=4)),
    (t(1, month=12), "month", t(1, month=1, year=2027)), (t(1, month=1), "month", t(1, month=2)),
])
def test_following(start: dt.datetime, unit: str, after: dt.datetime) -> None:
    assert following(start, unit) == after


@pytest.mark.parametrize("first, last, max_bars, unit", [
    (t(1), t(1), 48, "hour"),
    (t(1), t(2, 23), 48, "hour"),  # 48 hours exactly
    (t(1), t(3), 48, "day"),  # 49 hours
    (t(1), t(30), 48, "day"),
    (t(1), t(1, month=6), 48, "week"),
    (t(1, year=2024), t(1, year=2026), 48, "month"),
    (t(1), t(15), 14, "week"),  # a cluster's small trend
])
def test_unit_for(first: dt.datetime, last: dt.datetime, max_bars: int, unit: str) -> None:
    assert unit_for(first, last, max_bars) == unit


def test_over_time_regroups_hours_and_fills_empty_periods() -> None:
    hourly = [(t(1, 3), 2, 1), (t(1, 20), 1, 0), (t(4, 5), 5, 2)]
    unit, periods = over_time(hourly)
    assert unit == "day"
    assert periods == [Period(t(1), 3, 1), Period(t(2), 0, 0), Period(t(3), 0, 0), Period(t(4), 5, 2)]
    assert sum(p.runs for p in periods) == 8  # nothing lost or counted twice


def test_over_time_by_hour_and_empty() -> None:
    assert over_time([(t(1, 3), 2, 0), (t(1, 5), 1, 1)]) == (
        "hour", [Period(t(1, 3), 2, 0), Period(t(1, 4), 0, 0), Period(t(1, 5), 1, 1)])
    assert over_time([]) == ("hour", [])


def test_over_time_on_a_shared_span_drops_what_falls_outside() -> None:
    unit, periods = over_time([(t(2, 1), 4, 0), (t(9), 7, 0)], max_bars=14, span=(t(1), t(5)))
    assert unit == "day" and [p.start for p in periods] == [t(d) for d in range(1, 6)]
    assert [p.runs for p in periods] == [0, 4, 0, 0, 0]
