"""The lake's tables: the single source of table and column names and types.

Every table is a folder of hive-partitioned Parquet files under the lake root,
``<lake>/<table>/date=YYYY-MM-DD/<file>.parquet``. The partition column ``date``
is not stored inside the files (readers derive it from the folder name).

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or changes type;
``docs/schema.md`` documents every column and is checked against this module by
``tests/storage/test_schema_docs.py``.

Two kinds of tables (``Table.kind``): *signal* tables (spans, logs, metrics), written by
the collector's flusher, and *derived* tables, written by processors as whole commits
(``storage.derived``). docs/schema.md describes both and how derived rows are replaced.

Version history: 1 the first lake; 2 added ``spans.resolved_agent``, a *lake column*
(filled by ``storage.lake`` itself, never by a producer); 3 added ``spans.request_agent``
(the agent an ingest request named) and ``spans.agent_call_id`` and made ``agent_name`` the name a span itself gives
(no service-name fallback: the views fall back); 4 added ``spans.attributes_moved``; 5 added
``spans.tool_arguments`` and ``spans.tool_result``; 6 added the ``judge_repeats`` table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = 6

PARTITION_COLUMN = "date"

_TS = pa.timestamp("us", tz="UTC")
_STR = pa.string()
_I64 = pa.int64()
_I32 = pa.int32()
_F64 = pa.float64()

# Columns shared by every span row: the OTLP span, flattened the way the
# Collector-contrib ClickHouse exporter does, raw attribute maps kept as JSON.
_SPAN_CORE = [
    ("trace_id", _STR),  # 32 lowercase hex chars
    ("span_id", _STR),  # 16 lowercase hex chars
    ("parent_span_id", _STR),  # null for a root span
    ("trace_state", _STR),
    ("name", _STR),
    ("kind", _STR),  # unspecified|internal|server|client|producer|consumer
    ("service_name", _STR),
    ("scope_name", _STR),
    ("scope_version", _STR),
    ("start_time", _TS),
    ("end_time", _TS),
    ("duration_ms", _F64),
    ("status_code", _STR),  # unset|ok|error
    ("status_message", _STR),
    ("flags", _I64),
    ("owner", _STR),  # owner of the ingest key, null when auth is off
    ("request_agent", _STR),  # the agent the request named (X-Bench-Agent, else the key's default)
    ("resource_attributes", _STR),  # JSON object
    ("scope_attributes", _STR),  # JSON object
    ("attributes", _STR),  # JSON object, every attribute as sent but those named in attributes_moved
    ("attributes_moved", pa.list_(_STR)),  # keys stored once, in the column their value equals (MOVED_ATTRIBUTES)
    ("events", _STR),  # JSON array [{name, time_unix_nano, attributes, dropped_attributes_count}]
    ("links", _STR),  # JSON array [{trace_id, span_id, trace_state, attributes, flags}]
    ("dropped_attributes_count", _I64),
    ("dropped_events_count", _I64),
    ("dropped_links_count", _I64),
]

# A span attribute whose value is exactly the text of a promoted column is stored once,
# in that column: ``attributes`` leaves it out and ``attributes_moved`` names it (message
# text is most of a GenAI span's bytes; storing it twice cost CPU to write and compress).
# The ``spans`` view puts it back (storage.queries.tables.span_attributes_sql), so
# ``attributes`` reads as sent.
MOVED_ATTRIBUTES = {"gen_ai.input.messages": "input_messages", "gen_ai.output.messages": "output_messages"}

# Promoted GenAI fields, derived by the normalizer from whichever convention the
# instrumentation used (the alias table: docs/normalization.md).
_SPAN_GENAI = [
    ("span_type", _STR),  # llm|agent|tool|retrieval|embedding|other
    ("operation", _STR),  # chat, text_completion, embeddings, execute_tool, invoke_agent, ...
    ("provider", _STR),
    ("agent_name", _STR),
    ("agent_id", _STR),
    ("agent_call_id", _STR),  # one invocation of the agent (gen_ai.agent.call.id)
    ("request_model", _STR),
    ("response_model", _STR),
    ("input_tokens", _I64),  # gross: includes cached input tokens
    ("output_tokens", _I64),
    ("total_tokens", _I64),
    ("cache_read_tokens", _I64),
    ("cache_write_tokens", _I64),
    ("reasoning_tokens", _I64),
    ("cost_usd", _F64),
    ("cost_source", _STR),  # reported|computed|null
    ("finish_reasons", pa.list_(_STR)),
    ("conversation_id", _STR),
    ("tool_name", _STR),
    ("tool_call_id", _STR),
    ("tool_arguments", _STR),  # what the tool was called with: JSON text (an object) as sent
    ("tool_result", _STR),  # what it returned: a string as itself, any other value its JSON text
    ("ttft_ms", _F64),
    ("error_type", _STR),
    ("error_message", _STR),
    ("input_messages", _STR),  # JSON array of {role, parts:[...]} (GenAI message shape)
    ("output_messages", _STR),  # JSON array of {role, parts:[...], finish_reason?}
]

# Columns the lake fills itself (storage.lake), after the ones a producer supplies.
_SPAN_LAKE = [
    # The agent llm_calls / tool_calls attribute the span to: agent_name, else the direct
    # parent's agent_name, else service_name. NULL until the parent has been seen: filled
    # when a batch is written (roots, parents in the same batch) and at compaction (any
    # parent in the lake), so the views skip their parent join for resolved rows.
    ("resolved_agent", _STR),
]

_LOG_COLUMNS = [
    ("time", _TS),
    ("observed_time", _TS),
    ("trace_id", _STR),
    ("span_id", _STR),
    ("severity_number", _I32),
    ("severity_text", _STR),
    ("event_name", _STR),  # LogRecord.event_name, else the `event.name` attribute
    ("body", _STR),  # JSON of the AnyValue body (a plain string stays a JSON string)
    ("service_name", _STR),
    ("scope_name", _STR),
    ("flags", _I64),
    ("owner", _STR),
    ("resource_attributes", _STR),
    ("attributes", _STR),
    ("dropped_attributes_count", _I64),
    # GenAI message events, normalized: which side of the call the messages belong to
    # and the messages themselves in the same JSON shape as spans.input_messages.
    ("message_direction", _STR),  # input|output|null
    ("messages", _STR),  # JSON array of {role, parts:[...]}
]

_METRIC_COLUMNS = [
    ("time", _TS),
    ("start_time", _TS),
    ("metric_name", _STR),
    ("description", _STR),
    ("unit", _STR),
    ("metric_type", _STR),  # gauge|sum|histogram|exponential_histogram|summary
    ("aggregation_temporality", _STR),  # delta|cumulative|null
    ("is_monotonic", pa.bool_()),
    ("service_name", _STR),
    ("scope_name", _STR),
    ("owner", _STR),
    ("resource_attributes", _STR),
    ("attributes", _STR),
    ("value", _F64),  # gauge and sum points
    ("count", _I64),  # histogram / summary
    ("sum", _F64),
    ("min", _F64),
    ("max", _F64),
    ("bucket_counts", pa.list_(_I64)),
    ("explicit_bounds", pa.list_(_F64)),
    ("data", _STR),  # JSON of the full point (exemplars, quantiles, exponential buckets)
    ("flags", _I64),
]


# The columns the lake adds to every derived table's rows when it commits them
# (storage.derived): the commit's time, which is also its id (unique and increasing
# within a lake: "latest wins" compares it), the row's place in its commit, and the
# marker of a replace that left its result set empty.
COMMIT_COLUMNS = [
    ("committed_at", _TS),
    ("_row", _I64),
    ("_tombstone", pa.bool_()),
]

SIGNAL = "signal"  # written by the collector: checkpointed, swept, compacted
DERIVED = "derived"  # written by processors: whole commits, appended or replacing a result set


@dataclass(frozen=True)
class Table:
    """One lake table: its folder name, its Arrow schemas and its time column.

    ``schema``/``columns``: what a producer supplies (the normalizer, normalize/, emits exactly
    these for signal tables; a processor's DataFrame for derived ones). ``lake_columns``:
    columns the lake computes itself and appends; a producer may leave them out.
    ``stored_schema``: every column of every file (both, in that order).

    ``kind``: ``signal`` or ``derived`` (docs/schema.md, "Two kinds of tables").
    ``key``: rows with an equal key are one row — the collector drops repeats of a span;
    a derived table keeps the latest commit's. ``replace_by`` (derived only): None for a
    table that is only appended to; else the columns that name a *result set* (``()``:
    the whole table is one), which each write replaces as a unit.
    """

    name: str
    schema: pa.Schema
    time_column: str  # the column whose UTC date chooses the partition
    key: tuple[str, ...] = ()
    lake_columns: pa.Schema = pa.schema([])
    kind: str = SIGNAL
    replace_by: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in (SIGNAL, DERIVED):
            raise ValueError(f"table {self.name}: kind must be {SIGNAL!r} or {DERIVED!r}, not {self.kind!r}")
        if self.kind == SIGNAL and self.replace_by is not None:
            raise ValueError(f"table {self.name}: only derived tables are replaced")
        unknown = [c for c in (*self.key, *(self.replace_by or ())) if c not in self.schema.names]
        if unknown:
            raise ValueError(f"table {self.name}: key or result-set columns {unknown} are not among its columns")
        if self.time_column not in self.stored_columns:
            raise ValueError(f"table {self.name}: no time column {self.time_column!r}")

    @property
    def columns(self) -> list[str]:
        return self.schema.names

    @property
    def stored_schema(self) -> pa.Schema:
        return pa.schema([*self.schema, *self.lake_columns])

    @property
    def stored_columns(self) -> list[str]:
        return self.stored_schema.names


def derived_table(name: str, columns: list[tuple[str, pa.DataType]], *, key: tuple[str, ...] = (),
                  replace_by: tuple[str, ...] | None = None) -> Table:
    """A processor's table: its columns, then the lake's commit columns; partitioned by
    the UTC date of its commit."""
    return Table(name, pa.schema(columns), time_column="committed_at", key=key,
                 lake_columns=pa.schema(COMMIT_COLUMNS), kind=DERIVED, replace_by=replace_by)


SPANS = Table(
    "spans",
    pa.schema(_SPAN_CORE + _SPAN_GENAI),
    time_column="start_time",
    key=("trace_id", "span_id"),
    lake_columns=pa.schema(_SPAN_LAKE),
)
LOGS = Table("logs", pa.schema(_LOG_COLUMNS), time_column="time")
METRICS = Table("metrics", pa.schema(_METRIC_COLUMNS), time_column="time")

# Tables the collector writes, by OTLP signal.
TABLE_FOR_SIGNAL: dict[str, Table] = {"traces": SPANS, "logs": LOGS, "metrics": METRICS}

# The processors' tables (processors/): docs/schema.md documents every column.
# evals: one row per (run, judge model, judge version); judging a run again with the same
# judge replaces its row (a retried error, a re-judge), another judge version adds one.
EVALS = derived_table("evals", [
    ("trace_id", _STR),
    ("agent", _STR),
    ("score", _F64),  # 0..1, NULL on a judge error
    ("reasoning", _STR),
    ("judge_model", _STR),
    ("judge_version", _STR),  # prompt name + content hash
    ("method", _STR),  # logprobs | json | text
    ("error", _STR),
    ("raw_answer", _STR),  # the judge's answer when it could not be used
    ("attempts", _I64),
    ("input_truncated", pa.bool_()),
    ("judged_at", _TS),
], key=("trace_id", "judge_model", "judge_version"))
# judge_repeats: a judged run judged again by the same judge (otelbench process --rejudge N),
# kept apart from evals so that a repeat never replaces or adds to a run's score; one row
# per (run, judge model, judge version, repeat), beside the evals score it repeats.
JUDGE_REPEATS = derived_table("judge_repeats", [
    ("trace_id", _STR),
    ("agent", _STR),
    ("judge_model", _STR),
    ("judge_version", _STR),
    ("repeat", _I64),  # 1 for the first repeat of the run by this judge, then 2, ...
    ("first_score", _F64),  # the evals score this repeats
    ("score", _F64),  # 0..1, NULL on a judge error
    ("reasoning", _STR),
    ("method", _STR),
    ("error", _STR),
    ("judged_at", _TS),
], key=("trace_id", "judge_model", "judge_version", "repeat"))
# failure_clusters / cluster_members: each clustering run replaces one agent's whole set.
FAILURE_CLUSTERS = derived_table("failure_clusters", [
    ("agent", _STR),
    ("cluster_id", _I64),
    ("size", _I64),
    ("share", _F64),
    ("first_seen", _TS),
    ("last_seen", _TS),
    ("example_trace_ids", pa.list_(_STR)),
    ("top_terms", pa.list_(_STR)),
    ("description", _STR),
    ("params", _STR),  # JSON: the clustering parameters of the run
    ("run_at", _TS),
], replace_by=("agent",))
CLUSTER_MEMBERS = derived_table("cluster_members", [
    ("trace_id", _STR),
    ("agent", _STR),
    ("cluster_id", _I64),
], replace_by=("agent",))

DERIVED_TABLES: tuple[Table, ...] = (EVALS, JUDGE_REPEATS, FAILURE_CLUSTERS, CLUSTER_MEMBERS)

# The one list of tables: the lake, its views, the compactor and the docs test all read it.
TABLES: dict[str, Table] = {t.name: t for t in (SPANS, LOGS, METRICS, *DERIVED_TABLES)}


def tables(kind: str | None = None) -> list[Table]:
    """The registered tables (of one ``kind``), in registry order; read at call time."""
    return [t for t in TABLES.values() if kind is None or t.kind == kind]


SPAN_TYPES = ("llm", "agent", "tool", "retrieval", "embedding", "other")
