"""normalize.rows: tables of OTLP input (real protobuf classes) → expected columns."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from normalize.rows import normalize_logs, normalize_metrics, normalize_traces
from normalize.pricing import compute_cost
from storage.schema import LOGS, METRICS, SPANS

TRACE = bytes.fromhex("5b8efff798038103d269b633813fc60c")
SPAN_ID = bytes.fromhex("eee19b7ec3c1b174")
PARENT = bytes.fromhex("eee19b7ec3c1b173")
START = 1_700_000_000_123_456_789
END = START + 1_500_000_000
SERVICE = "triage-svc"


# -- builders --------------------------------------------------------------------------


def av(v: Any) -> AnyValue:
    if v is None:
        return AnyValue()
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, bytes):
        return AnyValue(bytes_value=v)
    if isinstance(v, list):
        return AnyValue(array_value=ArrayValue(values=[av(x) for x in v]))
    if isinstance(v, dict):
        return AnyValue(kvlist_value=KeyValueList(values=kvs(v)))
    return AnyValue(string_value=v)


def kvs(d: dict[str, Any] | None) -> list[KeyValue]:
    return [KeyValue(key=k, value=av(v)) for k, v in (d or {}).items()]


def make_span(attrs: dict[str, Any] | None = None, *, name: str = "op", parent: bytes = PARENT,
              trace: bytes = TRACE, span_id: bytes = SPAN_ID, events: list[Span.Event] = (),
              status: Status | None = None, **kw: Any) -> Span:
    return Span(trace_id=trace, span_id=span_id, parent_span_id=parent, name=name,
                start_time_unix_nano=START, end_time_unix_nano=END, attributes=kvs(attrs),
                events=list(events), status=status, **kw)


def trace_request(*spans: Span, resource: dict[str, Any] | None = None) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend(kvs({"service.name": SERVICE} if resource is None else resource))
    ss = rs.scope_spans.add()
    ss.scope.name, ss.scope.version = "test.scope", "1.0"
    ss.spans.extend(spans)
    return req


def rows(columns: dict[str, list]) -> list[dict[str, Any]]:
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def one_span(attrs: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    (row,) = rows(normalize_traces(trace_request(make_span(attrs, **kw)), "alice"))
    return row


def event(name: str, attrs: dict[str, Any] | None = None, t: int = START + 1000) -> Span.Event:
    return Span.Event(name=name, time_unix_nano=t, attributes=kvs(attrs))


def subset(row: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in expected}


# -- column layout, core fields ---------------------------------------------------------


def test_columns_are_the_schema_in_order_with_equal_lengths() -> None:
    req = trace_request(make_span(), make_span(span_id=b"\x02" * 8))
    rs2 = req.resource_spans.add()
    rs2.scope_spans.add().spans.append(make_span(span_id=b"\x03" * 8))
    for columns, table, n in (
        (normalize_traces(req, None), SPANS, 3),
        (normalize_traces(ExportTraceServiceRequest(), None), SPANS, 0),
        (normalize_logs(ExportLogsServiceRequest(), None), LOGS, 0),
        (normalize_metrics(ExportMetricsServiceRequest(), None), METRICS, 0),
    ):
        assert list(columns) == table.columns
        assert {len(v) for v in columns.values()} == {n}


def test_core_span_fields() -> None:
    row = one_span({"http.method": "GET"}, name="GET /x", kind=Span.SPAN_KIND_SERVER,
                   trace_state="k=v", flags=257, dropped_attributes_count=2,
                   dropped_events_count=3, dropped_links_count=4,
                   status=Status(code=Status.STATUS_CODE_ERROR, message="boom"))
    assert row == row | {
        "trace_id": TRACE.hex(), "span_id": SPAN_ID.hex(), "parent_span_id": PARENT.hex(),
        "trace_state": "k=v", "name": "GET /x", "kind": "server", "service_name": SERVICE,
        "scope_name": "test.scope", "scope_version": "1.0",
        "start_time": START // 1000, "end_time": END // 1000, "duration_ms": 1500.0,
        "status_code": "error", "status_message": "boom", "flags": 257, "owner": "alice",
        "dropped_attributes_count": 2, "dropped_events_count": 3, "dropped_links_count": 4,
        "span_type": "other", "operation": None, "agent_name": None, "cost_usd": None,
        "input_messages": None, "output_messages": None, "events": "[]", "links": "[]",
    }
    assert row["trace_id"] == "5b8efff798038103d269b633813fc60c"


@pytest.mark.parametrize(("parent", "expected"), [
    (b"", None),
    (b"\x00" * 8, None),
    (bytes.fromhex("00000000000000ff"), "00000000000000ff"),
    (bytes.fromhex("ABCDEF0123456789"), "abcdef0123456789"),
])
def test_parent_span_id(parent: bytes, expected: str | None) -> None:
    assert one_span(parent=parent)["parent_span_id"] == expected


@pytest.mark.parametrize(("kind", "status", "want"), [
    (Span.SPAN_KIND_UNSPECIFIED, Status.STATUS_CODE_UNSET, ("unspecified", "unset")),
    (Span.SPAN_KIND_INTERNAL, Status.STATUS_CODE_OK, ("internal", "ok")),
    (Span.SPAN_KIND_CLIENT, Status.STATUS_CODE_ERROR, ("client", "error")),
    (Span.SPAN_KIND_PRODUCER, Status.STATUS_CODE_UNSET, ("producer", "unset")),
    (Span.SPAN_KIND_CONSUMER, Status.STATUS_CODE_UNSET, ("consumer", "unset")),
])
def test_kind_and_status_names(kind: int, status: int, want: tuple[str, str]) -> None:
    row = one_span(kind=kind, status=Status(code=status))
    assert (row["kind"], row["status_code"]) == want


def test_raw_attributes_survive_as_json() -> None:
    attrs = {"s": "x", "b": True, "i": -7, "d": 1.5, "bytes": b"\x00\xff", "empty": None,
             "arr": ["a", 1, [2.5]], "kv": {"k": {"nested": [True]}}, "gen_ai.request.model": "gpt-4o"}
    link = Span.Link(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, trace_state="a=b",
                     attributes=kvs({"link.kind": "follows"}), flags=1)
    row = one_span(attrs, events=[event("retry", {"attempt": 2}, t=42)], links=[link])
    assert json.loads(row["attributes"]) == {**attrs, "bytes": base64.b64encode(b"\x00\xff").decode()}
    assert json.loads(row["resource_attributes"]) == {"service.name": SERVICE}
    assert json.loads(row["scope_attributes"]) == {}
    assert json.loads(row["events"]) == [
        {"name": "retry", "time_unix_nano": 42, "attributes": {"attempt": 2}, "dropped_attributes_count": 0}]
    assert json.loads(row["links"]) == [
        {"trace_id": "01" * 16, "span_id": "02" * 8, "trace_state": "a=b",
         "attributes": {"link.kind": "follows"}, "flags": 1}]
    assert " " not in row["links"]  # compact JSON


# -- operation, span type, provider ----------------------------------------------------

OPERATIONS = [
    # (attributes, span name, operation, span_type)
    ({"gen_ai.operation.name": "chat"}, "x", "chat", "llm"),
    ({"gen_ai.operation.name": "generate_content"}, "x", "generate_content", "llm"),
    ({"gen_ai.operation.name": "text_completion"}, "x", "text_completion", "llm"),
    ({"gen_ai.operation.name": "embeddings"}, "x", "embeddings", "embedding"),
    ({"gen_ai.operation.name": "retrieval"}, "x", "retrieval", "retrieval"),
    ({"gen_ai.operation.name": "create_agent"}, "x", "create_agent", "agent"),
    ({"gen_ai.operation.name": "invoke_workflow"}, "x", "invoke_workflow", "agent"),
    ({"gen_ai.operation.name": "chat", "llm.request.type": "embedding"}, "x", "chat", "llm"),
    # OpenLLMetry
    ({"llm.request.type": "chat"}, "openai.chat", "chat", "llm"),
    ({"llm.request.type": "completion"}, "x", "text_completion", "llm"),
    ({"llm.request.type": "embedding"}, "x", "embeddings", "embedding"),
    ({"traceloop.span.kind": "workflow"}, "x", "invoke_workflow", "agent"),
    ({"traceloop.span.kind": "agent"}, "x", "invoke_agent", "agent"),
    ({"traceloop.span.kind": "tool"}, "x", "execute_tool", "tool"),
    ({"traceloop.span.kind": "task"}, "x", None, "other"),
    # OpenInference
    ({"openinference.span.kind": "LLM"}, "ChatCompletion", "chat", "llm"),
    ({"openinference.span.kind": "EMBEDDING"}, "x", "embeddings", "embedding"),
    ({"openinference.span.kind": "TOOL"}, "x", "execute_tool", "tool"),
    ({"openinference.span.kind": "AGENT"}, "x", "invoke_agent", "agent"),
    ({"openinference.span.kind": "RETRIEVER"}, "x", "retrieval", "retrieval"),
    ({"openinference.span.kind": "RERANKER"}, "x", "rerank", "other"),
    ({"openinference.span.kind": "CHAIN"}, "RunnableSequence", None, "other"),
    ({"openinference.span.kind": "CHAIN"}, "AgentExecutor", "invoke_agent", "agent"),
    ({"openinference.span.kind": "CHAIN", "agent.name": "a"}, "x", "invoke_agent", "agent"),
    ({"openinference.span.kind": "GUARDRAIL"}, "x", None, "other"),
    # span name
    ({}, "chat gpt-4o", "chat", "llm"),
    ({}, "execute_tool search", "execute_tool", "tool"),
    ({}, "invoke_agent triage", "invoke_agent", "agent"),
    ({}, "embeddings", "embeddings", "embedding"),
    ({}, "text_completion m", "text_completion", "llm"),
    ({}, "generate_content gemini", "generate_content", "llm"),
    ({}, "create_agent a", "create_agent", "agent"),
    ({}, "invoke_workflow w", "invoke_workflow", "agent"),
    ({}, "chatter box", None, "other"),
    # a model and no operation → llm
    ({"gen_ai.request.model": "gpt-4o"}, "x", None, "llm"),
    ({"llm.model_name": "gpt-4o"}, "x", None, "llm"),
    ({}, "GET /", None, "other"),
]


@pytest.mark.parametrize(("attrs", "name", "operation", "span_type"), OPERATIONS)
def test_operation_and_span_type(attrs: dict, name: str, operation: str | None, span_type: str) -> None:
    row = one_span(attrs, name=name)
    assert (row["operation"], row["span_type"]) == (operation, span_type)


@pytest.mark.parametrize(("attrs", "provider"), [
    ({"gen_ai.provider.name": "openai"}, "openai"),
    ({"gen_ai.provider.name": "anthropic", "gen_ai.system": "openai"}, "anthropic"),
    ({"gen_ai.system": "OpenAI"}, "openai"),
    ({"gen_ai.system": "az.ai.inference"}, "azure.ai.inference"),
    ({"gen_ai.system": "az.ai.openai"}, "azure.ai.openai"),
    ({"gen_ai.system": "xai"}, "x_ai"),
    ({"llm.provider": "anthropic", "llm.system": "openai"}, "anthropic"),
    ({"llm.system": "openai"}, "openai"),
    ({"gen_ai.provider.name": ""}, None),
    ({}, None),
])
def test_provider(attrs: dict, provider: str | None) -> None:
    assert one_span(attrs)["provider"] == provider


# -- models, tokens, coercion ---------------------------------------------------------

TOKENS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens",
          "cache_write_tokens", "reasoning_tokens")

USAGE = [
    # current GenAI semconv
    ({"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20,
      "gen_ai.usage.cache_read.input_tokens": 80, "gen_ai.usage.cache_creation.input_tokens": 10,
      "gen_ai.usage.reasoning.output_tokens": 5},
     (100, 20, 120, 80, 10, 5)),
    # deprecated (before v1.27) names and OpenLLMetry's cache/total names
    ({"gen_ai.usage.prompt_tokens": 100, "gen_ai.usage.completion_tokens": 20,
      "llm.usage.total_tokens": 125, "gen_ai.usage.cache_read_input_tokens": 7,
      "gen_ai.usage.cache_creation_input_tokens": 3, "gen_ai.usage.reasoning_tokens": 4},
     (100, 20, 125, 7, 3, 4)),
    # OpenInference
    ({"llm.token_count.prompt": 26, "llm.token_count.completion": 11, "llm.token_count.total": 37,
      "llm.token_count.prompt_details.cache_read": 6, "llm.token_count.prompt_details.cache_write": 2,
      "llm.token_count.completion_details.reasoning": 1},
     (26, 11, 37, 6, 2, 1)),
    # the current name wins over a deprecated one
    ({"gen_ai.usage.prompt_tokens": 1, "gen_ai.usage.input_tokens": 2}, (2, None, None, None, None, None)),
    # coercion: double, numeric strings; junk and bools are dropped
    ({"gen_ai.usage.input_tokens": 12.0, "gen_ai.usage.output_tokens": "7"}, (12, 7, 19, None, None, None)),
    ({"gen_ai.usage.input_tokens": "12.0", "gen_ai.usage.output_tokens": True},
     (12, None, None, None, None, None)),
    ({"gen_ai.usage.input_tokens": "many", "llm.token_count.prompt": 5}, (5, None, None, None, None, None)),
    ({"gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": 0}, (0, 0, 0, None, None, None)),
    ({}, (None,) * 6),
]


@pytest.mark.parametrize(("attrs", "want"), USAGE)
def test_token_usage(attrs: dict, want: tuple) -> None:
    row = one_span(attrs)
    assert tuple(row[k] for k in TOKENS) == want


@pytest.mark.parametrize(("attrs", "want"), [
    ({"gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06"},
     ("gpt-4o", "gpt-4o-2024-08-06")),
    ({"llm.request.model_name": "a", "llm.response.model_name": "b"}, ("a", "b")),
    ({"llm.model_name": "m"}, ("m", None)),
    ({"embedding.model_name": "text-embedding-3-small"}, ("text-embedding-3-small", None)),
    ({"gen_ai.request.model": 4}, ("4", None)),
])
def test_models(attrs: dict, want: tuple) -> None:
    row = one_span(attrs)
    assert (row["request_model"], row["response_model"]) == want


# -- cost ------------------------------------------------------------------------------

_GPT4O = {"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 1000,
          "gen_ai.usage.output_tokens": 100}

COSTS = [
    ({**_GPT4O, "gen_ai.usage.cost": 0.5}, 0.5, "reported"),
    ({**_GPT4O, "llm.cost.total": "0.25"}, 0.25, "reported"),
    ({"gen_ai.usage.cost": 0.0}, 0.0, "reported"),
    (_GPT4O, (1000 * 2.5 + 100 * 10) / 1e6, "computed"),
    ({**_GPT4O, "gen_ai.usage.cache_read.input_tokens": 800},
     (200 * 2.5 + 800 * 1.25 + 100 * 10) / 1e6, "computed"),
    # the response model is priced first
    ({**_GPT4O, "gen_ai.response.model": "gpt-4o-mini-2024-07-18"}, (1000 * 0.15 + 100 * 0.6) / 1e6,
     "computed"),
    # an unknown response model falls back to the request model
    ({**_GPT4O, "gen_ai.response.model": "my-deployment"}, (1000 * 2.5 + 100 * 10) / 1e6, "computed"),
    ({**_GPT4O, "gen_ai.request.model": "local-llama"}, None, None),
    ({"gen_ai.request.model": "gpt-4o"}, None, None),  # no token counts
    ({}, None, None),
]


@pytest.mark.parametrize(("attrs", "cost", "source"), COSTS)
def test_cost(attrs: dict, cost: float | None, source: str | None) -> None:
    row = one_span(attrs)
    assert row["cost_source"] == source
    assert row["cost_usd"] == (None if cost is None else pytest.approx(cost))


def test_computed_cost_matches_pricing_module() -> None:
    row = one_span({"gen_ai.request.model": "claude-sonnet-4-20250514", "gen_ai.usage.input_tokens": 5000,
                    "gen_ai.usage.output_tokens": 300, "gen_ai.usage.cache_read.input_tokens": 4000,
                    "gen_ai.usage.cache_creation.input_tokens": 500})
    assert row["cost_usd"] == pytest.approx(compute_cost("claude-sonnet-4", 5000, 300, 4000, 500))


# -- agent, tool, conversation, ttft, finish reasons, errors -----------------------------

AGENTS = [
    # (attributes, span name, parent, agent_name, agent_id)
    ({"gen_ai.agent.name": "triage", "gen_ai.agent.id": "asst_1"}, "x", PARENT, "triage", "asst_1"),
    ({"agent.name": "planner"}, "x", PARENT, "planner", None),
    ({"gen_ai.agent.name": "a", "agent.name": "b"}, "x", PARENT, "a", None),
    ({"traceloop.span.kind": "agent", "traceloop.entity.name": "researcher"}, "x", PARENT, "researcher", None),
    ({"traceloop.span.kind": "task", "traceloop.entity.name": "step"}, "x", PARENT, None, None),
    ({"gen_ai.operation.name": "invoke_agent"}, "invoke_agent helper", PARENT, "helper", None),
    # an agent span without a name → the service
    ({"gen_ai.operation.name": "invoke_agent"}, "invoke_agent", PARENT, SERVICE, None),
    ({"openinference.span.kind": "AGENT"}, "run", PARENT, SERVICE, None),
    # a GenAI root span → the service; a plain root or child → nothing
    ({"gen_ai.operation.name": "chat"}, "chat m", b"", SERVICE, None),
    ({"openinference.span.kind": "CHAIN"}, "LangGraph", b"", SERVICE, None),
    ({"http.method": "GET"}, "GET /", b"", None, None),
    ({"gen_ai.operation.name": "chat"}, "chat m", PARENT, None, None),
]


@pytest.mark.parametrize(("attrs", "name", "parent", "agent", "agent_id"), AGENTS)
def test_agent(attrs: dict, name: str, parent: bytes, agent: str | None, agent_id: str | None) -> None:
    row = one_span(attrs, name=name, parent=parent)
    assert (row["agent_name"], row["agent_id"]) == (agent, agent_id)


def test_plain_root_of_a_genai_trace_takes_the_service_name() -> None:
    root = make_span({"http.route": "/ask"}, name="POST /ask", parent=b"")
    child = make_span({"gen_ai.operation.name": "chat"}, name="chat m", span_id=b"\x05" * 8, parent=SPAN_ID)
    other_trace_root = make_span({}, name="GET /health", parent=b"", trace=b"\x09" * 16)
    got = rows(normalize_traces(trace_request(root, child, other_trace_root), None))
    assert [r["agent_name"] for r in got] == [SERVICE, None, None]


@pytest.mark.parametrize(("attrs", "name", "want"), [
    ({"gen_ai.tool.name": "search", "gen_ai.tool.call.id": "call_1"}, "x", ("search", "call_1")),
    ({"tool.name": "calc", "tool_call.id": "c2"}, "x", ("calc", "c2")),
    ({"traceloop.span.kind": "tool", "traceloop.entity.name": "fetch"}, "x", ("fetch", None)),
    ({"gen_ai.operation.name": "execute_tool"}, "execute_tool web_search", ("web_search", None)),
    ({}, "x", (None, None)),
])
def test_tool(attrs: dict, name: str, want: tuple) -> None:
    row = one_span(attrs, name=name)
    assert (row["tool_name"], row["tool_call_id"]) == want


@pytest.mark.parametrize(("attrs", "want"), [
    ({"gen_ai.conversation.id": "conv_1", "session.id": "s"}, "conv_1"),
    ({"session.id": "s"}, "s"),
    ({"gen_ai.conversation.id": 42}, "42"),
    ({}, None),
])
def test_conversation_id(attrs: dict, want: str | None) -> None:
    assert one_span(attrs)["conversation_id"] == want


@pytest.mark.parametrize(("attrs", "events", "want"), [
    ({"gen_ai.server.time_to_first_token": 0.25}, [], 250.0),
    ({"gen_ai.response.time_to_first_chunk": "0.5"}, [], 500.0),
    ({"gen_ai.response.time_to_first_chunk": 1}, [], 1000.0),
    ({}, [event("First Token Stream Event", t=START + 120_000_000)], 120.0),
    ({"llm.ttft": 3}, [], None),
    ({}, [], None),
])
def test_ttft(attrs: dict, events: list, want: float | None) -> None:
    assert one_span(attrs, events=events)["ttft_ms"] == (None if want is None else pytest.approx(want))


_OUT_STOP = '[{"role":"assistant","parts":[{"type":"text","content":"hi"}],"finish_reason":"stop"}]'


@pytest.mark.parametrize(("attrs", "want"), [
    ({"gen_ai.response.finish_reasons": ["stop", "length"]}, ["stop", "length"]),
    ({"gen_ai.response.finish_reasons": '["tool_calls"]'}, ["tool_calls"]),
    ({"gen_ai.response.finish_reasons": "stop"}, ["stop"]),
    ({"llm.finish_reason": "stop"}, ["stop"]),
    ({"gen_ai.completion.0.finish_reason": "stop", "gen_ai.completion.1.finish_reason": "length"},
     ["stop", "length"]),
    ({"gen_ai.output.messages": _OUT_STOP}, ["stop"]),
    ({}, None),
])
def test_finish_reasons(attrs: dict, want: list | None) -> None:
    assert one_span(attrs)["finish_reasons"] == want


@pytest.mark.parametrize(("attrs", "events", "status", "want"), [
    ({"error.type": "timeout"}, [], Status(code=2, message="deadline"), ("timeout", "deadline")),
    ({}, [event("exception", {"exception.type": "ValueError", "exception.message": "bad"})],
     Status(code=2), ("ValueError", "bad")),
    ({"error.type": "RateLimit"}, [event("exception", {"exception.type": "E", "exception.message": "m"})],
     Status(code=2, message="429"), ("RateLimit", "429")),
    ({}, [], Status(code=1), (None, None)),
])
def test_errors(attrs: dict, events: list, status: Status, want: tuple) -> None:
    row = one_span(attrs, events=events, status=status)
    assert (row["error_type"], row["error_message"]) == want


# -- messages --------------------------------------------------------------------------


def text(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}], **extra}


CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}
RESULT = {"type": "tool_call_response", "id": "call_1", "response": "cloudy"}
_OAI_CALL = {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}

MESSAGES = [
    # current GenAI: JSON strings + system instructions
    ("genai-json",
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]',
      "gen_ai.input.messages": json.dumps([text("user", "hi")]),
      "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [CALL], "finish_reason": "tool_call"}])},
     [], [text("system", "be brief"), text("user", "hi")],
     [{"role": "assistant", "parts": [CALL], "finish_reason": "tool_call"}]),
    # current GenAI: structured AnyValue, plain-string system instructions
    ("genai-structured",
     {"gen_ai.system_instructions": "be brief",
      "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                                {"role": "tool", "parts": [RESULT]}],
      "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"}]}]},
     [], [text("system", "be brief"), text("user", "hi"), {"role": "tool", "parts": [RESULT]}],
     [{"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"}]}]),
    # old-style {"role", "content"} in gen_ai.input.messages, OpenAI tool calls
    ("genai-old-shape",
     {"gen_ai.input.messages": json.dumps([{"role": "user", "content": "hi"},
                                           {"role": "assistant", "content": None, "tool_calls": [_OAI_CALL]},
                                           {"role": "tool", "tool_call_id": "call_1", "content": "cloudy"}])},
     [], [text("user", "hi"), {"role": "assistant", "parts": [CALL]}, {"role": "tool", "parts": [RESULT]}],
     None),
    # span events gen_ai.content.prompt / completion
    ("content-events", {},
     [event("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps([{"role": "user", "content": "hi"}])}),
      event("gen_ai.content.completion", {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "yo"}])})],
     [text("user", "hi")], [text("assistant", "yo")]),
    # span events in the older openai-v2 style
    ("role-events", {},
     [event("gen_ai.system.message", {"gen_ai.system": "openai", "content": "be brief"}),
      event("gen_ai.user.message", {"gen_ai.event.content": '{"content":"hi"}'}),
      event("gen_ai.tool.message", {"content": "cloudy", "id": "call_1"}),
      event("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                              "message": '{"role":"assistant","content":"yo"}'})],
     [text("system", "be brief"), text("user", "hi"), {"role": "tool", "parts": [RESULT]}],
     [text("assistant", "yo", finish_reason="stop")]),
    # OpenLLMetry indexed attributes
    ("openllmetry",
     {"gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "be brief",
      "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "hi",
      "gen_ai.prompt.2.role": "assistant", "gen_ai.prompt.2.tool_calls.0.id": "call_1",
      "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
      "gen_ai.prompt.2.tool_calls.0.arguments": '{"city":"Paris"}',
      "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.content": "cloudy", "gen_ai.prompt.3.tool_call_id": "call_1",
      "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "yo",
      "gen_ai.completion.0.finish_reason": "stop"},
     [], [text("system", "be brief"), text("user", "hi"), {"role": "assistant", "parts": [CALL]},
          {"role": "tool", "parts": [RESULT]}],
     [text("assistant", "yo", finish_reason="stop")]),
    # OpenLLMetry multi-part content is a JSON array
    ("openllmetry-parts",
     {"gen_ai.prompt.0.role": "user",
      "gen_ai.prompt.0.content": '[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"u"}}]'},
     [], [{"role": "user", "parts": [{"type": "text", "content": "look"},
                                     {"type": "image_url", "image_url": {"url": "u"}}]}], None),
    # OpenInference indexed attributes (contents, tool calls, tool results)
    ("openinference",
     {"llm.input_messages.0.message.role": "user",
      "llm.input_messages.0.message.contents.0.message_content.type": "text",
      "llm.input_messages.0.message.contents.0.message_content.text": "hi",
      "llm.input_messages.1.message.role": "assistant",
      "llm.input_messages.1.message.tool_calls.0.tool_call.id": "call_1",
      "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "get_weather",
      "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"city":"Paris"}',
      "llm.input_messages.2.message.role": "tool", "llm.input_messages.2.message.content": "cloudy",
      "llm.input_messages.2.message.tool_call_id": "call_1",
      "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "yo",
      "input.value": "ignored: indexed messages win"},
     [], [text("user", "hi"), {"role": "assistant", "parts": [CALL]}, {"role": "tool", "parts": [RESULT]}],
     [text("assistant", "yo")]),
    # OpenInference input.value / output.value
    ("io-json-messages",
     {"input.value": json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
      "input.mime_type": "application/json",
      "output.value": json.dumps({"choices": [{"finish_reason": "stop",
                                               "message": {"role": "assistant", "content": "yo"}}]}),
      "output.mime_type": "application/json"},
     [], [text("user", "hi")], [text("assistant", "yo", finish_reason="stop")]),
    ("io-text", {"input.value": "what is 2+2?", "output.value": '{"answer": 4}', "output.mime_type": "application/json"},
     [], [text("user", "what is 2+2?")], [text("assistant", '{"answer": 4}')]),
    # Anthropic content blocks inside old-style messages
    ("anthropic-blocks",
     {"gen_ai.input.messages": json.dumps([
         {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                           {"type": "tool_use", "id": "call_1", "name": "get_weather",
                                            "input": {"city": "Paris"}}]},
         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "cloudy"}]}])},
     [], [{"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"},
                                          {**CALL, "arguments": {"city": "Paris"}}]},
          {"role": "user", "parts": [RESULT]}], None),
    # gen_ai.prompt as a plain-text span attribute
    ("prompt-attribute", {"gen_ai.prompt": "hello", "gen_ai.completion": "world"}, [],
     [text("user", "hello")], [text("assistant", "world")]),
    ("nothing", {"gen_ai.operation.name": "chat"}, [], None, None),
]


@pytest.mark.parametrize(("attrs", "events", "inp", "out"), [c[1:] for c in MESSAGES],
                         ids=[c[0] for c in MESSAGES])
def test_messages(attrs: dict, events: list, inp: list | None, out: list | None) -> None:
    row = one_span(attrs, events=events)
    got_in = None if row["input_messages"] is None else json.loads(row["input_messages"])
    got_out = None if row["output_messages"] is None else json.loads(row["output_messages"])
    assert (got_in, got_out) == (inp, out)


def test_message_columns_are_json_text() -> None:
    row = one_span({"gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "é"}]}]})
    assert row["input_messages"] == '[{"role":"user","parts":[{"type":"text","content":"é"}]}]'


# -- logs ------------------------------------------------------------------------------


def log_request(*records: LogRecord) -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.extend(kvs({"service.name": SERVICE}))
    sl = rl.scope_logs.add()
    sl.scope.name = "test.logs"
    sl.log_records.extend(records)
    return req


def one_log(event_name: str = "", body: Any = None, attrs: dict | None = None, **kw: Any) -> dict[str, Any]:
    rec = LogRecord(event_name=event_name, attributes=kvs(attrs), **kw)
    if body is not None:
        rec.body.CopyFrom(av(body))
    (row,) = rows(normalize_logs(log_request(rec), "bob"))
    return row


def test_log_core_fields() -> None:
    row = one_log(body="plain text", attrs={"k": 1}, time_unix_nano=START, observed_time_unix_nano=END,
                  trace_id=TRACE, span_id=SPAN_ID, severity_number=9, severity_text="INFO", flags=1,
                  dropped_attributes_count=2)
    assert row == {
        "time": START // 1000, "observed_time": END // 1000, "trace_id": TRACE.hex(), "span_id": SPAN_ID.hex(),
        "severity_number": 9, "severity_text": "INFO", "event_name": None, "body": '"plain text"',
        "service_name": SERVICE, "scope_name": "test.logs", "flags": 1, "owner": "bob",
        "resource_attributes": json.dumps({"service.name": SERVICE}, separators=(",", ":")),
        "attributes": '{"k":1}', "dropped_attributes_count": 2, "message_direction": None, "messages": None,
    }


@pytest.mark.parametrize(("kw", "want"), [
    ({"time_unix_nano": 5000, "observed_time_unix_nano": 9000}, (5, 9)),
    ({"observed_time_unix_nano": 9000}, (9, 9)),
    ({}, (None, None)),
])
def test_log_time_falls_back_to_observed(kw: dict, want: tuple) -> None:
    row = one_log(**kw)
    assert (row["time"], row["observed_time"]) == want


@pytest.mark.parametrize(("event_name", "attrs", "want"), [
    ("gen_ai.user.message", {}, "gen_ai.user.message"),
    ("", {"event.name": "gen_ai.choice"}, "gen_ai.choice"),
    ("a", {"event.name": "b"}, "a"),
    ("", {}, None),
])
def test_log_event_name(event_name: str, attrs: dict, want: str | None) -> None:
    assert one_log(event_name, attrs=attrs)["event_name"] == want


LOG_EVENTS = [
    ("gen_ai.system.message", {"content": "be brief"}, {}, "input", [text("system", "be brief")]),
    ("gen_ai.user.message", {"content": "hi"}, {}, "input", [text("user", "hi")]),
    ("gen_ai.user.message", None, {}, "input", [{"role": "user", "parts": []}]),  # content capture off
    ("gen_ai.assistant.message", {"tool_calls": [_OAI_CALL]}, {}, "input",
     [{"role": "assistant", "parts": [CALL]}]),
    ("gen_ai.tool.message", {"content": "cloudy", "id": "call_1"}, {}, "input", [{"role": "tool", "parts": [RESULT]}]),
    ("gen_ai.user.message", {"role": "developer", "content": "x"}, {}, "input", [text("developer", "x")]),
    ("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls",
                       "message": {"role": "assistant", "tool_calls": [_OAI_CALL]}}, {}, "output",
     [{"role": "assistant", "parts": [CALL], "finish_reason": "tool_calls"}]),
    ("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {"content": "yo"}}, {}, "output",
     [text("assistant", "yo", finish_reason="stop")]),
    ("gen_ai.client.inference.operation.details", None,
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]',
      "gen_ai.input.messages": json.dumps([text("user", "hi")]),
      "gen_ai.output.messages": json.dumps([text("assistant", "yo", finish_reason="stop")])},
     "details", {"input": [text("system", "be brief"), text("user", "hi")],
                 "output": [text("assistant", "yo", finish_reason="stop")]}),
    ("gen_ai.client.inference.operation.details", None,
     {"gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]},
     "details", {"input": [text("user", "hi")], "output": None}),
    ("gen_ai.evaluation.result", {"score": 1}, {}, None, None),
    ("", "just a log line", {}, None, None),
]


@pytest.mark.parametrize(("event_name", "body", "attrs", "direction", "messages"), LOG_EVENTS)
def test_log_message_events(event_name: str, body: Any, attrs: dict, direction: str | None, messages: Any) -> None:
    row = one_log(event_name, body, attrs)
    assert row["message_direction"] == direction
    assert (None if row["messages"] is None else json.loads(row["messages"])) == messages


# -- metrics ---------------------------------------------------------------------------


def metric_request(*metrics: m.Metric) -> ExportMetricsServiceRequest:
    req = ExportMetricsServiceRequest()
    rm = req.resource_metrics.add()
    rm.resource.attributes.extend(kvs({"service.name": SERVICE}))
    sm = rm.scope_metrics.add()
    sm.scope.name = "test.metrics"
    sm.metrics.extend(metrics)
    return req


_PT = {"start_time_unix_nano": START, "time_unix_nano": END, "attributes": kvs({"gen_ai.request.model": "m"})}
_EXEMPLAR = m.Exemplar(time_unix_nano=END, as_double=0.7, trace_id=TRACE, span_id=SPAN_ID,
                       filtered_attributes=kvs({"x": 1}))

METRICS_CASES = [
    ("gauge", m.Metric(name="g", unit="1", gauge=m.Gauge(data_points=[m.NumberDataPoint(as_int=3, **_PT)])),
     {"metric_type": "gauge", "aggregation_temporality": None, "is_monotonic": None, "value": 3.0,
      "count": None, "unit": "1"},
     {"value": 3, "exemplars": []}),
    ("sum", m.Metric(name="s", sum=m.Sum(aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE,
                                         is_monotonic=True,
                                         data_points=[m.NumberDataPoint(as_double=2.5, exemplars=[_EXEMPLAR], **_PT)])),
     {"metric_type": "sum", "aggregation_temporality": "cumulative", "is_monotonic": True, "value": 2.5},
     {"value": 2.5, "exemplars": [{"time_unix_nano": END, "value": 0.7, "trace_id": TRACE.hex(),
                                   "span_id": SPAN_ID.hex(), "filtered_attributes": {"x": 1}}]}),
    ("histogram", m.Metric(name="gen_ai.client.token.usage", unit="{token}", histogram=m.Histogram(
        aggregation_temporality=m.AGGREGATION_TEMPORALITY_DELTA,
        data_points=[m.HistogramDataPoint(count=3, sum=60.0, min=10.0, max=30.0, bucket_counts=[1, 2, 0],
                                          explicit_bounds=[16.0, 64.0], **_PT)])),
     {"metric_type": "histogram", "aggregation_temporality": "delta", "value": None, "count": 3, "sum": 60.0,
      "min": 10.0, "max": 30.0, "bucket_counts": [1, 2, 0], "explicit_bounds": [16.0, 64.0]},
     {"count": 3, "sum": 60.0, "bucket_counts": [1, 2, 0], "explicit_bounds": [16.0, 64.0]}),
    ("histogram-no-sum", m.Metric(name="h", histogram=m.Histogram(
        data_points=[m.HistogramDataPoint(count=1, bucket_counts=[1], **_PT)])),
     {"sum": None, "min": None, "max": None, "aggregation_temporality": None},
     {"sum": None, "min": None}),
    ("exponential_histogram", m.Metric(name="e", exponential_histogram=m.ExponentialHistogram(
        aggregation_temporality=m.AGGREGATION_TEMPORALITY_DELTA,
        data_points=[m.ExponentialHistogramDataPoint(
            count=4, sum=8.0, scale=2, zero_count=1, zero_threshold=0.001,
            positive=m.ExponentialHistogramDataPoint.Buckets(offset=-1, bucket_counts=[1, 2]),
            **_PT)])),
     {"metric_type": "exponential_histogram", "count": 4, "sum": 8.0, "bucket_counts": None},
     {"scale": 2, "zero_count": 1, "zero_threshold": 0.001, "positive": {"offset": -1, "bucket_counts": [1, 2]},
      "negative": {"offset": 0, "bucket_counts": []}}),
    ("summary", m.Metric(name="q", summary=m.Summary(data_points=[m.SummaryDataPoint(
        count=10, sum=5.0, quantile_values=[m.SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=0.4)],
        **_PT)])),
     {"metric_type": "summary", "count": 10, "sum": 5.0, "aggregation_temporality": None},
     {"quantile_values": [{"quantile": 0.5, "value": 0.4}]}),
]


@pytest.mark.parametrize(("metric", "columns", "data"), [c[1:] for c in METRICS_CASES],
                         ids=[c[0] for c in METRICS_CASES])
def test_metric_points(metric: m.Metric, columns: dict, data: dict) -> None:
    (row,) = rows(normalize_metrics(metric_request(metric), "carol"))
    assert subset(row, columns) == columns
    assert subset(json.loads(row["data"]), data) == data
    assert row == row | {"time": END // 1000, "start_time": START // 1000, "metric_name": metric.name,
                         "service_name": SERVICE, "scope_name": "test.metrics", "owner": "carol",
                         "attributes": '{"gen_ai.request.model":"m"}'}


def test_one_row_per_data_point_and_empty_metrics_skipped() -> None:
    pts = [m.NumberDataPoint(as_int=i, time_unix_nano=END) for i in range(3)]
    req = metric_request(m.Metric(name="g", gauge=m.Gauge(data_points=pts)), m.Metric(name="nodata"))
    columns = normalize_metrics(req, None)
    assert columns["value"] == [0.0, 1.0, 2.0]
    assert columns["start_time"] == [None, None, None]


# -- bad input never raises --------------------------------------------------------------

MALFORMED = [
    {"gen_ai.input.messages": "[not json", "gen_ai.output.messages": 5},
    {"gen_ai.input.messages": [1, "two", None, {"role": 3, "parts": [1, {"type": {"x": 1}}]}]},
    {"gen_ai.input.messages": '[{"role":"tool","content":[1]}]', "gen_ai.system_instructions": [None]},
    {"gen_ai.output.messages": '{"choices": 1}', "gen_ai.response.finish_reasons": "[oops"},
    {"input.value": '{"messages": 3}', "input.mime_type": "application/json", "output.value": "[1,2"},
    {"gen_ai.prompt.0.content": {"type": ["x"]}, "gen_ai.prompt.0.tool_calls.0.name": 1},
    {"llm.input_messages.0.message.role": None, "llm.input_messages.0.message.contents.0.x": 1},
    {"gen_ai.operation.name": ["chat"], "gen_ai.provider.name": {"a": 1}, "llm.request.type": 7,
     "openinference.span.kind": True, "gen_ai.usage.input_tokens": float("nan"),
     "gen_ai.usage.cost": "free", "gen_ai.server.time_to_first_token": float("inf")},
]


@pytest.mark.parametrize("attrs", MALFORMED)
def test_malformed_values_are_kept_not_fatal(attrs: dict) -> None:
    events = [event("gen_ai.choice", {"message": "{", "finish_reason": 1}), event("exception", {"exception.type": 1})]
    row = one_span(attrs, events=events)
    assert json.loads(row["attributes"]).keys() == attrs.keys()
    for column in ("input_messages", "output_messages"):
        assert row[column] is None or isinstance(json.loads(row[column]), list)
