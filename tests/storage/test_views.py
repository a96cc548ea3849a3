"""The views (storage.queries) over a real lake: what each row means, and that the DDL
runs outside the gateway too."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from otelbench.storage.queries import compaction as compaction_sql
from otelbench.storage.queries import reports, tables, views
from otelbench.storage.duckdb import Gateway, open_lake
from otelbench.storage.lake import Lake
from otelbench.testing.rows import BENCH_SCOPE, agent, batch, bench_run, bench_test, llm, log, sid, span, tool

USER = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
SYSTEM = [{"role": "system", "parts": [{"type": "text", "content": "be brief"}]}]
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}], "finish_reason": "stop"}]


def j(value: object) -> str:
    return json.dumps(value)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lk = Lake(tmp_path / "lake")
    lk.init()
    return lk


def one(gw: Gateway, sql: str, params: object = None) -> dict:
    r = gw.query(sql, params)
    assert len(r.rows) == 1, r.rows
    return dict(zip(r.columns, r.rows[0]))


def by(gw: Gateway, sql: str) -> dict:
    r = gw.query(sql)
    return {row[0]: row[1] for row in r.rows}


# ------------------------------------------------------------------ llm_calls
def test_llm_call_agent_resolution(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[
        # trace 1: invoke_agent triage → chat; and a chat that names its own agent
        agent(1, 1, name="triage"),
        llm(1, 2, 1),
        llm(1, 3, 1, agent_name="self-named"),
        # trace 2: the same span ids as trace 1 (test data does that): must not mix up
        agent(2, 1, name="billing"),
        llm(2, 2, 1),
        # trace 3: a chat under a plain workflow span: the service is the fallback
        span(3, 1, name="workflow", service_name="svc-3"),
        llm(3, 2, 1, service_name="svc-3"),
        # trace 4: a root chat in a trace normalize named after its service
        llm(4, 1, None, agent_name="svc-4", service_name="svc-4"),
    ]))
    with open_lake(lake.root) as gw:
        agents = gw.query("SELECT trace_id[-1:] || '/' || span_id[-1:], agent FROM llm_calls ORDER BY 1").rows
    assert agents == [("1/2", "triage"), ("1/3", "self-named"), ("2/2", "billing"), ("3/2", "svc-3"), ("4/1", "svc-4")]


def test_llm_call_columns_come_from_the_span(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[agent(), llm(
        finish_reasons=["stop"], ttft_ms=12.5, cache_read_tokens=40, reasoning_tokens=3,
        status_code="error", error_message="rate limited", owner="alice",
    )]))
    with open_lake(lake.root) as gw:
        row = one(gw, "SELECT * EXCLUDE (start_time, date) FROM llm_calls")
    assert row == {
        "trace_id": f"{1:032x}", "span_id": f"{2:016x}", "parent_span_id": f"{1:016x}",
        "duration_ms": 100.0, "agent": "triage", "operation": "chat", "provider": "openai",
        "request_model": "gpt-4o", "response_model": "gpt-4o-2024-08-06",
        "input_tokens": 100, "output_tokens": 20, "total_tokens": 120, "cache_read_tokens": 40,
        "reasoning_tokens": 3, "cost_usd": 0.001, "cost_source": "computed", "ttft_ms": 12.5,
        "finish_reasons": ["stop"], "status_code": "error", "error_message": "rate limited",
        "input_messages": None, "output_messages": None, "owner": "alice", "service_name": "svc",
    }


def test_messages_from_the_span_win_over_log_events(lake: Lake) -> None:
    lake.write_batch("01", batch(
        spans=[llm(1, 2, None, input_messages=j(USER), output_messages=j(ANSWER))],
        logs=[log(1, 2, message_direction="input", messages=j(SYSTEM))],
    ))
    with open_lake(lake.root) as gw:
        row = one(gw, "SELECT input_messages, output_messages FROM llm_calls")
    assert json.loads(row["input_messages"]) == USER and json.loads(row["output_messages"]) == ANSWER


def test_message_events_are_concatenated_in_time_order(lake: Lake) -> None:
    lake.write_batch("01", batch(
        spans=[llm(1, 2, None)],
        logs=[
            log(1, 2, at=0.2, message_direction="input", messages=j(USER)),
            log(1, 2, at=0.1, message_direction="input", messages=j(SYSTEM)),
            log(1, 2, at=0.9, message_direction="output", messages=j(ANSWER)),
            log(1, 2, at=0.5, event_name="app.log", body='"unrelated"'),
            log(1, 9, at=0.1, message_direction="input", messages=j(ANSWER)),  # another span
            log(1, 2, at=0.3, message_direction="input", messages="not json"),  # skipped
        ],
    ))
    lake.write_batch("02", batch(logs=[log(1, 2, at=0.1, message_direction="input", messages=j(USER))]))
    with open_lake(lake.root) as gw:
        row = one(gw, "SELECT input_messages, output_messages FROM llm_calls")
    # equal times keep the order received: batch 01's system message before batch 02's user
    assert json.loads(row["input_messages"]) == SYSTEM + USER + USER
    assert json.loads(row["output_messages"]) == ANSWER


def test_a_details_event_carries_both_sides(lake: Lake) -> None:
    lake.write_batch("01", batch(
        spans=[llm(1, 2, None), llm(1, 3, None)],
        logs=[
            log(1, 2, message_direction="details", messages=j({"input": SYSTEM + USER, "output": ANSWER})),
            log(1, 2, message_direction="input", messages=j(USER)),  # the details event wins
            # span 3: details without an output, completed by a choice event
            log(1, 3, message_direction="details", messages=j({"input": USER, "output": None})),
            log(1, 3, message_direction="output", messages=j(ANSWER)),
        ],
    ))
    with open_lake(lake.root) as gw:
        rows = gw.query("SELECT span_id, input_messages, output_messages FROM llm_calls ORDER BY 1").rows
    assert [(json.loads(i), json.loads(o)) for _, i, o in rows] == [(SYSTEM + USER, ANSWER), (USER, ANSWER)]


def test_span_messages_view_has_one_row_per_span(lake: Lake) -> None:
    lake.write_batch("01", batch(logs=[
        log(1, 2, message_direction="input", messages=j(USER)),
        log(1, 2, message_direction="output", messages=j(ANSWER)),
        log(None, None, message_direction="input", messages=j(USER)),  # uncorrelated: dropped
    ]))
    with open_lake(lake.root) as gw:
        rows = gw.query("SELECT trace_id, span_id FROM span_messages").rows
    assert rows == [(f"{1:032x}", f"{2:016x}")]


# ------------------------------------------------------------------ tool_calls
def test_tool_calls(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[
        agent(1, 1, name="coder"),
        tool(1, 3, 1, name="python", duration_ms=40.0),
        tool(1, 4, 1, name="web_search", status_code="error", error_message="timeout"),
        llm(1, 2, 1),
    ]))
    with open_lake(lake.root) as gw:
        rows = gw.query(
            "SELECT agent, tool_name, tool_call_id, status, duration_ms, error_message FROM tool_calls ORDER BY tool_name"
        ).rows
    assert rows == [
        ("coder", "python", "call_3", "ok", 40.0, None),
        ("coder", "web_search", "call_4", "error", 100.0, "timeout"),
    ]


# ------------------------------------------------------------------ agent_runs
def test_agent_runs_sums_a_trace(lake: Lake) -> None:
    lake.write_batch("01", batch(
        spans=[
            agent(1, 1, name="triage", duration_ms=5000.0, owner="alice"),
            llm(1, 2, 1, at=1, cost_usd=0.5, input_tokens=10, output_tokens=1, input_messages=j(USER)),
            tool(1, 3, 1, at=2),
            llm(1, 4, 1, at=3, cost_usd=0.25, input_tokens=20, output_tokens=2),
            agent(1, 5, 1, name="sub", at=4, status_code="error"),
        ],
        logs=[log(1, 4, at=3.5, message_direction="output", messages=j(ANSWER))],
    ))
    with open_lake(lake.root) as gw:
        row = one(gw, "SELECT * EXCLUDE (trace_id, start_time, date) FROM agent_runs")
    row["input"], row["output"] = json.loads(row["input"]), json.loads(row["output"])
    assert row == {
        "agent": "triage", "root_name": "invoke_agent triage", "status": "error", "duration_ms": 5000.0,
        "cost_usd": 0.75, "input_tokens": 30, "output_tokens": 3, "llm_calls": 2, "tool_calls": 1,
        # the root has no messages: the first call's input, the last call's output (from logs)
        "input": USER, "output": ANSWER,
        "eval_score": None,  # not judged (evals: tests/storage/test_processor_tables.py)
        "owner": "alice", "service_name": "svc",
    }


def test_agent_runs_root_choice_and_status(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[
        # trace 1: a plain root that carries its own messages; a failed tool does not fail the run
        span(1, 1, name="handle_request", agent_name="svc", input_messages=j(USER), output_messages=j(ANSWER)),
        agent(1, 2, 1, name="planner", at=1),
        tool(1, 3, 2, at=2, status_code="error"),
        # trace 2: the root was not received (yet): the earliest span stands in
        llm(2, 7, 6, at=5),
        agent(2, 6, 5, name="late", at=4),
        # trace 3: no GenAI work at all: not a run
        span(3, 1, name="GET /health"),
    ]))
    with open_lake(lake.root) as gw:
        rows = gw.query("SELECT trace_id[-1:], agent, root_name, status, input, output FROM agent_runs ORDER BY 1").rows
    # input and output are the user's message and the final answer, re-serialized as JSON
    rows = [(*r[:4], *(v and json.loads(v) for v in r[4:])) for r in rows]
    assert rows == [
        ("1", "svc", "handle_request", "ok", USER, ANSWER),
        ("2", "late", "invoke_agent late", "ok", None, None),
    ]


def test_a_root_without_an_agent_name_falls_back_to_the_first_agent_span(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[
        span(1, 1, name="main", service_name="app"),
        agent(1, 3, 1, name="second", at=2),
        agent(1, 2, 1, name="first", at=1),
    ]))
    with open_lake(lake.root) as gw:
        assert one(gw, "SELECT agent FROM agent_runs") == {"agent": "first"}


# ------------------------------------------------------------------ a run's agent, input, output
def msg(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


TOOL_CALL = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather",
                                              "arguments": {"city": "Paris"}}]}]
TASK, FINAL = msg("user", "What is the weather in Paris?"), msg("assistant", "It is sunny in Paris.")


def run(gw: Gateway, trace: int = 1) -> tuple:
    row = one(gw, "SELECT agent, input, output FROM agent_runs WHERE trace_id = $t", {"t": f"{trace:032x}"})
    return row["agent"], *(v and json.loads(v) for v in (row["input"], row["output"]))


def test_the_run_is_the_outermost_named_agent_not_the_service_of_an_unnamed_root(lake: Lake) -> None:
    """OpenLLMetry, logfire: a root (workflow, outer span) that names no agent, an agent
    span below it. The service was the run's agent when the root stood in for one."""
    lake.write_batch("01", batch(spans=[
        span(1, 1, name="weather_workflow.workflow", service_name="app"),
        agent(1, 2, 1, name="weather_agent", at=0.1),
        agent(1, 3, 2, name="inner_helper", at=0.2),  # a nested agent: not the run's
        llm(1, 4, 3, at=0.3),
    ]))
    with open_lake(lake.root) as gw:
        assert run(gw)[0] == "weather_agent"
        assert gw.query("SELECT agent FROM llm_calls").rows == [("inner_helper",)]  # a call: its nearest agent


