"""What the web UI reads (web/): one parameterised statement per figure.

Figures and run lists read the ``runs`` rollup (storage/rollups.py: one row per run, kept
by the ``agent_runs`` view's own rule), never the views' per-request GROUP BY over every
span; each such statement starts ``WITH {RUNS_CTE}`` and takes ``$base``/``$delta`` (the
rollup's files). A run's spans, scores and clusters read the views, narrowed to the run.

Privacy is applied here, in the statements, so no route can forget it: every query takes
``$private_agents`` and ``$private_owners`` (lists; a run of either appears nowhere).
"""

from __future__ import annotations

from storage.queries.rollups import RUNS_CTE

_VISIBLE = """agent IS NOT NULL AND NOT list_contains($private_agents, agent)
      AND NOT list_contains($private_owners, coalesce(owner, ''))"""

_FIGURES = """count(*) AS runs,
       avg(CASE WHEN status = 'error' THEN 0.0 ELSE 1.0 END) AS success_rate,
       avg(eval_score) AS score,
       count(eval_score) AS judged,
       sum(cost_usd) / count(*) AS cost_per_run,
       count(cost_usd) AS costed,
       sum(cost_usd) AS cost_total,
       sum(cost_reported) AS cost_reported,
       sum(cost_computed) AS cost_computed,
       quantile_cont(duration_ms, 0.5) AS p50_ms,
       quantile_cont(duration_ms, 0.95) AS p95_ms,
       max(start_time) AS last_run"""

# One row per visible agent with runs since $since (the web keeps these per window,
# recomputed when the rollup changes: web/site.py).
LEADERBOARD = f"""WITH {RUNS_CTE}
SELECT agent, {_FIGURES}
FROM runs
WHERE start_time >= $since AND {_VISIBLE}
GROUP BY agent"""

# An agent's latest runs, newest first (task and answer: the rollup's previews).
RECENT_RUNS = f"""WITH {RUNS_CTE}
SELECT trace_id, status, start_time, duration_ms, cost_usd, eval_score, input_preview AS input,
       output_preview AS output, owner
FROM runs
WHERE agent = $agent AND {_VISIBLE}
ORDER BY start_time DESC, trace_id
LIMIT $limit"""

# Its failure clusters, biggest first.
CLUSTERS = """SELECT cluster_id, size, share, first_seen, last_seen, description, top_terms, example_trace_ids
FROM failure_clusters
WHERE agent = $agent AND NOT list_contains($private_agents, agent)
ORDER BY size DESC, cluster_id"""

# One run: its agent and figures (no row: a private run, or not an agent run) ...
RUN = f"""WITH {RUNS_CTE}
SELECT trace_id, agent, status, start_time, duration_ms, cost_usd, cost_reported, cost_computed, eval_score,
       input_preview AS input, output_preview AS output, owner, date
FROM runs
WHERE trace_id = $trace_id AND {_VISIBLE}"""

# ... its spans in start order (the waterfall): its day's partition and the neighbours ...
RUN_SPANS = """SELECT span_id, parent_span_id, name, span_type, service_name, start_time, duration_ms, status_code,
       status_message, coalesce(resolved_agent, agent_name) AS agent, request_model, tool_name, input_tokens,
       output_tokens, cost_usd, cost_source, input_messages, output_messages, attributes
FROM spans
WHERE trace_id = $trace_id AND date BETWEEN $day - INTERVAL 1 DAY AND $day + INTERVAL 1 DAY
ORDER BY start_time, span_id"""

# ... its latest score with the reasoning, and its failure cluster.
RUN_EVAL = """SELECT score, reasoning, judge_model, judge_version, method, error, judged_at
FROM evals WHERE trace_id = $trace_id ORDER BY judged_at DESC LIMIT 1"""
RUN_CLUSTER = """SELECT m.cluster_id, c.description
FROM cluster_members AS m LEFT JOIN failure_clusters AS c ON c.agent = m.agent AND c.cluster_id = m.cluster_id
WHERE m.trace_id = $trace_id AND m.cluster_id >= 0"""

__all__ = ["LEADERBOARD", "RECENT_RUNS", "CLUSTERS", "RUN", "RUN_SPANS", "RUN_EVAL", "RUN_CLUSTER"]
