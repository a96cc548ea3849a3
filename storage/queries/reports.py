"""Named queries: what the CLI's summary, the benchmarks and (later) the web pages ask.

Each is one parameterised statement over the views (storage.queries.views).
"""

LLM_CALLS_BY_AGENT = "SELECT agent, count(*) FROM llm_calls GROUP BY agent"

AGENT_RUNS_BY_AGENT = """SELECT agent, count(*) AS runs, sum(cost_usd) AS cost_usd,
       sum(llm_calls) AS llm_calls, count(*) FILTER (WHERE status = 'error') AS errors
FROM agent_runs GROUP BY agent ORDER BY runs DESC"""

LLM_CALLS_OF_TRACE = "SELECT * FROM llm_calls WHERE trace_id = $trace_id ORDER BY start_time"
AGENT_RUN = "SELECT * FROM agent_runs WHERE trace_id = $trace_id"
# benchmarks/trace_lookup.py: one trace's spans through the view, and straight from the
# files on a plain connection, with DuckDB's Parquet footer cache off (as the gateway) or on
SPANS_OF_TRACE = "SELECT * FROM spans WHERE trace_id = $trace_id"
SPANS_OF_TRACE_IN_FILES = ("SELECT * FROM read_parquet($files, hive_partitioning = true, union_by_name = true) "
                           "WHERE trace_id = $trace_id")
FOOTER_CACHE = "SET parquet_metadata_cache = $on"

# Timed by benchmarks/query.py (figures in docs/performance.md), besides the two above.
LLM_CALL_MESSAGES_COUNT = "SELECT count(input_messages) FROM llm_calls"
SPANS_BY_TYPE = "SELECT span_type, count(*) FROM spans GROUP BY span_type"
TOOL_CALLS_BY_AGENT = "SELECT agent, count(*) FROM tool_calls GROUP BY agent"
UNRESOLVED_CALLS = "SELECT count(*) FROM spans WHERE span_type IN ('llm', 'tool') AND resolved_agent IS NULL"
COUNT_SPANS = "SELECT count(*) FROM spans"
COUNT_LLM_CALLS = "SELECT count(*) FROM llm_calls"
SOME_TRACE_WITH_LOG_MESSAGES = "SELECT trace_id FROM logs WHERE message_direction = 'input' LIMIT 1"


# ---------------------------------------------------------------- summary report (otelbench demo)
SUMMARY_BY_AGENT = """SELECT agent, count(*) AS runs,
       round(100.0 * count(*) FILTER (WHERE status = 'ok') / count(*), 1) AS "ok %",
       round(median(duration_ms) / 1000, 2) AS "median s",
       sum(llm_calls) AS llm_calls, sum(tool_calls) AS tool_calls,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       round(sum(cost_usd), 4) AS cost_usd
FROM agent_runs GROUP BY agent ORDER BY runs DESC, agent"""

SUMMARY_BY_MODEL = """SELECT coalesce(response_model, request_model) AS model, provider, count(*) AS calls,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       round(median(duration_ms), 1) AS "median ms",
       count(*) FILTER (WHERE status_code = 'error') AS errors,
       round(sum(cost_usd), 4) AS cost_usd, string_agg(DISTINCT cost_source, ',') AS cost_source
FROM llm_calls GROUP BY ALL ORDER BY calls DESC, model"""

SUMMARY_BY_TOOL = """SELECT tool_name AS tool, count(*) AS calls,
       count(*) FILTER (WHERE status = 'error') AS errors,
       round(median(duration_ms), 1) AS "median ms"
FROM tool_calls GROUP BY ALL ORDER BY calls DESC, tool"""

# --------------------------------------------------------------------------- the demo's report
# (otelbench demo: what every part of the pipeline made of the runs it just sent)
DEMO_LEADERBOARD = """SELECT agent, count(*) AS runs,
       round(100.0 * count(*) FILTER (WHERE status = 'ok') / count(*), 1) AS "ok %",
       count(eval_score) AS judged, round(avg(eval_score), 2) AS "judge score",
       round(median(duration_ms) / 1000, 2) AS "median s", round(sum(cost_usd), 4) AS cost_usd
FROM agent_runs GROUP BY agent ORDER BY "judge score" DESC NULLS LAST, runs DESC, agent"""

DEMO_MODELS = """SELECT model, quantization, round(decode_tps_median, 1) AS "decode tok/s",
       round(prefill_tps_median, 1) AS "prefill tok/s", round(ttft_ms_median, 1) AS "TTFT ms",
       round(ability_score, 2) AS ability, confidence
FROM bench_results
QUALIFY row_number() OVER (PARTITION BY model ORDER BY start_time DESC) = 1
ORDER BY model"""

DEMO_SUITES = """SELECT suite_version, agent, round(pass_rate, 2) AS "pass rate",
       format('{:.2f}–{:.2f}', pass_rate_low, pass_rate_high) AS "95% CI", trials, errors AS unscored,
       round(latency_p50_ms / 1000, 2) AS "median s", partial
FROM suite_runs
QUALIFY row_number() OVER (PARTITION BY suite_version, agent ORDER BY start_time DESC) = 1
ORDER BY suite_version, agent"""

DEMO_CLUSTERS = """SELECT agent, size AS runs, round(100 * share) AS "% of failures", description
FROM failure_clusters
QUALIFY row_number() OVER (PARTITION BY agent ORDER BY size DESC, cluster_id) <= 3
ORDER BY agent, size DESC"""

DEMO_LINKS = """SELECT
    (SELECT trace_id FROM agent_runs WHERE agent = $agent ORDER BY start_time DESC LIMIT 1) AS run,
    (SELECT trace_id FROM agent_runs WHERE agent = $agent AND status = 'error' ORDER BY start_time DESC LIMIT 1)
        AS failed_run,
    (SELECT suite FROM suite_runs ORDER BY start_time DESC LIMIT 1) AS suite,
    (SELECT model FROM bench_results ORDER BY start_time DESC LIMIT 1) AS model"""
