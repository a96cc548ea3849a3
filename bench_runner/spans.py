"""The bench runner's own telemetry: every request a gen_ai ``chat`` span, under one
root span per model run that carries the ``bench.*`` results.

The tree of one model run (``bench.kind`` marks the two kinds the lake's views read)::

    bench <model>          invoke_workflow; bench.kind=model_run, suite, settings, then
                           the summary (record_summary) and an error status on failures
    ├── chat <model>       one per request (speed case or suite reply): record_run; a
    │                      suite reply also carries its text (record_reply)
    │   └── test <name>    bench.kind=test: one per judged test, under the reply it judged
    └── …

A goodput sweep (``--goodput-rates``/``--goodput-concurrency``) is a tree of its own:
``goodput <model>`` (bench.kind=goodput_sweep, the SLO and settings) → one
``goodput <mode> <load>`` per step (bench.kind=goodput_step, the step's figures) → the
step's ``chat`` spans.

Exported with the OTel SDK's OTLP/HTTP exporter, so results flow through the same
collector and lake as production telemetry: the ``bench_results`` and ``bench_tests``
views (and ``bench_goodput``; storage/queries/bench.py) read them back, by the attribute names used here. Attribute
names follow the GenAI conventions where one exists
(https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/). A test span has no
``gen_ai.*`` attribute, so the lake does not count it as a model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Iterator
from urllib.parse import urlparse

from otelbench.bench_runner.client import RunResult
from otelbench.bench_runner.suites import TestResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import INVALID_SPAN_CONTEXT as _INVALID
from opentelemetry.context import Context
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, Status, StatusCode, Tracer, set_span_in_context

from otelbench.collector import DEFAULT_URL

SERVICE_NAME = "otelbench-bench"
SCOPE_NAME = "otelbench.bench_runner"  # the lake's bench views select on it (spans.scope_name)
DEFAULT_OTLP_ENDPOINT = DEFAULT_URL
REASON_CHARS = 500
REPLY_CHARS = 4000  # of a suite reply kept on its span; the checker judged the whole reply


class _CountingExporter(SpanExporter):
    """Wraps the OTLP exporter to remember whether every export succeeded."""

    def __init__(self, inner: SpanExporter):
        self.inner = inner
        self.failures = 0
        self.exported = 0

    def export(self, spans: Any) -> SpanExportResult:
        result = self.inner.export(spans)
        if result == SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failures += 1
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class BenchSpans:
    """Span factory for one bench invocation; a no-op when ``endpoint`` is None (--no-otel)."""

    def __init__(self, endpoint: str | None, headers: dict[str, str] | None = None):
        self.endpoint = endpoint
        self._exporter: _CountingExporter | None = None
        if endpoint is None:
            self._provider = None
            self.tracer: Tracer | None = None
            return
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        self._exporter = _CountingExporter(
            OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces", headers=headers or {}, timeout=10)
        )
        self._provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
        self._provider.add_span_processor(BatchSpanProcessor(self._exporter))
        self.tracer = self._provider.get_tracer(SCOPE_NAME)

    @contextmanager
    def model_run(self, model: str, base_url: str, suite: str, suite_version: str, *, provider: str | None = None,
                  settings: Mapping[str, Any] | None = None) -> Iterator[Span]:
        """The root span of one model's benchmark: ``invoke_workflow bench <model>``.

        ``settings`` become ``bench.<key>`` attributes from the start, so a run that dies
        half-way still says how it was run.
        """
        if self.tracer is None:
            yield NonRecordingSpan(_INVALID)
            return
        attrs = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.agent.name": "otelbench-bench",
            "gen_ai.request.model": model,
            "bench.kind": "model_run",
            "bench.suite": suite,
            "bench.suite.version": suite_version,
            **({"gen_ai.provider.name": provider} if provider else {}),
            **_server_attrs(base_url),
            **_bench_attrs(settings or {}),
        }
        with self.tracer.start_as_current_span(f"bench {model}", attributes=attrs) as span:
            yield span

    @contextmanager
    def chat(self, model: str, base_url: str, provider: str, *, case: str, test: str | None = None) -> Iterator[Span]:
        """One request: a gen_ai ``chat`` span (finish with :func:`record_run`)."""
        if self.tracer is None:
            yield NonRecordingSpan(_INVALID)
            return
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "bench.case": case,
            **_server_attrs(base_url),
        }
        if test:
            attrs["bench.test.name"] = test
        with self.tracer.start_as_current_span(f"chat {model}", attributes=attrs) as span:
            yield span

    def test(self, result: TestResult, reply: SpanContext | None = None) -> None:
        """One judged test: an instant span under the chat span of the reply it judged
        (``reply``; else under the current span, the model run)."""
        if self.tracer is None:
            return
        parent = set_span_in_context(NonRecordingSpan(reply)) if reply is not None and reply.is_valid else None
        attrs = {
            "bench.kind": "test",
            "bench.suite": result.suite,
            "bench.suite.version": result.suite_version,
            "bench.test.name": result.test,
            "bench.test.category": result.category,
            "bench.test.checker": result.checker,
            "bench.test.verdict": "pass" if result.passed else "fail",
            "bench.test.reason": result.reason[:REASON_CHARS],
        }
        with self.tracer.start_as_current_span(f"test {result.test}", context=parent, attributes=attrs):
            pass

    # -- agent suites (bench_runner/suite_run.py) -------------------------------------
    # A suite run is a root span of its own (bench.kind=suite_run); each case × repeat is
    # the root of its own trace (bench.kind=suite_case), linked to the run, and the parent
    # of whatever spans the agent sends with the TRACEPARENT it was given. Nothing here is
    # a gen_ai span: the lake files the traces under the bench runner's service, apart
    # from agents' telemetry (storage/queries/suites.py reads them back).
    @contextmanager
    def suite_run(self, suite: Any, run_id: str, command: str, agent: str | None,
                  settings: Mapping[str, Any]) -> Iterator[Span]:
        if self.tracer is None:
            yield NonRecordingSpan(_INVALID)
            return
        attrs = {"bench.kind": "suite_run", **_suite_attrs(suite, run_id, command, agent),
                 **_bench_attrs({f"suite.{k}": v for k, v in settings.items()})}
        with self.tracer.start_as_current_span(f"suite {suite.spec.name}", context=Context(), attributes=attrs) as span:
            yield span

    @contextmanager
    def suite_case(self, suite: Any, run_id: str, case: Any, repeat: int, command: str, agent: str | None,
                   run: SpanContext | None, input_text: str) -> Iterator[Span]:
        if self.tracer is None:
            yield NonRecordingSpan(_INVALID)
            return
        attrs = {"bench.kind": "suite_case", **_suite_attrs(suite, run_id, command, agent),
                 "bench.case.id": case.id, "bench.case.repeat": repeat, "bench.case.checker": case.check.kind,
                 "bench.case.input": input_text[:REPLY_CHARS]}
        links = [Link(run)] if run is not None and run.is_valid else []
        span = self.tracer.start_span(f"case {case.id}", context=Context(), attributes=attrs, links=links)
        try:
            yield span
        finally:
            span.end()

    def record_suite_case(self, span: Span, trial: Any) -> None:
        """A case's evidence and verdict on its span; a fail or error makes its status ERROR."""
        if not span.is_recording():
            return
        span.set_attributes({
            "bench.case.verdict": trial.verdict, "bench.case.reason": trial.reason[:REASON_CHARS],
            "bench.case.output": trial.answer[:REPLY_CHARS], "bench.case.stdout_bytes": trial.stdout_bytes,
            "bench.case.stderr": trial.stderr_tail[-REASON_CHARS * 4:], "bench.case.timed_out": trial.timed_out,
            "bench.case.flooded": trial.flooded,
        })
        if trial.exit_code is not None:
            span.set_attribute("bench.case.exit_code", trial.exit_code)
        if trial.verdict != "pass":
            span.set_status(Status(StatusCode.ERROR, trial.reason[:REASON_CHARS]))

    def record_suite_summary(self, span: Span, summary: Mapping[str, Any]) -> None:
        """A run's summary (``bench_runner.suite_run.summary``) on its span."""
        if not span.is_recording():
            return
        span.set_attributes(_bench_attrs({f"suite.{k}": v for k, v in summary.items()}))

    # -- gate verdicts (bench_runner/gate_record.py) ----------------------------------
    def gate(self, name: str, attributes: Mapping[str, Any], regression: bool) -> None:
        """One ``otelbench gate`` verdict: a root span of its own (bench.kind=gate), its
        status ERROR on a regression."""
        if self.tracer is None:
            return
        span = self.tracer.start_span(name, context=Context(), attributes={"bench.kind": "gate", **attributes})
        if regression:
            span.set_status(Status(StatusCode.ERROR, "regression beyond the tolerances"))
        span.end()

    # -- goodput sweeps (bench_runner/goodput_run.py) ------------------------------------
    # A sweep is a root span (bench.kind=goodput_sweep); each load step a span under it
    # (bench.kind=goodput_step) holding the step's figures once it ends, the parent of the
    # step's chat spans. storage/queries/bench.py reads the steps back (bench_goodput).
    @contextmanager
    def goodput_sweep(self, model: str, base_url: str, settings: Mapping[str, Any]) -> Iterator[Span]:
        if self.tracer is None:
            yield NonRecordingSpan(_INVALID)
            return
        attrs = {"bench.kind": "goodput_sweep", "bench.goodput.model": model, **_server_attrs(base_url),
                 **_bench_attrs({f"goodput.{k}": v for k, v in settings.items()})}
        with self.tracer.start_as_current_span(f"goodput {model}", context=Context(), attributes=attrs) as span:
            yield span

    @contextmanager
    def goodput_step(self, model: str, mode: str, load: float) -> Iterator[Span]:
        """One load step; finish it with :meth:`record_goodput`."""
        if self.tracer is None:
            yield NonRecordingSpan(_INVALID)
            return
        attrs = {"bench.kind": "goodput_step", "bench.goodput.model": model, "bench.goodput.mode": mode,
                 "bench.goodput.load": float(load)}
        with self.tracer.start_as_current_span(f"goodput {mode} {load:g}", attributes=attrs) as span:
            yield span

    def record_goodput(self, span: Span, figures: Mapping[str, Any]) -> None:
        """``figures`` (flat: name → number, bool or string) as ``bench.goodput.<name>``; a
        step that does not hold its SLO is not an error: that is a measurement."""
        if span.is_recording():
            span.set_attributes(_bench_attrs({f"goodput.{k}": v for k, v in figures.items()}))

    def shutdown(self) -> dict[str, int]:
        """Flush and stop; returns exported/failed counts (for the report)."""
        if self._provider is None or self._exporter is None:
            return {"exported": 0, "failures": 0}
        self._provider.force_flush(30_000)
        self._provider.shutdown()
        return {"exported": self._exporter.exported, "failures": self._exporter.failures}


