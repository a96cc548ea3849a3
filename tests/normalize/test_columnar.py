"""normalize.columnar against normalize.rows: the same rows, span by span.

The reference (``normalize_traces`` on the decoded request) is the oracle for every
case: the tables of tests/normalize/cases.py (``SPAN_TABLES``: every table of
test_rows.py whose cases build a span, so a case added there is checked here too), the recorded
instrumentation fixtures, realistic agent traffic and a seeded fuzz of attribute
types, aliases, duplicates, messages, events and links. JSON columns are compared
after parsing, with ints, floats and bools kept apart (``1`` is not ``1.0``) and
repeated keys kept (the reference's objects are dicts, so a batch object must not
repeat a key either); every other column, floats included, must be equal exactly.
"""

from __future__ import annotations

import base64
import json
import math
import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from _pytest.mark.structures import ParameterSet
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otelbench.normalize import columnar_attributes, conventions
from otelbench.normalize import rows as ref
from otelbench.normalize.columnar import normalize_traces_arrow
from otelbench.normalize.rows import normalize_traces
from otelbench.testing import otlp
from otelbench.testing.otlp import agent_request
from otelbench.storage.schema import SPANS
from tests.normalize.cases import SPAN_ARGS, SPAN_TABLES
from tests.testdata.loader import recorded

JSON_COLUMNS = {"resource_attributes", "scope_attributes", "attributes", "events", "links",
                "input_messages", "output_messages"}


class _Object(tuple):
    """A JSON object as its (key, value) pairs, sorted by key: a repeated key shows."""


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    return _Object(sorted(pairs, key=lambda kv: kv[0]))


def _typed(x: Any) -> Any:
    """JSON values with their types made explicit, so that 1, 1.0 and True differ."""
    if isinstance(x, _Object):
        return ("object", [(k, _typed(v)) for k, v in x])
    if isinstance(x, bool):
        return ("bool", x)
    if isinstance(x, int):
        return ("int", x)
    if isinstance(x, float):
        return ("float", "nan") if math.isnan(x) else ("float", x)
    if isinstance(x, list):
        return [_typed(v) for v in x]
    if isinstance(x, dict):
        return {k: _typed(v) for k, v in x.items()}
    return x


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _typed(json.loads(v, object_pairs_hook=_object)) if k in JSON_COLUMNS and v is not None
            else _typed(v) for k, v in row.items()}


def reference_table(payloads: list[bytes], owners: list[str | None]) -> pa.Table:
    columns: dict[str, list] = {c: [] for c in SPANS.columns}
    for payload, owner in zip(payloads, owners):
        for c, values in normalize_traces(ExportTraceServiceRequest.FromString(payload), owner).items():
            columns[c] += values
    return pa.Table.from_pydict(columns, schema=SPANS.schema)


def assert_same(payloads: list[bytes], owners: list[str | None]) -> pa.Table:
    got = normalize_traces_arrow(payloads, owners)
    assert got.schema == SPANS.schema
    want = reference_table(payloads, owners)
    assert got.num_rows == want.num_rows
    for i, (g, w) in enumerate(zip(got.to_pylist(), want.to_pylist())):
        g, w = _comparable(g), _comparable(w)
        diff = {k: (g[k], w[k]) for k in w if g[k] != w[k]}
        assert not diff, f"row {i}: (arrow, reference) per column: {diff}"
    return got


def same_as_reference(*requests: ExportTraceServiceRequest, owners: list[str | None] | None = None) -> pa.Table:
    return assert_same([r.SerializeToString() for r in requests], owners or ["alice"] * len(requests))


# -- contract --------------------------------------------------------------------------


def test_empty_batches_have_the_schema() -> None:
    assert normalize_traces_arrow([], []).schema == SPANS.schema
    empty = same_as_reference(ExportTraceServiceRequest(), owners=[None])
    assert empty.num_rows == 0
    no_spans = ExportTraceServiceRequest()
    no_spans.resource_spans.add().scope_spans.add()
    assert same_as_reference(no_spans, ExportTraceServiceRequest()).num_rows == 0


