"""The views over the lake: calls, tool calls, agent runs, messages — and their DDL as a whole.

Functions here only *build* SQL (pure, tested as input → SQL); ``storage.duckdb`` runs it.
Values are always bound as parameters (storage.queries.tables says what is formatted in).

Views (documented column by column in docs/schema.md):

- one per lake table (``storage.queries.tables``): ``spans``, ``logs``, ``metrics`` as
  stored, plus the ``date`` partition; each derived table with its "latest wins" rule.
- ``span_messages``: GenAI message *events* (log rows) folded into one row per span —
  the one place that decides how log events become a call's input/output messages.
- ``span_agents``: spans that name an agent, by key.
- ``llm_calls``, ``tool_calls``: one row per llm / tool span, with its agent resolved;
  ``tool_call_links``: each tool call's asking llm call (``storage.queries.tool_links``).
- ``agent_runs``: one row per trace that did any llm, agent or tool work.
- ``bench_results``, ``bench_tests``, ``bench_goodput``: ``otelbench bench`` results (storage.queries.bench).
- ``gate_verdicts``: ``otelbench gate`` verdicts (storage.queries.gate_verdicts).
- ``replay_runs``: ``otelbench replay`` results (storage.queries.replay).
- ``suite_cases``, ``suite_runs``: ``otelbench suite run`` results (storage.queries.suites).
- ``conventions``, ``conventions_keys``, ``conventions_events``: what each instrumentation
  scope sends, for ``otelbench doctor`` (storage.queries.conventions).

Cost notes (measured with benchmarks/query.py; duckdb 2.0.1). A call's agent is
``spans.resolved_agent``, which the lake fills when it writes and compacts; only rows it
could not resolve yet take the *unresolved* branch, which joins them to their parents
(see ``_agent_ctes``). After compaction that branch holds a handful of rows, so
``SELECT agent, count(*) FROM llm_calls GROUP BY agent`` is one scan of the llm rows.
Messages from log events come through one LEFT JOIN on a key that is NULL for rows
carrying their own messages; DuckDB drops that join when no message column is used,
which it does only while no filter is pushed into the scan on its grouped side
(``span_messages`` says how). Joins use the plain (trace_id, span_id) strings, so a
``WHERE trace_id = ?`` reaches every side of them. The lake sorts rows by span_type,
so the ``span_type = ...`` filters skip whole row groups, and ``resolved_agent IS NULL``
skips every row group of a compacted file.
"""

from __future__ import annotations

from pathlib import Path

from otelbench.storage.queries import conventions
from otelbench.storage.queries.bench import bench_goodput_sql, bench_results_sql, bench_tests_sql
from otelbench.storage.queries.gate_verdicts import gate_verdicts_sql
from otelbench.storage.queries.replay import replay_runs_sql
from otelbench.storage.queries.suites import suite_cases_sql, suite_runs_sql
from otelbench.storage.queries.tables import lake_location, parents_cte, read_table_sql, view_sql
from otelbench.storage.queries.runs import COSTED_S, OUTERMOST
from otelbench.storage.queries.tool_links import asked_id, tool_links_ctes
from otelbench.storage.schema import tables

# The views this module defines, beside one per lake table (storage.queries.tables).
COMPUTED_VIEWS = ("span_messages", "span_agents", "llm_calls", "tool_calls", "tool_call_links", "agent_runs", "bench_results",
                  "bench_tests", "bench_goodput", "suite_cases", "suite_runs", "gate_verdicts", "replay_runs",
                  "key_usage", *conventions.VIEWS)


# --------------------------------------------------------------------------- messages
def span_messages_sql(lake_root: str | Path, logs: str | None = None) -> str:
    """GenAI message log events → one row per span: input_messages, output_messages.

    The rule, kept here and only here (event shapes: normalize/rows.py, docs/normalization.md):
    - a ``details`` event (gen_ai.client.inference.operation.details) carries the whole
      call as ``{"input": [...]|null, "output": [...]|null}``; the latest one wins, side
      by side (its null side falls through to the events below);
    - otherwise the ``input`` (resp. ``output``) events' message arrays are concatenated
      in event time order (ties: file, then row order — the order they were received).
    Malformed JSON is skipped rather than failing every query that touches the view.
    ``logs``: another source of log rows (with ``filename`` and ``file_row_number``) —
    the rollups' restricted connection (storage.rollups).

    The message directions are picked by a SEMI JOIN, not ``IN (...)``: a filter pushed
    into this scan would stop DuckDB from dropping llm_calls' join when no message column
    is used, and the join still pushes the directions into the scan at run time, so row
    groups of other log records are skipped all the same.
    """
    source = logs or read_table_sql(lake_root, "logs", row_numbers=True)
    return f"CREATE OR REPLACE VIEW span_messages AS\n{span_messages_select(source)}"


