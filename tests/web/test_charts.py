"""web.charts: what each SVG holds, read back with an XML parser (so every chart is also
well-formed): bar counts, heights proportional to the values, escaping, empty data."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

import pytest

from otelbench.web import charts
from otelbench.web.series import Bucket, Period

NS = {"s": "http://www.w3.org/2000/svg"}
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\u202e\x00\x1b'
T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("viewBox")
    assert root.find("s:title", NS) is not None and root.find("s:desc", NS) is not None
    assert not list(root.iter("{http://www.w3.org/2000/svg}script")) and "<script" not in svg
    assert "href" not in svg and "onload" not in svg  # no links, no handlers
    return root


def heights(root: ET.Element, cls: str) -> list[float]:
    return [float(r.get("height")) for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == cls]


def buckets(*counts: int) -> list[Bucket]:
    return [Bucket(10 ** (i / 4), 10 ** ((i + 1) / 4), c) for i, c in enumerate(counts, start=8)]


@pytest.mark.parametrize("counts", [(1,), (3, 0, 6), (5, 10, 2, 0, 0, 1, 8, 8, 3, 2, 1, 1, 1, 4)])
def test_histogram_bars_are_proportional_to_counts(counts: tuple[int, ...]) -> None:
    root = parse(charts.histogram(buckets(*counts), title="latency"))
    got = heights(root, "bar")
    assert len(got) == len(counts)
    tallest = max(got)
    assert tallest == pytest.approx(charts.H - charts.TOP - charts.BOTTOM)
    assert [h / tallest for h in got] == pytest.approx([c / max(counts) for c in counts], abs=1e-3)


def test_histogram_labels_its_axes_and_buckets_as_durations() -> None:
    svg = charts.histogram(buckets(2, 1), title="latency")  # 100 ms .. 316 ms
    texts = [e.text for e in parse(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert "latency (log scale)" in texts and "runs" in texts and "100 ms" in texts
    assert "100 ms – 178 ms: 2 runs" in svg


@pytest.mark.parametrize("ms, text", [(0.25, "0.25 ms"), (40, "40 ms"), (999, "999 ms"), (1830, "1.83 s"),
                                      (59_000, "59 s"), (252_000, "4.2 min")])
def test_durations_read_as_people_write_them(ms: float, text: str) -> None:
    assert charts.duration(ms) == text


@pytest.mark.parametrize("runs_failures", [[(4, 1)], [(4, 1), (0, 0), (10, 10), (6, 0)]])
def test_runs_over_time_stacks_failures_on_successes(runs_failures: list[tuple[int, int]]) -> None:
    periods = [Period(T0 + dt.timedelta(days=i), r, f) for i, (r, f) in enumerate(runs_failures)]
    root = parse(charts.runs_over_time(periods, "day", title="runs"))
    assert len([g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "period"]) == len(periods)
    plot = charts.H - charts.TOP - charts.BOTTOM
    top = max(r for r, _ in runs_failures)
    assert heights(root, "ok") == pytest.approx([plot * (r - f) / top for r, f in runs_failures], abs=0.06)
    assert heights(root, "failed") == pytest.approx([plot * f / top for _, f in runs_failures], abs=0.06)
    assert f"{T0:%Y-%m-%d}: {runs_failures[0][0]} runs, {runs_failures[0][1]} failed" in ET.tostring(root, "unicode")


@pytest.mark.parametrize("draw", [
    lambda title: charts.histogram([], title=title),
    lambda title: charts.runs_over_time([], "hour", title=title),
    lambda title: charts.sparkline([], title=title),
    lambda title: charts.trend([], title=title),
])
def test_empty_data_draws_an_empty_chart_that_says_so(draw) -> None:  # type: ignore[no-untyped-def]
    root = parse(draw("nothing"))
    assert not heights(root, "bar") and root.find("s:polyline", NS) is None
    assert "no data" in ET.tostring(root, "unicode")


@pytest.mark.parametrize("draw", [
    lambda title: charts.histogram(buckets(1, 2), title=title),
    lambda title: charts.runs_over_time([Period(T0, 2, 1)], "day", title=title),
    lambda title: charts.sparkline([1, 2], title=title),
    lambda title: charts.trend([0, 3], title=title),
    lambda title: charts.histogram([], title=title),
    lambda title: charts.goodput_curve([(1, 2, 1, True)], title=title, unit="req/s"),
])
def test_every_text_is_escaped(draw) -> None:  # type: ignore[no-untyped-def]
    svg = draw(HOSTILE)
    root = parse(svg)
    assert "<img" not in svg and "\x00" not in svg and "\x1b" not in svg
    assert root.find("s:title", NS).text == HOSTILE.replace("\x00", "\ufffd").replace("\x1b", "\ufffd")


@pytest.mark.parametrize("values", [[3], [1, 5, 2], [0, 0, 0, 0], list(range(30))])
def test_sparkline_has_a_point_per_value_highest_at_the_top(values: list[int]) -> None:
    root = parse(charts.sparkline(values, title="runs", width=120, height=24))
    points = [tuple(map(float, p.split(","))) for p in root.find("s:polyline", NS).get("points").split()]
    assert len(points) == len(values)
    assert [x for x, _ in points] == sorted(x for x, _ in points)
    if max(values) > min(values):
        assert points[values.index(max(values))][1] == pytest.approx(2)  # the padding
        assert points[values.index(min(values))][1] == pytest.approx(22)


def test_trend_bars_are_proportional_and_empty_periods_grey() -> None:
    root = parse(charts.trend([0, 2, 4], title="cluster", height=24))
    rects = [r for r in root.iter("{http://www.w3.org/2000/svg}rect")]
    assert [float(r.get("height")) for r in rects] == [1, 12, 24]  # a 1 px tick where there were none
    assert [r.get("fill") for r in rects] == [charts.GREY, charts.RED, charts.RED]


def test_goodput_curve_draws_both_lines_to_scale_and_marks_steps_that_miss() -> None:
    steps = [(0.5, 0.5, 0.5, True), (1, 1.0, 0.8, True), (2, 1.6, 0.4, False), (4, 1.2, 0.0, False)]
    root = parse(charts.goodput_curve(steps, title="sweep", unit="req/s"))
    through, good = [[tuple(map(float, p.split(","))) for p in line.get("points").split()]
                     for line in root.iter("{http://www.w3.org/2000/svg}polyline")]
    bottom, top = charts.H - charts.BOTTOM, charts.TOP  # the plot's y of 0 and of the largest value, 1.6
    for (load, t, g, _), (_, ty), (_, gy) in zip(steps, through, good):
        assert (bottom - ty) / (bottom - top) == pytest.approx(t / 1.6, abs=1e-3)
        assert (bottom - gy) / (bottom - top) == pytest.approx(g / 1.6, abs=1e-3)
    assert [x for x, _ in good] == sorted(x for x, _ in good)  # steps in load order, left to right
    dots = [c for c in root.iter("{http://www.w3.org/2000/svg}circle") if c.get("class")]
    assert [c.get("class") for c in dots] == ["holds", "holds", "misses", "misses"]
    assert [c.get("fill") for c in dots] == [charts.BLUE, charts.BLUE, charts.RED, charts.RED]
    assert "goodput 0.4/s of 1.6/s completed; misses the SLO" in dots[2].find("s:title", NS).text
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert {"0.5", "1", "2", "4", "1.6", "load (req/s)"} <= set(labels)


def test_goodput_curve_of_nothing_says_so() -> None:
    root = parse(charts.goodput_curve([], title="sweep", unit="clients"))
    assert root.find("s:polyline", NS) is None and "no data" in ET.tostring(root, "unicode")
