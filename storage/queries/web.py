"""What the web UI reads (web/): one parameterised statement per figure.

Figures and run lists read the ``runs`` rollup (storage/rollups.py: one row per run, kept
by the ``agent_runs`` view's own rule), never the views' per-request GROUP BY over every
span; each such statement starts ``WITH {RUNS_CTE}`` and takes ``$base``/``$delta`` (the
rollup's files). A run's spans, scores and clusters read the views, narrowed to the run.

Privacy is applied here, in the statements, so no route can forget it: every query takes
``$private_agents`` and ``$private_owners`` (lists; a run of either appears nowhere, a
span of either inside a visible run is redacted, a cluster counts only visible runs).
"""

from __future__ import annotations

from otelbench.storage.queries.rollups import RUN_ROWS, RUNS_CTE
from otelbench.storage.queries.tables import derived_select_sql, narrowed_source_sql, read_files_sql, span_attributes_sql
from otelbench.storage.queries.tool_links import asked_id, tool_links_ctes
from otelbench.storage.queries.views import agent_runs_sql, llm_calls_sql, span_messages_select, view_select
from otelbench.storage.queries.walked_agents import private_agent_sql, walked_agents_ctes
from otelbench.storage.schema import EVALS


def _visible(of: str = "") -> str:
    """The privacy rule for the runs of table alias ``of`` (none: unqualified names)."""
    q = f"{of}." if of else ""
    return (f"{q}agent IS NOT NULL AND NOT list_contains($private_agents, {q}agent)\n"
            f"      AND NOT list_contains($private_owners, coalesce({q}owner, ''))")


_VISIBLE = _visible()


_FIGURES = """count(*) AS runs,
       avg(CASE WHEN status = 'error' THEN 0.0 ELSE 1.0 END) AS success_rate,
       avg(eval_score) AS score,
       count(eval_score) AS judged,
       stddev_samp(eval_score) AS score_sd,  -- the mean's interval: web/intervals.py
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

# An agent's latest runs (only the failed ones when $failed_only), newest first (task and
# answer: the rollup's previews), with the sources of their cost (web/cost.py labels them).
RECENT_RUNS = f"""WITH {RUNS_CTE}
SELECT trace_id, status, start_time, duration_ms, cost_usd, eval_score, input_preview AS input,
       output_preview AS output, owner,
       CASE WHEN cost_computed IS NOT NULL AND cost_reported IS NOT NULL THEN ['computed', 'reported']
            WHEN cost_computed IS NOT NULL THEN ['computed'] WHEN cost_reported IS NOT NULL THEN ['reported']
            ELSE [] END AS cost_sources
FROM runs
WHERE agent = $agent AND (NOT $failed_only OR status = 'error') AND {_VISIBLE}
ORDER BY start_time DESC, trace_id
LIMIT $limit"""

# One run: its agent and figures (no row: a private run, or not an agent run) ...
RUN = f"""WITH {RUNS_CTE}
SELECT trace_id, agent, status, start_time, duration_ms, cost_usd, cost_reported, cost_computed, eval_score,
       input_preview AS input, output_preview AS output, owner, date
FROM runs
WHERE trace_id = $trace_id AND {_VISIBLE}"""

# ... or, for a run the rollup does not know yet (it came in after the last fold, or the
# first fold has not reached its day), its rollup row computed from the lake as the rollup
# computes it: the agent_runs view and RUN_ROWS, over CTEs named after the views they read
# that hold this trace's rows alone ($span_files, $log_files: every file of the table; the
# bloom filters on trace_id let DuckDB read only the row groups that hold it). The same
# columns and privacy rule as RUN.
_TRACE_LOGS = f"(SELECT * FROM {read_files_sql('log_files', row_numbers=True)} WHERE trace_id = $trace_id)"
RUN_IN_LAKE = f"""WITH spans AS MATERIALIZED (
    SELECT * FROM {read_files_sql("span_files")} WHERE trace_id = $trace_id
),
span_messages AS (
    {span_messages_select(_TRACE_LOGS)}
),
evals AS ({derived_select_sql(EVALS, narrowed_source_sql(EVALS, "evals_files", "trace_id", "trace_id"))}),
llm_calls AS ({view_select(llm_calls_sql())}),
agent_runs AS ({view_select(agent_runs_sql(None, logs=_TRACE_LOGS))}),
run_row AS ({RUN_ROWS})
SELECT trace_id, agent, status, start_time, duration_ms, cost_usd, cost_reported, cost_computed, eval_score,
       input_preview AS input, output_preview AS output, owner, date