def test_a_named_root_is_the_run_even_when_a_child_starts_in_the_same_microsecond(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[agent(1, 1, name="outer"), llm(1, 2, 1, agent_name="self-named")]))
    with open_lake(lake.root) as gw:
        assert run(gw)[0] == "outer"


def test_the_runs_input_is_the_users_task_and_its_output_the_final_answer(lake: Lake) -> None:
    """The root carries only system instructions and no output (pydantic-ai, OpenLLMetry):
    the input is the first user message, the output the last call's answer — never the
    first call's tool call, which arg_min's NULL-skipping picked before."""
    lake.write_batch("01", batch(spans=[
        span(1, 1, name="agent run", agent_name="weather_agent", input_messages=j([msg("system", "be brief")])),
        llm(1, 2, 1, at=0.1, input_messages=j([msg("system", "be brief"), TASK]), output_messages=j(TOOL_CALL)),
        tool(1, 3, 1, at=0.2, name="get_weather"),
        llm(1, 4, 1, at=0.3, input_messages=j([TASK, *TOOL_CALL]),
            output_messages=j([msg("assistant", "Let me think."), FINAL])),
    ]))
    with open_lake(lake.root) as gw:
        assert run(gw) == ("weather_agent", [TASK], [FINAL])


def test_the_roots_own_messages_come_first_then_the_outermost_agents(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[
        span(1, 1, name="POST /ask", input_messages=j([msg("user", "root task")])),  # no output on the root
        agent(1, 2, 1, name="a", at=0.1, input_messages=j([msg("user", "agent task")]),
              output_messages=j([msg("assistant", "agent answer")])),
        llm(1, 3, 2, at=0.2, input_messages=j([TASK]), output_messages=j([FINAL])),
        # trace 2: nothing on the root or the agent: the first call's user message
        span(2, 1, name="main"), agent(2, 2, 1, name="b", at=0.1),
        llm(2, 3, 2, at=0.2, input_messages=j([msg("user", "first")]), output_messages=j(TOOL_CALL)),
        llm(2, 4, 2, at=0.3, input_messages=j([msg("user", "second")]), output_messages=j(TOOL_CALL)),
    ]))
    with open_lake(lake.root) as gw:
        assert run(gw, 1) == ("a", [msg("user", "root task")], [msg("assistant", "agent answer")])
        # the last call's answer is a tool call: no output rather than a tool call
        assert run(gw, 2) == ("b", [msg("user", "first")], None)


