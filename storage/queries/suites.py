"""The agent suites' views: ``suite_cases`` (one row per case × repeat: verdict and
evidence) and ``suite_runs`` (one row per suite run: pass rate with its Wilson 95 %
interval, cost, latency), read from the spans ``otelbench suite run`` exports.

The tree (bench_runner/spans.py): each case × repeat is the root of its own trace
(``bench.kind = suite_case``), and the agent's own spans join it through the TRACEPARENT
the runner gave the agent; the run is one more root span (``bench.kind = suite_run``)
that carries the settings and ends when the last case does. A run whose root has not
arrived (still running, or stopped half-way) is ``incomplete`` and still shows its cases.
"""

from __future__ import annotations

from otelbench.storage.queries.bench import BENCH_SCOPE, bench_attr, bench_spans
from otelbench.storage.queries.runs import COSTED_S, OUTERMOST
from otelbench.storage.queries.tables import sql_string

Z = 1.96  # the 97.5 % normal quantile, as bench_runner/stats.py Z_975 (the same interval)


def suite_cases_sql() -> str:
    """One row per case × repeat: the case span's verdict and evidence, with what the
    agent's own spans in that trace add up to (its name, cost, tokens, calls)."""
    return f"""CREATE OR REPLACE VIEW suite_cases AS
WITH cases AS (
    -- one row per case span even if it was stored twice
    SELECT DISTINCT ON (s.trace_id, s.span_id) s.* FROM spans AS s WHERE {bench_spans('suite_case')}
),
agent_side AS (
    -- the agent's own spans in each case's trace (everything but the runner's), by the
    -- rules of agent_runs: its agent the outermost span naming one, its cost what is costed
    SELECT s.trace_id,
           arg_min(s.agent_name, {OUTERMOST}) FILTER (WHERE s.agent_name IS NOT NULL) AS named_agent,
           sum(s.cost_usd) FILTER (WHERE {COSTED_S}) AS cost_usd,
           CAST(sum(s.input_tokens) FILTER (WHERE s.span_type = 'llm') AS BIGINT) AS input_tokens,
           CAST(sum(s.output_tokens) FILTER (WHERE s.span_type = 'llm') AS BIGINT) AS output_tokens,
           count(*) FILTER (WHERE s.span_type = 'llm') AS llm_calls,
           count(*) FILTER (WHERE s.span_type = 'tool') AS tool_calls,
           count(*) AS agent_spans
    FROM spans AS s
    -- an inner join, not a semi join: a trace_id filter then reaches both sides
    JOIN (SELECT DISTINCT trace_id FROM cases) AS c ON s.trace_id = c.trace_id
    WHERE s.scope_name IS DISTINCT FROM {sql_string(BENCH_SCOPE)}
    GROUP BY s.trace_id
)
SELECT
    s.trace_id, s.span_id,
    {bench_attr('bench.suite.run_id')} AS run_id,
    s.start_time, s.duration_ms,
    {bench_attr('bench.suite')} AS suite,
    {bench_attr('bench.suite.version')} AS suite_version,
    {bench_attr('bench.case.id')} AS case_id,
    {bench_attr('bench.case.repeat', 'INTEGER')} AS repeat,
    {bench_attr('bench.case.checker')} AS checker,
    {bench_attr('bench.case.verdict')} AS verdict,
    {bench_attr('bench.case.verdict')} = 'pass' AS passed,
    {bench_attr('bench.case.reason')} AS reason,
    coalesce({bench_attr('bench.agent.name')}, a.named_agent, {bench_attr('bench.agent.command')}) AS agent,
    {bench_attr('bench.agent.command')} AS agent_command,
    {bench_attr('bench.case.input')} AS input,
    {bench_attr('bench.case.output')} AS output,
    {bench_attr('bench.case.exit_code', 'INTEGER')} AS exit_code,
    coalesce({bench_attr('bench.case.timed_out', 'BOOLEAN')}, false) AS timed_out,
    coalesce({bench_attr('bench.case.flooded', 'BOOLEAN')}, false) AS flooded,
    {bench_attr('bench.case.stdout_bytes', 'BIGINT')} AS stdout_bytes,
    {bench_attr('bench.case.stderr')} AS stderr,
    a.cost_usd, a.input_tokens, a.output_tokens,
    coalesce(a.llm_calls, 0) AS llm_calls, coalesce(a.tool_calls, 0) AS tool_calls,
    coalesce(a.agent_spans, 0) AS agent_spans,
    s.owner, s.date
FROM cases AS s
LEFT JOIN agent_side AS a ON a.trace_id = s.trace_id"""


