"""Sample agent telemetry for the demo, emitted through the real OTel SDK.

Three simulated agents (named ``sample-*``: sample data, labelled as such where shown),
each instrumented in a different generation of the GenAI conventions (current OTel GenAI,
the deprecated pre-1.37 names, OpenInference, OpenLLMetry), so the demo shows them
normalized into one schema.
The demo's real agents are otelbench/demo/tool_agent.py and otelbench/demo/research_agent.py.
"""

from __future__ import annotations

import json
import random
from typing import Any

import time
from contextlib import contextmanager
from typing import Iterator

from opentelemetry.trace import Span, Status, StatusCode, Tracer

TASKS = [
    "Summarize the failing checks in build 4411",
    "Find why checkout latency doubled yesterday",
    "Draft a reply to ticket #8812 about a refund",
    "List services with more than 10 errors in syslog",
    "Rename the config flag and update the docs",
]


class Clock:
    """Simulated time: each span lasts what a real call would, without the demo waiting for it."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.now = time.time_ns() - 3_600 * 10**9  # the runs happened during the last hour

    @contextmanager
    def span(self, tracer: Tracer, name: str, attributes: dict[str, Any], ms: tuple[int, int] = (0, 0)) -> Iterator[Span]:
        start = self.now
        self.now += self.rng.randint(1, 20) * 10**6  # a little work before the call
        with tracer.start_as_current_span(name, start_time=start, attributes=attributes, end_on_exit=False) as s:
            yield s
            self.now += self.rng.randint(*ms) * 10**6
            s.end(end_time=self.now)


def genai_messages(role: str, text: str) -> str:
    """GenAI semconv messages JSON: one message of one text part (the demo's agents use it too)."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)


def run_current_semconv(tracer: Tracer, clock: Clock, task: str) -> None:
    """A 'triage' agent using the current GenAI names (gen_ai.provider.name, input/output messages)."""
    rng = clock.rng
    with clock.span(tracer, "invoke_agent sample-triage", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sample-triage",
        "gen_ai.provider.name": "openai", "gen_ai.input.messages": genai_messages("user", task),
    }) as root:
        for step in range(rng.randint(1, 3)):
            with clock.span(tracer, "chat gpt-4o-mini", {
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                "gen_ai.usage.input_tokens": rng.randint(300, 1500), "gen_ai.usage.output_tokens": rng.randint(20, 300),
                "gen_ai.usage.cache_read.input_tokens": rng.choice([0, 0, 256]),
                "gen_ai.response.finish_reasons": ["tool_calls" if step == 0 else "stop"],
                "gen_ai.input.messages": genai_messages("user", task),
                "gen_ai.output.messages": genai_messages("assistant", f"Step {step}: looking at the logs."),
            }, ms=(400, 2500)):
                pass
            with clock.span(tracer, "execute_tool grep_logs", {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "grep_logs",
                "gen_ai.tool.call.id": f"call_{step}",
            }, ms=(5, 400)) as tool:
                if rng.random() < 0.2:
                    tool.set_status(Status(StatusCode.ERROR, "grep_logs: permission denied on /var/log/auth.log"))
                    tool.set_attribute("error.type", "PermissionError")
        root.set_attribute("gen_ai.output.messages", genai_messages("assistant", "Found 3 failing services."))


def run_deprecated_semconv(tracer: Tracer, clock: Clock, task: str) -> None:
    """A 'coder' agent on the pre-1.37 names (gen_ai.system, prompt/completion tokens, reported cost)."""
    rng = clock.rng
    with clock.span(tracer, "invoke_agent sample-coder", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sample-coder", "gen_ai.system": "anthropic",
    }) as root:
        for _ in range(rng.randint(1, 2)):
            inp, out = rng.randint(800, 4000), rng.randint(100, 900)
            with clock.span(tracer, "chat claude-3-5-sonnet", {
                "gen_ai.operation.name": "chat", "gen_ai.system": "anthropic",
                "gen_ai.request.model": "claude-3-5-sonnet-20241022",
                "gen_ai.usage.prompt_tokens": inp, "gen_ai.usage.completion_tokens": out,
                "gen_ai.usage.cost": round(inp * 3e-6 + out * 15e-6, 6),
                "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": task,
                "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Here is the patch.",
                "gen_ai.completion.0.finish_reason": "stop",
            }, ms=(2000, 9000)):
                pass
        if rng.random() < 0.3:
            root.set_status(Status(StatusCode.ERROR, "tests still failing after 2 attempts"))
            root.set_attribute("error.type", "TaskFailed")


def run_openinference(tracer: Tracer, clock: Clock, task: str) -> None:
    """A 'researcher' agent instrumented the OpenInference way (Arize Phoenix)."""
    rng = clock.rng
    with clock.span(tracer, "sample-researcher", {
        "openinference.span.kind": "AGENT", "agent.name": "sample-researcher", "input.value": task,
    }) as root:
        with clock.span(tracer, "retrieve", {"openinference.span.kind": "RETRIEVER"}, ms=(30, 300)):
            pass
        with clock.span(tracer, "ChatCompletion", {
            "openinference.span.kind": "LLM", "llm.provider": "openai", "llm.system": "openai",
            "llm.model_name": "gpt-4o", "llm.token_count.prompt": rng.randint(500, 3000),
            "llm.token_count.completion": rng.randint(50, 400),
            "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": task,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Three sources agree.",
        }, ms=(800, 4000)):
            pass
        root.set_attribute("output.value", "Three sources agree.")


SIMULATED = (run_current_semconv, run_deprecated_semconv, run_openinference)


def simulate(tracer: Tracer, runs: int, seed: int = 7) -> int:
    """Emit ``runs`` agent runs spread over the three simulated agents; returns the count."""
    clock = Clock(random.Random(seed))
    for i in range(runs):
        SIMULATED[i % len(SIMULATED)](tracer, clock, clock.rng.choice(TASKS))
    return runs


def providers(endpoint: str, service: str, timeout_s: float | None = None) -> tuple[Any, Any]:
    """A tracer and a logger provider exporting over OTLP/HTTP to ``endpoint`` (batched;
    ``timeout_s`` per export, else the SDK's)."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": service})
    tracer_provider = TracerProvider(resource=resource)
    base = endpoint.rstrip("/")
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces",
                                                                           timeout=timeout_s)))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{base}/v1/logs",
                                                                                     timeout=timeout_s)))
    return tracer_provider, logger_provider


@contextmanager
def exporting(endpoint: str, service: str) -> Iterator[tuple[Any, Any]]:
    """:func:`providers` for a block: flushed and shut down at its end, whatever happened."""
    tracer_provider, logger_provider = providers(endpoint, service)
    try:
        yield tracer_provider, logger_provider
    finally:
        for provider in (tracer_provider, logger_provider):
            provider.force_flush(30_000)
            provider.shutdown()