_ORDER = "time, filename, file_row_number"  # of a span's message events: time, then as received


def _detail(side: str, only: str = "") -> str:
    """One side of the latest ``details`` event (of the rows that ``only`` also keeps):
    json_extract of an absent or null side gives NULL or 'null', both "not given"."""
    latest = f"arg_max(messages, ({_ORDER})) FILTER (WHERE message_direction = 'details'{only})"
    return f"nullif(CAST(json_extract(TRY_CAST({latest} AS JSON), '$.{side}') AS VARCHAR), 'null')"


def _concat(direction: str, only: str = "") -> str:
    """The ``direction`` events' message arrays concatenated in order (of the rows that
    ``only`` also keeps); malformed ones are skipped."""
    return (f"CAST(to_json(flatten(list(TRY_CAST(messages AS JSON[]) ORDER BY {_ORDER}) "
            f"FILTER (WHERE message_direction = '{direction}'{only}))) AS VARCHAR)")


def _side(direction: str, only: str = "") -> str:
    """A span's ``direction`` messages from its events: the rule of ``span_messages_sql``."""
    return f"coalesce({_detail(direction, only)}, {_concat(direction, only)})"


def _message_events(logs: str) -> str:
    """The message events of ``logs`` (FROM ... WHERE ... GROUP BY a span), as ``l``."""
    return f"""FROM {logs} AS l
SEMI JOIN (VALUES ('input'), ('output'), ('details')) AS d(direction) ON l.message_direction = d.direction
WHERE l.messages IS NOT NULL AND l.trace_id IS NOT NULL AND l.span_id IS NOT NULL
GROUP BY l.trace_id, l.span_id"""


def span_messages_select(logs: str) -> str:
    """The ``span_messages`` view's SELECT over ``logs`` (log rows with ``filename`` and
    ``file_row_number``): the rule of ``span_messages_sql``, for a statement that narrows
    the log rows first (storage.queries.web.RUN_TOOL_CALLS: one run's)."""
    return f"""SELECT
    l.trace_id,
    l.span_id,
    {_side('input')} AS input_messages,
    {_side('output')} AS output_messages
{_message_events(logs)}"""


def span_message_sides_select(logs: str) -> str:
    """Which sides ``span_messages`` gives a span (``has_input``, ``has_output``), without
    folding its events: a side is given by the latest ``details`` event, else by any event
    of that direction (their concatenation is never NULL, even of malformed arrays)."""
    return f"""SELECT
    l.trace_id,
    l.span_id,
    bool_or(message_direction = 'input') OR {_detail('input')} IS NOT NULL AS has_input,
    bool_or(message_direction = 'output') OR {_detail('output')} IS NOT NULL AS has_output
{_message_events(logs)}"""


# --------------------------------------------------------------------------- agents
# Which agent made a call: spans.resolved_agent, filled by the lake when it writes and
# compacts (the rule: storage/agents.py) — the nearest span at or above the call that
# names an agent, at any depth, else the root's service.
SPAN_AGENTS_SQL = """CREATE OR REPLACE VIEW span_agents AS
SELECT a.trace_id, a.span_id, any_value(a.agent_name) AS agent_name
FROM spans AS a
WHERE a.agent_name IS NOT NULL
-- one row per span even if it was stored twice, so a join never duplicates a call
GROUP BY a.trace_id, a.span_id"""


