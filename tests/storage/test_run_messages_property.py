"""A run's task and answer from its llm calls (``agent_runs``' ``llm_io``: the first call
that has input, the last that has output) equal what the plain rule over ``llm_calls``
gives — every call's messages folded from its log events, then ``arg_min`` / ``arg_max``
by start time — over random layouts: messages on the span or as log events, several
events, ``details`` events with a null or missing side, malformed JSON, events at the
same time. Real DuckDB over real Parquet files."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otelbench.storage.queries import lockdown
from otelbench.storage.queries.views import agent_runs_sql, llm_calls_sql, span_messages_sql
from otelbench.storage.schema import LOGS, SPANS

# The rule the view's llm_io stands for, kept as the oracle: fold every call's events
# (span_messages, through llm_calls), then the first call with input, the last with output.
PLAIN_LLM_IO = """llm_io AS (
    SELECT trace_id,
           arg_min(input_messages, start_time) AS first_input,
           arg_max(output_messages, start_time) AS last_output
    FROM llm_calls
    GROUP BY trace_id
)"""

T0 = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
MESSAGE = st.sampled_from([
    {"role": "user", "parts": [{"type": "text", "content": "task A"}]},
    {"role": "user", "parts": [{"type": "text", "content": "task B"}]},
    {"role": "user", "parts": [{"type": "text", "content": ""}]},
    {"role": "assistant", "parts": [{"type": "text", "content": "answer A"}]},
    {"parts": [{"type": "text", "content": "answer B"}]},
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {}}]},
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {}},
                                    {"type": "text", "content": "answer C"}]},
])
ARRAY = st.one_of(st.lists(MESSAGE, max_size=3).map(json.dumps), st.sampled_from(["not json", "{}", "[1", "null"]))
SIDE = st.one_of(st.none(), ARRAY)  # a span's own input/output
DETAILS = st.one_of(
    st.fixed_dictionaries({}, optional={"input": st.one_of(st.none(), st.lists(MESSAGE, max_size=2)),
                                        "output": st.one_of(st.none(), st.lists(MESSAGE, max_size=2))}).map(json.dumps),
    st.sampled_from(["not json", "[]"]))
EVENT = st.one_of(st.tuples(st.sampled_from(["input", "output"]), ARRAY), st.tuples(st.just("details"), DETAILS),
                  st.tuples(st.just("other"), ARRAY))
CALL = st.tuples(SIDE, SIDE, st.lists(st.tuples(st.integers(0, 2), EVENT), max_size=4))  # (time, event)
TRACE = st.lists(CALL, min_size=1, max_size=4)


def _table(schema: pa.Schema, rows: list[dict]) -> pa.Table:
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in schema})


def _write(folder: Path, traces: list[list[tuple]]) -> None:
    spans, logs = [], []
    for t, calls in enumerate(traces):
        trace_id = f"t{t}"
        spans.append({"trace_id": trace_id, "span_id": "root", "span_type": "agent", "name": "run",
                      "agent_name": "agent", "resolved_agent": "agent", "start_time": T0})
        for c, (own_in, own_out, events) in enumerate(calls):
            span_id = f"c{c}"
            # distinct start times: the plain rule picks among calls that start together at random
            spans.append({"trace_id": trace_id, "span_id": span_id, "parent_span_id": "root", "span_type": "llm",
                          "name": "chat", "resolved_agent": "agent", "input_messages": own_in,
                          "output_messages": own_out, "start_time": T0 + dt.timedelta(seconds=c + 1)})
            for at, (direction, messages) in events:
                logs.append({"trace_id": trace_id, "span_id": span_id, "message_direction": direction,
                             "messages": messages, "time": T0 + dt.timedelta(seconds=at)})
    pq.write_table(_table(SPANS.stored_schema, spans), folder / "spans.parquet")
    pq.write_table(_table(LOGS.stored_schema, logs), folder / "logs.parquet")


_TASK = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "task A"}]}])
_ANSWER = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "answer A"}]}])


@example(traces=[[  # a call whose only input event is malformed still has input (an empty one)
    (None, None, [(0, ("input", "not json"))]), (_TASK, _ANSWER, [])]])
@example(traces=[[  # a details event's null side falls through to the events; its given side wins
    (_TASK, None, [(1, ("details", '{"input": null, "output": null}')), (0, ("output", _ANSWER))]),
    (None, None, [(2, ("details", '{"output": []}')), (2, ("output", _ANSWER)), (2, ("input", _TASK))])]])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traces=st.lists(TRACE, min_size=1, max_size=4))
def test_a_runs_task_and_answer_from_its_calls_follow_the_plain_rule(tmp_path: Path, traces) -> None:
    _write(tmp_path, traces)
    logs = (f"(SELECT * FROM read_parquet('{tmp_path / 'logs.parquet'}', filename = true, "
            "file_row_number = true))")
    view = agent_runs_sql(tmp_path, logs=logs)
    start, end = view.index("llm_sides AS ("), view.index("\nSELECT\n    t.trace_id")
    plain = view[:start] + PLAIN_LLM_IO + view[end:]
    con = duckdb.connect()
    con.execute(lockdown.SET_TIME_ZONE_UTC)
    con.execute(f"CREATE VIEW spans AS SELECT *, DATE '2025-01-01' AS date "
                f"FROM read_parquet('{tmp_path / 'spans.parquet'}')")
    con.execute("CREATE VIEW evals AS SELECT NULL::VARCHAR AS trace_id, NULL::DOUBLE AS score, "
                "NULL::TIMESTAMPTZ AS judged_at WHERE false")
    con.execute(span_messages_sql(tmp_path, logs=logs))
    con.execute(llm_calls_sql())
    con.execute(view)
    con.execute(plain.replace("VIEW agent_runs", "VIEW plain_runs", 1))
    # the picked calls' messages themselves, then the run's task and answer made of them
    io = "SELECT trace_id, first_input, last_output FROM llm_io ORDER BY trace_id"
    assert (con.sql(f"WITH {view[start:end]} {io}").fetchall()
            == con.sql(f"WITH {PLAIN_LLM_IO} {io}").fetchall())
    runs = "SELECT trace_id, input, output FROM {} ORDER BY trace_id"
    got, want = con.sql(runs.format("agent_runs")).fetchall(), con.sql(runs.format("plain_runs")).fetchall()
    assert len(got) == len(traces)
    assert got == want
    # and one run alone (a trace_id filter reaches every side of the view)
    one = con.execute("SELECT trace_id, input, output FROM agent_runs WHERE trace_id = ?", [want[-1][0]]).fetchall()
    assert one == want[-1:]
    con.close()
