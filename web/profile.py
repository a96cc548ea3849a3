"""An agent's profile beyond its headline figures: latency histogram, runs and failures
over time, cost by source, failure clusters with their trend and example runs, and the
links and snippets to share it (badge, embed, share image). Plain data for the page and
its JSON twin; the page draws it with ``web.charts``.

Everything here answers through ``Site`` (its privacy rules, its one gateway) from the
statements of ``storage/queries/web.py``; nothing quotes a run's input or output, so a
``hide_io`` agent's profile adds nothing to hide. Its "Benchmark evidence" (the agent's
suite results, ``web.suites``: figures only) is kept apart from its telemetry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from web import series, suites
from web.cost import agent_cost, source_label
from web.site import BADGE_METRICS, NotFound, Site

CLUSTER_TREND_BARS = 14  # bars in a cluster's small trend chart
SHARE_BARS = 30  # bars behind the share image's sparkline
EMBED_SIZES = {"sm": (220, 90), "md": (280, 140), "lg": (340, 200)}  # iframe width, height (px)


def profile(site: Site, name: str, base_url: str) -> dict[str, Any]:
    """Everything ``/agents/{name}`` shows; NotFound for an unknown or private agent.
    Kept per rollup version (``Site.cached``): shared, not to be changed."""
    return site.cached(("profile", name, base_url), lambda: _profile(site, name, base_url))


def _profile(site: Site, name: str, base_url: str) -> dict[str, Any]:
    data = site.agent(name)
    figures = data["agent"]
    found = site.agent_series(name)
    unit, periods = series.over_time(found["hours"])
    for r in data["recent_runs"]:
        r["cost_source"] = source_label(r.pop("cost_sources"))
    return {
        **data,
        "clusters": clusters(site, name, data["clusters"]),
        "latency": {"per_decade": series.PER_DECADE, "p50_ms": figures["p50_ms"], "p95_ms": figures["p95_ms"],
                    "buckets": [vars(b).copy() for b in series.log_buckets(found["latency"])]},
        "over_time": {"unit": unit, "periods": [vars(p).copy() for p in periods]},
        "cost": agent_cost(found["cost"], figures["runs"], figures["costed"]),
        "share": share_links(base_url, name),
        # apart from the telemetry above: what the agent did on fixed tasks (web/suites.py)
        "benchmarks": suites.for_agent(site, name),
    }


def clusters(site: Site, name: str, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's clusters (``found``, as ``Site.agent`` gives them, hide_io applied), each
    with its members per period on one time axis shared by all (``trend``) and those of
    its example runs that may be shown (``examples``: trace id, time, status)."""
    if not found:
        return found
    kept = site.agent_clusters(name)
    hourly, shown = kept["trends"], kept["examples"]
    span = (min(r["hour"] for r in hourly), max(r["hour"] for r in hourly)) if hourly else None
    out = []
    for c in found:
        mine = [(r["hour"], r["runs"], 0) for r in hourly if r["cluster_id"] == c["cluster_id"]]
        unit, periods = series.over_time(mine, max_bars=CLUSTER_TREND_BARS, span=span) if span else ("day", [])
        examples = set(c["example_trace_ids"] or [])
        out.append({**c, "trend": {"unit": unit, "periods": [{"start": p.start, "runs": p.runs} for p in periods]},
                    "examples": [r for r in shown if r["trace_id"] in examples]})
    return out


def share_links(base_url: str, name: str) -> dict[str, Any]:
    """Absolute URLs of the profile, its share image, badges and embed, and the snippets
    to copy (Markdown for a badge, an ``<iframe>`` for the embed)."""
    base, path = base_url.rstrip("/"), quote(name, safe="")
    page = f"{base}/agents/{path}"
    badges = {m: f"{base}/badge/{path}.svg?metric={m}" for m in BADGE_METRICS}
    embeds = {}
    for size, (w, h) in EMBED_SIZES.items():
        src = f"{base}/embed/{path}?size={size}&theme=light"
        embeds[size] = (f'<iframe src="{_attr(src)}" width="{w}" height="{h}" style="border:0" loading="lazy" '
                        f'title="{_attr(name)} on otelbench"></iframe>')
    return {"page": page, "image": f"{base}/og/{path}.png", "badges": badges,
            "badge_markdown": {m: f"[![{m}]({url})]({page})" for m, url in badges.items()},
            "embed": embeds}


def _attr(value: str) -> str:
    from html import escape

    return escape(value, quote=True)


@dataclass(frozen=True)
class CardFigures:
    """What the share image draws; equal figures draw the same image (its cache key)."""

    agent: str
    runs: int
    success_rate: float | None
    score: float | None
    p50_ms: float | None
    unit: str
    series: tuple[int, ...]  # runs per unit, oldest first


def card_figures(site: Site, name: str) -> CardFigures:
    """The share image's figures; NotFound for an unknown or private agent."""
    a = site.figures("all").get(name)
    if a is None:
        raise NotFound(f"no agent named {name!r}")
    unit, periods = series.over_time(site.agent_series(name)["hours"], max_bars=SHARE_BARS)
    return CardFigures(name, a["runs"], a["success_rate"], a["score"], a["p50_ms"], unit,
                       tuple(p.runs for p in periods))


def profile_charts(data: dict[str, Any]) -> dict[str, Any]:
    """The profile's charts as SVG (``web.charts``: every text escaped), from ``profile``'s
    data: ``latency``, ``over_time`` and one ``trend`` per cluster id."""
    from web import charts

    name = data["agent"]["agent"]
    buckets = [series.Bucket(**b) for b in data["latency"]["buckets"]]
    periods = [series.Period(**p) for p in data["over_time"]["periods"]]
    unit = data["over_time"]["unit"]
    return {
        "latency": charts.histogram(buckets, title=f"Latency of {name}'s runs"),
        "over_time": charts.runs_over_time(periods, unit, title=f"Runs and failures of {name} per {unit}"),
        "trends": {c["cluster_id"]: charts.trend([p["runs"] for p in c["trend"]["periods"]],
                                                 title=f"Cluster {c['cluster_id']}: failed runs per "
                                                       f"{c['trend']['unit']}")
                   for c in data["clusters"]},
    }