def test_the_final_answer_is_what_a_message_says_after_its_last_tool_part(lake: Lake) -> None:
    """AI SDK 7's invoke_agent output: one assistant message holding every step, the tool
    call and its response before the answer: the answer's parts alone. A message that
    ends in a tool call (text before it) is no answer; one without tool parts stays whole."""
    call, response = TOOL_CALL[0]["parts"][0], {"type": "tool_call_response", "id": "c1", "response": "sunny"}
    steps = {"role": "assistant", "parts": [call, response, *FINAL["parts"]], "finish_reason": "stop"}
    asking = {"role": "assistant", "parts": [{"type": "text", "content": "Let me check."}, call]}
    lake.write_batch("01", batch(spans=[
        agent(1, 1, name="a", output_messages=j([steps])),
        agent(2, 1, name="b", output_messages=j([FINAL, asking])),
        agent(3, 1, name="c", output_messages=j([asking])),
        agent(4, 1, name="d", output_messages=j([{**FINAL, "finish_reason": "stop"}])),
        agent(5, 1, name="e", output_messages=j([msg("assistant", "no tool_call was needed")])),
    ]))
    with open_lake(lake.root) as gw:
        assert run(gw, 1)[2] == [{"role": "assistant", "finish_reason": "stop", "parts": FINAL["parts"]}]
        assert run(gw, 2)[2] == [FINAL]  # the earlier answer, not the text before a tool call
        assert run(gw, 3)[2] is None
        assert run(gw, 4)[2] == [{**FINAL, "finish_reason": "stop"}]
        assert run(gw, 5)[2] == [msg("assistant", "no tool_call was needed")]  # the word alone: no tool part


