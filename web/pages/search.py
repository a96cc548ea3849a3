"""``/search`` (and ``/api/search``, MCP ``search_runs``): agent runs found by words of
their task or answer and by filters — agent, status, judge score, failure cluster, model,
time, cost, latency — sorted and paged, from the run search index (storage/run_search.py,
kept by the web's refresher: web/site.py).

Privacy is in the query: a run the reader may not see is never found, and a run whose
texts it may not see (``hide_io``) is never found by words (the index does not even hold
them) and is shown without its task and answer when other filters find it.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any
from urllib.parse import urlencode

from otelbench.storage.run_search import SORTS, Query, words
from otelbench.web.errors import BadRequest, choice, integer, number
from otelbench.web.pages import TELEMETRY
from otelbench.web.site import WINDOWS, Site

PER_PAGE = 20
MAX_PER_PAGE = 100
MAX_RESULTS = 10_000  # pages reach this far into the results (page × per_page)
MAX_WORDS = 16
STATUSES = ("ok", "error")
NUMBERS = ("min_score", "max_score", "min_cost", "max_cost", "min_ms", "max_ms")


def search(site: Site, params: Any) -> dict[str, Any]:
    """The runs matching ``params`` (query parameters, or an MCP tool's arguments), one page."""
    text = (params.get("q") or "").strip()
    found_words = tuple(dict.fromkeys(words(text)))
    if len(found_words) > MAX_WORDS:
        raise BadRequest(f"q: at most {MAX_WORDS} words, got {len(found_words)}")
    agent = params.get("agent") or None
    status = params.get("status") or None
    if status is not None and status not in STATUSES:
        raise BadRequest(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    window = choice(params, "window", WINDOWS, "all")
    sort = choice(params, "sort", SORTS, "relevance" if found_words else "newest")
    numbers = {name: number(params, name) for name in NUMBERS}
    since, until = _instant(params, "since"), _instant(params, "until")
    now = dt.datetime.now(dt.timezone.utc)
    if WINDOWS[window] is not None:
        start = now - dt.timedelta(hours=WINDOWS[window])
        since = start if since is None else max(since, start)
    page = integer(params, "page", 1, 1, None)
    per_page = integer(params, "per_page", PER_PAGE, 1, MAX_PER_PAGE)
    if page * per_page > MAX_RESULTS:
        raise BadRequest(f"page: results reach {MAX_RESULTS:,} deep (page × per_page), got {page * per_page:,}")
    cluster = params.get("cluster")
    cluster = None if cluster in (None, "") else cluster  # 0 is a cluster
    trace_ids = None
    if cluster is not None:
        if agent is None:
            raise BadRequest("cluster: a failure cluster is an agent's; give agent too")
        trace_ids = tuple(site.cluster_runs(agent, integer(params, "cluster", 0, 0, None)))
    p = site.privacy
    found = site.search_runs(Query(
        words=found_words, agent=agent, status=status, model=params.get("model") or None, since=since, until=until,
        trace_ids=trace_ids, sort=sort, limit=per_page, offset=(page - 1) * per_page,
        private_agents=p.private_agents, private_owners=p.private_owners, hidden_agents=p.hide_io_agents,
        hidden_owners=p.hide_io_owners, **numbers))
    runs = []
    for r in found.runs:
        hidden = site.io_hidden(r["agent"], r.pop("owner"))
        runs.append({**r, "io_hidden": hidden, **({"task": None, "answer": None} if hidden else {})})
    filters = {"q": text, "agent": agent, "status": status, "model": params.get("model") or None,
               "cluster": cluster, "window": window, "since": since, "until": until, **numbers}
    pages = max(1, math.ceil(min(found.total, MAX_RESULTS) / per_page))
    asked = {k: str(params.get(k)) for k in ("q", "agent", "status", "model", "cluster", "window", "since",
                                             "until", *NUMBERS, "sort", "per_page") if params.get(k) not in (None, "")}
    links = {"prev": _link(asked, page - 1) if page > 1 else None,
             "next": _link(asked, page + 1) if page < pages else None}
    return {"evidence": TELEMETRY, "filters": filters, "words": list(found_words), "sort": sort,
            "sorts": list(SORTS), "page": page, "per_page": per_page, "total": found.total, "pages": pages,
            "runs": runs, "links": links,
            "index": {"rollup_version": found.rollup_version, "updated_at": found.updated_at}}


def _link(asked: dict[str, str], page: int) -> str:
    return "/search?" + urlencode({**asked, "page": page})


def _instant(params: Any, name: str) -> dt.datetime | None:
    """An ISO date or time (UTC unless it says otherwise)."""
    value = params.get(name)
    if value in (None, ""):
        return None
    try:
        found = dt.datetime.fromisoformat(str(value))
    except ValueError:
        raise BadRequest(f"{name} must be an ISO date or time (2026-01-31, 2026-01-31T12:00Z), got {value!r}") from None
    return found if found.tzinfo else found.replace(tzinfo=dt.timezone.utc)
