"""What clustering returns: two tables and their JSON form for the web's insights route.

``clusters`` has one row per cluster of an agent; ``members`` one row per clustered
failure *and* per unclustered one, the latter with ``cluster_id = -1`` (``NOISE``):
HDBSCAN's noise is kept as unclustered, never forced into a cluster, and listing it lets
the web show and link the failures no cluster explains. The lake tables
(``failure_clusters``, ``cluster_members``) take these columns as they are.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl

NOISE = -1
UTC_US = pl.Datetime("us", "UTC")

CLUSTERS_SCHEMA = pl.Schema({
    "agent": pl.String,
    "cluster_id": pl.Int64,
    "size": pl.Int64,
    "share": pl.Float64,
    "first_seen": UTC_US,
    "last_seen": UTC_US,
    "example_trace_ids": pl.List(pl.String),
    "top_terms": pl.List(pl.String),
    "description": pl.String,
    "params": pl.String,
    "run_at": UTC_US,
})
MEMBERS_SCHEMA = pl.Schema({
    "trace_id": pl.String,
    "agent": pl.String,
    "cluster_id": pl.Int64,
})

# the columns cluster_failures reads; others are ignored
FAILURES_SCHEMA = pl.Schema({
    "trace_id": pl.String,
    "agent": pl.String,
    "start_time": UTC_US,
    "status": pl.String,
    "error_type": pl.String,
    "error_message": pl.String,
    "failing_tools": pl.String,
    "output": pl.String,
    "score": pl.Float64,
})


@dataclass(frozen=True)
class ClusterResult:
    """One clustering run: ``clusters`` and ``members`` (schemas above), and ``params``,
    per agent, what ran and on how much (the same dict as each of its clusters' ``params``
    JSON but for ``described_by``; kept here also for an agent left without clusters)."""

    clusters: pl.DataFrame
    members: pl.DataFrame
    params: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_tables(cls, clusters: pl.DataFrame | None, members: pl.DataFrame | None) -> ClusterResult:
        """A previous result as read back from the lake: extra columns (``committed_at``,
        ``date``) are dropped, the params come from the clusters' JSON."""
        c = empty_clusters() if clusters is None else clusters.select(CLUSTERS_SCHEMA.names()).cast(CLUSTERS_SCHEMA)
        m = empty_members() if members is None else members.select(MEMBERS_SCHEMA.names()).cast(MEMBERS_SCHEMA)
        params: dict[str, dict[str, Any]] = {}
        for agent, text in c.select("agent", "params").iter_rows():
            p = {k: v for k, v in json.loads(text).items() if k != "described_by"}
            if agent not in params or p.get("next_cluster_id", 0) > params[agent].get("next_cluster_id", 0):
                params[agent] = p
        return cls(c, m, params)

    def for_agent(self, agent: str) -> ClusterResult:
        return ClusterResult(self.clusters.filter(pl.col("agent") == agent),
                             self.members.filter(pl.col("agent") == agent),
                             {agent: self.params[agent]} if agent in self.params else {})


def empty_clusters() -> pl.DataFrame:
    return pl.DataFrame(schema=CLUSTERS_SCHEMA)


def empty_members() -> pl.DataFrame:
    return pl.DataFrame(schema=MEMBERS_SCHEMA)


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def insights_json(clusters: pl.DataFrame, members: pl.DataFrame, *, unclustered_examples: int = 10) -> dict[str, Any]:
    """Per agent, what the web's insights page shows, JSON-ready (ISO-8601 times, params
    parsed)::

        {agent: {"agent", "run_at", "failures", "clustered", "unclustered",
                 "unclustered_trace_ids" (the first few), "params",
                 "clusters": [{"cluster_id", "size", "share", "first_seen", "last_seen",
                               "example_trace_ids", "top_terms", "description",
                               "described_by"}, ...]}}   # largest cluster first
    """
    out: dict[str, Any] = {}
    counts = members.group_by("agent").agg(
        pl.len().alias("failures"),
        (pl.col("cluster_id") == NOISE).sum().alias("unclustered"),
        pl.col("trace_id").filter(pl.col("cluster_id") == NOISE).sort().head(unclustered_examples).alias("noise"),
    )
    for agent, failures, unclustered, noise in counts.sort("agent").iter_rows():
        out[agent] = {"agent": agent, "run_at": None, "failures": failures, "clustered": failures - unclustered,
                      "unclustered": unclustered, "unclustered_trace_ids": noise, "params": {}, "clusters": []}
    for row in clusters.sort(["agent", "size", "cluster_id"], descending=[False, True, False]).iter_rows(named=True):
        entry = out.setdefault(row["agent"], {"agent": row["agent"], "run_at": None, "failures": 0, "clustered": 0,
                                              "unclustered": 0, "unclustered_trace_ids": [], "params": {},
                                              "clusters": []})
        params = json.loads(row["params"])
        described_by = params.pop("described_by", None)
        entry["run_at"] = _iso(row["run_at"])
        entry["params"] = params
        entry["clusters"].append({
            "cluster_id": row["cluster_id"], "size": row["size"], "share": row["share"],
            "first_seen": _iso(row["first_seen"]), "last_seen": _iso(row["last_seen"]),
            "example_trace_ids": row["example_trace_ids"], "top_terms": row["top_terms"],
            "description": row["description"], "described_by": described_by,
        })
    return out