def test_empty_and_malformed_messages_are_no_input_or_output(lake: Lake) -> None:
    """Empty or malformed messages (LangGraph dicts, say) are no input and no output, not an
    empty user message and empty answers."""
    lake.write_batch("01", batch(spans=[
        agent(1, 1, name="a", input_messages=j([msg("user", "")]), output_messages=j([msg("assistant", "")] * 4)),
        llm(1, 2, 1, at=0.1, input_messages="not json", output_messages=j([{"role": "assistant", "parts": []}])),
    ]))
    with open_lake(lake.root) as gw:
        assert run(gw) == ("a", None, None)


# ------------------------------------------------------------------ resolved agents
def test_a_call_written_before_its_parent_gets_its_agent_through_the_join(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[llm(1, 2, 1), tool(1, 3, 1), llm(1, 4, 1, agent_name="own")]))
    lake.write_batch("02", batch(spans=[agent(1, 1, name="triage")]))  # the parent ends last
    with open_lake(lake.root) as gw:
        assert gw.query("SELECT count(*) FROM spans WHERE resolved_agent IS NULL").rows == [(2,)]
        assert gw.query("SELECT span_id[-1:], agent FROM llm_calls ORDER BY 1").rows == [("2", "triage"), ("4", "own")]
        assert gw.query("SELECT agent FROM tool_calls").rows == [("triage",)]
        lake.compact("spans", below_batch_id="99", min_files=2)
        assert gw.query("SELECT count(*) FROM spans WHERE resolved_agent IS NULL").rows == [(0,)]
        assert gw.query("SELECT span_id[-1:], agent FROM llm_calls ORDER BY 1").rows == [("2", "triage"), ("4", "own")]


