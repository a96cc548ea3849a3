"""What an agent's runs cost, and where each figure comes from.

Every llm call's cost has a source (``spans.cost_source``, docs/schema.md): ``reported``
(the client sent it) or ``computed`` (otelbench priced its tokens). A run's cost is the
sum over its calls and may mix both, so an agent's cost is shown as both sums, each
labelled, and the total says ``mixed`` when it adds the two. Pure functions over the rows
of ``storage.queries.web.AGENT_COST`` and ``RUN_COST_SOURCES``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

SOURCES = ("reported", "computed")


def source_label(sources: Iterable[str | None]) -> str | None:
    """``reported``, ``computed``, ``mixed`` (both) or None (no cost), of the sources of a
    set of calls; a cost without a source counts as neither."""
    found = {s for s in sources if s in SOURCES}
    if not found:
        return None
    return found.pop() if len(found) == 1 else "mixed"


def agent_cost(rows: Iterable[Mapping[str, Any]], runs: int, costed: int) -> dict[str, Any]:
    """An agent's cost from ``(source, total_usd, calls, runs)`` rows, one per cost source:
    the total and the cost per run (over all ``runs``, as the leaderboard's), labelled, and
    the same per source; ``mixed_runs``: runs whose calls had both (``costed``: runs with
    any cost)."""
    by_source = {r["source"]: r for r in rows}
    parts = {}
    for source in SOURCES:
        r = by_source.get(source) or {"total_usd": None, "calls": 0, "runs": 0}
        total = r["total_usd"]
        parts[source] = {"total_usd": total, "per_run_usd": None if total is None or not runs else total / runs,
                         "calls": int(r["calls"]), "runs": int(r["runs"])}
    totals = [r["total_usd"] for r in by_source.values() if r["total_usd"] is not None]
    total = sum(totals) if totals else None
    return {"total_usd": total, "per_run_usd": None if total is None or not runs else total / runs,
            "source": source_label(s for s, r in by_source.items() if r["total_usd"] is not None),
            **parts, "mixed_runs": max(parts["reported"]["runs"] + parts["computed"]["runs"] - costed, 0)}
