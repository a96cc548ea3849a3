"""What each instrumentation scope sends: the SQL behind ``otelbench doctor`` (docs/doctor.md).

Three aggregates, each one row per UTC day and what it groups by, documented column by
column in docs/schema.md:

- ``conventions``: per (day, owner, agent, service, scope name, scope version), how many
  spans, llm calls, agent and tool spans, and how many of them carry each GenAI field;
- ``conventions_keys``: per the same group and attribute key, how many spans carry the
  key (as sent; the doctor writes indices as ``N``, ``normalize.coverage.key_form``);
- ``conventions_events``: per (day, owner, service, log scope), how many spans got GenAI
  message *log events* (the openai-v2 / util-genai way of sending content).

Each is a plain sum over rows, so it is the same whether computed over the whole lake
(the views) or file by file and summed (the rollup, storage/conventions.py). A span's
agent is the one ``llm_calls`` gives it (``resolved_agent``), else its own or its
request's agent name, else its service.

The reads (``*_READ``) sum either source over a window of days, without what
``$private_agents`` / ``$private_owners`` hide.
"""

from __future__ import annotations

from pathlib import Path

from otelbench.storage.queries.tables import read_table_sql

_GROUP = "date, owner, agent, service_name, scope_name, scope_version"
_AGENT = "coalesce(resolved_agent, agent_name, request_agent, service_name)"
# every key a span was sent with: the stored object's, and those stored in a column
# (storage.schema.MOVED_ATTRIBUTES). Kept as sent: the reader writes indices as N, after
# summing (a regexp per key of every span cost more than parsing the JSON).
_KEYS = "list_concat(coalesce(json_keys(attributes), []), coalesce(attributes_moved, []))"

_LLM = "span_type = 'llm'"


def scope_rows_sql(source: str) -> str:
    """One row per (day, owner, agent, service, scope, scope version) of the span rows of ``source``."""
    return f"""SELECT CAST(date AS DATE) AS date, owner, {_AGENT} AS agent, service_name, scope_name, scope_version,
    count(*) AS spans,
    count(*) FILTER (WHERE agent_name IS NOT NULL) AS named_spans,
    count(*) FILTER (WHERE request_agent IS NOT NULL) AS request_named_spans,
    count(*) FILTER (WHERE span_type = 'agent') AS agent_spans,
    count(*) FILTER (WHERE {_LLM}) AS llm_calls,
    count(*) FILTER (WHERE {_LLM} AND request_model IS NOT NULL) AS with_request_model,
    count(*) FILTER (WHERE {_LLM} AND response_model IS NOT NULL) AS with_response_model,
    count(*) FILTER (WHERE {_LLM} AND (input_tokens IS NOT NULL OR output_tokens IS NOT NULL)) AS with_tokens,
    count(*) FILTER (WHERE {_LLM} AND cost_source = 'reported') AS with_reported_cost,
    count(*) FILTER (WHERE {_LLM} AND input_messages IS NOT NULL) AS with_input_messages,
    count(*) FILTER (WHERE {_LLM} AND output_messages IS NOT NULL) AS with_output_messages,
    count(*) FILTER (WHERE {_LLM} AND finish_reasons IS NOT NULL) AS with_finish_reasons,
    count(*) FILTER (WHERE {_LLM} AND ttft_ms IS NOT NULL) AS with_ttft,
    count(*) FILTER (WHERE {_LLM} AND list_contains(finish_reasons, 'tool_call')) AS tool_call_requests,
    count(*) FILTER (WHERE span_type = 'tool') AS tool_calls,
    count(*) FILTER (WHERE span_type = 'tool' AND tool_call_id IS NOT NULL) AS with_tool_call_id,
    count(*) FILTER (WHERE span_type = 'tool' AND tool_arguments IS NOT NULL) AS with_tool_arguments,
    count(*) FILTER (WHERE span_type = 'tool' AND tool_result IS NOT NULL) AS with_tool_result
FROM {source}
GROUP BY ALL"""


def key_rows_sql(source: str) -> str:
    """One row per group and attribute key of the span rows of ``source``."""
    return f"""SELECT CAST(date AS DATE) AS date, owner, {_AGENT} AS agent, service_name, scope_name, scope_version,
    key, count(*) AS spans
FROM (SELECT *, unnest({_KEYS}) AS key FROM {source})
GROUP BY ALL"""


def _side(side: str) -> str:
    # a details event carries {"input": [...]|null, "output": [...]|null}: null is no content
    return (f"(message_direction = 'details' AND "
            f"coalesce(json_extract_string(messages, '$.{side}'), 'null') <> 'null')")


def event_rows_sql(source: str) -> str:
    """One row per (day, owner, service, scope) of the GenAI message log events of ``source``."""
    return f"""SELECT CAST(date AS DATE) AS date, owner, service_name, scope_name,
    count(DISTINCT (trace_id, span_id)) FILTER (WHERE message_direction = 'input' OR {_side('input')}) AS input_spans,
    count(DISTINCT (trace_id, span_id)) FILTER (WHERE message_direction = 'output' OR {_side('output')}) AS output_spans
FROM {source}
WHERE messages IS NOT NULL AND span_id IS NOT NULL
GROUP BY ALL"""


VIEWS = ("conventions", "conventions_keys", "conventions_events")


def views_sql(lake_root: str | Path) -> list[str]:
    """The three views over the whole lake."""
    spans, logs = read_table_sql(lake_root, "spans"), read_table_sql(lake_root, "logs")
    return [f"CREATE OR REPLACE VIEW conventions AS {scope_rows_sql(spans)}",
            f"CREATE OR REPLACE VIEW conventions_keys AS {key_rows_sql(spans)}",
            f"CREATE OR REPLACE VIEW conventions_events AS {event_rows_sql(logs)}"]


