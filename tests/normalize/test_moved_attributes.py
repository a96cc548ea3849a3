"""Message text stored once (storage.schema.MOVED_ATTRIBUTES): a ``gen_ai.input.messages`` /
``gen_ai.output.messages`` string that is exactly its promoted column's text leaves the
files' ``attributes`` and is named in ``attributes_moved``; anything else stays as sent.
Both normalizers agree (the columnar one against the reference, row by row), the attributes
put back equal what was sent, and the ``spans`` view reads them as sent."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from otelbench.normalize.anyvalue import attributes as py_attributes
from otelbench.testing.otlp import agent_request, kv, make_span, trace_request
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.storage.schema import MOVED_ATTRIBUTES
from tests.normalize.test_columnar import same_as_reference

CANON_IN = '[{"role":"user","parts":[{"type":"text","content":"What is 2 + 2?"}]}]'
CANON_OUT = '[{"role":"assistant","parts":[{"type":"text","content":"4"}],"finish_reason":"stop"}]'
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}

CASES: list[tuple[str, dict[str, Any], list[str] | None]] = [
    ("canonical input and output", {**CHAT, "gen_ai.input.messages": CANON_IN, "gen_ai.output.messages": CANON_OUT},
     ["gen_ai.input.messages", "gen_ai.output.messages"]),
    ("output only", {**CHAT, "gen_ai.output.messages": CANON_OUT}, ["gen_ai.output.messages"]),
    # the system instructions are prepended to input_messages: the input differs, stays
    ("system instructions", {**CHAT, "gen_ai.system_instructions": '[{"type":"text","content":"Be brief."}]',
                             "gen_ai.input.messages": CANON_IN, "gen_ai.output.messages": CANON_OUT},
     ["gen_ai.output.messages"]),
    # an older shape is rewritten into the canonical one: not the same text, stays
    ("old shape", {**CHAT, "gen_ai.input.messages": '[{"role":"user","content":"What is 2 + 2?"}]'}, None),
    # whitespace the canonical check accepts is kept verbatim, so it moves too
    ("spaced", {**CHAT, "gen_ai.input.messages": CANON_IN.replace(",", ", ")}, ["gen_ai.input.messages"]),
    ("no messages", {**CHAT, "gen_ai.usage.input_tokens": 3}, None),
    ("a tool span", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}, None),
]


def _request(attrs: dict[str, Any], extra: list[Any] = ()) -> Any:
    span = make_span(attrs, name="chat gpt-4o")
    span.attributes.extend(extra)
    return trace_request(span)


def put_back(row: dict[str, Any]) -> dict[str, Any]:
    """The attributes as sent, from a stored row: what the spans view does."""
    out = json.loads(row["attributes"])
    for key in row["attributes_moved"] or ():
        out[key] = row[MOVED_ATTRIBUTES[key]]
    return out


@pytest.mark.parametrize("name,attrs,moved", CASES, ids=[c[0] for c in CASES])
def test_what_moves_and_what_stays(name: str, attrs: dict[str, Any], moved: list[str] | None) -> None:
    request = _request(attrs)
    (row,) = same_as_reference(request).to_pylist()
    assert row["attributes_moved"] == moved
    stored = json.loads(row["attributes"])
    for key in moved or ():
        assert key not in stored and row[MOVED_ATTRIBUTES[key]] == attrs[key]
    assert put_back(row) == py_attributes(request.resource_spans[0].scope_spans[0].spans[0].attributes)


def test_the_view_reads_every_case_as_sent(tmp_path: Path) -> None:
    # one output moved beside an input that stays (system instructions) must keep the input:
    # the view once merged a NULL for the unmoved key, which deletes it
    from otelbench.normalize.columnar import normalize_traces_arrow

    requests = [trace_request(make_span(attrs, name="chat gpt-4o", span_id=(i + 1).to_bytes(8, "big")))
                for i, (_, attrs, _) in enumerate(CASES)]
    table = normalize_traces_arrow([r.SerializeToString() for r in requests], [None] * len(requests))
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write_batch(f"{1:020d}", {"spans": {c: table.column(c) for c in table.column_names}})
    sent = {r.resource_spans[0].scope_spans[0].spans[0].span_id.hex():
            py_attributes(r.resource_spans[0].scope_spans[0].spans[0].attributes) for r in requests}
    with open_lake(lake.root) as gw:
        viewed = {sid: json.loads(a) for sid, a in gw.query("SELECT span_id, attributes FROM spans").rows}
    assert viewed == sent


def test_a_repeated_key_moves_only_when_its_last_value_is_the_columns_text() -> None:
    # the last value counts, as in a dict: an earlier repeat must not reappear either
    for first, last, moves in ((CANON_OUT, CANON_OUT, True), ('[{"role":"x"}]', CANON_OUT, True),
                               (CANON_OUT, '[{"role":"assistant","content":"4"}]', False)):
        request = _request(CHAT, [kv("gen_ai.output.messages", first), kv("gen_ai.output.messages", last)])
        (row,) = same_as_reference(request).to_pylist()
        assert (row["attributes_moved"] == ["gen_ai.output.messages"]) == moves
        assert put_back(row)["gen_ai.output.messages"] == last


def test_a_structured_value_stays() -> None:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

    structured = KeyValue(key="gen_ai.input.messages", value=AnyValue(array_value=ArrayValue(values=[
        AnyValue(string_value="hi")])))
    (row,) = same_as_reference(_request(CHAT, [structured])).to_pylist()
    assert row["attributes_moved"] is None and "gen_ai.input.messages" in json.loads(row["attributes"])


def test_realistic_traffic_stores_the_text_once_and_the_view_reads_it_as_sent(tmp_path: Path) -> None:
    from otelbench.normalize.columnar import normalize_traces_arrow

    requests = [agent_request(random.Random(7), 120)]
    table = normalize_traces_arrow([r.SerializeToString() for r in requests], [None])
    chats = [r for r in table.to_pylist() if r["operation"] == "chat"]
    assert chats and all(r["attributes_moved"] == list(MOVED_ATTRIBUTES) for r in chats)
    sent_text = sum(len(r["input_messages"]) + len(r["output_messages"]) for r in chats)
    stored = sum(len(r["attributes"]) for r in table.to_pylist())
    assert stored < sent_text / 3  # the message text is no longer in attributes

    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write_batch(f"{1:020d}", {"spans": {c: table.column(c) for c in table.column_names}})
    sent = {s.span_id.hex(): py_attributes(s.attributes)
            for r in requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans}
    with open_lake(lake.root) as gw:
        viewed = gw.query("SELECT span_id, attributes FROM spans").rows
        assert {sid: json.loads(a) for sid, a in viewed} == sent
        # a query that does not read attributes never pays for putting them back
        plan = "\n".join(r[1] for r in gw.query("EXPLAIN SELECT count(*) FROM spans WHERE span_type = 'llm'").rows)
        assert "concat_ws" not in plan
    files = pa.concat_tables([pq.read_table(f) for f in lake.files("spans")])
    assert all("gen_ai.input.messages" not in a for a, t in zip(files.column("attributes").to_pylist(),
                                                                  files.column("operation").to_pylist()) if t == "chat")