def record_run(span: Span, run: RunResult) -> None:
    """Put one measured run on its chat span."""
    if not span.is_recording():
        return
    if run.model:
        span.set_attribute("gen_ai.response.model", run.model)
    if run.finish_reason:
        span.set_attribute("gen_ai.response.finish_reasons", [run.finish_reason])
    if run.n_prompt is not None:  # gross: the cached part is input too (GenAI convention)
        span.set_attribute("gen_ai.usage.input_tokens", int(run.n_prompt + (run.n_prompt_cached or 0)))
    if run.n_out is not None:
        span.set_attribute("gen_ai.usage.output_tokens", int(run.n_out))
    if run.ttft_ms is not None:
        span.set_attribute("gen_ai.server.time_to_first_token", run.ttft_ms / 1000)
    span.set_attribute("bench.token_source", str(run.n_out_source))
    for name in ("ttft_ms", "ttfo_ms", "e2e_ms", "decode_tps", "prefill_tps", "server_decode_tps", "server_prefill_tps"):
        value = getattr(run, name)
        if value is not None:
            span.set_attribute(f"bench.{name}", float(value))
    if not run.ok:
        span.set_status(Status(StatusCode.ERROR, str(run.error or "run failed")))
        span.set_attribute("error.type", str(run.error_kind or "bench_run_failed"))