FROM run_row
WHERE trace_id = $trace_id AND {_VISIBLE}"""

# ... its spans in start order (the waterfall): those starting from an hour before the run
# to an hour after its end (clock skew between services, work the run left running) —
# the files of those days ($span_files: storage.files.day_globs), and in them the row
# groups of those times (the lake sorts spans by type, then start time). A span of a
# private agent (a sub-agent the run invoked: its resolved agent) or sent with a private
# owner's key is ``redacted``: its type, times, status, tokens and cost stay (they are
# the run's), its name and agent read PRIVATE_AGENT, and it carries no other text. Its
# agent is walked over the run's spans (storage.queries.walked_agents): a span that came in
# before its parent has no resolved agent yet, and one whose chain stays broken is
# redacted too where anything is private ...
PRIVATE_AGENT = "private agent"
RUN_SPANS = f"""WITH RECURSIVE run_spans AS MATERIALIZED (
    SELECT * FROM {read_files_sql("span_files")}
    WHERE trace_id = $trace_id AND start_time BETWEEN $since AND $until
),
{walked_agents_ctes("walked", "run_spans")},
s AS (
    SELECT r.*, w.agent AS walked_agent,
           {private_agent_sql("w.agent")}
           OR list_contains($private_owners, coalesce(r.owner, '')) AS redacted
    FROM run_spans AS r
    LEFT JOIN walked AS w ON w.trace_id = r.trace_id AND w.span_id = r.span_id
)
SELECT span_id, parent_span_id, CASE WHEN redacted THEN '{PRIVATE_AGENT}' ELSE name END AS name, span_type,
       CASE WHEN NOT redacted THEN service_name END AS service_name, start_time, duration_ms, status_code,
       CASE WHEN NOT redacted THEN status_message END AS status_message,
       CASE WHEN redacted THEN '{PRIVATE_AGENT}' ELSE walked_agent END AS agent,
       CASE WHEN NOT redacted THEN request_model END AS request_model,
       CASE WHEN NOT redacted THEN tool_name END AS tool_name, input_tokens, output_tokens, cost_usd, cost_source,
       CASE WHEN NOT redacted THEN input_messages END AS input_messages,
       CASE WHEN NOT redacted THEN output_messages END AS output_messages,
       CASE WHEN NOT redacted THEN {span_attributes_sql()} END AS attributes, redacted