def test_spans_from_before_resolved_agent_existed_still_resolve(lake: Lake) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from otelbench.storage.schema import SPANS
    from otelbench.testing.rows import columnar

    old = columnar("spans", [agent(1, 1, name="triage"), llm(1, 2, 1), llm(1, 3, None, agent_name="root-call")])
    path = lake.table_dir("spans") / "date=2025-03-14" / "part-00-0.parquet"
    path.parent.mkdir()
    pq.write_table(pa.Table.from_pydict(old, schema=SPANS.schema), path)  # no resolved_agent column
    with open_lake(lake.root) as gw:
        assert gw.query("SELECT span_id[-1:], agent FROM llm_calls ORDER BY 1").rows == [("2", "triage"), ("3", "root-call")]


def scenario(lake: Lake) -> None:
    """Calls of every kind, written the way exporters send them: children before parents."""
    next_day = 24 * 3600
    lake.write_batch("01", batch(
        spans=[
            llm(1, 2, 1, input_messages=j(USER), output_messages=j(ANSWER)),  # parent later
            llm(1, 3, 1),  # messages from log events
            llm(1, 4, 1, input_messages=j(USER)),  # input on the span, output from an event
            tool(1, 5, 1, status_code="error"),
            span(1, 6, 1, name="step"), llm(1, 7, 6), tool(1, 8, 6),  # under a plain step
            llm(1, 9, 66),  # its parent never arrives
            llm(2, 2, 1, at=23 * 3600 + 1800), llm(2, 3, 1, at=next_day),  # a run across midnight
            llm(3, 1, None, agent_name="svc-3", service_name="svc-3"),  # a root call
            llm(4, 2, 1, agent_name="self-named"),
        ],
        logs=[
            log(1, 3, message_direction="input", messages=j(SYSTEM + USER)),
            log(1, 3, at=1, message_direction="output", messages=j(ANSWER)),
            log(1, 4, at=1, message_direction="output", messages=j(ANSWER)),
        ],
    ))
    lake.write_batch("02", batch(spans=[agent(1, 1, name="triage"), agent(2, 1, name="night", at=23 * 3600)]))
    lake.write_batch("03", batch(spans=[agent(4, 1, name="other")]))