def test_one_owner_per_payload() -> None:
    with pytest.raises(ValueError, match="owners"):
        normalize_traces_arrow([b""], [])


def test_a_payload_that_does_not_decode_fails_the_batch() -> None:
    good = otlp.trace_request(otlp.make_span({"gen_ai.operation.name": "chat"})).SerializeToString()
    for bad in (b"\xff\xff\xff", good[:-3]):
        with pytest.raises(DecodeError):
            ExportTraceServiceRequest.FromString(bad)
        with pytest.raises(ValueError):
            normalize_traces_arrow([good, bad], ["a", "b"])


# -- every span table of cases.py ------------------------------------------------------


def _harvest() -> list[Any]:
    """Each case of cases.SPAN_TABLES, as span kwargs, named after the row test of its table."""
    cases = []
    for fname, (names, values, ids) in SPAN_TABLES.items():
        for j, vals in enumerate(values):
            vals = vals.values if isinstance(vals, ParameterSet) else vals
            vals = (vals,) if len(names) == 1 else vals
            kw = {k: v for k, v in zip(names, vals) if k in SPAN_ARGS}
            cases.append(pytest.param(kw, id=f"{fname}-{ids[j] if ids else j}"))
    return cases


HARVESTED = _harvest()


def test_harvest_found_the_tables() -> None:
    assert len(HARVESTED) > 100
    found = {p.id.rsplit("-", 1)[0] for p in HARVESTED}
    assert {"test_operation_and_span_type", "test_token_usage", "test_cost", "test_agent", "test_messages",
            "test_malformed_values_are_kept_not_fatal", "test_kind_and_status_names"} <= found


@pytest.mark.parametrize("kw", HARVESTED)
def test_normalize_table_case(kw: dict[str, Any]) -> None:
    kw = dict(kw)
    attrs = kw.pop("attrs", None)
    if isinstance(kw.get("status"), int):
        kw["status"] = Status(code=kw["status"])
    req = otlp.trace_request(otlp.make_span(attrs, **kw))
    same_as_reference(req)
    same_as_reference(req, owners=[None])


def test_core_fields_links_and_raw_attributes() -> None:
    attrs = {"s": "x", "b": True, "i": -7, "d": 1.5, "bytes": b"\x00\xff", "empty": None,
             "arr": ["a", 1, [2.5]], "kv": {"k": {"nested": [True]}}, "gen_ai.request.model": "gpt-4o"}
    link = Span.Link(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, trace_state="a=b",
                     attributes=otlp.kvs({"link.kind": "follows"}), flags=1)
    span = otlp.make_span(attrs, name="GET /x", kind=Span.SPAN_KIND_SERVER, trace_state="k=v", flags=257,
                        dropped_attributes_count=2, dropped_events_count=3, dropped_links_count=4,
                        status=Status(code=Status.STATUS_CODE_ERROR, message="boom"),
                        events=[otlp.event("retry", {"attempt": 2}, t=42)], links=[link])
    same_as_reference(otlp.trace_request(span))


def test_a_root_of_a_genai_trace_is_not_named_after_the_service() -> None:
    root = otlp.make_span({"http.route": "/ask"}, name="POST /ask", parent=b"")
    child = otlp.make_span({"gen_ai.operation.name": "chat"}, name="chat m", span_id=b"\x05" * 8, parent=otlp.SPAN_ID)
    other = otlp.make_span({}, name="GET /health", parent=b"", trace=b"\x09" * 16)
    table = same_as_reference(otlp.trace_request(root, child, other))
    assert table.column("agent_name").to_pylist() == [None, None, None]


# -- several payloads, owners, resources and scopes ------------------------------------


