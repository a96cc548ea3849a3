"""``/doctor`` (and ``/api/doctor``, the MCP tool ``get_instrumentation_report``): what
each service's instrumentation sends and leaves out, with the fix (web/doctor_report.py builds
the report), as the reader may see it."""

from __future__ import annotations

from typing import Any

from otelbench.web.doctor_report import DEFAULT_WINDOW, BadWindow, read
from otelbench.web.errors import BadRequest, NotFound
from otelbench.web.site import Site


def doctor(site: Site, params: Any) -> dict[str, Any]:
    """The report for ``since`` (default 7d), ``service`` and ``agent`` from ``params``;
    through ``site.rows``, so what the reader may not see (web/access.py) is left out, and
    a private or unknown agent is not found."""
    agent = params.get("agent") or None
    if agent is not None and agent not in site.figures("all"):
        raise NotFound(f"no agent named {agent!r}")
    try:
        return read(site.lake_root, site.rows, params.get("since") or DEFAULT_WINDOW,
                    service=params.get("service") or None, agent=agent)
    except BadWindow as exc:
        raise BadRequest(str(exc)) from exc