def record_reply(span: Span, text: str, finish_reason: str | None = None) -> None:
    """The reply a test was judged on, on its chat span as ``gen_ai.output.messages`` (the
    GenAI convention's JSON, cut to REPLY_CHARS): the evidence beside each verdict. Speed
    cases' replies are not kept: their timing is the result, their text is noise."""
    if not span.is_recording():
        return
    message: dict[str, Any] = {"role": "assistant", "parts": [{"type": "text", "content": text[:REPLY_CHARS]}]}
    if finish_reason:
        message["finish_reason"] = finish_reason
    span.set_attribute("gen_ai.output.messages", json.dumps([message], ensure_ascii=False))


def record_summary(span: Span, summary: Mapping[str, Any], problems: Sequence[str] = ()) -> None:
    """The model run's results on its root span: scores, medians, confidence, and the
    number of failures (``bench.failures``); any failure makes the span's status ERROR,
    described by the first."""
    if not span.is_recording():
        return
    span.set_attributes(_bench_attrs({**summary, "failures": len(problems)}))
    if problems:
        span.set_status(Status(StatusCode.ERROR, f"{len(problems)} failures; first: {problems[0]}"[:REASON_CHARS]))


def _bench_attrs(values: Mapping[str, Any]) -> dict[str, Any]:
    """``bench.<key>`` attributes; None is left out, sequences become string arrays."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, (list, tuple)):
            out[f"bench.{key}"] = [str(v) for v in value]
        elif isinstance(value, (bool, int, float, str)):
            out[f"bench.{key}"] = value
    return out


def _suite_attrs(suite: Any, run_id: str, command: str, agent: str | None) -> dict[str, Any]:
    attrs = {"bench.suite": suite.spec.name, "bench.suite.version": suite.version, "bench.suite.run_id": run_id,
             "bench.agent.command": command[:REASON_CHARS]}
    if agent:
        attrs["bench.agent.name"] = agent
    return attrs


def _server_attrs(base_url: str) -> dict[str, Any]:
    u = urlparse(base_url)
    out: dict[str, Any] = {"server.address": u.hostname or ""}
    if u.port:
        out["server.port"] = u.port
    return out

