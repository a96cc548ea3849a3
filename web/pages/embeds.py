"""What other pages show of one agent: its embed (``/embed/{name}``), its badge
(``/badge/{name}.svg``), its share image's figures (``/og/{name}.png``) and the signed
links that let a page without the key show a private agent's (``/api/links/{name}``);
and the latest ``otelbench gate`` verdict about an agent or a suite, as a badge
(``/gate/agent/{name}.svg``, ``/gate/suite/{suite}.svg``).
The route draws them (web/badge.py, web/share.py); an unknown or private agent is
NotFound here (a badge says "not found" instead: it is an image)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from otelbench.storage.queries import gate_verdicts
from otelbench.web import series
from otelbench.web.access import MAX_LINK_TTL_S, Access
from otelbench.web.badge import BADGE_METRICS, badge_value, gate_badge_value
from otelbench.web.errors import BadRequest, NotFound, choice
from otelbench.web.pages.agent import agent
from otelbench.web.share import CardFigures
from otelbench.web.site import Site

SIZES = ("sm", "md", "lg")
THEMES = ("light", "dark")
SHARE_BARS = 30  # bars behind the share image's sparkline


def embed(site: Site, name: str, params: Any) -> dict[str, Any]:
    """The embed's figures and clusters (no runs), its ``size`` and ``theme``."""
    size = choice(params, "size", SIZES, "md")
    theme = choice(params, "theme", THEMES, "light")
    return {"data": agent(site, name, recent=False), "size": size, "theme": theme}


def badge(site: Site, name: str, params: Any) -> tuple[str, str, str]:
    """(label, value, colour) of the badge of ``metric``; "agent: not found" for an
    unknown or private agent."""
    metric = choice(params, "metric", BADGE_METRICS, "success")
    figures = site.figures("all").get(name)
    return badge_value(figures, metric) if figures else ("agent", "not found", "none")


def gate_badge(site: Site, of: str, name: str) -> tuple[str, str, str]:
    """(label, value, colour) of the latest gate verdict about agent or suite ``name``
    (``of``) this reader may see; "gate: no verdict" when there is none."""
    sql = gate_verdicts.LATEST_OF_AGENT if of == "agent" else gate_verdicts.LATEST_OF_SUITE
    rows = site.rows(sql, name=name)
    return gate_badge_value(rows[0]["verdict"] if rows else None)


def card_figures(site: Site, name: str) -> CardFigures:
    """The share image's figures; NotFound for an unknown or private agent."""
    a = site.figures("all").get(name)
    if a is None:
        raise NotFound(f"no agent named {name!r}")
    unit, periods = series.over_time(site.agent_series(name)["hours"], max_bars=SHARE_BARS)
    return CardFigures(name, a["runs"], a["success_rate"], a["score"], a["p50_ms"], unit,
                       tuple(p.runs for p in periods))


def link_ttl(params: Any) -> int:
    """The seconds a signed link is asked to work (``ttl``, default an hour, at most a week)."""
    ttl = params.get("ttl", "3600")
    if not ttl.isdigit() or not 1 <= int(ttl) <= MAX_LINK_TTL_S:
        raise BadRequest(f"ttl must be 1 to {MAX_LINK_TTL_S} seconds, got {ttl!r}")
    return int(ttl)


def signed_links(site: Site, access: Access, key: str, name: str, ttl: int, base_url: str) -> dict[str, Any]:
    """Links to an agent's embed, badge and share image that work without ``key`` for
    ``ttl`` seconds (``link_ttl``): for a private agent this read key may see, put in
    another page."""
    if name not in site.figures("all"):
        raise NotFound(f"no agent named {name!r}")
    query = urlencode(access.sign(key, name, ttl))
    base, path = base_url.rstrip("/"), quote(name, safe="")
    return {"agent": name, "expires_in_s": ttl, "embed": f"{base}/embed/{path}?{query}",
            "badge": f"{base}/badge/{path}.svg?{query}", "image": f"{base}/og/{path}.png?{query}"}