def _agent_ctes(span_type: str, extra: str = "") -> str:
    """CTEs ending in ``calls``: every ``span_type`` span, ``agent`` resolved (the rule above).

    Resolved rows (``resolved_agent`` set by the lake) need no join. The rest —
    ``unresolved``: their chain of parents was not complete when written, and they were not
    compacted since — take a cheaper rule until compaction resolves them: their direct
    parent's agent_name, else their own service. Walking up every ancestor at query time
    meant reading every span of the lake (a chain's unnamed links have no row-group
    statistics to skip by): ~5x slower on a fresh lake, and as slow again per query for
    each call whose chain stays broken. ``parents`` aggregates only the parents that name
    an agent (few; row groups of other spans are skipped). ``extra``: more columns for
    both branches, each ``, <expr> AS <name>`` over ``s``.
    """
    return f"""unresolved AS NOT MATERIALIZED (
    SELECT * FROM spans AS s WHERE s.span_type = '{span_type}' AND s.resolved_agent IS NULL
),
{parents_cte("parents", "unresolved", "agent_name", "agent_name", where="p.agent_name IS NOT NULL")},
calls AS (
    SELECT s.*, s.resolved_agent AS agent{extra}
    FROM spans AS s
    WHERE s.span_type = '{span_type}' AND s.resolved_agent IS NOT NULL
    UNION ALL
    SELECT s.*, coalesce(s.agent_name, p.agent_name, s.request_agent, s.service_name) AS agent{extra}
    FROM unresolved AS s
    -- span_id alone is not unique: test and demo data reuse span ids across traces
    LEFT JOIN parents AS p ON p.trace_id = s.trace_id AND p.span_id = s.parent_span_id
)"""


# The span's key into span_messages: NULL (no join work) when it carries both sides itself.
_LOG_SPAN = ", CASE WHEN s.input_messages IS NULL OR s.output_messages IS NULL THEN s.span_id END AS log_span"


def llm_calls_sql() -> str:
    return f"""CREATE OR REPLACE VIEW llm_calls AS
WITH {_agent_ctes('llm', _LOG_SPAN)}
SELECT
    c.trace_id, c.span_id, c.parent_span_id, c.start_time, c.duration_ms,
    c.agent,
    c.operation, c.provider, c.request_model, c.response_model,
    c.input_tokens, c.output_tokens, c.total_tokens, c.cache_read_tokens, c.reasoning_tokens,
    c.cost_usd, c.cost_source, c.ttft_ms, c.finish_reasons, c.status_code, c.error_message,
    -- span attributes win; log events only fill in what the span lacks
    coalesce(c.input_messages, m.input_messages) AS input_messages,
    coalesce(c.output_messages, m.output_messages) AS output_messages,
    c.owner, c.service_name, c.date
FROM calls AS c
LEFT JOIN span_messages AS m ON m.trace_id = c.trace_id AND m.span_id = c.log_span"""


def tool_calls_sql() -> str:
    return f"""CREATE OR REPLACE VIEW tool_calls AS
WITH {_agent_ctes('tool')}
SELECT
    c.trace_id, c.span_id,
    c.agent,
    c.tool_name, c.tool_call_id,
    c.tool_arguments AS arguments, c.tool_result AS result,
    CASE WHEN c.status_code = 'error' THEN 'error' ELSE 'ok' END AS status,
    c.duration_ms, c.error_message, c.start_time, c.date
FROM calls AS c"""


# The link across spans (storage.queries.tool_links) is a view of its own: in tool_calls,
# even unread, its scans cost DuckDB's binder every file's metadata again (docs/performance.md,
# "Tool calls and their link"), and reading it over a whole lake parses every llm call's
# output. Join it on (trace_id, span_id) for the runs you need.
TOOL_CALL_LINKS_SQL = f"""CREATE OR REPLACE VIEW tool_call_links AS
WITH {tool_links_ctes()}
SELECT t.trace_id, t.span_id, k.llm_span_id, coalesce(t.tool_call_id, {asked_id('k')}) AS tool_call_id
FROM spans AS t
LEFT JOIN tool_links AS k ON k.trace_id = t.trace_id AND k.span_id = t.span_id
WHERE t.span_type = 'tool'"""


# --------------------------------------------------------------------------- runs
# The root: the span without a parent, else (root not received yet) the earliest span.
# One BIGINT orders both ways at once; arg_min on it is cheaper than on a (bool, ts) struct.
_ROOT_FIRST = "((s.parent_span_id IS NOT NULL)::BIGINT << 60) + epoch_us(s.start_time)"
_AT = "epoch_us(s.start_time)"


def _has_text(message: str, parts: str | None = None) -> str:
    """A GenAI message (JSON) with a non-empty text part: a tool call alone is not one.
    ``parts``: another list of its parts to look in (its answer's, ``_answer_parts``)."""
    parts = parts or f"TRY_CAST(json_extract({message}, '$.parts') AS JSON[])"
    return (f"len(list_filter({parts}, "
            "lambda p: json_extract_string(p, '$.type') = 'text' "
            "AND coalesce(json_extract_string(p, '$.content'), '') <> '')) > 0")


