"""What the processors read: the runs to judge, the failures to cluster, the clusters so far.

Each is one parameterised statement over the views (storage.queries.views); the
processors (processors/) get polars DataFrames of them through the gateway.
"""

from __future__ import annotations

from otelbench.storage.queries.tables import read_files_sql
from otelbench.storage.queries.views import JUDGE_SERVICE, agent_runs_sql, view_select
from otelbench.storage.queries.walked_agents import private_agent_sql, walked_agents_ctes


def _own(agent: str, owner: str | None) -> str:
    """Whether a span (its resolved ``agent`` and ``owner`` expressions) speaks for run
    ``r``: a span of a private agent other than the run's (a sub-agent it invoked), or sent
    with a private owner's key other than the run's, does not ($private_agents,
    $private_owners) — its texts would reach the run's judge, its reasoning, its failure
    text and so its cluster's terms, which readers not granted that agent see. A span whose
    agent is not known (its chain of parents broken) is not the run's own where anything is
    private."""
    rule = f"(coalesce({agent} = r.agent, false) OR NOT {private_agent_sql(agent)})"
    if owner is not None:
        rule += (f"\n  AND (coalesce({owner}, '') = coalesce(r.owner, '')"
                 f" OR NOT list_contains($private_owners, coalesce({owner}, '')))")
    return rule


# The spans of some runs (CTE ``runs``: trace_id, agent, owner), each with its agent walked
# over its whole trace (storage.queries.walked_agents): ``run_spans`` ending in ``owned``.
# Only the columns the statements below read: a window's failed runs hold many spans.
_SPAN_COLUMNS = ("trace_id", "span_id", "parent_span_id", "resolved_agent", "agent_name", "request_agent",
                 "service_name", "owner", "span_type", "status_code", "status_message", "error_type", "error_message",
                 "tool_name", "start_time")


def _owned_spans(runs: str, *, attributes: bool = False) -> str:
    more = ", CASE WHEN s.span_type = 'tool' THEN s.attributes END AS attributes" if attributes else ""
    columns = ", ".join(f"s.{c}" for c in _SPAN_COLUMNS)
    return f"""run_spans AS MATERIALIZED (
    SELECT {columns}{more}
    FROM spans AS s JOIN (SELECT DISTINCT trace_id FROM {runs}) AS r ON r.trace_id = s.trace_id
),
{walked_agents_ctes("walked", "run_spans")},
owned AS (
    SELECT s.*, r.agent AS run_agent
    FROM run_spans AS s
    JOIN {runs} AS r ON r.trace_id = s.trace_id
    LEFT JOIN walked AS w ON w.trace_id = s.trace_id AND w.span_id = s.span_id
    WHERE {_own("w.agent", "s.owner")}
)"""


# A failed run's failing tool calls and its error, for the failure text (clustering).
_TOOLS = """SELECT s.trace_id,
       string_agg(s.tool_name || ': ' || coalesce(s.error_message, 'failed'), '; ' ORDER BY s.start_time)
           AS failing_tools
FROM owned AS s
WHERE s.span_type = 'tool' AND s.status_code = 'error'
GROUP BY s.trace_id"""
_ERRORS = """SELECT s.trace_id,
       -- the run's own error (its root's) when it has one, else the latest span's
       coalesce(max(s.error_type) FILTER (WHERE s.parent_span_id IS NULL),
                arg_max(s.error_type, s.start_time)) AS error_type,
       coalesce(max(coalesce(s.error_message, s.status_message)) FILTER (WHERE s.parent_span_id IS NULL),
                arg_max(coalesce(s.error_message, s.status_message), s.start_time)) AS error_message
FROM owned AS s
WHERE s.status_code = 'error'
GROUP BY s.trace_id"""

# The runs a judge (model + version) has not scored yet, newest first: with an input or an
# output, in the window, not an earlier error tried max_attempts times already. Of the
# traces whose id hashes to $part of $parts: the lake's span and log files ($span_files,
# $log_files) narrowed to those traces, and agent_runs computed over their rows (its rule,
# the same answer: a trace's rows are all in one part). A statement holds every candidate's
# texts until it ends; a part holds only its own (processors.pipeline.runs_to_judge).
_PART = "hash(trace_id) % $parts = $part"
_PART_LOGS = f"(SELECT * FROM {read_files_sql('log_files', row_numbers=True)} WHERE {_PART})"
RUNS_TO_JUDGE = f"""WITH spans AS (
    SELECT * FROM {read_files_sql('span_files')} WHERE {_PART}
),
agent_runs AS ({view_select(agent_runs_sql(None, logs=_PART_LOGS))}),
judged AS (
    SELECT trace_id, attempts, score FROM evals WHERE judge_model = $judge_model AND judge_version = $judge_version
)
SELECT r.trace_id, r.agent, r.status, r.input, r.output, CAST(r.llm_calls AS BIGINT) AS llm_calls,
       CAST(r.tool_calls AS BIGINT) AS tool_calls, r.owner, r.start_time, coalesce(j.attempts, 0) AS attempts_so_far
FROM agent_runs AS r
LEFT JOIN judged AS j ON j.trace_id = r.trace_id
WHERE r.start_time >= $since AND (r.input IS NOT NULL OR r.output IS NOT NULL)
  AND ($agent IS NULL OR r.agent = $agent)
  AND (j.trace_id IS NULL OR (j.score IS NULL AND j.attempts < $max_attempts))
ORDER BY r.start_time DESC, r.trace_id"""

