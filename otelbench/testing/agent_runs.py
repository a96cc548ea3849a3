"""Agent runs sent the way an instrumented app sends them: the real OTel SDK, OTLP/HTTP.

Each ``Run`` becomes one trace: an ``invoke_agent`` root carrying the task and the final
answer (``gen_ai.input.messages`` / ``gen_ai.output.messages``, the current GenAI
conventions), a ``chat`` call, and optionally a tool call that fails, with the exception
recorded the way the SDK records it. Used by the processors' tests and benchmarks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Run:
    agent: str
    task: str
    answer: str | None
    error: str | None = None  # the run failed with this message (status error)
    error_type: str = "RuntimeError"
    tool: str | None = None  # a tool the run called
    tool_error: str | None = None  # ... which failed with this message
    tool_arguments: str | None = None  # ... called with these (gen_ai.tool.call.arguments; the chat asks
    tool_result: str | None = None  # for it by id, call_1) and returning this (gen_ai.tool.call.result)
    model: str = "smollm2"  # the chat call's model (a priced one, e.g. gpt-4o, gets a computed cost)
    cost: float | None = None  # the cost the chat call reports (gen_ai.usage.cost)
    seconds: float | None = None  # how long the run took (its spans placed in the past); None: as long as sending took


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def send_runs(endpoint: str, runs: Sequence[Run], *, service: str = "demo-agent",
              headers: dict[str, str] | None = None, acks: dict[str, float] | None = None) -> list[str]:
    """Send ``runs`` to the OTLP/HTTP receiver at ``endpoint`` (``http://host:port``);
    returns their trace ids (hex), in order, once the exporter has flushed them all.

    ``acks``: export each span alone as it ends (the SDK's simple processor) and record,
    by span id (hex), the ``time.monotonic()`` at which the receiver acknowledged it."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces", headers=headers or {})
    provider.add_span_processor(BatchSpanProcessor(exporter) if acks is None
                                else SimpleSpanProcessor(_Acknowledged(exporter, acks)))
    tracer = provider.get_tracer("otelbench.testing.agent_runs")
    trace_ids = []
    for run in runs:
        # with ``seconds``, the root starts that long ago and ends now; its children fill it
        t0 = None if run.seconds is None else time.time_ns() - int(run.seconds * 1e9)
        at = (lambda share: None) if t0 is None else (lambda share: t0 + int(run.seconds * 1e9 * share))
        with tracer.start_as_current_span(f"invoke_agent {run.agent}", start_time=at(0), end_on_exit=False,
                                          record_exception=False, set_status_on_exception=False) as root:
            trace_ids.append(format(root.get_span_context().trace_id, "032x"))
            root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.agent,
                                 "gen_ai.input.messages": _messages("user", run.task)})
            with tracer.start_as_current_span(f"chat {run.model}", start_time=at(0.05), end_on_exit=False) as call:
                call.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                     "gen_ai.request.model": run.model, "gen_ai.usage.input_tokens": 40,
                                     "gen_ai.usage.output_tokens": 12})
                if run.cost is not None:
                    call.set_attribute("gen_ai.usage.cost", run.cost)
                if run.tool and run.tool_arguments is not None:
                    call.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [
                        {"type": "tool_call", "id": "call_1", "name": run.tool, "arguments": run.tool_arguments}]}]))
                call.end(at(0.6))
            if run.tool:
                with tracer.start_as_current_span(f"execute_tool {run.tool}", start_time=at(0.65), end_on_exit=False,
                                                  record_exception=False, set_status_on_exception=False) as tool:
                    tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": run.tool})
                    if run.tool_arguments is not None:
                        tool.set_attributes({"gen_ai.tool.call.id": "call_1",
                                             "gen_ai.tool.call.arguments": run.tool_arguments})
                    if run.tool_result is not None:
                        tool.set_attribute("gen_ai.tool.call.result", run.tool_result)
                    if run.tool_error:
                        tool.record_exception(TimeoutError(run.tool_error))
                        tool.set_status(Status(StatusCode.ERROR, run.tool_error))
                    tool.end(at(0.95))
            if run.answer is not None:
                root.set_attribute("gen_ai.output.messages", _messages("assistant", run.answer))
            if run.error:
                root.add_event("exception", {"exception.type": run.error_type, "exception.message": run.error})
                root.set_status(Status(StatusCode.ERROR, run.error))
            root.end(at(1))
    provider.force_flush()
    provider.shutdown()
    return trace_ids


class _Acknowledged:
    """A span exporter that notes when each span's export was acknowledged."""

    def __init__(self, inner: Any, acks: dict[str, float]) -> None:
        self.inner, self.acks = inner, acks

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.inner.export(spans)
        at = time.monotonic()
        if result == SpanExportResult.SUCCESS:
            for span in spans:
                self.acks[format(span.context.span_id, "016x")] = at
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