def _last_tool_part(message: str) -> str:
    """The (1-based) position of a message's last tool_call / tool_call_response part, 0: none."""
    return (f"coalesce(list_max(list_transform(TRY_CAST(json_extract({message}, '$.parts') AS JSON[]), "
            "lambda p, i: CASE WHEN json_extract_string(p, '$.type') IN ('tool_call', 'tool_call_response') "
            "THEN i END)), 0)")


def _answer_parts(message: str) -> str:
    """A message's parts after its last tool part: what it says once the tools answered."""
    return f"TRY_CAST(json_extract({message}, '$.parts') AS JSON[])[{_last_tool_part(message)} + 1:]"


def first_user_message(messages: str) -> str:
    """The first user message with text of a messages JSON array, as a one-message array
    (NULL when there is none; malformed JSON is none)."""
    keep = f"lambda m: json_extract_string(m, '$.role') = 'user' AND {_has_text('m')}"
    return f"nullif(CAST(to_json(list_filter(TRY_CAST({messages} AS JSON[]), {keep})[1:1]) AS VARCHAR), '[]')"


def final_answer(messages: str) -> str:
    """The last assistant message with text after its last tool part, as a one-message
    array holding only its parts after that (a message without a role counts: output
    messages often leave it out). One message may hold a whole run's steps, the tool
    call and its response before the answer (AI SDK 7's invoke_agent output); a message
    that ends in a tool call is no answer."""
    # a message whose JSON never says tool_call has no tool part: its parts read once
    keep = (f"lambda m: coalesce(json_extract_string(m, '$.role'), 'assistant') = 'assistant' "
            f"AND CASE WHEN contains(CAST(m AS VARCHAR), 'tool_call') THEN {_has_text('m', _answer_parts('m'))} "
            f"ELSE {_has_text('m')} END")
    answer = (f"lambda m: CASE WHEN NOT contains(CAST(m AS VARCHAR), 'tool_call') OR {_last_tool_part('m')} = 0 THEN m "
              f"ELSE json_merge_patch(m, json_object('parts', {_answer_parts('m')})) END")
    return (f"nullif(CAST(to_json(list_transform(list_filter(TRY_CAST({messages} AS JSON[]), {keep})[-1:], "
            f"{answer})) AS VARCHAR), '[]')")


# The service names of otelbench's own traces, which are not an agent's runs: the judge's
# (processors/judge sets it on its tracer) and the bench runner's (bench_runner/spans.py:
# benchmark evidence, read through bench_results, never mixed into agents' telemetry).
JUDGE_SERVICE = "otelbench-judge"
BENCH_SERVICE = "otelbench-bench"

# One row per trace. The run's agent: the outermost span that names one (the root if it
# does, else an agent span, else the earliest: a span starts before what it calls), and
# only then the agent its ingest request named (X-Bench-Agent), then the root's service.
# Its input: the user's task — the first user message with text of the root, else of the
# outermost agent span, else of the first call with input.
# Its output: the final answer — the last assistant message with text of the root, else
# of the outermost agent span, else of the last call with output; a tool call is never a
# run's output. Every candidate is an aggregate of its own (a FILTER, never "the first
# non-NULL in some order", which is what arg_min's NULL-skipping would give), so unused
# ones are pruned, and the JSON is read once per run, after grouping (reading every
# call's messages made `count(output)` over all runs 5x slower).
# Its cost: what storage.queries.runs counts (COSTED_S).