# The runs a judge (model + version) has scored, in the window, with how often each was
# judged again so far (judge_repeats): what `otelbench process --rejudge N` samples from
# (processors.judge.repeats.rejudge_sample).
RUNS_TO_REJUDGE = """WITH repeated AS (
    SELECT trace_id, max("repeat") AS repeats FROM judge_repeats
    WHERE judge_model = $judge_model AND judge_version = $judge_version GROUP BY trace_id
)
SELECT e.trace_id, e.score AS first_score, coalesce(p.repeats, 0) AS repeats
FROM evals AS e
JOIN agent_runs AS r ON r.trace_id = e.trace_id
LEFT JOIN repeated AS p ON p.trace_id = e.trace_id
WHERE e.judge_model = $judge_model AND e.judge_version = $judge_version AND e.score IS NOT NULL
  AND r.start_time >= $since AND ($agent IS NULL OR r.agent = $agent)
ORDER BY e.trace_id"""

# Some runs ($trace_ids) as the judge reads them (the columns RUNS_TO_JUDGE gives).
RUNS_OF_IDS = """SELECT r.trace_id, r.agent, r.status, r.input, r.output, CAST(r.llm_calls AS BIGINT) AS llm_calls,
       CAST(r.tool_calls AS BIGINT) AS tool_calls, r.owner, r.start_time
FROM agent_runs AS r
WHERE r.trace_id IN (SELECT unnest($trace_ids))
ORDER BY r.trace_id"""

# The lake's spans (from the files' footers): what the first try's number of parts is sized by.
SPAN_ROWS = "SELECT count(*) FROM spans"

# The runs ($trace_ids) with their agents ($agents) and owners ($owners), in one order.
_GIVEN_RUNS = "(SELECT unnest($trace_ids) AS trace_id, unnest($agents) AS agent, unnest($owners) AS owner)"

# The tool calls of some runs, in call order, with their arguments and result as the
# instrumentation recorded them (GenAI, OpenInference, OpenLLMetry names): the judge's
# summary of a run's tools (processors.judge.runs.summarize_tools).
TOOL_CALLS_OF_RUNS = f"""WITH RECURSIVE given AS {_GIVEN_RUNS},
{_owned_spans("given", attributes=True)}
SELECT s.trace_id, s.tool_name,
       CASE WHEN s.status_code = 'error' THEN 'error' ELSE 'ok' END AS status,
       coalesce(s.error_message, s.status_message) AS error_message,
       coalesce(json_extract_string(s.attributes, '$."gen_ai.tool.call.arguments"'),
                json_extract_string(s.attributes, '$."input.value"'),
                json_extract_string(s.attributes, '$."traceloop.entity.input"')) AS arguments,
       coalesce(json_extract_string(s.attributes, '$."gen_ai.tool.call.result"'),
                json_extract_string(s.attributes, '$."output.value"'),
                json_extract_string(s.attributes, '$."traceloop.entity.output"')) AS result
FROM owned AS s
WHERE s.span_type = 'tool'
ORDER BY s.trace_id, s.start_time, s.span_id"""

# What went wrong in some runs: the status messages of their failed agent and llm spans.
ERRORS_OF_RUNS = f"""WITH RECURSIVE given AS {_GIVEN_RUNS},
{_owned_spans("given")}
SELECT s.trace_id,
       string_agg(DISTINCT s.status_message, '; ' ORDER BY s.status_message) AS error_summary
FROM owned AS s
WHERE s.status_code = 'error' AND s.span_type IN ('agent', 'llm') AND s.status_message IS NOT NULL
GROUP BY s.trace_id"""

# The failures of the window: runs that errored, and judged runs scoring below a threshold.
FAILURES = f"""WITH RECURSIVE runs AS MATERIALIZED (
    SELECT trace_id, agent, start_time, status, output, eval_score, owner
    FROM agent_runs
    WHERE start_time >= $since AND (status = 'error' OR eval_score < $score_below)
      AND ($agent IS NULL OR agent = $agent)
),
{_owned_spans("runs")},
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

__all__ = ["RUNS_TO_JUDGE", "SPAN_ROWS", "TOOL_CALLS_OF_RUNS", "ERRORS_OF_RUNS", "FAILURES", "CLUSTERS_OF_AGENT", "MEMBERS_OF_AGENT", "CLUSTERED_AGENTS", "JUDGE_SERVICE"]
