"""``/`` (and ``/api/home``): what this instance holds, how to point an OpenTelemetry SDK
at its collector (web/receivers.py), the latest runs and the leaderboard's default tab."""

from __future__ import annotations

from typing import Any

from otelbench.storage.queries import web as q
from otelbench.web.receivers import Receivers, sdk_setup
from otelbench.web.pages.leaderboard import agent_board
from otelbench.web.site import Site

RECENT_RUNS = 15


def home(site: Site, receivers: Receivers, visitor_host: str, params: Any) -> dict[str, Any]:
    """Counts over visible runs only, the latest visible runs with no input or output
    (whatever an agent's ``hide_io``), and the agents' board as ``params`` ask."""
    return {**overview(site, receivers, visitor_host), "board": agent_board(site, params)}


def overview(site: Site, receivers: Receivers, visitor_host: str) -> dict[str, Any]:
    return {"instance": site.rows(q.INSTANCE)[0], "setup": sdk_setup(receivers, visitor_host),
            "recent_runs": site.rows(q.RECENT_ACTIVITY, limit=RECENT_RUNS)}