# The rollup's statements over some new data files ($files: a list of the lake's own).
_FILES = "read_parquet($files, hive_partitioning = true, union_by_name = true, hive_types = {'date': 'DATE'})"
SCOPE_ROWS = scope_rows_sql(_FILES)
KEY_ROWS = key_rows_sql(_FILES)
EVENT_ROWS = event_rows_sql(_FILES)

# Summing the rollup's parts into one (merging them): $parts, the part files.
# the counts of a scope row (scope_rows_sql), summed when parts merge
SCOPE_COUNTS = ("spans", "named_spans", "request_named_spans", "agent_spans", "llm_calls", "with_request_model",
                "with_response_model", "with_tokens", "with_reported_cost", "with_input_messages",
                "with_output_messages", "with_finish_reasons", "with_ttft", "tool_call_requests", "tool_calls",
                "with_tool_call_id", "with_tool_arguments", "with_tool_result")
_SUMS = ", ".join(f"CAST(sum({c}) AS BIGINT) AS {c}" for c in SCOPE_COUNTS)
MERGED_SCOPES = ("SELECT date, owner, agent, service_name, scope_name, scope_version, " + _SUMS
                 + " FROM read_parquet($parts) GROUP BY ALL ORDER BY ALL")
MERGED_KEYS = ("SELECT date, owner, agent, service_name, scope_name, scope_version, key, "
               "CAST(sum(spans) AS BIGINT) AS spans FROM read_parquet($parts) GROUP BY ALL ORDER BY ALL")
MERGED_EVENTS = ("SELECT date, owner, service_name, scope_name, CAST(sum(input_spans) AS BIGINT) AS input_spans, "
                 "CAST(sum(output_spans) AS BIGINT) AS output_spans FROM read_parquet($parts) GROUP BY ALL ORDER BY ALL")


# -- reading: a window of days, what a reader may see ------------------------------------

_VISIBLE = ("date >= $since AND ($service IS NULL OR service_name = $service) "
            "AND ($agent IS NULL OR agent = $agent) "
            "AND NOT list_contains($private_agents, agent) AND NOT list_contains($private_owners, coalesce(owner, ''))")
_SCOPE = "service_name, scope_name, scope_version"


def scopes_read_sql(source: str) -> str:
    """Per (service, scope, version, agent): the summed counts over the window ($since: a DATE),
    of ``source`` (the view, or ``read_parquet($parts)`` of the rollup)."""
    return (f"SELECT {_SCOPE}, agent, {_SUMS} FROM {source} "
            f"WHERE {_VISIBLE} GROUP BY ALL ORDER BY {_SCOPE}, agent")


def keys_read_sql(source: str) -> str:
    """Per (service, scope, version, key): spans carrying the key over the window."""
    return (f"SELECT {_SCOPE}, key, CAST(sum(spans) AS BIGINT) AS spans FROM {source} WHERE {_VISIBLE} "
            f"GROUP BY ALL ORDER BY {_SCOPE}, spans DESC, key")


def events_read_sql(source: str, scopes: str) -> str:
    """Per (service, log scope): spans with message log events over the window — only of
    services that have visible spans in ``scopes`` (log rows name no agent)."""
    return (f"SELECT service_name, scope_name, CAST(sum(input_spans) AS BIGINT) AS input_spans, "
            f"CAST(sum(output_spans) AS BIGINT) AS output_spans FROM {source} "
            "WHERE date >= $since AND ($service IS NULL OR service_name = $service) "
            "AND NOT list_contains($private_owners, coalesce(owner, '')) "
            f"AND service_name IN (SELECT service_name FROM {scopes} WHERE {_VISIBLE}) "
            "GROUP BY ALL ORDER BY ALL")


PARTS = "read_parquet($parts)"
SCOPES_VIEW_READ = scopes_read_sql("conventions")
KEYS_VIEW_READ = keys_read_sql("conventions_keys")
EVENTS_VIEW_READ = events_read_sql("conventions_events", "conventions")
SCOPES_ROLLUP_READ = scopes_read_sql("read_parquet($scope_parts)")
KEYS_ROLLUP_READ = keys_read_sql("read_parquet($key_parts)")
EVENTS_ROLLUP_READ = events_read_sql("read_parquet($event_parts)", "read_parquet($scope_parts)")

# Runs per agent over the window: how many, and how many have an input, an output,
# tokens and a cost — of the runs rollup (``RUNS_CTE``'s ``runs``) or the view.
_RUN_SHARES = """SELECT agent, count(*) AS runs,
    count(*) FILTER (WHERE {input} IS NOT NULL) AS with_input,
    count(*) FILTER (WHERE {output} IS NOT NULL) AS with_output,
    count(*) FILTER (WHERE input_tokens IS NOT NULL OR output_tokens IS NOT NULL) AS with_tokens,
    count(*) FILTER (WHERE cost_usd IS NOT NULL) AS with_cost
FROM {source}
WHERE date >= $since AND ($agent IS NULL OR agent = $agent)
  AND NOT list_contains($private_agents, agent) AND NOT list_contains($private_owners, coalesce(owner, ''))
GROUP BY agent ORDER BY agent"""
RUNS_VIEW_READ = _RUN_SHARES.format(input="input", output="output", source="agent_runs")
RUNS_ROLLUP_READ_BODY = _RUN_SHARES.format(input="input_preview", output="output_preview", source="runs")
