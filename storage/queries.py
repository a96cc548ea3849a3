"""All SQL of otelbench: the views over the lake and the named queries.

Functions here only *build* SQL (pure, tested as input → SQL); ``storage.duckdb`` runs it.
Values are always bound as parameters. The only things ever formatted into SQL are the
lake's own folder path (``CREATE VIEW`` cannot take parameters) and column names from
``storage.schema`` — both ours, never a caller's, and both quoted.

Views (documented column by column in docs/schema.md):

- ``spans``, ``logs``, ``metrics``: the lake tables as stored, plus the ``date`` partition.
- ``span_messages``: GenAI message *events* (log rows) folded into one row per span —
  the one place that decides how log events become a call's input/output messages.
- ``span_agents``: spans that name an agent, by key.
- ``llm_calls``, ``tool_calls``: one row per llm / tool span, with its agent resolved.
- ``agent_runs``: one row per trace that did any llm, agent or tool work.
- ``bench_results``, ``bench_tests``: ``otelbench bench`` results, one row per model run
  and one per judged test, read from the bench runner's spans.

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

from collections.abc import Sequence
from pathlib import Path

from storage.schema import PARTITION_COLUMN, TABLES

VIEW_NAMES = ("spans", "logs", "metrics", "span_messages", "span_agents", "llm_calls", "tool_calls", "agent_runs",
              "bench_results", "bench_tests")

_GLOB_CHARS = set("*?[]{}")


def sql_string(value: str) -> str:
    """A SQL string literal; used only for the lake path, which views cannot bind."""
    return "'" + value.replace("'", "''") + "'"


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_glob(lake_root: str | Path, table: str) -> str:
    """Every Parquet file of ``table``; hidden temp files and journals never match."""
    root = str(Path(lake_root).absolute())
    if _GLOB_CHARS & set(root):
        # the path becomes a glob pattern: a '[' in a folder name would silently match nothing
        raise ValueError(f"lake path must not contain any of {''.join(sorted(_GLOB_CHARS))}: {root}")
    return f"{root}/{table}/*/*.parquet"


def read_table_sql(lake_root: str | Path, table: str, *, row_numbers: bool = False) -> str:
    """The ``read_parquet`` call behind a table view.

    union_by_name: files written before a column was added still read (as NULL); the seed
    file always carries the current schema. hive_types pins ``date`` to DATE rather than
    trusting auto-detection.
    """
    extra = ", filename = true, file_row_number = true" if row_numbers else ""
    return (
        f"read_parquet({sql_string(table_glob(lake_root, table))}, hive_partitioning = true, "
        f"union_by_name = true, hive_types = {{{sql_string(PARTITION_COLUMN)}: 'DATE'}}{extra})"
    )


def table_view_sql(lake_root: str | Path, table: str) -> str:
    return f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM {read_table_sql(lake_root, table)}"


# --------------------------------------------------------------------------- messages
def span_messages_sql(lake_root: str | Path) -> str:
    """GenAI message log events → one row per span: input_messages, output_messages.

    The rule, kept here and only here (event shapes: collector.normalize):
    - a ``details`` event (gen_ai.client.inference.operation.details) carries the whole
      call as ``{"input": [...]|null, "output": [...]|null}``; the latest one wins, side
      by side (its null side falls through to the events below);
    - otherwise the ``input`` (resp. ``output``) events' message arrays are concatenated
      in event time order (ties: file, then row order — the order they were received).
    Malformed JSON is skipped rather than failing every query that touches the view.

    The message directions are picked by a SEMI JOIN, not ``IN (...)``: a filter pushed
    into this scan would stop DuckDB from dropping llm_calls' join when no message column
    is used, and the join still pushes the directions into the scan at run time, so row
    groups of other log records are skipped all the same.
    """
    order = "time, filename, file_row_number"

    def concat(direction: str) -> str:
        return (
            f"CAST(to_json(flatten(list(TRY_CAST(messages AS JSON[]) ORDER BY {order}) "
            f"FILTER (WHERE message_direction = '{direction}'))) AS VARCHAR)"
        )

    def detail(side: str) -> str:
        latest = f"arg_max(messages, ({order})) FILTER (WHERE message_direction = 'details')"
        # json_extract of an absent or null side gives NULL or 'null': both mean "not given"
        return f"nullif(CAST(json_extract(TRY_CAST({latest} AS JSON), '$.{side}') AS VARCHAR), 'null')"

    return f"""CREATE OR REPLACE VIEW span_messages AS
