"""Which agent each span of some whole traces belongs to, walked at query time.

``spans.resolved_agent`` is filled when the lake writes a batch and when it compacts
(storage/agents.py). A span that arrived before its parent (an SDK that exports each span
as it ends sends children first) stays NULL until compaction, and the views take a
cheaper rule for those rows meanwhile (its direct parent's agent, else its service). That
is fine for counting, not for privacy: the child of a private sub-agent must never read as
the public run's. Where a few traces are read whole — a run's page, the failed runs the
processors describe — the rule of storage/agents.py is applied to their rows here, every
ancestor walked: the nearest span at or above that names an agent, else a root's request
agent or service; a chain broken by a span not received reads NULL (callers treat that as
not the run's own, so it is hidden where anything is private).
"""

from __future__ import annotations

MAX_DEPTH = 64  # storage.agents.MAX_DEPTH: the same depth the lake walks


def _own_agent(alias: str) -> str:
    return (f"coalesce({alias}.resolved_agent, {alias}.agent_name, "
            f"CASE WHEN {alias}.parent_span_id IS NULL THEN coalesce({alias}.request_agent, {alias}.service_name) END)")


def private_agent_sql(agent: str) -> str:
    """Whether a span whose walked agent is ``agent`` is a private agent's: one of
    $private_agents, or not known at all while anything is private."""
    return f"coalesce(list_contains($private_agents, {agent}), len($private_agents) > 0)"


def walked_agents_ctes(name: str, spans: str) -> str:
    """CTEs ending in ``name``: (trace_id, span_id, agent) for every span of ``spans`` (a
    CTE holding whole traces' spans) whose agent is known. The statement using them must
    begin ``WITH RECURSIVE``."""
    return f"""{name}_up(trace_id, span_id, up, agent, depth) AS (
    SELECT s.trace_id, s.span_id, s.parent_span_id, {_own_agent("s")}, 0
    FROM {spans} AS s
    UNION ALL
    SELECT u.trace_id, u.span_id, p.parent_span_id, {_own_agent("p")}, u.depth + 1
    FROM {name}_up AS u JOIN {spans} AS p ON p.trace_id = u.trace_id AND p.span_id = u.up
    WHERE u.agent IS NULL AND u.depth < {MAX_DEPTH}
),
{name} AS (
    -- one row per span even if it was stored twice, so a join to it never duplicates one
    SELECT trace_id, span_id, min_by(agent, depth) AS agent
    FROM {name}_up WHERE agent IS NOT NULL
    GROUP BY trace_id, span_id
)"""