@pytest.mark.parametrize("view", ["llm_calls", "tool_calls", "agent_runs"])
def test_views_answer_the_same_before_and_after_compaction(lake: Lake, view: str) -> None:
    """Except where the query-time rule is the cheaper one (docs/schema.md): calls 7 and 8
    sit under the plain step 6, under agent 1, and until compaction walks up to the agent
    they take their parent's agent name, else their own service."""
    scenario(lake)
    sql = f"SELECT * FROM {view} ORDER BY ALL"
    deep = "trace_id[-1:] = '1' AND span_id[-1:] IN ('7', '8')"
    with open_lake(lake.root) as gw:
        before = gw.query(sql).rows
        unresolved = gw.query("SELECT count(*) FROM spans WHERE resolved_agent IS NULL").rows[0][0]
        if view != "agent_runs":
            before_deep = gw.query(f"SELECT DISTINCT agent FROM {view} WHERE {deep}").rows
            before = gw.query(f"SELECT * FROM {view} WHERE NOT ({deep}) ORDER BY ALL").rows
        assert lake.compact("spans", below_batch_id="99", min_files=2) > 0
        after = gw.query(sql).rows
        if view != "agent_runs":
            assert before_deep == [("svc",)] and gw.query(f"SELECT DISTINCT agent FROM {view} WHERE {deep}").rows == [
                ("triage",)]
            after = gw.query(f"SELECT * FROM {view} WHERE NOT ({deep}) ORDER BY ALL").rows
        # only the call whose parent never arrived is still unresolved
        assert gw.query("SELECT trace_id[-1:], span_id[-1:] FROM spans WHERE resolved_agent IS NULL").rows == [("1", "9")]
    assert unresolved > 1 and before == after


def test_the_scenario_agents(lake: Lake) -> None:
    scenario(lake)
    lake.compact("spans", below_batch_id="99", min_files=2)
    with open_lake(lake.root) as gw:
        rows = gw.query("SELECT trace_id[-1:] || '/' || span_id[-1:], agent FROM llm_calls ORDER BY 1").rows
        tools = gw.query("SELECT span_id[-1:], agent, status FROM tool_calls ORDER BY 1").rows
        messages = gw.query("SELECT span_id[-1:], input_messages, output_messages FROM llm_calls WHERE trace_id = $t ORDER BY 1",
                            {"t": f"{1:032x}"}).rows
    # 7 and 8 sit under the plain step 6, under the agent: its agent, at any depth
    assert rows == [("1/2", "triage"), ("1/3", "triage"), ("1/4", "triage"), ("1/7", "triage"), ("1/9", "svc"),
                    ("2/2", "night"), ("2/3", "night"), ("3/1", "svc-3"), ("4/2", "self-named")]
    assert tools == [("5", "triage", "error"), ("8", "triage", "ok")]
    got = {sid: (i and json.loads(i), o and json.loads(o)) for sid, i, o in messages}
    assert got["2"] == got["4"] == (USER, ANSWER) and got["3"] == (SYSTEM + USER, ANSWER)
    assert got["7"] == (None, None)


def test_counting_calls_by_agent_reads_no_log_event(lake: Lake) -> None:
    """DuckDB drops llm_calls' messages join when no message column is used (storage/queries/views.py)."""
    scenario(lake)
    with open_lake(lake.root) as gw:
        for sql in (reports.LLM_CALLS_BY_AGENT, reports.COUNT_LLM_CALLS, reports.AGENT_RUNS_BY_AGENT):
            assert "message_direction" not in gw.query("EXPLAIN " + sql).rows[0][1], sql
        assert "message_direction" in gw.query("EXPLAIN " + reports.LLM_CALL_MESSAGES_COUNT).rows[0][1]