FROM s
ORDER BY start_time, span_id"""

# ... its tool calls, each with the llm call that asked for it: the tool_calls view's
# columns and link (storage.queries.tool_links), over the run's spans as RUN_SPANS reads
# them (its days' files and times) and its log events of those days. The link's CTEs read
# ``spans`` and ``llm_calls``: here two CTEs of those names, the run's rows alone, stand
# in for the views, which a trace id filter would make scan every file several times over
# (a second and more at 2 M spans) ...
RUN_TOOL_CALLS = f"""WITH spans AS (
    SELECT * FROM {read_files_sql("span_files")}
    WHERE trace_id = $trace_id AND start_time BETWEEN $since AND $until
),
run_messages AS (
    -- the span_messages view's rule over the run's log events ($log_files: those days')
    {span_messages_select(f"(SELECT * FROM {read_files_sql('log_files', row_numbers=True)} WHERE trace_id = $trace_id)")}
),
llm_calls AS (
    -- the llm_calls view's output messages: the span's, else its log events'
    SELECT s.trace_id, s.span_id, s.parent_span_id, s.start_time, s.duration_ms,
           coalesce(s.output_messages, m.output_messages) AS output_messages
    FROM spans AS s
    LEFT JOIN run_messages AS m ON m.trace_id = s.trace_id AND m.span_id = s.span_id AND s.output_messages IS NULL
    WHERE s.span_type = 'llm'
),
{tool_links_ctes()}
SELECT t.span_id, k.llm_span_id, t.tool_name, coalesce(t.tool_call_id, {asked_id("k")}) AS tool_call_id,
       t.tool_arguments AS arguments, t.tool_result AS result,
       CASE WHEN t.status_code = 'error' THEN 'error' ELSE 'ok' END AS status
FROM spans AS t
LEFT JOIN tool_links AS k ON k.trace_id = t.trace_id AND k.span_id = t.span_id
WHERE t.span_type = 'tool'
ORDER BY t.start_time, t.span_id"""

# ... and its latest judgement with the reasoning (the evals view's rule over that run's
# rows of $evals_files: compaction sorts evals by trace id, so a few row groups are read).
RUN_EVAL = f"""SELECT score, reasoning, judge_model, judge_version, method, error, judged_at
FROM ({derived_select_sql(EVALS, narrowed_source_sql(EVALS, "evals_files", "trace_id", "trace_id"))})
ORDER BY judged_at DESC, committed_at DESC, judge_model, judge_version LIMIT 1"""
__all__ = ["LEADERBOARD", "RECENT_RUNS", "RUN", "RUN_IN_LAKE", "RUN_SPANS", "RUN_TOOL_CALLS", "RUN_EVAL", "AGENTS_SERIES",
           "AGENTS_CLUSTERS", "AGENTS_CLUSTER_TRENDS", "AGENTS_EXAMPLE_RUNS", "CLUSTERED_RUNS", "INSTANCE", "RECENT_ACTIVITY"]


# -- charts, cost labels, share images and the home page (web/pages/) --------------
# Every agent's at once, once per rollup version (web/site.py keeps them): a profile then
# reads only its recent runs, whichever agent is asked for first.

# Each visible agent's runs per hour (UTC; web/series.py regroups them by day, week or
# month) with the failed ones ("hour" rows), per log-spaced latency bucket ("latency":
# bucket i holds [10^(i/k), 10^((i+1)/k)) ms, k = $per_decade, shorter than $min_ms counts
# as $min_ms), and its llm-call cost per source ("cost": the sums, the calls and the runs
# that have any; web/cost.py labels them). Rows without a start time or a duration are in
# no hour or bucket (their group's key is NULL).
AGENTS_SERIES = f"""WITH {RUNS_CTE},
v AS (
    SELECT agent, status, cost_reported, cost_computed, calls_reported, calls_computed,
           date_trunc('hour', start_time) AS hour,
           CAST(floor(log10(greatest(duration_ms, $min_ms)) * $per_decade) AS BIGINT) AS bucket
    FROM runs WHERE {_VISIBLE}
)
SELECT agent, CASE WHEN grouping(hour) = 0 THEN 'hour' WHEN grouping(bucket) = 0 THEN 'latency' ELSE 'cost' END AS kind,
       hour, bucket, count(*) AS runs, count(*) FILTER (WHERE status = 'error') AS failures,
       sum(cost_reported) AS reported_usd, CAST(coalesce(sum(calls_reported), 0) AS BIGINT) AS reported_calls,
       count(cost_reported) AS reported_runs, sum(cost_computed) AS computed_usd,
       CAST(coalesce(sum(calls_computed), 0) AS BIGINT) AS computed_calls, count(cost_computed) AS computed_runs
FROM v
GROUP BY GROUPING SETS ((agent, hour), (agent, bucket), (agent))
ORDER BY agent, kind, hour, bucket"""

# Each visible agent's failure clusters, biggest first, as this reader may see them: a
# cluster holds every failed run of its agent, whoever sent it, so its figures are taken
# over its members that are visible runs ($private_agents, $private_owners): ``size``,
# ``share`` (of the agent's visible clustered and unclustered failures), the times and the
# example runs. Its terms and description were made from every member's text: shown only
# when the reader may see every member. A cluster without a visible member is left out.
AGENTS_CLUSTERS = f"""WITH {RUNS_CTE},
members AS (
    SELECT m.agent, m.cluster_id, m.trace_id, r.start_time, r.trace_id IS NOT NULL AS seen
    FROM cluster_members AS m
    LEFT JOIN (SELECT trace_id, agent, start_time FROM runs WHERE {_VISIBLE}) AS r
           ON r.trace_id = m.trace_id AND r.agent = m.agent
    WHERE NOT list_contains($private_agents, m.agent)
),
counted AS (
    SELECT agent, cluster_id, count(*) FILTER (WHERE seen) AS size, count(*) FILTER (WHERE NOT seen) AS unseen,
           list(trace_id) FILTER (WHERE seen) AS seen_ids, min(start_time) AS first_run, max(start_time) AS last_run,
           sum(count(*) FILTER (WHERE seen)) OVER (PARTITION BY agent) AS failures
    FROM members
    GROUP BY agent, cluster_id
)
SELECT c.agent, c.cluster_id, n.size, n.size / n.failures AS share,
       CASE WHEN n.unseen = 0 THEN c.first_seen ELSE n.first_run END AS first_seen,
       CASE WHEN n.unseen = 0 THEN c.last_seen ELSE n.last_run END AS last_seen,
       CASE WHEN n.unseen = 0 THEN c.description END AS description,
       CASE WHEN n.unseen = 0 THEN c.top_terms ELSE [] END AS top_terms,
       list_filter(c.example_trace_ids, lambda t: list_contains(n.seen_ids, t)) AS example_trace_ids
FROM failure_clusters AS c
JOIN counted AS n ON n.agent = c.agent AND n.cluster_id = c.cluster_id
WHERE n.size > 0
ORDER BY c.agent, n.size DESC, c.cluster_id"""

# ... their clustered failed runs per cluster and hour (noise, -1, left out; visible runs
# only) ...
AGENTS_CLUSTER_TRENDS = f"""WITH {RUNS_CTE}
SELECT m.agent, m.cluster_id, date_trunc('hour', r.start_time) AS hour, count(*) AS runs
FROM cluster_members AS m
JOIN runs AS r ON r.trace_id = m.trace_id AND r.agent = m.agent
WHERE m.cluster_id >= 0 AND r.start_time IS NOT NULL AND {_visible("r")}
GROUP BY ALL
ORDER BY m.agent, m.cluster_id, hour"""

# ... the runs in a cluster (noise, -1, left out), by trace id, for a run's page ...
CLUSTERED_RUNS = f"""WITH {RUNS_CTE}
SELECT m.trace_id, m.agent, m.cluster_id
FROM cluster_members AS m
SEMI JOIN runs AS r ON r.trace_id = m.trace_id AND r.agent = m.agent AND {_visible("r")}
WHERE m.cluster_id >= 0
ORDER BY m.trace_id"""

# ... and those of their example runs that may be shown, with their time and status.
AGENTS_EXAMPLE_RUNS = f"""WITH {RUNS_CTE},
examples AS (SELECT DISTINCT agent, unnest(example_trace_ids) AS trace_id FROM failure_clusters)
SELECT r.agent, r.trace_id, r.start_time, r.status
FROM runs AS r SEMI JOIN examples AS e ON e.trace_id = r.trace_id AND e.agent = r.agent
WHERE {_visible("r")}
ORDER BY r.agent, r.start_time DESC, r.trace_id"""

# What this instance holds: visible agents and runs, their llm and tool calls, the first
# and last run, and the models benchmarked (bench_results; a private owner's runs of a
# model count as nothing, as on the model pages: storage/queries/web_models.py).
INSTANCE = f"""WITH {RUNS_CTE}
SELECT count(DISTINCT agent) AS agents, count(*) AS runs,
       coalesce(sum(llm_calls), 0) AS llm_calls, coalesce(sum(tool_calls), 0) AS tool_calls,
       min(start_time) AS first_run, max(start_time) AS last_run,
       (SELECT count(DISTINCT model) FROM bench_results
        WHERE NOT list_contains($private_owners, coalesce(owner, ''))) AS models_benchmarked
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