def _multi_block_request(rng: random.Random, tag: str) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    for r in range(rng.randint(1, 3)):
        rs = req.resource_spans.add()
        resource = {"service.name": f"{tag}-svc-{r}", "host": r}
        if r == 2:
            resource = {"service.name": 42, "dup": "a"}  # a number is named as its text
        rs.resource.attributes.extend(otlp.kvs(resource))
        for s in range(rng.randint(0, 3)):
            ss = rs.scope_spans.add()
            if s != 1:
                ss.scope.name, ss.scope.version = f"scope.{s}", "" if s == 2 else "1.0"
                ss.scope.attributes.extend(otlp.kvs({"scope.attr": s}))
            for k in range(rng.randint(0, 4)):
                attrs = {"gen_ai.operation.name": rng.choice(["chat", "execute_tool", "invoke_agent"]),
                         "gen_ai.usage.input_tokens": rng.randint(0, 999)}
                ss.spans.append(otlp.make_span(attrs, name=f"{tag}.{r}.{s}.{k}", span_id=rng.randbytes(8),
                                             parent=rng.choice([b"", otlp.PARENT]), trace=rng.randbytes(16)))
    return req


def test_many_payloads_owners_resources_and_scopes() -> None:
    rng = random.Random(7)
    requests = [_multi_block_request(rng, f"p{i}") for i in range(6)]
    table = same_as_reference(*requests, owners=["alice", None, "bob", "alice", "", "carol"])
    assert table.num_rows == sum(len(ss.spans) for r in requests for rs in r.resource_spans for ss in rs.scope_spans)
    assert len(set(table.column("service_name").to_pylist())) > 3


# -- recorded instrumentations and realistic traffic -----------------------------------


# scripts/record_fixtures.py's instrumentations, then scripts/record_frameworks.py's agent stacks
# and scripts/record_js.py's
RECORDED_STACKS = ["openai-v2", "openai-v2-latest", "openinference", "openllmetry", "openlit", "langchain",
                   "pydantic-ai", "logfire", "openai-agents", "llamaindex", "crewai", "google-adk",
                   "vercel-ai-sdk", "vercel-ai-sdk-stream", "vercel-ai-sdk-legacy", "vercel-ai-sdk-v6",
                   "mastra"]  # fmt: skip


@pytest.mark.parametrize("instrumentation", RECORDED_STACKS)
def test_recorded_fixtures(instrumentation: str) -> None:
    requests = recorded(instrumentation, "traces")
    assert requests
    same_as_reference(*requests)
    same_as_reference(*requests, owners=[None] * len(requests))


@pytest.mark.parametrize("seed", range(3))
def test_realistic_agent_traffic(seed: int) -> None:
    rng = random.Random(seed)
    requests = [agent_request(rng, rng.randint(1, 120), agent=rng.choice(["triage", "coder"]),
                              service=rng.choice(["a", "b"])) for _ in range(5)]
    same_as_reference(*requests, owners=["o1", "o2", None, "o1", "o3"])


def test_canonical_messages_stay_vectorized(monkeypatch: pytest.MonkeyPatch) -> None:
    """The common case - canonical GenAI message strings - never needs the per-span reference."""
    rng = random.Random(3)
    payloads = [agent_request(rng, 60).SerializeToString()]
    expected = reference_table(payloads, ["o"])

    def no_reference(*args: Any, **kw: Any) -> Any:
        raise AssertionError("fell back to the reference")

    monkeypatch.setattr(ref, "genai_fields", no_reference)
    got = normalize_traces_arrow(payloads, ["o"])
    assert [_comparable(r) for r in got.to_pylist()] == [_comparable(r) for r in expected.to_pylist()]


# -- fuzz ------------------------------------------------------------------------------