def _llm_io_ctes(logs: str) -> str:
    """CTEs ending in ``llm_io``: per trace, the input messages of its first llm call that
    has input and the output messages of its last that has output (``llm_calls``' own
    ``input_messages`` / ``output_messages``: the span's, else ``span_messages``'). Which
    calls those are is told by cheap tests (the span's column, ``span_message_sides``);
    only their log events are then folded, not every call's (folding them all made
    ``count(input)`` over all runs 10x slower than ``count(*)``). ``logs``: the log rows
    with ``filename`` and ``file_row_number``."""
    # a struct: arg_min/arg_max skip NULL values, and a call's own side may be NULL
    first = "{'span_id': s.span_id, 'own': s.input_messages}"
    last = "{'span_id': s.span_id, 'own': s.output_messages}"
    first_in, last_out = "e.span_id = p.first_in.span_id", "e.span_id = p.last_out.span_id"
    return f"""llm_sides AS (
{span_message_sides_select(logs)}
),
llm_picks AS (
    SELECT s.trace_id,
           arg_min({first}, s.start_time) FILTER (WHERE s.input_messages IS NOT NULL OR g.has_input) AS first_in,
           arg_max({last}, s.start_time) FILTER (WHERE s.output_messages IS NOT NULL OR g.has_output) AS last_out
    FROM spans AS s
    -- llm_calls' rule: log events only for a span lacking a side
    LEFT JOIN llm_sides AS g ON g.trace_id = s.trace_id
        AND g.span_id = CASE WHEN s.input_messages IS NULL OR s.output_messages IS NULL THEN s.span_id END
    WHERE s.span_type = 'llm'
    GROUP BY s.trace_id
),
llm_io AS (
    -- each CTE is used once: DuckDB materializes one used twice, which stops both the
    -- pruning of unused columns and a trace_id filter's way down
    SELECT p.trace_id,
           coalesce(any_value(p.first_in.own), {_side('input', f' AND {first_in}')}) AS first_input,
           coalesce(any_value(p.last_out.own), {_side('output', f' AND {last_out}')}) AS last_output
    FROM llm_picks AS p
    -- the message events of the picked calls that lack that side themselves
    LEFT JOIN (SELECT * FROM {logs} AS l
               WHERE l.messages IS NOT NULL AND l.message_direction IN ('input', 'output', 'details')) AS e
        ON e.trace_id = p.trace_id
        AND ((p.first_in.own IS NULL AND {first_in}) OR (p.last_out.own IS NULL AND {last_out}))
    GROUP BY p.trace_id
)"""


def view_select(ddl: str) -> str:
    """A view's query, from its ``CREATE OR REPLACE VIEW name AS`` statement: for a
    statement that computes the view over narrowed sources (CTEs named after the views)."""
    head, _, body = ddl.partition(" AS\n")
    if not head.startswith("CREATE OR REPLACE VIEW ") or " " in head.removeprefix("CREATE OR REPLACE VIEW "):
        raise ValueError(f"not a view's DDL: {ddl[:60]!r}")
    return body


def agent_runs_sql(lake_root: str | Path | None, logs: str | None = None) -> str:
    """The ``agent_runs`` view (the rule above), its log events read from the lake at
    ``lake_root``, or from ``logs``: another source of log rows with ``filename`` and
    ``file_row_number`` (span_messages_sql's)."""
    if logs is None:
        if lake_root is None:
            raise ValueError("agent_runs_sql needs the lake's root or a source of its log rows")
        logs = read_table_sql(lake_root, "logs", row_numbers=True)
    return f"""CREATE OR REPLACE VIEW agent_runs AS
WITH per_trace AS (
    SELECT
        s.trace_id,
        arg_min(s.agent_name, {OUTERMOST}) FILTER (WHERE s.agent_name IS NOT NULL) AS named_agent,
        arg_min(s.name, {_ROOT_FIRST}) AS root_name,
        bool_or(s.status_code = 'error' AND (s.parent_span_id IS NULL OR s.span_type = 'agent')) AS errored,
        arg_min(s.start_time, {_ROOT_FIRST}) AS start_time,
        arg_min(s.duration_ms, {_ROOT_FIRST}) AS duration_ms,
        sum(s.cost_usd) FILTER (WHERE {COSTED_S}) AS cost_usd,
        CAST(sum(s.input_tokens) FILTER (WHERE s.span_type = 'llm') AS BIGINT) AS input_tokens,
        CAST(sum(s.output_tokens) FILTER (WHERE s.span_type = 'llm') AS BIGINT) AS output_tokens,
        count(*) FILTER (WHERE s.span_type = 'llm') AS llm_calls,
        count(*) FILTER (WHERE s.span_type = 'tool') AS tool_calls,
        count(*) FILTER (WHERE s.span_type IN ('llm', 'agent', 'tool')) AS genai_spans,
        arg_min(s.input_messages, {_AT}) FILTER (WHERE s.parent_span_id IS NULL) AS root_input,
        arg_min(s.output_messages, {_AT}) FILTER (WHERE s.parent_span_id IS NULL) AS root_output,
        arg_min(s.input_messages, {OUTERMOST}) FILTER (WHERE s.agent_name IS NOT NULL) AS agent_input,
        arg_min(s.output_messages, {OUTERMOST}) FILTER (WHERE s.agent_name IS NOT NULL) AS agent_output,
        arg_min(s.owner, {_ROOT_FIRST}) AS owner,
        arg_min(s.service_name, {_ROOT_FIRST}) AS service_name,
        arg_min(s.request_agent, {_ROOT_FIRST}) AS request_agent,
        arg_min(s.date, {_ROOT_FIRST}) AS date
    FROM spans AS s
    GROUP BY s.trace_id
),
scores AS (
    -- the run's latest score, whichever judge gave it (evals: processors/judge)
    SELECT trace_id, arg_max(score, judged_at) AS eval_score FROM evals WHERE score IS NOT NULL GROUP BY trace_id
),
{_llm_io_ctes(logs)}
SELECT
    t.trace_id, coalesce(t.named_agent, t.request_agent, t.service_name) AS agent, t.root_name,
    CASE WHEN t.errored THEN 'error' ELSE 'ok' END AS status,
    t.start_time, t.duration_ms,
    t.cost_usd, t.input_tokens, t.output_tokens, t.llm_calls, t.tool_calls,
    coalesce({first_user_message('t.root_input')}, {first_user_message('t.agent_input')},
             {first_user_message('io.first_input')}) AS input,
    coalesce({final_answer('t.root_output')}, {final_answer('t.agent_output')},
             {final_answer('io.last_output')}) AS output,
    e.eval_score,
    t.owner, t.service_name, t.date
FROM per_trace AS t
-- one row per trace_id on both: DuckDB drops each join unless its columns are selected
LEFT JOIN llm_io AS io ON io.trace_id = t.trace_id
LEFT JOIN scores AS e ON e.trace_id = t.trace_id
-- the judge's and the bench runner's own calls are traced like any GenAI call, but they
-- are not an agent's runs
WHERE t.genai_spans > 0 AND coalesce(t.service_name, '') NOT IN ('{JUDGE_SERVICE}', '{BENCH_SERVICE}')"""



