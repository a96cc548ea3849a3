"""What every agent's profile shares, computed for all agents at once, once per rollup
version (``web.site.Site.per_version``): runs per hour, latency buckets and cost by source
(``storage.queries.web.AGENTS_SERIES``), failure clusters with their trends, example runs
and members. A profile seen for the first time then costs one statement (its recent runs)
instead of eight.

Kept as Arrow tables sorted by agent (``ByAgent``), sliced per request: a few MB for
200 agents' hourly series, where Python rows would take tens.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from otelbench.storage.queries import web as q
from otelbench.web import series as charts_series
from otelbench.web.cost import SOURCES  # reported, computed: AGENTS_SERIES's column order

Arrow = Callable[..., Any]  # Site.arrow: a statement's result as an Arrow table


class ByAgent:
    """The rows of an Arrow table sorted by ``agent``, one agent's at a time, without the
    agent: as tuples of ``columns`` (all but the agent when None), or as dicts."""

    def __init__(self, table: Any, columns: list[str] | None = None) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        runs = pc.run_end_encode(table["agent"].combine_chunks())
        ends = runs.run_ends.to_pylist()
        self._where = {name: (start, end - start) for name, start, end in
                       zip(runs.values.to_pylist(), [0, *ends[:-1]], ends)}
        table = table.select(columns) if columns else table.drop_columns(["agent"])
        # instants kept without their zone (always UTC here): Arrow makes each zoned
        # value through zoneinfo, ten times slower than one replace() in Python
        self._zoned = [pa.types.is_timestamp(f.type) and f.type.tz is not None for f in table.schema]
        self._table = pa.table([c.cast(pa.timestamp(f.type.unit)) if z else c
                                for c, f, z in zip(table.columns, table.schema, self._zoned)], names=table.column_names)

    def tuples(self, agent: str) -> list[tuple[Any, ...]]:
        found = self._where.get(agent)
        if not found:
            return []
        part = self._table.slice(*found)
        utc = dt.timezone.utc
        return list(zip(*([v and v.replace(tzinfo=utc) for v in c.to_pylist()] if z else c.to_pylist()
                          for c, z in zip(part.columns, self._zoned))))

    def dicts(self, agent: str) -> list[dict[str, Any]]:
        names = self._table.column_names
        return [dict(zip(names, row)) for row in self.tuples(agent)]


def series(arrow: Arrow) -> dict[str, ByAgent]:
    """Every visible agent's hourly runs (``hours``), latency buckets (``latency``) and
    cost sums (``cost``): one scan of the rollup."""
    import pyarrow.compute as pc

    t = arrow(q.AGENTS_SERIES, per_decade=charts_series.PER_DECADE, min_ms=charts_series.MIN_LATENCY_MS)
    of = {kind: t.filter(pc.equal(t["kind"], kind)) for kind in ("hour", "latency", "cost")}
    return {"hours": ByAgent(of["hour"].filter(pc.is_valid(of["hour"]["hour"])), ["hour", "runs", "failures"]),
            "latency": ByAgent(of["latency"].filter(pc.is_valid(of["latency"]["bucket"])), ["bucket", "runs"]),
            "cost": ByAgent(of["cost"], [f"{s}_{x}" for s in SOURCES for x in ("usd", "calls", "runs")])}


def series_of(found: dict[str, ByAgent], agent: str) -> dict[str, Any]:
    """One agent's part of ``series``: ``hours`` as (hour, runs, failures), ``latency`` as
    {bucket: runs}, ``cost`` as one row per source (web.cost.agent_cost's input)."""
    cost = [{"source": s, "total_usd": usd, "calls": calls, "runs": runs}
            for row in found["cost"].tuples(agent)
            for s, usd, calls, runs in zip(SOURCES, row[0::3], row[1::3], row[2::3])]
    return {"hours": found["hours"].tuples(agent), "latency": dict(found["latency"].tuples(agent)), "cost": cost}


def clusters(arrow: Arrow) -> dict[str, Any]:
    """Every visible agent's clusters, their trends and example runs (``ByAgent``), and
    every clustered run (``members``: trace id, agent, cluster id)."""
    return {"clusters": ByAgent(arrow(q.AGENTS_CLUSTERS)), "trends": ByAgent(arrow(q.AGENTS_CLUSTER_TRENDS)),
            "examples": ByAgent(arrow(q.AGENTS_EXAMPLE_RUNS)), "members": arrow(q.CLUSTERED_RUNS)}


def cluster_of(found: dict[str, Any], trace_id: str) -> dict[str, Any] | None:
    """The cluster of one run (``cluster_id``, ``description``) from ``clusters``; None
    when it is in none."""
    import pyarrow.compute as pc

    members = found["members"]
    at = pc.index(members["trace_id"], trace_id).as_py()
    if at < 0:
        return None
    agent, cluster_id = members["agent"][at].as_py(), members["cluster_id"][at].as_py()
    described = {c["cluster_id"]: c["description"] for c in found["clusters"].dicts(agent)}
    return {"cluster_id": cluster_id, "description": described.get(cluster_id)}
