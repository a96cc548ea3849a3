"""Builders of OTLP requests (real protobuf classes), for tests and benchmarks.

- values: ``av`` (a Python value → ``AnyValue``), ``kv`` / ``kvs`` (→ ``KeyValue``s);
- one span at a time, with fixed ids and times that tests compare against
  (``TRACE``, ``SPAN_ID``, ``PARENT``, ``START``, ``END``, ``SERVICE``): ``make_span``,
  ``event``, ``trace_request``;
- realistic agent traffic: ``agent_trace`` (an ``invoke_agent`` root, chat spans with
  0.5–2 KB of canonical GenAI message JSON, ``execute_tool`` spans), ``agent_request``;
  and ``logs_request`` for log records.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

TRACE = bytes.fromhex("5b8efff798038103d269b633813fc60c")
SPAN_ID = bytes.fromhex("eee19b7ec3c1b174")
PARENT = bytes.fromhex("eee19b7ec3c1b173")
START = 1_700_000_000_123_456_789
END = START + 1_500_000_000
SERVICE = "triage-svc"

_WORDS = "the agent reads the log file and finds an error in the payment service then retries the call".split()


# -- values ------------------------------------------------------------------------------


def av(v: Any) -> AnyValue:
    """A Python value → ``AnyValue``: None → unset, bytes → bytes_value, list → array,
    dict → kvlist, anything else → its string."""
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
    return AnyValue(string_value=str(v))


def kv(key: str, value: Any) -> KeyValue:
    return KeyValue(key=key, value=av(value))


def kvs(d: dict[str, Any] | None) -> list[KeyValue]:
    return [KeyValue(key=k, value=av(v)) for k, v in (d or {}).items()]


# -- one span at a time -------------------------------------------------------------------


def make_span(attrs: dict[str, Any] | None = None, *, name: str = "op", parent: bytes = PARENT,
              trace: bytes = TRACE, span_id: bytes = SPAN_ID, events: list[Span.Event] = (),
              status: Status | None = None, **kw: Any) -> Span:
    """A span from ``START`` to ``END``; ``kw``: any other ``Span`` field."""
    return Span(trace_id=trace, span_id=span_id, parent_span_id=parent, name=name,
                start_time_unix_nano=START, end_time_unix_nano=END, attributes=kvs(attrs),
                events=list(events), status=status, **kw)


def event(name: str, attrs: dict[str, Any] | None = None, t: int = START + 1000) -> Span.Event:
    return Span.Event(name=name, time_unix_nano=t, attributes=kvs(attrs))


def trace_request(*spans: Span, resource: dict[str, Any] | None = None,
                  scope: tuple[str, str] = ("test.scope", "1.0")) -> ExportTraceServiceRequest:
    """One resource (by default ``service.name`` = ``SERVICE``), one scope, the spans."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend(kvs({"service.name": SERVICE} if resource is None else resource))
    ss = rs.scope_spans.add()
    ss.scope.name, ss.scope.version = scope
    ss.spans.extend(spans)
    return req


# -- realistic traffic --------------------------------------------------------------------


def _text(rng: random.Random, n_bytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_bytes:
        w = rng.choice(_WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def agent_trace(rng: random.Random, *, agent: str, n_llm: int = 3, n_tools: int = 2, error: bool = False,
                now_ns: int | None = None) -> list[Span]:
    """One agent run: an invoke_agent root, llm chat spans and execute_tool spans."""
    now_ns = now_ns or time.time_ns()
    trace_id = os.urandom(16)
    root_id = os.urandom(8)
    spans = []
    t = now_ns
    children = []
    for i in range(n_llm):
        sid = os.urandom(8)
        inp = _text(rng, rng.randint(500, 2000))
        out = _text(rng, rng.randint(100, 600))
        attrs = [
            kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.provider.name", "openai"),
            kv("gen_ai.request.model", "gpt-4o-mini"),
            kv("gen_ai.response.model", "gpt-4o-mini-2024-07-18"),
            kv("gen_ai.usage.input_tokens", len(inp) // 4),
            kv("gen_ai.usage.output_tokens", len(out) // 4),
            kv("gen_ai.response.finish_reasons", "stop"),
            kv("gen_ai.agent.name", agent),
            kv("server.address", "api.openai.com"),
            kv("gen_ai.request.temperature", 0.2),
            kv("gen_ai.input.messages", f'[{{"role":"user","parts":[{{"type":"text","content":"{inp}"}}]}}]'),
            kv("gen_ai.output.messages",
               f'[{{"role":"assistant","parts":[{{"type":"text","content":"{out}"}}],"finish_reason":"stop"}}]'),
        ]
        children.append(Span(trace_id=trace_id, span_id=sid, parent_span_id=root_id, name="chat gpt-4o-mini",
                             kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=t, end_time_unix_nano=t + 800_000_000,
                             attributes=attrs))
        t += 900_000_000
    for i in range(n_tools):
        sid = os.urandom(8)
        failed = error and i == n_tools - 1
        attrs = [kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", rng.choice(["search", "read_file", "http_get"])),
                 kv("gen_ai.tool.call.id", f"call_{i}"), kv("gen_ai.agent.name", agent)]
        children.append(Span(trace_id=trace_id, span_id=sid, parent_span_id=root_id, name="execute_tool",
                             start_time_unix_nano=t, end_time_unix_nano=t + 50_000_000, attributes=attrs,
                             status=Status(code=Status.STATUS_CODE_ERROR, message="tool timed out") if failed else Status()))
        t += 60_000_000
    root = Span(trace_id=trace_id, span_id=root_id, name=f"invoke_agent {agent}", start_time_unix_nano=now_ns,
                end_time_unix_nano=t, attributes=[kv("gen_ai.operation.name", "invoke_agent"), kv("gen_ai.agent.name", agent)],
                status=Status(code=Status.STATUS_CODE_ERROR, message="tool failed") if error else Status())
    spans.append(root)
    spans.extend(children)
    return spans


def agent_request(rng: random.Random, n_spans: int, *, agent: str = "triage", service: str = "demo-agent") -> ExportTraceServiceRequest:
    """``n_spans`` spans of whole agent runs (the last one cut short), from one service."""
    spans: list[Span] = []
    while len(spans) < n_spans:
        spans.extend(agent_trace(rng, agent=agent))
    return trace_request(*spans[:n_spans], resource={"service.name": service, "telemetry.sdk.language": "python"},
                         scope=("otelbench.tests", ""))


def logs_request(records: list[Any]) -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.append(kv("service.name", "demo-agent"))
    sl = rl.scope_logs.add()
    sl.log_records.extend(records)
    return req