# ------------------------------------------------------------------ the DDL itself
def test_print_views_runs_in_a_fresh_duckdb(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[agent(), llm(), tool()], logs=[log(message_direction="input", messages=j(USER))]))
    con = duckdb.connect()
    con.execute(views.print_views(lake.root))
    with open_lake(lake.root) as gw:
        for view in views.VIEW_NAMES:
            sql = f"SELECT * FROM {view} ORDER BY ALL"
            assert con.execute(sql).fetchall() == gw.query(sql).rows, view


def test_view_names_match_the_ddl(lake: Lake) -> None:
    con = duckdb.connect()
    for stmt in views.view_ddl(lake.root):
        con.execute(stmt)
    names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert names == set(views.VIEW_NAMES)


def test_the_views_read_a_compacted_lake_the_same(lake: Lake) -> None:
    for n in range(8):
        lake.write_batch(f"{n:02d}", batch(spans=[agent(n, 1), llm(n, 2, 1, cost_usd=1.0)]))
    lake.write_batch("08", batch(spans=[llm(0, 2, 1, cost_usd=1.0)]))  # a redelivered span
    sql = "SELECT agent, count(*), sum(cost_usd) FROM llm_calls GROUP BY ALL"
    with open_lake(lake.root) as gw:
        assert gw.query(sql).rows == [("triage", 9, 9.0)]
        lake.compact("spans", below_batch_id="99")
        assert gw.query(sql).rows == [("triage", 8, 8.0)]  # compaction dropped the repeat


# ------------------------------------------------------------------ pure SQL builders
@pytest.mark.parametrize(
    "value, literal",
    [("/data/lake", "'/data/lake'"), ("/it's", "'/it''s'"), ("", "''")],
)
def test_sql_string_escapes_quotes(value: str, literal: str) -> None:
    assert tables.sql_string(value) == literal


def test_table_glob_refuses_glob_characters_in_the_lake_path() -> None:
    assert tables.table_glob("/data/lake", "spans") == "/data/lake/spans/*/*.parquet"
    for bad in ("/data/[x]", "/data/*", "/data/a?b", "/data/{a,b}"):
        with pytest.raises(ValueError, match="must not contain"):
            tables.table_glob(bad, "spans")


def test_table_views_read_hive_partitions_by_name() -> None:
    assert tables.table_view_sql("/l", "logs") == (
        "CREATE OR REPLACE VIEW logs AS SELECT * FROM read_parquet('/l/logs/*/*.parquet', "
        "hive_partitioning = true, union_by_name = true, hive_types = {'date': 'DATE'})"
    )


def _parquet(path: Path, rows: list[tuple[str, str, str]]) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({k: [r[i] for r in rows] for i, k in enumerate(("trace_id", "span_id", "body"))}), path)
    return str(path)


def test_dropped_rows_are_the_later_copies_of_a_key(tmp_path: Path) -> None:
    files = [_parquet(tmp_path / "a.parquet", [("t", "1", "x"), ("t", "2", "y"), ("t", "1", "again")]),
             _parquet(tmp_path / "b.parquet", [("t", "2", "z"), ("t", "3", "w")])]
    sql = compaction_sql.dropped_rows_sql(("trace_id", "span_id"))
    assert "body" not in sql  # the full rows never pass through DuckDB
    assert duckdb.sql(sql, params={"files": files}).fetchall() == [(1, 2), (2, 0)]


def test_dropped_rows_include_the_keys_another_collector_holds(tmp_path: Path) -> None:
    files = [_parquet(tmp_path / "a.parquet", [("t", "1", "x"), ("t", "2", "y")])]
    others = [_parquet(tmp_path / "o.parquet", [("t", "2", "kept there"), ("t", "9", "")])]
    sql = compaction_sql.dropped_rows_sql(("trace_id", "span_id"), others=True)
    assert duckdb.sql(sql, params={"files": files, "others": others}).fetchall() == [(1, 1)]