_ALIAS_KEYS = [k for keys in conventions.ALIASES.values() for k in keys]
_MESSAGE_KEYS = ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                 "gen_ai.prompt", "gen_ai.completion", "input.value", "output.value", "input.mime_type",
                 "gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "gen_ai.completion.0.finish_reason",
                 "gen_ai.completion.1.finish_reason", "llm.output_messages.0.message.content",
                 "traceloop.entity.input", "traceloop.entity.output", "pydantic_ai.all_messages", "final_result",
                 "crew_tasks", *conventions.ROW_PATH_KEYS]
_OTHER_KEYS = ["server.address", "http.method", "a\"b", "new\nline", "é", "", "k", *conventions.STREAM_FLAGS]
_MODELS = ["gpt-4o", "gpt-4o-mini-2024-07-18", "claude-sonnet-4-20250514", "openai/gpt-4o", "my-deployment",
           "GPT-4O", "gpt-4"]
_STRINGS = ["", "chat", "execute_tool", "invoke_agent", "LLM", "chain", "CHAIN", "agent", "tool", "workflow",
            "completion", "embedding", "xai", "az.ai.openai", "OpenAI", "stop", "tool_calls", "tool_use",
            '["stop","length"]', "[oops",
            "12", "12.0", " 7", "1e400", "nan", "-3", "0.25", "many", "é\u2028\"\\\x01", "x" * 300, *_MODELS]
_TEXT = ["hi", "a \"quoted\" word", "back\\slash", "line\nbreak", "tab\t", "é ✓ 中", "😀", "\u0001", ""]


