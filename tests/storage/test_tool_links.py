"""The link from each tool call to the llm call that asked for it (the ``tool_call_links``
view, storage.queries.tool_links),
over a real lake: by id, by order under the parent or the grandparent, none; the id a
tool span without one takes from the asking call; what the link costs a query that does
not read it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.storage.queries import reports, views, web
from otelbench.storage.queries.tables import table_glob
from otelbench.testing.rows import agent, batch, llm, log, sid, span, tid, tool


def asks(*calls: tuple[str, str]) -> str:
    """Output messages asking for tool calls (id, name)."""
    parts = [{"type": "tool_call", "id": i, "name": n, "arguments": {"q": i}} for i, n in calls]
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}])


EPOCH, FAR = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)
ANSWER = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}], "finish_reason": "stop"}])


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lk = Lake(tmp_path / "lake")
    lk.init()
    return lk


def links(lake: Lake, spans: list[dict[str, Any]]) -> dict[int, tuple[int | None, str | None]]:
    """tool span → (the asking llm span, the tool call id), of trace 1."""
    lake.write_batch("01", batch(spans=spans))
    with open_lake(lake.root) as gw:
        rows = gw.query("SELECT span_id, l.llm_span_id, l.tool_call_id FROM tool_call_links AS l JOIN spans AS s "
                        "USING (trace_id, span_id) WHERE trace_id = $t ORDER BY s.start_time, span_id",
                        {"t": tid(1)}).rows
        # the run page's statement over the run's own rows says the same
        run = gw.query(web.RUN_TOOL_CALLS, {"trace_id": tid(1), "since": EPOCH, "until": FAR,
                                            "span_files": table_glob(lake.root, "spans"),
                                            "log_files": table_glob(lake.root, "logs")}).rows
        assert [r[:2] + r[3:4] for r in run] == rows
    return {int(s, 16): (None if llm_id is None else int(llm_id, 16), call_id) for s, llm_id, call_id in rows}


def test_by_id_the_call_whose_output_holds_it(lake: Lake) -> None:
    # call 4 ended later under the same parent, but it is call 2 that asked for call_a
    assert links(lake, [
        agent(1, 1), llm(1, 2, 1, output_messages=asks(("call_a", "w"))),
        llm(1, 4, 1, at=0.5, output_messages=None), tool(1, 3, 1, name="w", at=1.0, tool_call_id="call_a"),
    ]) == {3: (2, "call_a")}


def test_by_id_from_log_events(lake: Lake) -> None:
    lake.write_batch("00", batch(logs=[log(1, 2, message_direction="output", messages=json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_l", "name": "w"}]}]))]))
    assert links(lake, [agent(1, 1), llm(1, 2, 1, output_messages=None), llm(1, 4, 1, at=0.5, output_messages=None),
                        tool(1, 3, 1, name="w", at=1.0, tool_call_id="call_l")]) == {3: (2, "call_l")}


def test_by_id_a_span_under_the_call_carries(lake: Lake) -> None:
    """Mastra: the chat span's output is its (empty) text, the streamed tool call's id is on
    a model_chunk span under it; the tool runs while the stream is still open, beside the
    call (no order rule finds it). A tool span under a call lends it no id."""
    assert links(lake, [
        agent(1, 1), span(1, 10, 1, name="agent_step"),
        llm(1, 2, 10, duration_ms=2000, output_messages=ANSWER.replace("done", "")),
        span(1, 20, 2, name="model_chunk", at=0.5, tool_call_id="call_m"),
        tool(1, 3, 10, name="w", at=1.0, tool_call_id="call_m"),
        llm(1, 4, 10, at=0.1, duration_ms=2000, output_messages=None),
        tool(1, 5, 4, name="w", at=1.0, tool_call_id="call_other"),
    ]) == {3: (2, "call_m"), 5: (None, "call_other")}


def test_by_id_the_call_the_tool_span_is_under(lake: Lake) -> None:
    """AI SDK 7's legacy ai.* shape: the tool span is a child of the doGenerate span whose
    ai.response.toolCalls (its output messages) asked for it."""
    assert links(lake, [
        span(1, 1, name="ai.generateText"), llm(1, 2, 1, duration_ms=2000, output_messages=asks(("call_n", "w"))),
        tool(1, 3, 2, name="w", at=1.0, tool_call_id="call_n"), llm(1, 4, 1, at=3.0, output_messages=ANSWER),
    ]) == {3: (2, "call_n")}


def test_by_order_under_the_same_parent_and_the_id_filled(lake: Lake) -> None:
    assert links(lake, [
        agent(1, 1), llm(1, 2, 1, output_messages=asks(("call_x", "w"))),
        tool(1, 3, 1, name="w", at=1.0, tool_call_id=None),
        llm(1, 4, 1, at=2.0, output_messages=ANSWER),  # after the tool: not it
    ]) == {3: (2, "call_x")}


def test_an_answer_without_a_tool_call_did_not_ask(lake: Lake) -> None:
    assert links(lake, [
        agent(1, 1), llm(1, 2, 1, output_messages=asks(("call_x", "w"))),
        llm(1, 4, 1, at=0.5, output_messages=ANSWER), tool(1, 3, 1, name="w", at=1.0, tool_call_id=None),
    ]) == {3: (2, "call_x")}


def test_by_order_under_the_same_grandparent(lake: Lake) -> None:
    """LlamaIndex, LangGraph: the call in one step's span, the tool in the next one's."""
    assert links(lake, [
        agent(1, 1), span(1, 10, 1, name="run_agent_step"), llm(1, 2, 10, output_messages=asks(("call_g", "w"))),
        span(1, 11, 1, name="call_tool", at=0.9), tool(1, 3, 11, name="w", at=1.0, tool_call_id=None),
    ]) == {3: (2, "call_g")}


def test_the_same_parent_wins_over_the_grandparent(lake: Lake) -> None:
    assert links(lake, [
        agent(1, 1), span(1, 10, 1), llm(1, 2, 10, at=0.5, output_messages=None),
        span(1, 11, 1), llm(1, 4, 11, output_messages=None), tool(1, 3, 11, name="w", at=1.0, tool_call_id=None),
    ]) == {3: (4, None)}


def test_no_link_without_a_call_before_the_tool_or_near_it(lake: Lake) -> None:
    assert links(lake, [
        agent(1, 1), tool(1, 3, 1, name="w", tool_call_id=None), llm(1, 2, 1, at=1.0, output_messages=asks(("c", "w"))),
        # a call in another branch of the trace is not the asker
        span(1, 10, 1), span(1, 11, 10), llm(1, 4, 11, at=2.0), span(1, 12, 1, at=3.0),
        tool(1, 5, 12, name="w", at=4.0, tool_call_id=None),
    ]) == {3: (None, None), 5: (None, None)}


def test_parallel_calls_of_one_tool_take_the_ids_in_order(lake: Lake) -> None:
    assert links(lake, [
        agent(1, 1), llm(1, 2, 1, output_messages=asks(("c1", "w"), ("c2", "w"), ("c3", "v"))),
        tool(1, 4, 1, name="w", at=1.1, tool_call_id=None), tool(1, 3, 1, name="w", at=1.0, tool_call_id=None),
        tool(1, 5, 1, name="v", at=1.2, tool_call_id=None),
    ]) == {3: (2, "c1"), 4: (2, "c2"), 5: (2, "c3")}


def test_no_id_when_the_parts_and_the_spans_do_not_pair_up(lake: Lake) -> None:
    assert links(lake, [
        agent(1, 1), llm(1, 2, 1, output_messages=asks(("c1", "w"))),
        tool(1, 3, 1, name="w", at=1.0, tool_call_id=None), tool(1, 4, 1, name="w", at=1.1, tool_call_id=None),
        tool(1, 5, 1, name="other", at=1.2, tool_call_id=None),
    ]) == {3: (2, None), 4: (2, None), 5: (2, None)}


def test_arguments_and_result_are_the_spans(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[agent(1, 1), tool(1, 3, 1, tool_arguments='{"q":"<script>"}',
                                                          tool_result="found"), tool(1, 4, 1)]))
    with open_lake(lake.root) as gw:
        rows = gw.query("SELECT span_id, arguments, result FROM tool_calls ORDER BY span_id").rows
    assert rows == [(sid(3), '{"q":"<script>"}', "found"), (sid(4), None, None)]


def _plan(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    """Every operator of the query's plan, flattened."""
    out = []
    todo = json.loads(con.execute("EXPLAIN (FORMAT json) " + sql).fetchall()[0][1])
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.get("children", []))
    return out


