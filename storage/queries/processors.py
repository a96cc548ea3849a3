"""What the processors read: the runs to judge, the failures to cluster, the clusters so far.

Each is one parameterised statement over the views (storage.queries.views); the
processors (processors/) get polars DataFrames of them through the gateway.
"""

from __future__ import annotations

from storage.queries.views import JUDGE_SERVICE

# A run's tool calls and errors in a few words, for the judge's prompt and the failure text.
_TOOLS = """SELECT c.trace_id,
       string_agg(c.tool_name || ' → ' || CASE WHEN c.status = 'error'
                  THEN 'error: ' || coalesce(c.error_message, 'failed') ELSE 'ok' END, '; ' ORDER BY c.start_time)
           AS tool_summary,
       string_agg(CASE WHEN c.status = 'error' THEN c.tool_name || ': ' || coalesce(c.error_message, 'failed') END,
                  '; ' ORDER BY c.start_time) AS failing_tools
FROM tool_calls AS c JOIN runs AS r ON r.trace_id = c.trace_id
GROUP BY c.trace_id"""
_ERRORS = """SELECT s.trace_id,
       string_agg(s.name || ': ' || concat_ws(' ', s.error_type, s.error_message), '; ' ORDER BY s.start_time)
           AS error_summary,
       -- the run's own error (its root's) when it has one, else the latest span's
       coalesce(max(s.error_type) FILTER (WHERE s.parent_span_id IS NULL),
                arg_max(s.error_type, s.start_time)) AS error_type,
       coalesce(max(coalesce(s.error_message, s.status_message)) FILTER (WHERE s.parent_span_id IS NULL),
                arg_max(coalesce(s.error_message, s.status_message), s.start_time)) AS error_message
FROM spans AS s JOIN runs AS r ON r.trace_id = s.trace_id
WHERE s.status_code = 'error'
GROUP BY s.trace_id"""

# The runs a judge (model + version) has not scored yet, newest first: with an input or an
# output, in the window, not an earlier error tried max_attempts times already.
RUNS_TO_JUDGE = f"""WITH runs AS (
    SELECT trace_id, agent, status, input, output, llm_calls, tool_calls, owner, start_time
    FROM agent_runs
    WHERE start_time >= $since AND (input IS NOT NULL OR output IS NOT NULL)
      AND ($agent IS NULL OR agent = $agent)
),
judged AS (
    SELECT trace_id, attempts, score FROM evals WHERE judge_model = $judge_model AND judge_version = $judge_version
),
tools AS ({_TOOLS}),
errors AS ({_ERRORS})
SELECT r.trace_id, r.agent, r.status, r.input, r.output, r.llm_calls, r.tool_calls, r.owner, r.start_time,
       t.tool_summary, e.error_summary, coalesce(j.attempts, 0) AS attempts_so_far
FROM runs AS r
LEFT JOIN judged AS j ON j.trace_id = r.trace_id
LEFT JOIN tools AS t ON t.trace_id = r.trace_id
LEFT JOIN errors AS e ON e.trace_id = r.trace_id
WHERE j.trace_id IS NULL OR (j.score IS NULL AND j.attempts < $max_attempts)
ORDER BY r.start_time DESC, r.trace_id"""

# The failures of the window: runs that errored, and judged runs scoring below a threshold.
FAILURES = f"""WITH runs AS (
    SELECT trace_id, agent, start_time, status, output, eval_score, owner
    FROM agent_runs
    WHERE start_time >= $since AND (status = 'error' OR eval_score < $score_below)
      AND ($agent IS NULL OR agent = $agent)
),
tools AS ({_TOOLS}),
errors AS ({_ERRORS})
SELECT r.trace_id, r.agent, r.start_time, r.status, e.error_type, e.error_message, t.failing_tools,
       -- the final answer's text (agent_runs.output is one GenAI message)
       nullif(array_to_string(json_extract_string(r.output, '$[0].parts[*].content'), ' '), '') AS output,
       r.eval_score AS score, r.owner
FROM runs AS r
LEFT JOIN tools AS t ON t.trace_id = r.trace_id
LEFT JOIN errors AS e ON e.trace_id = r.trace_id
ORDER BY r.agent, r.start_time, r.trace_id"""

CLUSTERS_OF_AGENT = """SELECT agent, cluster_id, size, share, first_seen, last_seen, example_trace_ids, top_terms,
       description, params, run_at
FROM failure_clusters WHERE agent = $agent ORDER BY cluster_id"""

MEMBERS_OF_AGENT = "SELECT trace_id, agent, cluster_id FROM cluster_members WHERE agent = $agent ORDER BY trace_id"

CLUSTERED_AGENTS = "SELECT DISTINCT agent FROM failure_clusters ORDER BY agent"

__all__ = ["RUNS_TO_JUDGE", "FAILURES", "CLUSTERS_OF_AGENT", "MEMBERS_OF_AGENT", "CLUSTERED_AGENTS", "JUDGE_SERVICE"]
