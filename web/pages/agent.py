"""``/agents/{name}`` (and ``/api/agents/{name}[/insights]``): an agent's figures, latest
runs and failure clusters, and beyond them its latency histogram, runs and failures over
time, cost by source, each cluster's trend and example runs, and the links and snippets
to share it (badge, embed, share image). The page draws it with ``web.charts``.

Everything here answers through ``Site`` (its privacy rules, its one gateway) from the
statements of ``storage/queries/web.py``; a ``hide_io`` agent's runs come without their
input and output, its clusters without descriptions. Its "Benchmark evidence" (the
agent's suite results, web/pages/suites.py: figures only) is kept apart from its telemetry.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from otelbench.storage.queries import web as q
from otelbench.web import charts, series
from otelbench.web.badge import BADGE_METRICS
from otelbench.web.cost import agent_cost, source_label
from otelbench.web.errors import NotFound
from otelbench.web.pages import suites
from otelbench.web.site import Site

CLUSTER_TREND_BARS = 14  # bars in a cluster's small trend chart
EMBED_SIZES = {"sm": (220, 90), "md": (280, 140), "lg": (340, 200)}  # iframe width, height (px)


def agent(site: Site, name: str, *, recent: bool = True) -> dict[str, Any]:
    """An agent's figures, clusters and (``recent``) latest runs; NotFound for an unknown
    or private agent. Without its runs (a badge, an embed, a comparison, the live feed) it
    answers from what ``Site`` keeps per rollup version alone, no statement."""
    figures = site.figures("all").get(name)
    if figures is None:
        raise NotFound(f"no agent named {name!r}")
    recent_runs = _recent(site, name, 20, failed_only=False) if recent else []
    found = site.agent_clusters(name)["clusters"]
    hidden = site.io_hidden(name)
    if hidden:  # descriptions and terms quote the failures
        for c in found:
            c["description"], c["top_terms"] = None, []
    return {"agent": dict(figures), "recent_runs": recent_runs, "clusters": found, "io_hidden": hidden}


def recent_failures(site: Site, name: str, limit: int) -> list[dict[str, Any]]:
    """An agent's latest failed runs, newest first; NotFound for an unknown or private agent."""
    if name not in site.figures("all"):
        raise NotFound(f"no agent named {name!r}")
    return _recent(site, name, limit, failed_only=True)


def _recent(site: Site, name: str, limit: int, *, failed_only: bool) -> list[dict[str, Any]]:
    found = site.rows(q.RECENT_RUNS, agent=name, limit=limit, failed_only=failed_only)
    for r in found:
        if site.io_hidden(name, r.pop("owner")):
            r["input"] = r["output"] = None
    return found


def insights(site: Site, name: str) -> dict[str, Any]:
    """``/api/agents/{name}/insights``: the agent's failure clusters."""
    data = agent(site, name, recent=False)
    return {"agent": data["agent"]["agent"], "clusters": data["clusters"]}


def profile(site: Site, name: str, base_url: str) -> dict[str, Any]:
    """Everything ``/agents/{name}`` shows; NotFound for an unknown or private agent.
    Kept per rollup version (``Site.cached``): shared, not to be changed."""
    return site.cached(("profile", name, base_url), lambda: _profile(site, name, base_url))


def _profile(site: Site, name: str, base_url: str) -> dict[str, Any]:
    data = agent(site, name)
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
        # apart from the telemetry above: what the agent did on fixed tasks (web/pages/suites.py)
        "benchmarks": suites.for_agent(site, name),
    }


def clusters(site: Site, name: str, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's clusters (``found``, as ``agent`` gives them, hide_io applied), each
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
    return escape(value, quote=True)


def profile_charts(data: dict[str, Any]) -> dict[str, Any]:
    """The profile's charts as SVG (``web.charts``: every text escaped), from ``profile``'s
    data: ``latency``, ``over_time`` and one ``trend`` per cluster id."""
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