def test_the_link_costs_nothing_unread_and_a_trace_filter_reaches_every_scan(lake: Lake) -> None:
    lake.write_batch("01", batch(spans=[agent(t, 1) for t in (1, 2)] + [llm(t, 2, 1, output_messages=asks(("c", "w")))
                                                                         for t in (1, 2)]
                                 + [tool(t, 3, 1, at=1.0) for t in (1, 2)]))
    con = duckdb.connect()
    for stmt in views.view_ddl(lake.root):
        con.execute(stmt)
    unread = _plan(con, reports.TOOL_CALLS_BY_AGENT)
    assert not any("llm" in json.dumps(n.get("extra_info", {})) for n in unread)
    # the link is a view of its own: tool_calls reads no llm call at all
    assert not any("output_messages" in json.dumps(n.get("extra_info", {}))
                   for n in _plan(con, "SELECT * FROM tool_calls"))
    scans = [n for n in _plan(con, f"SELECT * FROM tool_call_links WHERE trace_id = '{tid(1)}'")
             if n.get("extra_info", {}).get("Function") == "READ_PARQUET"]
    assert len(scans) >= 5  # the tool spans, their parents, the llm calls, theirs, the log events
    assert all(tid(1) in json.dumps(n["extra_info"].get("Filters")) for n in scans)


def test_files_from_before_the_tool_columns_read_them_as_null(lake: Lake) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from otelbench.testing.rows import columnar
    from otelbench.storage.schema import SPANS

    old_schema = pa.schema([f for f in SPANS.schema if f.name not in ("tool_arguments", "tool_result")])
    old = columnar("spans", [agent(1, 1), llm(1, 2, 1, output_messages=asks(("c", "w"))),
                             tool(1, 3, 1, name="w", at=1.0, tool_call_id=None)])
    path = lake.table_dir("spans") / "date=2025-03-14" / "part-00-0.parquet"
    path.parent.mkdir()
    pq.write_table(pa.Table.from_pydict({k: v for k, v in old.items() if k in old_schema.names}, schema=old_schema), path)
    with open_lake(lake.root) as gw:
        assert gw.query("SELECT c.arguments, c.result, l.tool_call_id, l.llm_span_id FROM tool_calls AS c "
                        "JOIN tool_call_links AS l USING (trace_id, span_id)").rows == [(None, None, "c", sid(2))]