SELECT
    l.trace_id,
    l.span_id,
    coalesce({detail('input')}, {concat('input')}) AS input_messages,
    coalesce({detail('output')}, {concat('output')}) AS output_messages
FROM {read_table_sql(lake_root, 'logs', row_numbers=True)} AS l
SEMI JOIN (VALUES ('input'), ('output'), ('details')) AS d(direction) ON l.message_direction = d.direction
WHERE l.messages IS NOT NULL AND l.trace_id IS NOT NULL AND l.span_id IS NOT NULL
GROUP BY l.trace_id, l.span_id"""


# --------------------------------------------------------------------------- agents
# Which agent made a call (storage.schema, resolved_agent): the span's own agent_name
# (gen_ai.agent.name on the call itself); else its direct parent's — an invoke_agent
# span, or a GenAI trace's root, which collector.normalize names after service.name;
# else the span's own service.name. One level only: a recursive walk up the span tree
# costs seconds at 10M spans.
SPAN_AGENTS_SQL = """CREATE OR REPLACE VIEW span_agents AS
SELECT a.trace_id, a.span_id, any_value(a.agent_name) AS agent_name
FROM spans AS a
WHERE a.agent_name IS NOT NULL
-- one row per span even if it was stored twice, so a join never duplicates a call
GROUP BY a.trace_id, a.span_id"""


def _parents_cte(name: str, children: str, column: str, alias: str, *, where: str = "") -> str:
    """CTE ``name``: (trace_id, span_id, ``alias``) of the spans that are parents of the
    rows of CTE ``children``, with their ``column`` — only those parents, one row each."""
    return f"""{name} AS (
    SELECT p.trace_id, p.span_id, any_value(p.{column}) AS {alias}
    FROM spans AS p
    -- an inner join, not a semi join: a trace_id filter then reaches both sides
    JOIN (SELECT DISTINCT trace_id, parent_span_id FROM {children}) AS c
      ON p.trace_id = c.trace_id AND p.span_id = c.parent_span_id{f"{chr(10)}    WHERE {where}" if where else ""}
    -- one row per span even if it was stored twice, so a join to it never duplicates a child
    GROUP BY p.trace_id, p.span_id
)"""


def _agent_ctes(span_type: str, extra: str = "") -> str:
    """CTEs ending in ``calls``: every ``span_type`` span, ``agent`` resolved (the rule above).

    Resolved rows (``resolved_agent`` set by the lake) need no join. The rest —
    ``unresolved``: written before their parent, not compacted since — look their parent
    up in ``parents``, which aggregates only those parents: aggregating every agent span
    of the lake would cost more than the whole scan. ``extra``: more columns for both
    branches, each ``, <expr> AS <name>`` over ``s``.
    """
    return f"""unresolved AS NOT MATERIALIZED (
    SELECT * FROM spans AS s WHERE s.span_type = '{span_type}' AND s.resolved_agent IS NULL
),
{_parents_cte("parents", "unresolved", "agent_name", "agent_name", where="p.agent_name IS NOT NULL")},
calls AS (
    SELECT s.*, s.resolved_agent AS agent{extra}
    FROM spans AS s
    WHERE s.span_type = '{span_type}' AND s.resolved_agent IS NOT NULL
    UNION ALL
    SELECT s.*, coalesce(s.agent_name, p.agent_name, s.service_name) AS agent{extra}
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
    CASE WHEN c.status_code = 'error' THEN 'error' ELSE 'ok' END AS status,
    c.duration_ms, c.error_message, c.start_time, c.date
FROM calls AS c"""


# --------------------------------------------------------------------------- runs
# The root: the span without a parent, else (root not received yet) the earliest span.
# One BIGINT orders both ways at once; arg_min on it is cheaper than on a (bool, ts) struct.
_ROOT_FIRST = "((s.parent_span_id IS NOT NULL)::BIGINT << 60) + epoch_us(s.start_time)"
# The run's agent in one pass: the root's agent_name, else the earliest agent span's, else
# the root's service.name (rank in the top bits, then time).
_AGENT_RANK = """((CASE WHEN s.parent_span_id IS NULL AND s.agent_name IS NOT NULL THEN 0
                WHEN s.span_type = 'agent' AND s.agent_name IS NOT NULL THEN 1
                WHEN s.parent_span_id IS NULL THEN 2 ELSE 3 END)::BIGINT << 60)
             + epoch_us(s.start_time)"""

AGENT_RUNS_SQL = f"""CREATE OR REPLACE VIEW agent_runs AS
WITH per_trace AS (
    -- one aggregate per root field (not one struct), so unused ones are pruned
    SELECT
        s.trace_id,
        arg_min(coalesce(s.agent_name, s.service_name), {_AGENT_RANK}) AS agent,
        arg_min(s.name, {_ROOT_FIRST}) AS root_name,
        bool_or(s.status_code = 'error' AND (s.parent_span_id IS NULL OR s.span_type = 'agent')) AS errored,
        arg_min(s.start_time, {_ROOT_FIRST}) AS start_time,
        arg_min(s.duration_ms, {_ROOT_FIRST}) AS duration_ms,
        sum(s.cost_usd) FILTER (WHERE s.span_type = 'llm') AS cost_usd,
        CAST(sum(s.input_tokens) FILTER (WHERE s.span_type = 'llm') AS BIGINT) AS input_tokens,
        CAST(sum(s.output_tokens) FILTER (WHERE s.span_type = 'llm') AS BIGINT) AS output_tokens,
        count(*) FILTER (WHERE s.span_type = 'llm') AS llm_calls,
        count(*) FILTER (WHERE s.span_type = 'tool') AS tool_calls,
        count(*) FILTER (WHERE s.span_type IN ('llm', 'agent', 'tool')) AS genai_spans,
        arg_min(s.input_messages, {_ROOT_FIRST}) AS root_input,
        arg_min(s.output_messages, {_ROOT_FIRST}) AS root_output,
        arg_min(s.owner, {_ROOT_FIRST}) AS owner,
        arg_min(s.service_name, {_ROOT_FIRST}) AS service_name,
        arg_min(s.date, {_ROOT_FIRST}) AS date
    FROM spans AS s
    GROUP BY s.trace_id
),
llm_io AS (
    SELECT trace_id,
           arg_min(input_messages, start_time) AS first_input,
           arg_max(output_messages, start_time) AS last_output
    FROM llm_calls
    GROUP BY trace_id
)
SELECT
    t.trace_id, t.agent, t.root_name,
    CASE WHEN t.errored THEN 'error' ELSE 'ok' END AS status,
    t.start_time, t.duration_ms,
    t.cost_usd, t.input_tokens, t.output_tokens, t.llm_calls, t.tool_calls,
    coalesce(t.root_input, io.first_input) AS input,
    coalesce(t.root_output, io.last_output) AS output,
    t.owner, t.service_name, t.date
FROM per_trace AS t
-- one row per trace_id: DuckDB drops this join unless input/output are selected
LEFT JOIN llm_io AS io ON io.trace_id = t.trace_id
WHERE t.genai_spans > 0"""


# --------------------------------------------------------------------------- bench
# ``otelbench bench`` exports its results as spans (bench_runner/spans.py has the tree):
# a root span per model run (bench.kind = model_run) carrying the results as ``bench.*``
# attributes, a chat span per request, and under each chat span a span per test judged on
# its reply (bench.kind = test). The views read those attributes from ``spans.attributes``;
# their names are the runner's, formatted into the SQL as constants of ours. The
# runner's instrumentation scope picks its spans cheaply before any JSON is parsed.
BENCH_SCOPE = "otelbench.bench_runner"


def bench_attr(name: str, cast: str = "VARCHAR", alias: str = "s") -> str:
    """One ``bench.*`` (or other) span attribute as ``cast``; NULL when absent or unfit."""
    path = sql_string(f'$."{name}"')
    if cast.endswith("[]"):  # a string array: the JSON array, cast as a whole
        return f"TRY_CAST(json_extract({alias}.attributes, {path}) AS {cast})"
    value = f"json_extract_string({alias}.attributes, {path})"
    return value if cast == "VARCHAR" else f"TRY_CAST({value} AS {cast})"


def _bench_spans(kind: str) -> str:
    return f"s.scope_name = {sql_string(BENCH_SCOPE)} AND {bench_attr('bench.kind')} = {sql_string(kind)}"


def bench_results_sql() -> str:
    """One row per model run: the root span of ``bench <model>`` and its summary."""
    return f"""CREATE OR REPLACE VIEW bench_results AS
SELECT
    s.trace_id, s.start_time, s.duration_ms,
    s.request_model AS model, s.provider,
    {bench_attr('bench.server.kind')} AS server_kind,
    {bench_attr('server.address')} AS server_address,
    {bench_attr('server.port', 'INTEGER')} AS server_port,
    {bench_attr('bench.suite')} AS suite,
    {bench_attr('bench.suite.version')} AS suite_version,
    {bench_attr('bench.speed.version')} AS speed_version,
    {bench_attr('bench.quick', 'BOOLEAN')} AS quick,
    {bench_attr('bench.runs', 'INTEGER')} AS runs,
    {bench_attr('bench.decode_tps.median', 'DOUBLE')} AS decode_tps_median,
    {bench_attr('bench.ttft_ms.median', 'DOUBLE')} AS ttft_ms_median,
    {bench_attr('bench.prefill_tps.median', 'DOUBLE')} AS prefill_tps_median,
    {bench_attr('bench.ability_score', 'DOUBLE')} AS ability_score,
    {bench_attr('bench.agent_fitness_score', 'DOUBLE')} AS agent_fitness_score,
    {bench_attr('bench.tests_passed', 'INTEGER')} AS tests_passed,
    {bench_attr('bench.tests_total', 'INTEGER')} AS tests_total,
    {bench_attr('bench.confidence')} AS confidence,
    {bench_attr('bench.reasons', 'VARCHAR[]')} AS confidence_reasons,
    {bench_attr('bench.gguf.quantization')} AS quantization,
    {bench_attr('bench.gguf.architecture')} AS architecture,
    {bench_attr('bench.failures', 'INTEGER')} AS failures,
    CASE WHEN s.status_code = 'error' THEN 'error' ELSE 'ok' END AS status,
    s.error_message,
    s.owner, s.date
FROM spans AS s
WHERE {_bench_spans('model_run')}"""


def bench_tests_sql() -> str:
    """One row per judged test; the model is the one its reply's chat span asked for."""
    return f"""CREATE OR REPLACE VIEW bench_tests AS
WITH tests AS NOT MATERIALIZED (
    SELECT s.* FROM spans AS s WHERE {_bench_spans('test')}
),
{_parents_cte("replies", "tests", "request_model", "model")}
SELECT
    s.trace_id, s.span_id, s.parent_span_id AS reply_span_id, s.start_time,
    r.model,
    {bench_attr('bench.suite')} AS suite,
    {bench_attr('bench.suite.version')} AS suite_version,
    {bench_attr('bench.test.name')} AS test,
    {bench_attr('bench.test.category')} AS category,
    {bench_attr('bench.test.checker')} AS checker,
    {bench_attr('bench.test.verdict')} AS verdict,
    {bench_attr('bench.test.reason')} AS reason,
    s.owner, s.date
FROM tests AS s
LEFT JOIN replies AS r ON r.trace_id = s.trace_id AND r.span_id = s.parent_span_id"""


def view_ddl(lake_root: str | Path) -> list[str]:
    """CREATE VIEW statements, dependencies first."""
    return [
        *(table_view_sql(lake_root, name) for name in TABLES),
        span_messages_sql(lake_root),
        SPAN_AGENTS_SQL,
        llm_calls_sql(),
        tool_calls_sql(),
        AGENT_RUNS_SQL,
        bench_results_sql(),
        bench_tests_sql(),
    ]


def print_views(lake_root: str | Path) -> str:
    """The views as a script for the ``duckdb`` CLI: ``otelbench sql --print-views | duckdb``."""
    header = f"-- otelbench views over the lake at {Path(lake_root).absolute()}\n\n"
    return header + "".join(stmt + ";\n\n" for stmt in view_ddl(lake_root))


# --------------------------------------------------------------------------- named queries
LLM_CALLS_BY_AGENT = "SELECT agent, count(*) FROM llm_calls GROUP BY agent"

AGENT_RUNS_BY_AGENT = """SELECT agent, count(*) AS runs, sum(cost_usd) AS cost_usd,
       sum(llm_calls) AS llm_calls, count(*) FILTER (WHERE status = 'error') AS errors
FROM agent_runs GROUP BY agent ORDER BY runs DESC"""

LLM_CALLS_OF_TRACE = "SELECT * FROM llm_calls WHERE trace_id = $trace_id ORDER BY start_time"
AGENT_RUN = "SELECT * FROM agent_runs WHERE trace_id = $trace_id"

# Timed by benchmarks/query.py (figures quoted in the README), besides the two above.
LLM_CALL_MESSAGES_COUNT = "SELECT count(input_messages) FROM llm_calls"
SPANS_BY_TYPE = "SELECT span_type, count(*) FROM spans GROUP BY span_type"
TOOL_CALLS_BY_AGENT = "SELECT agent, count(*) FROM tool_calls GROUP BY agent"
UNRESOLVED_CALLS = "SELECT count(*) FROM spans WHERE span_type IN ('llm', 'tool') AND resolved_agent IS NULL"
COUNT_SPANS = "SELECT count(*) FROM spans"
COUNT_LLM_CALLS = "SELECT count(*) FROM llm_calls"
SOME_TRACE_WITH_LOG_MESSAGES = "SELECT trace_id FROM logs WHERE message_direction = 'input' LIMIT 1"


# --------------------------------------------------------------------------- lockdown
# Run by storage.duckdb after the views exist, in this order (../shared/REFERENCE.md).
# TIMESTAMPTZ values come back in UTC whatever the host's zone (an ICU setting: not
# accepted in duckdb.connect's config, so set before the lock).
SET_TIME_ZONE_UTC = "SET TimeZone = 'UTC'"
SET_ALLOWED_DIRECTORIES = "SET allowed_directories = $1"  # bound: [lake folder + '/']
DISABLE_EXTERNAL_ACCESS = "SET enable_external_access = false"
LOCK_CONFIGURATION = "SET lock_configuration = true"


# --------------------------------------------------------------------------- compaction
DISABLE_PROGRESS_BAR = "SET enable_progress_bar = false"


def compact_sql(columns: Sequence[str], key: Sequence[str]) -> str:
    """Rows of ``$files`` as one stream, without key repeats.

    Of rows sharing ``key``, the first (earliest file, then row) is kept. Duplicates are
    found on the key columns alone; the full rows only stream (no ORDER BY: DuckDB's
    sort cannot spill kilobyte strings; ``storage.rowgroups`` orders the row groups).
    ``columns``: the ones the files have.
    """
    ctes, rows = _compact_rows(key)
    cols = ", ".join(ident(c) for c in columns)
    return f"{ctes} SELECT {cols} FROM {rows}"


def compact_spans_sql(columns: Sequence[str], key: Sequence[str]) -> str:
    """``compact_sql`` for spans, with ``resolved_agent`` filled (the rule: storage.schema).

    A span without agent_name or resolved_agent looks its parent up: among the spans of
    the whole lake (``$lake``) that name an agent — few, and the files' row-group
    statistics skip the rest — else among every span of its own partition
    (``$partition``), which resolves it to its service. A parent found nowhere leaves it
    NULL: the views' join resolves it at query time, a later compaction for good.
    """
    ctes, rows = _compact_rows(key)
    given = "s.resolved_agent" if "resolved_agent" in columns else "NULL"
    resolved = (
        f"coalesce({given}, s.agent_name, CASE WHEN s.parent_span_id IS NULL THEN s.service_name END, "
        "n.agent_name, CASE WHEN h.span_id IS NOT NULL THEN s.service_name END) AS resolved_agent"
    )
    cols = ", ".join(resolved if c == "resolved_agent" else f"s.{ident(c)}" for c in columns)
    if "resolved_agent" not in columns:
        cols += f", {resolved}"
    given_src = "resolved_agent" if "resolved_agent" in columns else "NULL"
    # the parent to look up; NULL (no hash-join work) for rows that need none
    parent = f"CASE WHEN s.agent_name IS NULL AND {given} IS NULL THEN s.parent_span_id END"
    return f"""{ctes},
wanted AS (
    SELECT DISTINCT trace_id, parent_span_id AS span_id FROM src
    WHERE agent_name IS NULL AND {given_src} IS NULL AND parent_span_id IS NOT NULL
),
named AS (
    SELECT p.trace_id, p.span_id, any_value(p.agent_name) AS agent_name
    FROM read_parquet($lake, union_by_name = true, hive_partitioning = false) AS p
    SEMI JOIN wanted USING (trace_id, span_id)
    WHERE p.agent_name IS NOT NULL
    GROUP BY p.trace_id, p.span_id
),
near AS (
    SELECT DISTINCT p.trace_id, p.span_id
    FROM read_parquet($partition, union_by_name = true, hive_partitioning = false) AS p
    SEMI JOIN wanted USING (trace_id, span_id)
)
SELECT {cols}
FROM {rows} AS s
LEFT JOIN named AS n ON n.trace_id = s.trace_id AND n.span_id = {parent}
LEFT JOIN near AS h ON h.trace_id = s.trace_id AND h.span_id = {parent}"""


def _compact_rows(key: Sequence[str]) -> tuple[str, str]:
    """The CTEs shared by the compaction queries, and the relation of the rows kept."""
    # NOT MATERIALIZED: each use reads only the columns it needs, straight from the files
    src = (
        "SELECT *, list_position($files, filename) AS _file, file_row_number AS _row "
        "FROM read_parquet($files, filename = true, file_row_number = true, "
        "union_by_name = true, hive_partitioning = false)"
    )
    if not key:
        return f"WITH src AS NOT MATERIALIZED ({src})", "src"
    keys = ", ".join(ident(k) for k in key)
    return (
        f"""WITH src AS NOT MATERIALIZED ({src}),
dup_keys AS (SELECT {keys} FROM src GROUP BY ALL HAVING count(*) > 1),
drop_rows AS (
    SELECT _file, _row FROM src SEMI JOIN dup_keys USING ({keys})
    QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY _file, _row) > 1
),
kept AS NOT MATERIALIZED (SELECT * FROM src ANTI JOIN drop_rows USING (_file, _row))""",
        "kept",
    )


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
