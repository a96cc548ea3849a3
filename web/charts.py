"""Charts as SVG made on the server: pure functions from numbers to an SVG string.

Each chart has a fixed ``viewBox`` and scales to the width of its container; a
``<title>`` and ``<desc>`` (and a ``<title>`` per bar, which browsers show on hover)
make it readable without JavaScript and by screen readers. There is no script and no
external reference, and every text is escaped: titles carry agent names, which are span
content, and span content is hostile.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from otelbench.web.series import Bucket, Period

BLUE, RED, GREY, INK = "#007ec6", "#e05d44", "#ccc", "#555"
FONT = 'font-family="system-ui,sans-serif" font-size="11" fill="#555"'
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # not allowed in XML, even escaped
_DATE_FORMATS = {"hour": "%Y-%m-%d %H:00", "day": "%Y-%m-%d", "week": "%Y-%m-%d", "month": "%Y-%m"}


def text(value: object) -> str:
    """Any value as SVG text: escaped, XML-safe."""
    return escape(_CONTROL.sub("\ufffd", str(value)), quote=True)


def duration(ms: float) -> str:
    """A latency as people read it: 40 ms, 1.8 s, 4.2 min."""
    if ms < 1:
        return f"{ms:.2g} ms"
    if ms < 1000:
        return f"{ms:.3g} ms"
    if ms < 60_000:
        return f"{ms / 1000:.3g} s"
    return f"{ms / 60_000:.3g} min"


def _svg(width: int, height: int, title: str, desc: str, body: str, kind: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" viewBox="0 0 {width} {height}" '
            f'width="100%" preserveAspectRatio="xMidYMid meet" role="img" aria-label="{text(title)}">'
            f"<title>{text(title)}</title><desc>{text(desc)}</desc>{body}</svg>")


def _label(x: float, y: float, value: object, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT}{extra}>{text(value)}</text>'


def _every(n: int, most: int) -> int:
    """Label every k-th of n ticks so that at most ``most`` labels are drawn."""
    return max(1, -(-n // most))


# The frame the two big charts share: plot area, axes, axis labels.
W, H = 600, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 10, 12, 48
MAX_BAR_W = 60  # a few bars stay bars, not a wall


def _axes(y_max: int | str, x_label: str, y_label: str) -> str:
    x0, y0, x1 = LEFT, H - BOTTOM, W - RIGHT
    return (f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="{INK}"/>'
            f'<line x1="{x0}" y1="{TOP}" x2="{x0}" y2="{y0}" stroke="{INK}"/>'
            + _label(x0 - 4, y0 + 4, 0, "end") + _label(x0 - 4, TOP + 8, y_max, "end")
            + _label((x0 + x1) / 2, H - 6, x_label)
            + _label(12, (TOP + y0) / 2, y_label, extra=f' transform="rotate(-90 12 {(TOP + y0) / 2:.1f})"'))


def _empty(title: str, desc: str, kind: str, x_label: str, y_label: str) -> str:
    return _svg(W, H, title, desc, _axes(0, x_label, y_label) + _label(W / 2, H / 2 - 10, "no data yet"), kind)


def histogram(buckets: Sequence[Bucket], *, title: str, unit_label: str = "runs") -> str:
    """A latency histogram over log-spaced buckets: equal-width bars (equal on a log axis),
    heights proportional to counts, edges labelled as durations."""
    x_label, total = "latency (log scale)", sum(b.count for b in buckets)
    if not buckets:
        return _empty(title, f"no {unit_label} with a latency", "histogram", x_label, unit_label)
    top = max(b.count for b in buckets) or 1
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    bar_w = min(plot_w / len(buckets), MAX_BAR_W)
    body, step = [], _every(len(buckets) + 1, 8)
    for i, b in enumerate(buckets):
        h = plot_h * b.count / top
        x = LEFT + i * bar_w
        body.append(f'<rect class="bar" x="{x + 1:.1f}" y="{TOP + plot_h - h:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                    f'height="{h:.1f}" fill="{BLUE}"><title>{text(duration(b.lower))} – {text(duration(b.upper))}: '
                    f"{b.count} {text(unit_label)}</title></rect>")
        if i % step == 0:
            body.append(_label(x, H - BOTTOM + 14, duration(b.lower)))
    if len(buckets) % step == 0:
        body.append(_label(LEFT + len(buckets) * bar_w, H - BOTTOM + 14, duration(buckets[-1].upper)))
    desc = (f"{total} {unit_label} in {len(buckets)} log-spaced buckets from {duration(buckets[0].lower)} "
            f"to {duration(buckets[-1].upper)}; the largest holds {top}")
    return _svg(W, H, title, desc, _axes(top, x_label, unit_label) + "".join(body), "histogram")


def runs_over_time(periods: Sequence[Period], unit: str, *, title: str) -> str:
    """Runs per period as stacked bars: successful runs (blue) under failed ones (red)."""
    x_label, y_label = f"runs per {unit} (UTC)", "runs"
    if not periods:
        return _empty(title, "no runs", "over-time", x_label, y_label)
    top = max(p.runs for p in periods) or 1
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    bar_w, fmt = min(plot_w / len(periods), MAX_BAR_W), _DATE_FORMATS.get(unit, "%Y-%m-%d")
    body, step = [], _every(len(periods), 4)
    for i, p in enumerate(periods):
        x, ok = LEFT + i * bar_w, p.runs - p.failures
        h_ok, h_failed = plot_h * ok / top, plot_h * p.failures / top
        y_ok = TOP + plot_h - h_ok
        label = f"{p.start.strftime(fmt)}: {p.runs} runs, {p.failures} failed"
        body.append(f'<g class="period"><title>{text(label)}</title>'
                    f'<rect class="ok" x="{x + 1:.1f}" y="{y_ok:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                    f'height="{h_ok:.1f}" fill="{BLUE}"/>'
                    f'<rect class="failed" x="{x + 1:.1f}" y="{y_ok - h_failed:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                    f'height="{h_failed:.1f}" fill="{RED}"/></g>')
        if i % step == 0:
            body.append(_label(x + bar_w / 2, H - BOTTOM + 14, p.start.strftime(fmt)))
    legend = (f'<rect x="{W - 150}" y="{H - 22}" width="10" height="10" fill="{BLUE}"/>'
              + _label(W - 136, H - 13, "ok", "start")
              + f'<rect x="{W - 100}" y="{H - 22}" width="10" height="10" fill="{RED}"/>'
              + _label(W - 86, H - 13, "failed", "start"))
    runs, failed = sum(p.runs for p in periods), sum(p.failures for p in periods)
    desc = (f"{runs} runs, {failed} failed, per {unit} from {periods[0].start.strftime(fmt)} to "
            f"{periods[-1].start.strftime(fmt)}; at most {top} in one {unit}")
    return _svg(W, H, title, desc, _axes(top, x_label, y_label) + "".join(body) + legend, "over-time")


def sparkline(values: Sequence[float], *, title: str, width: int = 120, height: int = 24) -> str:
    """A line through ``values`` (oldest first), scaled to fill the box; no axes."""
    if not values:
        return _svg(width, height, title, "no data", "", "sparkline")
    lo, hi = min(values), max(values)
    span, pad = (hi - lo) or 1, 2
    step = (width - 2 * pad) / max(len(values) - 1, 1)
    points = " ".join(f"{pad + i * step:.1f},{height - pad - (v - lo) / span * (height - 2 * pad):.1f}"
                      for i, v in enumerate(values))
    desc = f"{len(values)} values from {values[0]:g} to {values[-1]:g} (lowest {lo:g}, highest {hi:g})"
    return _svg(width, height, title, desc,
                f'<polyline points="{points}" fill="none" stroke="{BLUE}" stroke-width="1.5"/>', "sparkline")


def trend(values: Sequence[int], *, title: str, width: int = 120, height: int = 24) -> str:
    """Small bars, one per period (a failure cluster's members over time): height
    proportional to the count, a grey tick where there were none."""
    if not values:
        return _svg(width, height, title, "no data", "", "trend")
    top = max(values) or 1
    bar_w = min(width / len(values), width / 8)
    bars = "".join(
        f'<rect class="bar" x="{i * bar_w:.1f}" y="{height - max(height * v / top, 1):.1f}" '
        f'width="{max(bar_w - 1, 0.5):.1f}" height="{max(height * v / top, 1):.1f}" fill="{RED if v else GREY}"/>'
        for i, v in enumerate(values))
    desc = f"{sum(values)} in {len(values)} periods, oldest first: {', '.join(str(v) for v in values)}"
    return _svg(width, height, title, desc, bars, "trend")


def goodput_curve(points: Sequence[tuple[float, float, float, bool]], *, title: str, unit: str) -> str:
    """A load sweep: per load step (``(load, throughput, goodput, holds)``, requests/s),
    throughput (grey) and goodput (blue) as lines over the steps, evenly spaced in load
    order; a step that misses its SLO is a red dot on the goodput line, one that holds a
    blue one."""
    x_label, y_label = f"load ({unit})", "requests/s"
    if not points:
        return _empty(title, "no load steps", "goodput", x_label, y_label)
    top = max(max(p[1], p[2]) for p in points) or 1.0
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    step_w = plot_w / len(points)

    def xy(i: int, value: float) -> tuple[float, float]:
        return LEFT + (i + 0.5) * step_w, TOP + plot_h - plot_h * value / top

    def line(k: int, colour: str, dash: str = "") -> str:
        pts = " ".join("{:.1f},{:.1f}".format(*xy(i, p[k])) for i, p in enumerate(points))
        return f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'

    body = [line(1, GREY, ' stroke-dasharray="4 3"'), line(2, BLUE)]
    for i, (load, through, good, holds) in enumerate(points):
        x, y = xy(i, good)
        tip = f"{load:g} {unit}: goodput {good:.3g}/s of {through:.3g}/s completed; {'holds' if holds else 'misses'} the SLO"
        body.append(f'<circle class="{"holds" if holds else "misses"}" cx="{x:.1f}" cy="{y:.1f}" r="4" '
                    f'fill="{BLUE if holds else RED}"><title>{text(tip)}</title></circle>')
        body.append(_label(x, H - BOTTOM + 14, f"{load:g}"))
    legend = (f'<line x1="{W - 230}" y1="{H - 17}" x2="{W - 214}" y2="{H - 17}" stroke="{GREY}" stroke-width="2" '
              f'stroke-dasharray="4 3"/>' + _label(W - 210, H - 13, "throughput", "start")
              + f'<line x1="{W - 140}" y1="{H - 17}" x2="{W - 124}" y2="{H - 17}" stroke="{BLUE}" stroke-width="2"/>'
              + _label(W - 120, H - 13, "goodput", "start")
              + f'<circle cx="{W - 66}" cy="{H - 17}" r="4" fill="{RED}"/>' + _label(W - 58, H - 13, "misses SLO", "start"))
    held = [p[0] for p in points if p[3]]
    desc = (f"{len(points)} load steps from {points[0][0]:g} to {points[-1][0]:g} {unit}; goodput from "
            f"{points[0][2]:.3g} to {points[-1][2]:.3g} requests/s; {len(held)} of them hold the SLO")
    return _svg(W, H, title, desc, _axes(f"{top:.3g}", x_label, y_label) + "".join(body) + legend, "goodput")