def _messages_json(rng: random.Random, role: str, wild: bool) -> str:
    """Message JSON as instrumentations send it: canonical, or (wild) anything."""
    msgs: list[Any] = []
    for _ in range(rng.randint(0 if wild else 1, 3)):
        parts: list[Any] = []
        for _ in range(rng.randint(0, 3)):
            parts.append(rng.choice([
                {"type": "text", "content": rng.choice(_TEXT)},
                {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
                {"type": "tool_call", "id": "c", "name": "f", "arguments": {"city": "Paris", "n": [1, 2.5, None]}},
                {"type": "reasoning", "content": "hmm", "extra": True},
            ] if not wild else [
                {"type": "text", "content": rng.choice(_TEXT)},
                {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
                {"type": "tool_call", "id": "c", "name": "f", "arguments": {"city": "Paris", "n": [1, 2.5, None]}},
                {"type": "tool_call_response", "id": "call_1", "response": {"deep": {"deeper": {"deepest": [1]}}}},
                {"type": "reasoning", "content": "hmm", "extra": True},
                {"content": "no type"}, {"type": None}, {"type": 3}, "bare string",
                {"type": "text", "text": "vendor shape"}, {"type": "thinking", "thinking": "t"},
            ]))
        m: dict[str, Any] = rng.choice([{"role": role}, {"role": rng.choice(["user", "assistant", "tool"])}, {},
                                        {"role": ""}, {"role": 1}] if wild else [{"role": role}, {"role": "tool"}])
        if rng.random() < 0.9 or not wild:
            m["parts"] = parts
        else:
            m["content"] = rng.choice(_TEXT)
        if rng.random() < 0.3:
            m["finish_reason"] = rng.choice(["stop", "length", None, 3])
        if rng.random() < 0.1:
            m["name"] = "bob"
        if rng.random() < 0.05:
            m = dict(reversed(list(m.items())))
        msgs.append(m if rng.random() < 0.97 or not wild else "not a message")
    if role == "user" and rng.random() < 0.2:  # a system message first: the system instructions' twin, or not
        msgs.insert(0, {"role": "system", "parts": [{"type": "text", "content": rng.choice(["be brief", "hi"])}]})
    style = rng.random() * (1 if wild else 0.8)
    if style < 0.6:
        text = json.dumps(msgs, separators=(",", ":"), ensure_ascii=False)
    elif style < 0.75:
        text = json.dumps(msgs)  # ", " and ": " separators, \u escapes
    elif style < 0.8:
        text = json.dumps(msgs, indent=1)
    elif style < 0.85:
        text = " " + json.dumps(msgs)
    elif style < 0.9:
        text = json.dumps(msgs)[:-1]  # truncated: not JSON
    elif style < 0.95:
        text = json.dumps(msgs[0] if msgs else {}, separators=(",", ":"))
    else:
        text = rng.choice(["", "[]", "plain text", "[1e999]", '["\\ud800"]', "[-01]", '[{"role":"a","parts":[],}]'])
    if rng.random() < 0.1:
        text = text.replace('"system"', '"\\u0073ystem"')  # the same role, escaped
    return text


def _value(rng: random.Random, key: str, wild: bool) -> Any:
    """A random value for an attribute, biased towards what the key's readers expect."""
    r = rng.random()
    if key.endswith(".messages") or key in ("gen_ai.prompt", "gen_ai.completion", "input.value", "output.value"):
        if r < 0.75:
            return _messages_json(rng, "user" if "input" in key or "prompt" in key else "assistant", wild)
    if key == "gen_ai.system_instructions" and r < 0.8:
        return rng.choice(['[{"type":"text","content":"be brief"}]', "be brief", "", "[]", '{"type":"text"}',
                           '[{"content":"c","type":"text"}]', '[{"type":"text","text":"x"}]', "[bad"])
    if key.endswith("model") or key.endswith("model_name"):
        if r < 0.7:
            return rng.choice(_MODELS)
    if "tokens" in key or "token_count" in key:
        if r < 0.6:
            return rng.randint(0, 5000)
    r = rng.random()
    if r < 0.35:
        return rng.choice(_STRINGS)
    if r < 0.45:
        return rng.choice([True, False])
    if r < 0.6:
        return rng.choice([0, -1, 7, 2**40, -(2**40)])
    if r < 0.75:
        return rng.choice([0.0, -0.0, 12.0, 12.7, -1.5, 2.5e-5, 1e16, 0.1, float("nan"), float("inf"), -float("inf")])
    if r < 0.8:
        return rng.choice([b"", b"\x00\xff", b"\xd7m\xf8", b"12"])
    if r < 0.85:
        return None if rng.random() < 0.7 else _STRINDEX
    if r < 0.95:
        return rng.choice([["stop"], ["stop", "length"], [], ["stop", None], [1, "x"], [["n"]], [{"k": 1}], [b"b"]])
    return rng.choice([{}, {"k": "v"}, {"a": {"b": [1, 2.5]}}])


_STRINDEX = object()  # an AnyValue.string_value_strindex (profiles' string table index)


def _any(v: Any) -> AnyValue:
    return AnyValue(string_value_strindex=5) if v is _STRINDEX else otlp.av(v)


def _kvs(rng: random.Random, keys: list[str], wild: bool = True) -> list[KeyValue]:
    out = []
    for k in keys:
        if rng.random() < 0.03:
            out.append(KeyValue(key=k))  # no value at all
        elif rng.random() < 0.02:
            out.append(KeyValue(key=k, value=AnyValue(string_value="")))
        else:
            out.append(KeyValue(key=k, value=_any(_value(rng, k, wild))))
    return out


def _attr_keys(rng: random.Random, wild: bool) -> list[str]:
    keys = rng.sample(_ALIAS_KEYS, rng.randint(0, 12))
    if rng.random() < 0.5:
        keys += rng.sample(_MESSAGE_KEYS[:3], rng.randint(1, 3))
    if wild and rng.random() < 0.3:
        keys += rng.sample(_MESSAGE_KEYS[3:], rng.randint(1, 3))
    keys += rng.sample(_OTHER_KEYS, rng.randint(0, 3))
    if keys and rng.random() < 0.15:
        keys.append(rng.choice(keys))  # a repeated key: the last value wins
    rng.shuffle(keys)
    return keys


def _event(rng: random.Random, start: int, wild: bool) -> Span.Event:
    name = rng.choice(["exception", "exception", "First Token Stream Event", "gen_ai.content.completion.chunk", "retry"]
                      + (["gen_ai.choice", "gen_ai.user.message", "gen_ai.content.prompt"] if wild else []))
    keys = {"exception": ["exception.type", "exception.message", "exception.type"][: rng.randint(0, 3)],
            "gen_ai.choice": ["message", "finish_reason"], "gen_ai.user.message": ["content"],
            "gen_ai.content.prompt": ["gen_ai.prompt"]}.get(name, ["attempt"])
    return Span.Event(name=name, time_unix_nano=min(max(start + rng.randint(-10**9, 10**10), 0), 2**64 - 1),
                      attributes=_kvs(rng, keys),
                      dropped_attributes_count=rng.randint(0, 2))


def _span(rng: random.Random, trace: bytes, wild: bool) -> Span:
    start = rng.randint(1, 2**62) if rng.random() < 0.97 else rng.randint(2**63, 2**64 - 1)
    name = rng.choice(["chat gpt-4o", "execute_tool search", "execute_tool", "execute_tool ", "invoke_agent helper",
                       "invoke_agent ", "invoke_agent", "create_agent ",
                       "create_agent a b", "AgentExecutor", "RunnableSequence", "", "x", "embeddings",
                       "chatter box", "GET /", "OpenAI._prepare_chat_with_tools", "ai.toolCall"])
    links = [Span.Link(trace_id=rng.choice([b"", b"\x00" * 16, rng.randbytes(16)]),
                       span_id=rng.choice([b"", b"\x00" * 8, rng.randbytes(8)]),
                       trace_state=rng.choice(["", "a=b", 'q="x"']),
                       attributes=_kvs(rng, ["l", "m"][: rng.randint(0, 2)]),
                       flags=rng.randint(0, 3)) for _ in range(rng.choice([0, 0, 0, 1, 2]))]
    return Span(
        trace_id=trace, span_id=rng.randbytes(8), parent_span_id=rng.choice([b"", b"\x00" * 8, rng.randbytes(8)]),
        trace_state=rng.choice(["", "k=v"]), name=name, kind=rng.randint(0, 6),
        start_time_unix_nano=start, end_time_unix_nano=min(max(start + rng.randint(-10**6, 10**12), 0), 2**64 - 1),
        attributes=_kvs(rng, _attr_keys(rng, wild), wild),
        events=[_event(rng, start, wild) for _ in range(rng.choice([0, 0, 0, 1, 2, 3]))], links=links,
        status=Status(code=rng.randint(0, 3), message=rng.choice(["", "", "boom"])),
        flags=rng.randint(0, 512), dropped_attributes_count=rng.randint(0, 3),
        dropped_events_count=rng.randint(0, 3), dropped_links_count=rng.randint(0, 3),
    )


def _fuzz_request(rng: random.Random, wild: bool) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    traces = [rng.randbytes(16) for _ in range(3)] + [b""]
    for _ in range(rng.randint(1, 3)):
        rs = req.resource_spans.add()
        rs.resource.attributes.extend(_kvs(rng, rng.choice([["service.name"], ["service.name", "host"], [],
                                                            ["service.name", "service.name"]])))
        for _ in range(rng.randint(1, 2)):
            ss = rs.scope_spans.add()
            ss.scope.name, ss.scope.version = rng.choice([("", ""), ("s", "1"), ("s", "")])
            ss.scope.attributes.extend(_kvs(rng, rng.choice([[], ["a"]])))
            ss.spans.extend(_span(rng, rng.choice(traces), wild) for _ in range(rng.randint(0, 25)))
    return req


@pytest.mark.parametrize("layouts", ["generic", "shared"])
@pytest.mark.parametrize("wild", [False, True], ids=["regular", "wild"])
@pytest.mark.parametrize("seed", range(10))
def test_fuzz(seed: int, wild: bool, layouts: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regular: message sources this module vectorizes; wild: anything, much of it for
    the per-span reference. Attribute lists are JSON-encoded per shared layout (keys and
    value types) when a layout is common; "shared" makes every layout count as common."""
    if layouts == "shared":
        monkeypatch.setattr(columnar_attributes, "_SHAPE_MIN", 1)
    rng = random.Random(seed)
    requests = [_fuzz_request(rng, wild) for _ in range(4)]
    same_as_reference(*requests, owners=[rng.choice(["a", "b", None]) for _ in requests])


def test_layout_hash_collisions_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lists are grouped by a hash of their layout; lists that collide (here: the hash
    made blind to key order) are checked and written one by one instead."""
    monkeypatch.setattr(columnar_attributes, "_MIX2", np.uint64(0))
    monkeypatch.setattr(columnar_attributes, "_SHAPE_MIN", 1)
    spans = [otlp.make_span(attrs, span_id=bytes([i + 1]) * 8) for i, attrs in enumerate([
        {"a": "x", "b": 1, "gen_ai.operation.name": "chat"},
        {"b": 2, "a": "y", "gen_ai.operation.name": "chat"},
        {"gen_ai.operation.name": "chat", "a": "z", "b": 3},
        {"a": "x", "b": 1, "gen_ai.operation.name": "chat"},
    ])]
    same_as_reference(otlp.trace_request(*spans))


def test_bytes_and_numbers_in_json_columns() -> None:
    attrs = {"b64": b"\x00\xff\xfe", "f": 12.0, "i": 12, "nan": float("nan"), "inf": float("inf"), "neg0": -0.0,
             "tiny": 5e-324, "big": 1e300, "t": True, "arr": [1, 1.0, True, None, b"x", {"k": []}]}
    table = same_as_reference(otlp.trace_request(otlp.make_span(attrs)))
    stored = json.loads(table.column("attributes")[0].as_py())
    assert stored["b64"] == base64.b64encode(b"\x00\xff\xfe").decode()
    assert (stored["nan"], stored["inf"]) == (None, None)
    assert type(stored["f"]) is float and type(stored["i"]) is int


# a message shape that is rewritten takes the Python tier; OpenInference's input.value the
# reference's GenAI columns (columnar._reference_rows)
_OLD_SHAPE = {"gen_ai.input.messages": '[{"role":"user","content":"hi"}]'}
_ROW_PATH = {"input.value": "hi"}


@pytest.mark.parametrize("attrs", [
    {"gen_ai.usage.input_tokens": 2**62, "gen_ai.usage.output_tokens": 2**62},  # the total
    {"gen_ai.usage.input_tokens": 1e300, "gen_ai.usage.output_tokens": "1e30"},  # as_int of huge numbers
    {"gen_ai.usage.input_tokens": 2**62, "gen_ai.usage.output_tokens": 2**62, **_OLD_SHAPE},
    {"gen_ai.usage.input_tokens": "99999999999999999999", "gen_ai.usage.output_tokens": 9.21e18, **_OLD_SHAPE},
    {"gen_ai.usage.input_tokens": -9.3e18, "gen_ai.usage.output_tokens": "1e19", **_OLD_SHAPE},
    {"gen_ai.usage.input_tokens": "99999999999999999999", "gen_ai.usage.output_tokens": 1e19, **_ROW_PATH},
    {"gen_ai.usage.input_tokens": 2**62, "gen_ai.usage.output_tokens": 2**62, **_ROW_PATH},
])
def test_counts_beyond_int64_are_null(attrs: dict[str, Any]) -> None:
    """No int64 column holds these: both paths store null (a Python int beyond int64 in the
    reference's rows would fail the Arrow conversion of the whole batch, and the flusher
    with it), and a double just below 2**63 is kept by both."""
    row = same_as_reference(otlp.trace_request(otlp.make_span(attrs))).to_pylist()[0]
    assert row["total_tokens"] is None
    assert all(v is None or -(2**63) <= v < 2**63 for v in (row["input_tokens"], row["output_tokens"]))
