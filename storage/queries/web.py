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

# ... its spans in start order (the waterfall): those starting from an hour before the run
# to an hour after its end (clock skew between services, work the run left running) —
# the partitions of those days, and in them the row groups of those times (the lake
# sorts spans by type, then start time) ...
RUN_SPANS = """SELECT span_id, parent_span_id, name, span_type, service_name, start_time, duration_ms, status_code,
       status_message, coalesce(resolved_agent, agent_name) AS agent, request_model, tool_name, input_tokens,
       output_tokens, cost_usd, cost_source, input_messages, output_messages, attributes
FROM spans
WHERE trace_id = $trace_id AND start_time BETWEEN $since AND $until
  AND date BETWEEN CAST($since AS DATE) AND CAST($until AS DATE)
ORDER BY start_time, span_id"""

# ... its latest score with the reasoning, and its failure cluster.
# (the evals files read directly, $evals their glob: the view would first read every
# score of the lake; of one run's rows, the latest judgement is the view's latest too)
RUN_EVAL = """SELECT score, reasoning, judge_model, judge_version, method, error, judged_at
FROM read_parquet($evals, union_by_name = true)
WHERE trace_id = $trace_id AND NOT _tombstone
ORDER BY judged_at DESC, committed_at DESC, _row DESC LIMIT 1"""
RUN_CLUSTER = """SELECT m.cluster_id, c.description
FROM cluster_members AS m LEFT JOIN failure_clusters AS c ON c.agent = m.agent AND c.cluster_id = m.cluster_id
WHERE m.trace_id = $trace_id AND m.cluster_id >= 0"""

__all__ = ["LEADERBOARD", "RECENT_RUNS", "CLUSTERS", "RUN", "RUN_SPANS", "RUN_EVAL", "RUN_CLUSTER",
           "LATENCY_BUCKETS", "RUNS_PER_HOUR", "AGENT_COST", "RUN_COST_SOURCES", "CLUSTER_MEMBERS_PER_HOUR",
           "VISIBLE_RUNS", "INSTANCE", "RECENT_ACTIVITY"]


# -- charts, cost labels, share images and the home page (web/profile.py, web/home.py) ---

# One agent's runs per log-spaced latency bucket: bucket i holds [10^(i/k), 10^((i+1)/k))
# ms, k = $per_decade (web/series.py); shorter than $min_ms counts as $min_ms.
LATENCY_BUCKETS = f"""WITH {RUNS_CTE}
SELECT CAST(floor(log10(greatest(duration_ms, $min_ms)) * $per_decade) AS BIGINT) AS bucket,
       count(*) AS runs
FROM runs
WHERE agent = $agent AND duration_ms IS NOT NULL AND {_VISIBLE}
GROUP BY bucket
ORDER BY bucket"""

# One agent's runs and failed runs per hour (UTC); web/series.py regroups them by day,
# week or month.
RUNS_PER_HOUR = f"""WITH {RUNS_CTE}
SELECT date_trunc('hour', start_time) AS hour, count(*) AS runs,
       count(*) FILTER (WHERE status = 'error') AS failures
FROM runs
WHERE agent = $agent AND start_time IS NOT NULL AND {_VISIBLE}
GROUP BY hour
ORDER BY hour"""

# One agent's llm-call cost per source (reported | computed): the sum, the calls and the
# runs that have any (web/cost.py labels them).
AGENT_COST = f"""WITH {RUNS_CTE}
SELECT 'reported' AS source, sum(cost_reported) AS total_usd, coalesce(sum(calls_reported), 0) AS calls,
       count(cost_reported) AS runs
FROM runs WHERE agent = $agent AND {_VISIBLE}
UNION ALL
SELECT 'computed', sum(cost_computed), coalesce(sum(calls_computed), 0), count(cost_computed)
FROM runs WHERE agent = $agent AND {_VISIBLE}"""

# The cost sources of some runs ($trace_ids), one row per run with any.
RUN_COST_SOURCES = f"""WITH {RUNS_CTE}
SELECT trace_id, CASE WHEN cost_computed IS NOT NULL AND cost_reported IS NOT NULL THEN ['computed', 'reported']
                      WHEN cost_computed IS NOT NULL THEN ['computed'] ELSE ['reported'] END AS sources
FROM runs
WHERE list_contains($trace_ids, trace_id) AND (cost_computed IS NOT NULL OR cost_reported IS NOT NULL)"""

# One agent's clustered failed runs per cluster and hour (noise, -1, left out); visible
# runs only.
CLUSTER_MEMBERS_PER_HOUR = f"""WITH {RUNS_CTE}
SELECT m.cluster_id, date_trunc('hour', r.start_time) AS hour, count(*) AS runs
FROM cluster_members AS m
JOIN (SELECT trace_id, start_time FROM runs WHERE agent = $agent AND {_VISIBLE}) AS r
  ON r.trace_id = m.trace_id
WHERE m.agent = $agent AND m.cluster_id >= 0 AND r.start_time IS NOT NULL
GROUP BY ALL
ORDER BY m.cluster_id, hour"""

# Which of some runs ($trace_ids: a cluster's examples) may be shown, with their time
# and status.
VISIBLE_RUNS = f"""WITH {RUNS_CTE}
SELECT trace_id, start_time, status
FROM runs
WHERE list_contains($trace_ids, trace_id) AND {_VISIBLE}
ORDER BY start_time DESC, trace_id"""

# What this instance holds: visible agents and runs, their llm and tool calls, the first
# and last run, and the models benchmarked (bench_results).
INSTANCE = f"""WITH {RUNS_CTE}
SELECT count(DISTINCT agent) AS agents, count(*) AS runs,
       coalesce(sum(llm_calls), 0) AS llm_calls, coalesce(sum(tool_calls), 0) AS tool_calls,
       min(start_time) AS first_run, max(start_time) AS last_run,
       (SELECT count(DISTINCT model) FROM bench_results) AS models_benchmarked
FROM runs
WHERE {_VISIBLE}"""

# The latest visible runs of every agent, newest first (no input or output: the home page
# quotes none).
RECENT_ACTIVITY = f"""WITH {RUNS_CTE}
SELECT trace_id, agent, status, start_time, duration_ms, eval_score, cost_usd
FROM runs
WHERE {_VISIBLE}
ORDER BY start_time DESC, trace_id
LIMIT $limit"""
