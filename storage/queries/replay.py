"""What ``otelbench replay`` reads (bench_runner/replay.py): which recorded runs to replay,
and each run's llm calls with what they were sent (messages, tool definitions).

Runs are picked from ``agent_runs`` (one agent in a time window), ``cluster_members`` (one
failure cluster of an agent) or ``suite_cases`` (one suite run's traces). A sample is the
first ``$limit`` runs ordered by a hash of the trace id: the same runs each time, spread
over the window rather than its newest end. Every statement takes bound parameters.

The replay's results come back as the ``replay_runs`` view, over the spans it exports.
"""

from __future__ import annotations

from otelbench.storage.queries.bench import bench_attr, bench_spans

RUNS_OF_AGENT = """SELECT trace_id, agent FROM agent_runs
WHERE agent = $agent AND start_time >= $start AND start_time < $end
ORDER BY hash(trace_id), trace_id
LIMIT $limit"""

# ... or of every agent, $limit of each (the same ones each time), agent by agent.
RUNS_OF_EVERY_AGENT = """SELECT trace_id, agent FROM (
    SELECT trace_id, agent, row_number() OVER (PARTITION BY agent ORDER BY hash(trace_id), trace_id) AS n
    FROM agent_runs
    WHERE start_time >= $start AND start_time < $end
)
WHERE n <= $limit
ORDER BY agent, hash(trace_id), trace_id"""

RUNS_OF_CLUSTER = """SELECT r.trace_id, r.agent FROM cluster_members AS m
JOIN agent_runs AS r ON r.trace_id = m.trace_id
WHERE m.agent = $agent AND m.cluster_id = $cluster AND r.start_time >= $start AND r.start_time < $end
ORDER BY hash(r.trace_id), r.trace_id
LIMIT $limit"""

# A suite run's traces: each case's agent is the one its own spans name (suite_cases.agent).
RUNS_OF_SUITE_RUN = """SELECT trace_id, any_value(agent) AS agent FROM suite_cases
WHERE run_id = $run_id
GROUP BY trace_id
ORDER BY hash(trace_id), trace_id
LIMIT $limit"""

# The llm calls of the chosen runs, in order, with the tool definitions their span carries
# (``gen_ai.tool.definitions``) and the instrumentation that sent them (for the doctor's
# capture-content fix when a call has no input messages).
CALLS_OF_RUNS = """SELECT c.trace_id, c.span_id, c.start_time, c.duration_ms, c.ttft_ms,
       coalesce(c.response_model, c.request_model) AS model, c.input_tokens, c.output_tokens, c.cost_usd,
       c.input_messages, c.output_messages,
       json_extract_string(s.attributes, '$."gen_ai.tool.definitions"') AS tool_definitions,
       s.scope_name
FROM llm_calls AS c
JOIN spans AS s ON s.trace_id = c.trace_id AND s.span_id = c.span_id
WHERE list_contains($trace_ids, c.trace_id) AND list_contains($trace_ids, s.trace_id)
ORDER BY c.trace_id, c.start_time, c.span_id"""


def replay_runs_sql() -> str:
    """One row per replayed run: the ``replay run`` spans ``otelbench replay`` exports
    (bench_runner/replay_spans.py), read from their ``bench.replay.*`` attributes."""
    return f"""CREATE OR REPLACE VIEW replay_runs AS
SELECT
    s.trace_id AS replay_trace_id,
    s.start_time,
    {bench_attr('bench.replay.id')} AS replay_id,
    {bench_attr('bench.replay.candidate')} AS candidate,
    {bench_attr('bench.replay.trace_id')} AS trace_id,
    {bench_attr('bench.replay.agent')} AS agent,
    {bench_attr('bench.replay.calls', 'INTEGER')} AS calls,
    {bench_attr('bench.replay.calls_matching', 'INTEGER')} AS calls_matching,
    {bench_attr('bench.replay.behaviour_matches', 'BOOLEAN')} AS behaviour_matches,
    {bench_attr('bench.replay.at_least_as_good', 'BOOLEAN')} AS at_least_as_good,
    {bench_attr('bench.replay.answer_agrees', 'BOOLEAN')} AS answer_agrees,
    {bench_attr('bench.replay.answer_agreement', 'DOUBLE')} AS answer_agreement,
    {bench_attr('bench.replay.divergence', 'DOUBLE')} AS divergence,
    {bench_attr('bench.replay.recorded.ttft_ms', 'DOUBLE')} AS recorded_ttft_ms,
    {bench_attr('bench.replay.candidate.ttft_ms', 'DOUBLE')} AS candidate_ttft_ms,
    {bench_attr('bench.replay.recorded.model_ms', 'DOUBLE')} AS recorded_model_ms,
    {bench_attr('bench.replay.candidate.model_ms', 'DOUBLE')} AS candidate_model_ms,
    {bench_attr('bench.replay.recorded.output_tokens', 'BIGINT')} AS recorded_output_tokens,
    {bench_attr('bench.replay.candidate.output_tokens', 'BIGINT')} AS candidate_output_tokens,
    {bench_attr('bench.replay.recorded.cost_usd', 'DOUBLE')} AS recorded_cost_usd,
    {bench_attr('bench.replay.candidate.cost_usd', 'DOUBLE')} AS candidate_cost_usd,
    {bench_attr('bench.replay.candidate.answer')} AS candidate_answer,
    {bench_attr('bench.replay.errors', 'VARCHAR[]')} AS errors,
    {bench_attr('bench.replay.judge_score', 'DOUBLE')} AS judge_score,
    s.owner,
    s.date
FROM spans AS s
WHERE {bench_spans('replay_run')}"""
