"""Builders for realistic OTLP requests (protobuf), shared by tests and benchmarks."""

from __future__ import annotations

import os
import random
import time

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

_WORDS = "the agent reads the log file and finds an error in the payment service then retries the call".split()


def kv(key: str, value) -> KeyValue:
    if isinstance(value, bool):
        v = AnyValue(bool_value=value)
    elif isinstance(value, int):
        v = AnyValue(int_value=value)
    elif isinstance(value, float):
        v = AnyValue(double_value=value)
    else:
        v = AnyValue(string_value=str(value))
    return KeyValue(key=key, value=v)


def text(rng: random.Random, n_bytes: int) -> str:
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
        inp = text(rng, rng.randint(500, 2000))
        out = text(rng, rng.randint(100, 600))
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


def traces_request(spans: list[Span], service: str = "demo-agent") -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend([kv("service.name", service), kv("telemetry.sdk.language", "python")])
    ss = rs.scope_spans.add()
    ss.scope.name = "otelbench.tests"
    ss.spans.extend(spans)
    return req


def agent_request(rng: random.Random, n_spans: int, *, agent: str = "triage", service: str = "demo-agent") -> ExportTraceServiceRequest:
    spans: list[Span] = []
    while len(spans) < n_spans:
        spans.extend(agent_trace(rng, agent=agent))
    return traces_request(spans[:n_spans], service)


def logs_request(records) -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.append(kv("service.name", "demo-agent"))
    sl = rl.scope_logs.add()
    sl.log_records.extend(records)
    return req
