"""What the web UI reads (web/): one parameterised statement per figure, over the views.

Privacy is applied here, in the statements, so no route can forget it: every query takes
``$private_agents`` and ``$private_owners`` (lists; a run of either appears nowhere).
Rollups for large lakes are not built yet: these read the views (docs/web.md).
"""

from __future__ import annotations

_VISIBLE = """agent IS NOT NULL AND NOT list_contains($private_agents, agent)
      AND NOT list_contains($private_owners, coalesce(owner, ''))"""

_FIGURES = """count(*) AS runs,
       avg(CASE WHEN status = 'error' THEN 0.0 ELSE 1.0 END) AS success_rate,
       avg(eval_score) AS score,
       count(eval_score) AS judged,
       sum(cost_usd) / count(*) AS cost_per_run,
       count(cost_usd) AS costed,
       quantile_cont(duration_ms, 0.5) AS p50_ms,
       quantile_cont(duration_ms, 0.95) AS p95_ms,
       max(start_time) AS last_run"""

# One row per visible agent with runs since $since.
LEADERBOARD = f"""SELECT agent, {_FIGURES}
FROM agent_runs
WHERE start_time >= $since AND {_VISIBLE}
GROUP BY agent"""

# One agent's figures over all its runs (no row: unknown or private).
AGENT = f"""SELECT agent, {_FIGURES}
FROM agent_runs
WHERE agent = $agent AND {_VISIBLE}
GROUP BY agent"""

# Its latest runs, newest first.
RECENT_RUNS = f"""SELECT trace_id, status, start_time, duration_ms, cost_usd, eval_score, input, output, owner
FROM agent_runs
WHERE agent = $agent AND {_VISIBLE}
ORDER BY start_time DESC, trace_id
LIMIT $limit"""

# Its failure clusters, biggest first.
CLUSTERS = """SELECT cluster_id, size, share, first_seen, last_seen, description, top_terms, example_trace_ids
FROM failure_clusters
WHERE agent = $agent AND NOT list_contains($private_agents, agent)
ORDER BY size DESC, cluster_id"""

# One run: its agent and figures (no row: a private run, or not an agent run) ...
RUN = f"""SELECT trace_id, agent, status, start_time, duration_ms, cost_usd, eval_score, input, output, owner
FROM agent_runs
WHERE trace_id = $trace_id AND {_VISIBLE}"""

# ... its spans in start order (the waterfall) ...
RUN_SPANS = """SELECT span_id, parent_span_id, name, span_type, service_name, start_time, duration_ms, status_code,
       status_message, coalesce(resolved_agent, agent_name) AS agent, request_model, tool_name, input_tokens,
       output_tokens, cost_usd, input_messages, output_messages, attributes
FROM spans
WHERE trace_id = $trace_id
ORDER BY start_time, span_id"""

# ... its latest score with the reasoning, and its failure cluster.
RUN_EVAL = """SELECT score, reasoning, judge_model, judge_version, method, error, judged_at
FROM evals WHERE trace_id = $trace_id ORDER BY judged_at DESC LIMIT 1"""
RUN_CLUSTER = """SELECT m.cluster_id, c.description
FROM cluster_members AS m LEFT JOIN failure_clusters AS c ON c.agent = m.agent AND c.cluster_id = m.cluster_id
WHERE m.trace_id = $trace_id AND m.cluster_id >= 0"""

__all__ = ["LEADERBOARD", "AGENT", "RECENT_RUNS", "CLUSTERS", "RUN", "RUN_SPANS", "RUN_EVAL", "RUN_CLUSTER",
           "LATENCY_BUCKETS", "RUNS_PER_HOUR", "AGENT_COST", "RUN_COST_SOURCES", "CLUSTER_MEMBERS_PER_HOUR",
           "VISIBLE_RUNS", "INSTANCE", "RECENT_ACTIVITY"]


# -- charts, cost labels, share images and the home page (web/profile.py, web/home.py) ---
# These read the plain views; each is one figure a rollup can keep (counts per agent and
# hour, per latency bucket, per cost source).