def test_the_agent_lookup_says_where_each_merged_span_is(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    part = tmp_path / "date=2026-12-04"
    part.mkdir()
    cols = ("trace_id", "span_id", "parent_span_id", "agent_name", "service_name")
    for name, spans in (("merged.parquet", [("t", "2", "1", None, "s"), ("u", "5", None, None, "s"), ("t", "3", "1", None, "s")]),
                        ("kept.parquet", [("t", "1", None, "triage", "s")])):
        pq.write_table(pa.table({c: pa.array([s[i] for s in spans], pa.string()) for i, c in enumerate(cols)}),
                       part / name)
    con = duckdb.connect()
    con.register("unresolved_traces", pa.table({"trace_id": ["t"]}))
    rows = con.sql(compaction_sql.agent_lookup_sql(False, False), params={
        "partition": f"{part}/*.parquet", "lake": f"{part}/*.parquet", "merged": ["merged.parquet"]}).fetchall()
    where = sorted(((r[1], r[-2], r[-1]) for r in rows), key=str)
    # the merged file's spans of trace t, at their rows; the agent span twice (partition, lake), not merged
    assert where == [("1", None, 0), ("1", None, None), ("2", 1, 0), ("3", 1, 2)], where


def test_a_side_without_events_stays_null(lake: Lake) -> None:
    lake.write_batch("01", batch(
        spans=[llm(1, 2, None)],
        logs=[log(1, 2, message_direction="input", messages=j(USER)), log(1, 2, message_direction="input", messages="[]")],
    ))
    with open_lake(lake.root) as gw:
        row = one(gw, "SELECT input_messages, output_messages FROM llm_calls")
    assert json.loads(row["input_messages"]) == USER and row["output_messages"] is None


# ------------------------------------------------------------------ bench_results, bench_tests
def test_bench_views_read_the_bench_runners_spans_only(lake: Lake) -> None:
    reasons = ["short-50: median output of 3 tokens (< 16)", "short-50: 1 timed run(s) (< 5)"]
    reply = llm(1, 2, 1, request_model="qwen", scope_name=BENCH_SCOPE)
    lake.write_batch("01", batch(spans=[
        bench_run(1, 1, "qwen", **{"bench.decode_tps.median": 41.5, "bench.reasons": reasons, "bench.quick": True,
                                   "bench.failures": 0, "server.port": 1234, "bench.runs": "five"}),
        reply,
        bench_test(1, 3, 2, "json_book", "pass"),
        bench_test(1, 4, 2, "count_stars", "fail"),
        # another producer's spans that happen to use the bench attributes: not bench results
        span(2, 1, attributes=j({"bench.kind": "model_run"}), scope_name="someone.else"),
        span(2, 2, 1, attributes=j({"bench.kind": "test"}), scope_name="someone.else"),
    ]))
    lake.write_batch("02", batch(spans=[reply]))  # the reply delivered twice: no test doubles
    with open_lake(lake.root) as gw:
        run = one(gw, "SELECT model, suite_version, decode_tps_median, confidence_reasons, quick, failures, "
                      "server_port, runs, ability_score, status FROM bench_results")
        assert run == {"model": "qwen", "suite_version": "core-v1", "decode_tps_median": 41.5,
                       "confidence_reasons": reasons, "quick": True, "failures": 0, "server_port": 1234,
                       "runs": None,  # not a number: NULL, not an error for the whole view
                       "ability_score": None, "status": "ok"}  # absent: NULL
        tests = gw.query("SELECT test, verdict, model, reply_span_id, suite FROM bench_tests ORDER BY test").rows
        assert tests == [("count_stars", "fail", "qwen", sid(2), "core"), ("json_book", "pass", "qwen", sid(2), "core")]