# What each ingest key's owner stored per UTC day (the receiver counts quotas in memory,
# collector/keys.py; this is the lake's lasting record). NULL owner: sent without a key.
KEY_USAGE_SQL = """CREATE OR REPLACE VIEW key_usage AS
WITH items AS (
    SELECT owner, CAST(date AS DATE) AS date, 1 AS spans, 0 AS log_records, 0 AS metric_points,
           trace_id, span_type FROM spans
    UNION ALL SELECT owner, CAST(date AS DATE), 0, 1, 0, NULL, NULL FROM logs
    UNION ALL SELECT owner, CAST(date AS DATE), 0, 0, 1, NULL, NULL FROM metrics
)
SELECT owner, date, CAST(sum(spans) AS BIGINT) AS spans, CAST(sum(log_records) AS BIGINT) AS log_records,
       CAST(sum(metric_points) AS BIGINT) AS metric_points,
       count(DISTINCT trace_id) AS traces, count(*) FILTER (WHERE span_type = 'llm') AS llm_calls
FROM items
GROUP BY owner, date"""


def view_names() -> tuple[str, ...]:
    """Every view, of the registry as it is now: one per lake table, then the computed ones."""
    return (*(t.name for t in tables()), *COMPUTED_VIEWS)


VIEW_NAMES = view_names()  # of the tables registered in storage.schema


def view_ddl(lake_root: str | Path) -> list[str]:
    """CREATE VIEW statements, dependencies first."""
    return [
        *(view_sql(lake_root, t) for t in tables()),
        span_messages_sql(lake_root),
        SPAN_AGENTS_SQL,
        llm_calls_sql(),
        tool_calls_sql(),
        TOOL_CALL_LINKS_SQL,
        agent_runs_sql(lake_root),
        bench_results_sql(),
        bench_tests_sql(),
        bench_goodput_sql(),
        suite_cases_sql(),
        suite_runs_sql(),
        gate_verdicts_sql(),
        replay_runs_sql(),
        KEY_USAGE_SQL,
        *conventions.views_sql(lake_root),
    ]


def print_views(lake_root: str | Path) -> str:
    """The views as a script for the ``duckdb`` CLI: ``otelbench sql --print-views | duckdb``."""
    header = f"-- otelbench views over the lake at {lake_location(lake_root)}\n\n"
    return header + "".join(stmt + ";\n\n" for stmt in view_ddl(lake_root))