# One agent's runs per log-spaced latency bucket: bucket i holds [10^(i/k), 10^((i+1)/k))
# ms, k = $per_decade (web/series.py); shorter than $min_ms counts as $min_ms.
LATENCY_BUCKETS = f"""SELECT CAST(floor(log10(greatest(duration_ms, $min_ms)) * $per_decade) AS BIGINT) AS bucket,
       count(*) AS runs
FROM agent_runs
WHERE agent = $agent AND duration_ms IS NOT NULL AND {_VISIBLE}
GROUP BY bucket
ORDER BY bucket"""

# One agent's runs and failed runs per hour (UTC); web/series.py regroups them by day,
# week or month.
RUNS_PER_HOUR = f"""SELECT date_trunc('hour', start_time) AS hour, count(*) AS runs,
       count(*) FILTER (WHERE status = 'error') AS failures
FROM agent_runs
WHERE agent = $agent AND start_time IS NOT NULL AND {_VISIBLE}
GROUP BY hour
ORDER BY hour"""

# One agent's llm-call cost per source (reported | computed): the sum, the calls and the
# runs that have any (web/cost.py labels them).
AGENT_COST = f"""SELECT cost_source AS source, sum(cost_usd) AS total_usd, count(*) AS calls,
       count(DISTINCT trace_id) AS runs
FROM spans
WHERE span_type = 'llm' AND cost_usd IS NOT NULL
  AND trace_id IN (SELECT trace_id FROM agent_runs WHERE agent = $agent AND {_VISIBLE})
GROUP BY cost_source"""

# The cost sources of the llm calls of some runs ($trace_ids), one row per run with any.
RUN_COST_SOURCES = """SELECT trace_id, list_sort(list_distinct(list(cost_source))) AS sources
FROM spans
WHERE span_type = 'llm' AND cost_usd IS NOT NULL AND list_contains($trace_ids, trace_id)
GROUP BY trace_id"""

# One agent's clustered failed runs per cluster and hour (noise, -1, left out); visible
# runs only.
CLUSTER_MEMBERS_PER_HOUR = f"""SELECT m.cluster_id, date_trunc('hour', r.start_time) AS hour, count(*) AS runs
FROM cluster_members AS m
JOIN (SELECT trace_id, start_time FROM agent_runs WHERE agent = $agent AND {_VISIBLE}) AS r
  ON r.trace_id = m.trace_id
WHERE m.agent = $agent AND m.cluster_id >= 0 AND r.start_time IS NOT NULL
GROUP BY ALL
ORDER BY m.cluster_id, hour"""

# Which of some runs ($trace_ids: a cluster's examples) may be shown, with their time
# and status.
VISIBLE_RUNS = f"""SELECT trace_id, start_time, status
FROM agent_runs
WHERE list_contains($trace_ids, trace_id) AND {_VISIBLE}
ORDER BY start_time DESC, trace_id"""

# What this instance holds: visible agents and runs, the spans of those runs, the first
# and last run, and the models benchmarked (bench_results).
INSTANCE = f"""WITH runs AS MATERIALIZED (
    SELECT trace_id, agent, start_time FROM agent_runs WHERE {_VISIBLE}
)
SELECT (SELECT count(DISTINCT agent) FROM runs) AS agents,
       (SELECT count(*) FROM runs) AS runs,
       (SELECT count(*) FROM spans WHERE trace_id IN (SELECT trace_id FROM runs)) AS spans,
       (SELECT min(start_time) FROM runs) AS first_run,
       (SELECT max(start_time) FROM runs) AS last_run,
       (SELECT count(DISTINCT model) FROM bench_results) AS models_benchmarked"""

# The latest visible runs of every agent, newest first (no input or output: the home page
# quotes none).
RECENT_ACTIVITY = f"""SELECT trace_id, agent, status, start_time, duration_ms, eval_score, cost_usd
FROM agent_runs
WHERE {_VISIBLE}
ORDER BY start_time DESC, trace_id
LIMIT $limit"""