def _wilson(passed: str, n: str, sign: str) -> str:
    """One end of the Wilson score 95 % interval of ``passed`` of ``n`` (NULL for n = 0)."""
    p = f"({passed}::DOUBLE / nullif({n}, 0))"
    return (f"greatest(0.0, least(1.0, ({p} + {Z * Z / 2}::DOUBLE / {n} {sign} {Z}::DOUBLE * "
            f"sqrt({p} * (1 - {p}) / {n} + {Z * Z / 4}::DOUBLE / ({n} * {n}))) / (1 + {Z * Z}::DOUBLE / {n})))")


def suite_runs_sql() -> str:
    """One row per suite run: its cases' verdicts summed, the pass rate over the scored
    ones (``error`` verdicts — the checker could not score — are left out) and its Wilson
    95 % interval over every scored case × repeat, cost and latency per case."""
    return f"""CREATE OR REPLACE VIEW suite_runs AS
WITH roots AS (
    SELECT
        {bench_attr('bench.suite.run_id')} AS run_id,
        any_value(s.start_time) AS start_time, any_value(s.duration_ms) AS duration_ms,
        any_value({bench_attr('bench.agent.name')}) AS named_agent,
        any_value({bench_attr('bench.suite.repeats', 'INTEGER')}) AS repeats,
        any_value({bench_attr('bench.suite.concurrency', 'INTEGER')}) AS concurrency,
        any_value({bench_attr('bench.suite.cases', 'INTEGER')}) AS cases_planned,
        any_value({bench_attr('bench.suite.time_limit_s', 'DOUBLE')}) AS time_limit_s,
        any_value({bench_attr('bench.suite.cases_in_suite', 'INTEGER')}) AS cases_in_suite
    FROM spans AS s
    WHERE {bench_spans('suite_run')}
    GROUP BY 1
),
per_run AS (
    SELECT
        run_id, any_value(suite) AS suite, any_value(suite_version) AS suite_version,
        mode(agent) AS agent, any_value(agent_command) AS agent_command,
        min(start_time) AS first_start,
        max(start_time + to_microseconds(CAST(duration_ms * 1000 AS BIGINT))) AS last_end,
        count(DISTINCT case_id) AS cases, count(*) AS trials,
        count(*) FILTER (WHERE verdict = 'pass') AS passed,
        count(*) FILTER (WHERE verdict = 'fail') AS failed,
        count(*) FILTER (WHERE verdict = 'error') AS errors,
        count(*) FILTER (WHERE timed_out) AS timed_out,
        sum(cost_usd) AS cost_usd,
        CAST(sum(input_tokens) AS BIGINT) AS input_tokens, CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
        quantile_cont(duration_ms, 0.5) AS latency_p50_ms, quantile_cont(duration_ms, 0.95) AS latency_p95_ms,
        min(owner) AS owner, min(date) AS date
    FROM suite_cases
    GROUP BY run_id
)
SELECT
    p.run_id, p.suite, p.suite_version, coalesce(r.named_agent, p.agent) AS agent, p.agent_command,
    coalesce(r.start_time, p.first_start) AS start_time,
    coalesce(r.duration_ms, epoch_ms(p.last_end) - epoch_ms(p.first_start)) AS duration_ms,
    r.repeats, r.concurrency, p.cases, p.trials, p.passed, p.failed, p.errors, p.timed_out,
    p.passed::DOUBLE / nullif(p.passed + p.failed, 0) AS pass_rate,
    {_wilson('p.passed', '(p.passed + p.failed)', '-')} AS pass_rate_low,
    {_wilson('p.passed', '(p.passed + p.failed)', '+')} AS pass_rate_high,
    p.cost_usd, p.cost_usd / p.trials AS cost_per_case_usd, p.input_tokens, p.output_tokens,
    p.latency_p50_ms, p.latency_p95_ms,
    CASE WHEN r.run_id IS NOT NULL AND p.trials >= r.repeats * r.cases_planned THEN 'complete'
         ELSE 'incomplete' END AS status,
    coalesce(r.cases_planned < r.cases_in_suite, false) AS partial,
    p.owner, p.date
FROM per_run AS p
LEFT JOIN roots AS r ON r.run_id = p.run_id"""
