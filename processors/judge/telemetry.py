"""The judge's own telemetry, marked so that it is never judged and never counts as an agent.

Every request the judge sends is traced as a GenAI ``chat`` span (when a tracer is
given) carrying ``otelbench.judge = true`` and the trace id of the run it judges
(``otelbench.judge.run_trace_id``). Whoever wires the judge exports those spans with the
resource ``service.name = otelbench-judge`` (``JUDGE_SERVICE_NAME``). Views and run
selection exclude a trace when any of its spans carries the attribute, or its service is
the judge's — either mark suffices, so a judge traced by an instrumentation that does not
know the attribute (e.g. opentelemetry-instrumentation-openai-v2 under the judge's
tracer provider) is still excluded by its service name (storage/queries/views.py,
``JUDGE_SERVICE``).

``traced`` is that wiring: a tracer provider of its own (never the process's global one,
so an agent's instrumentation in the same process is not re-labelled), exporting OTLP/HTTP
to the collector, flushed and shut down when the judging is done.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

JUDGE_ATTRIBUTE = "otelbench.judge"  # true on every span the judge emits
JUDGE_RUN_ATTRIBUTE = "otelbench.judge.run_trace_id"  # the judged run's trace id
JUDGE_PURPOSE_ATTRIBUTE = "otelbench.judge.step"  # which request of the judgement: grade, solve, check:<item>, …
JUDGE_SERVICE_NAME = "otelbench-judge"


def judge_attributes(*, model: str, base_url: str, run_trace_id: str, step: str) -> dict[str, Any]:
    """The attributes of one judge request's span (GenAI semantic conventions + the mark)."""
    host = base_url.split("://", 1)[-1].split("/", 1)[0]
    address, _, port = host.rpartition(":") if host.rsplit(":", 1)[-1].isdigit() else (host, "", "")
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",  # the API the judge speaks; the server may be any
        "gen_ai.system": "openai",  # the same, as semantic conventions before 1.37 spell it
        "gen_ai.request.model": model,
        "gen_ai.agent.name": JUDGE_SERVICE_NAME,
        "server.address": address,
        JUDGE_ATTRIBUTE: True,
        JUDGE_RUN_ATTRIBUTE: run_trace_id,
        JUDGE_PURPOSE_ATTRIBUTE: step,
    }
    if port:
        attrs["server.port"] = int(port)
    return attrs


@contextlib.contextmanager
def judge_span(tracer: Any | None, *, model: str, base_url: str, run_trace_id: str, step: str) -> Iterator[Any]:
    """A client span around one judge request; a no-op when ``tracer`` is None."""
    if tracer is None:
        yield None
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    attrs = judge_attributes(model=model, base_url=base_url, run_trace_id=run_trace_id, step=step)
    with tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attrs,
                                      record_exception=True, set_status_on_exception=False) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:300]))
            raise


def record_usage(span: Any | None, *, prompt_tokens: int | None, completion_tokens: int | None,
                 finish_reason: str | None, tries: int) -> None:
    if span is None:
        return
    if prompt_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", prompt_tokens)
    if completion_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", completion_tokens)
    if finish_reason:
        span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
    span.set_attribute("otelbench.judge.tries", tries)


@dataclass(frozen=True)
class JudgeClient:
    """An OpenAI client and the tracer its judge requests are traced with (None: untraced)."""

    client: Any
    tracer: Any | None = None


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of a collector endpoint (``http://host:4318`` or the full URL)."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else f"{endpoint}/v1/traces"


@contextlib.contextmanager
def traced(client: Any, telemetry_endpoint: str | None, *, headers: Mapping[str, str] | None = None,
           exporter: Any | None = None) -> Iterator[JudgeClient]:
    """``client`` with a tracer whose spans go to ``telemetry_endpoint`` (OTLP/HTTP) as the
    service ``otelbench-judge``; untraced when the endpoint is None (and no ``exporter``,
    which tests pass to keep the spans in memory). The spans are flushed on exit."""
    if telemetry_endpoint is None and exporter is None:
        yield JudgeClient(client, None)
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=traces_url(str(telemetry_endpoint)), headers=dict(headers or {}))
    provider = TracerProvider(resource=Resource.create({"service.name": JUDGE_SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    try:
        yield JudgeClient(client, provider.get_tracer("otelbench.judge"))
    finally:
        provider.force_flush()
        provider.shutdown()
