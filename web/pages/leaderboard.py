"""``/leaderboard`` (and ``/api/leaderboard``): the agents ranked by their telemetry over a
window, or (``tab=models``) each model's standing run per machine, benchmark evidence."""

from __future__ import annotations

from typing import Any

from otelbench.storage.queries import web_models
from otelbench.web.errors import choice
from otelbench.web.pages import EVIDENCE, TELEMETRY, models
from otelbench.web.site import WINDOWS, Site

TABS = ("agents", "models")
SORTS = {"runs": "runs", "success": "success_rate", "score": "score", "cost": "cost_per_run", "latency": "p50_ms"}
MIN_RUNS_RANKED = 5  # agents with fewer runs are listed, not ranked by a rate


def leaderboard(site: Site, params: Any) -> dict[str, Any]:
    """The tab ``params`` asks for: ``agents`` (the default) or ``models``."""
    if choice(params, "tab", TABS, "agents") == "models":
        return model_board(site, params)
    return {"tab": "agents", "evidence": TELEMETRY, **agent_board(site, params)}


def agent_board(site: Site, params: Any) -> dict[str, Any]:
    """Every visible agent's figures over ``window``, ranked by ``sort``; agents with fewer
    than ``MIN_RUNS_RANKED`` runs (or without the figure) are listed apart by name."""
    window = choice(params, "window", WINDOWS, "7d")
    sort = choice(params, "sort", SORTS, "runs")
    agents = [dict(a) for a in site.figures(window).values()]
    key = SORTS[sort]
    ranked = [a for a in agents if sort == "runs" or (a["runs"] >= MIN_RUNS_RANKED and a[key] is not None)]
    ranked.sort(key=lambda a: (a[key] if sort not in ("cost", "latency") else -a[key], a["agent"]), reverse=True)
    unranked = sorted((a for a in agents if a not in ranked), key=lambda a: a["agent"])
    return {"window": window, "sort": sort, "min_runs_ranked": MIN_RUNS_RANKED, "agents": ranked,
            "unranked": unranked, "as_of": site.figures_as_of(window)}


def model_board(site: Site, params: Any) -> dict[str, Any]:
    """Each model's standing run per machine (storage/queries/web_models.py), ranked by ``sort``."""
    sort = choice(params, "sort", models.SORTS, "decode")
    ranked, unranked = models.rank(models.runs(site, web_models.LEADERBOARD), sort)
    return {"tab": "models", "evidence": EVIDENCE, "sort": sort, "models": ranked, "unranked": unranked}
