"""A one-call agent SDK on the OpenTelemetry SDK, for agents without instrumentation.

    import otelbench.sdk
    agent = otelbench.sdk.observe(agent="my-agent")          # endpoint and key from env vars
    with agent.task("search", input={"query": q}) as task:   # also `async with`, and @agent.task(...)
        task.log("found", n); task.cost(0.004); task.set_output(result)
    agent.event("custom", {"k": "v"}); agent.flush()

A task is an ``invoke_agent`` span with the OTel GenAI attributes otelbench reads
(``gen_ai.agent.name``, ``gen_ai.input.messages`` / ``gen_ai.output.messages``, the cost the
owner reports as ``gen_ai.usage.cost``: labelled ``reported``). An exception inside a task
marks it failed and is re-raised unchanged.

Telemetry never raises into the agent and never blocks it: spans go through the SDK's
batch processor (bounded queue, a background thread); an export that fails (collector
down, bad key) or a full queue drops spans, counted in ``agent.stats()`` and told by a
warning at most once a minute. Depends only on the OTel API/SDK and the OTLP exporter;
docs/sdk.md.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("otelbench.sdk")

DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
KEY_ENV = "OTELBENCH_KEY"  # the ingest key, sent as X-Bench-Key
WARN_EVERY_S = 60.0  # at most one warning about dropped telemetry per minute
QUEUE_SPANS = 2048  # spans waiting for export; more are dropped (and counted)
EXPORT_TIMEOUT_S = 5.0  # one export attempt, in the background thread
EXIT_FLUSH_S = 2.0  # what an exiting program waits, at most, for its last spans
TEXT_CHARS = 64_000  # of an input or output attribute

# instrumentations observe(instrument=True) turns on when installed: (name, module, class)
INSTRUMENTATIONS = (
    ("openai", "opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor"),
    ("openai", "openinference.instrumentation.openai", "OpenAIInstrumentor"),
    ("anthropic", "opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor"),
    ("anthropic", "openinference.instrumentation.anthropic", "AnthropicInstrumentor"),
    ("langchain", "openinference.instrumentation.langchain", "LangChainInstrumentor"),
    ("langchain", "opentelemetry.instrumentation.langchain", "LangchainInstrumentor"),
    ("llama_index", "openinference.instrumentation.llama_index", "LlamaIndexInstrumentor"),
    ("llama_index", "opentelemetry.instrumentation.llamaindex", "LlamaIndexInstrumentor"),
)


def observe(agent: str, *, endpoint: str | None = None, key: str | None = None, instrument: bool = False,
            capture_content: bool = True, tracer_provider: Any = None) -> Agent:
    """An ``Agent`` whose tasks become ``invoke_agent`` spans.

    ``endpoint``: the collector's OTLP/HTTP address (default ``OTEL_EXPORTER_OTLP_ENDPOINT``,
    else http://127.0.0.1:4318); ``key``: the ingest key (default ``OTELBENCH_KEY``).
    ``tracer_provider``: the application's, if it has one to use; otherwise the global one
    when the application set one (its exporters decide where spans go; give ``endpoint`` to
    send them to otelbench as well), else a provider of our own, made the global one so
    instrumentations' spans nest under the tasks. ``instrument``: turn on the installed
    instrumentations of LLM clients (OpenAI, Anthropic, LangChain, LlamaIndex).
    ``capture_content``: record tasks' inputs and outputs (and ask instrumentations to).
    A task started outside any span joins the trace of the ``TRACEPARENT`` environment
    variable when it holds one (W3C Trace Context: what ``otelbench suite run`` gives the
    agent it runs, so each case's runs land in the case's trace).
    """
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    counts = _Counts()
    provider = tracer_provider or trace.get_tracer_provider()
    ours = not isinstance(provider, TracerProvider)  # the API's proxy or no-op: none set
    if ours:
        provider = TracerProvider(resource=Resource.create({"service.name": agent}))
    if ours or endpoint is not None:
        _export_to(provider, endpoint, key, counts)
    if ours:
        trace.set_tracer_provider(provider)
    if capture_content:
        os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    found = _instrument(provider) if instrument else []
    return Agent(agent, provider, counts, capture_content, instrumented=found, owned=ours,
                 parent=_environment_parent())


class Agent:
    """What ``observe`` gives: ``task`` (a context manager, sync or async, or a decorator),
    ``event``, ``flush``, ``stats``."""

    def __init__(self, name: str, provider: Any, counts: _Counts, capture_content: bool, *,
                 instrumented: Sequence[str] = (), owned: bool = False, parent: Any = None) -> None:
        self.name = name
        self.provider = provider
        self.instrumented = list(instrumented)
        self._counts = counts
        self._capture = capture_content
        self._tracer = provider.get_tracer("otelbench.sdk")
        self._parent = parent  # the context a task outside any span starts in (TRACEPARENT's)
        if owned:
            atexit.register(self.flush, EXIT_FLUSH_S)

    def task(self, name: str | Callable[..., Any] | None = None, *, input: Any = None,  # noqa: A002
             attributes: Mapping[str, Any] | None = None) -> Any:
        """One task of the agent: ``with agent.task("search", input=q) as task:``, ``async
        with``, or ``@agent.task("search")`` on a function (sync or async; its arguments
        are the input and its return value the output)."""
        if callable(name):  # @agent.task without parentheses
            return self.task()(name)
        return _Task(self, name or "task", input, dict(attributes or {}))

    def event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        """An event on the current task (or, outside one, a short span of its own)."""
        with _quiet("event"):
            current = trace.get_current_span()
            attrs = _attributes(attributes or {})
            if current.is_recording():
                current.add_event(name, attrs)
            else:
                outside = not current.get_span_context().is_valid  # else the application's context
                with self._tracer.start_as_current_span(f"event {name}", context=self._parent if outside else None,
                                                        attributes={"gen_ai.agent.name": self.name, **attrs}):
                    pass

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Export what ended so far; False when not all of it went out within ``timeout_s``."""
        with _quiet("flush"):
            return bool(self.provider.force_flush(int(timeout_s * 1000)))
        return False

    def stats(self) -> dict[str, int]:
        """Spans ``ended``, ``exported``, ``failed`` (their export failed: collector down, bad
        key) and ``dropped`` (the queue was full); after ``flush`` the rest is in none."""
        return self._counts.snapshot()


class _Task:
    """The context manager (and decorator) behind ``Agent.task``."""

    def __init__(self, agent: Agent, name: str, task_input: Any, attributes: dict[str, Any]) -> None:
        self._agent, self._name, self._input, self._attributes = agent, name, task_input, attributes
        self._span: Any = None
        self._token: Any = None
        self._cost = 0.0
        self._costed = False
        self._output: Any = _UNSET

    # -- what the agent calls inside a task ------------------------------------------------
    def log(self, *parts: Any) -> None:
        """A line of the task's log, as an event on its span."""
        with _quiet("log"):
            if self._span is not None:
                self._span.add_event("log", {"message": _clip(" ".join(str(p) for p in parts))})

    def cost(self, usd: float) -> None:
        """Add what this task cost (USD), as the owner reports it: labelled ``reported``."""
        with _quiet("cost"):
            self._cost += float(usd)
            self._costed = True

    def set_output(self, output: Any) -> None:
        """The task's answer (text, or anything JSON can show)."""
        self._output = output

    def set_attribute(self, key: str, value: Any) -> None:
        with _quiet("set_attribute"):
            if self._span is not None:
                self._span.set_attributes(_attributes({key: value}))

    # -- with / async with ------------------------------------------------------------------
    def __enter__(self) -> _Task:
        with _quiet("task start"):
            a = self._agent
            attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": a.name,
                     "otelbench.task": self._name, **_attributes(self._attributes)}
            if a._capture and self._input is not None:
                attrs["gen_ai.input.messages"] = _messages("user", self._input)
            outside = not trace.get_current_span().get_span_context().is_valid
            self._span = a._tracer.start_span(f"invoke_agent {a.name}", context=a._parent if outside else None,
                                              attributes=attrs)
            self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        with _quiet("task end"):
            span = self._span
            if span is None:
                return False
            if self._agent._capture and self._output is not _UNSET:
                span.set_attribute("gen_ai.output.messages", _messages("assistant", self._output))
            if self._costed:
                span.set_attribute("gen_ai.usage.cost", self._cost)
            if exc is not None:
                from opentelemetry.trace import Status, StatusCode

                span.record_exception(exc)
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR, _clip(str(exc) or type(exc).__name__, 1000)))
            span.end()
            otel_context.detach(self._token)
        return False  # the agent's exception goes on, unchanged

    async def __aenter__(self) -> _Task:
        return self.__enter__()

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        return self.__exit__(kind, exc, tb)

    # -- @agent.task(...) ---------------------------------------------------------------------
    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        agent, name, attributes = self._agent, self._name if self._name != "task" else fn.__name__, self._attributes

        def begin(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Task:
            return _Task(agent, name, _arguments(fn, args, kwargs), attributes)

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                async with begin(args, kwargs) as task:
                    result = await fn(*args, **kwargs)
                    task.set_output(result)
                    return result
            return run_async

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with begin(args, kwargs) as task:
                result = fn(*args, **kwargs)
                task.set_output(result)
                return result
        return run


_UNSET: Any = object()


class _Counts:
    """Spans ended, exported, failed (in an export that failed) and dropped (no room in the
    queue), and the rate-limited warning about the last two."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ended = self.exported = self.failed = self.dropped = 0
        self._warned_at = -WARN_EVERY_S
        self._unwarned = 0

    def end(self) -> None:
        """One more span for the queue; counted dropped when the queue is already full (the
        batch processor then drops one)."""
        with self._lock:
            self.ended += 1
            full = self.ended - self.exported - self.failed - self.dropped > QUEUE_SPANS
            if full:
                self.dropped += 1
        if full:
            self._lost(1, "the export queue was full")

    def exported_or_failed(self, n: int, ok: bool, why: str = "") -> None:
        with self._lock:
            if ok:
                self.exported += n
                return
            self.failed += n
        self._lost(n, why or "the export failed")

    def _lost(self, n: int, why: str) -> None:
        with self._lock:
            self._unwarned += n
            now = time.monotonic()
            if now - self._warned_at < WARN_EVERY_S:
                return
            self._warned_at, lost, self._unwarned = now, self._unwarned, 0
        log.warning("otelbench: %d spans dropped (%s); the agent goes on (agent.stats() has the counts)",
                    lost, why)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"ended": self.ended, "exported": self.exported, "failed": self.failed, "dropped": self.dropped}


class _CountingExporter(SpanExporter):
    """The OTLP exporter, counting what it sent and what it dropped; never raises."""

    def __init__(self, inner: SpanExporter, counts: _Counts) -> None:
        self._inner, self._counts = inner, counts

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
        except Exception as exc:  # noqa: BLE001 - telemetry never raises
            self._counts.exported_or_failed(len(spans), False, type(exc).__name__)
            return SpanExportResult.FAILURE
        self._counts.exported_or_failed(len(spans), result == SpanExportResult.SUCCESS,
                                        "the collector did not accept them")
        return result

    def shutdown(self) -> None:
        with _quiet("shutdown"):
            self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _export_to(provider: Any, endpoint: str | None, key: str | None, counts: _Counts) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    base = endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT
    key = key if key is not None else os.environ.get(KEY_ENV)
    exporter = OTLPSpanExporter(endpoint=f"{base.rstrip('/')}/v1/traces", timeout=EXPORT_TIMEOUT_S,
                                headers={"X-Bench-Key": key} if key else None)
    _quiet_exporter_log()
    batch = BatchSpanProcessor(_CountingExporter(exporter, counts), max_queue_size=QUEUE_SPANS)

    class Counted(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            batch.on_start(span, parent_context)

        def on_end(self, span: Any) -> None:
            with _quiet("on_end"):
                counts.end()
                batch.on_end(span)

        def shutdown(self) -> None:
            batch.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return batch.force_flush(timeout_millis)

    provider.add_span_processor(Counted())


_EXPORTER_LOG = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


def _quiet_exporter_log() -> None:
    """The exporter logs every failed attempt (a line a second while a collector is down);
    our own warning counts them: let its lines through once a minute."""
    exporter_log = logging.getLogger(_EXPORTER_LOG)
    if not any(isinstance(f, _OncePerMinute) for f in exporter_log.filters):
        exporter_log.addFilter(_OncePerMinute())


def _instrument(provider: Any) -> list[str]:
    """Turn on the installed instrumentations of LLM clients (one per library); their names."""
    import importlib

    done: list[str] = []
    for library, module, cls in INSTRUMENTATIONS:
        if library in done:
            continue
        try:
            instrumentor = getattr(importlib.import_module(module), cls)()
            if not instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.instrument(tracer_provider=provider)
            done.append(library)
        except Exception:  # noqa: BLE001 - not installed (or not for this version): skipped
            continue
    return done


def _environment_parent() -> Any:
    """The context of the ``TRACEPARENT`` (and ``TRACESTATE``) environment variables, None
    when unset or not a valid W3C traceparent."""
    carrier = {k.lower(): os.environ[k] for k in ("TRACEPARENT", "TRACESTATE") if os.environ.get(k)}
    if "traceparent" not in carrier:
        return None
    with _quiet("TRACEPARENT"):
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        found = TraceContextTextMapPropagator().extract(carrier)
        return found if trace.get_current_span(found).get_span_context().is_valid else None
    return None


def _messages(role: str, value: Any) -> str:
    """``value`` as the GenAI semconv's messages JSON: one message of one text part."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": _clip(text)}]}], ensure_ascii=False)


def _arguments(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
        found = dict(bound.arguments)
        found.pop("self", None)
        return next(iter(found.values())) if len(found) == 1 else found
    except (TypeError, ValueError):
        return {"args": args, "kwargs": kwargs}


def _attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """Values an OTel attribute can hold: str, bool, int, float (others as JSON text)."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(v, (str, bool, int, float)):
            out[str(k)] = _clip(v) if isinstance(v, str) else v
        elif v is not None:
            out[str(k)] = _clip(json.dumps(v, default=str, ensure_ascii=False))
    return out


def _clip(text: str, chars: int = TEXT_CHARS) -> str:
    return text if len(text) <= chars else text[:chars] + "…"


class _OncePerMinute(logging.Filter):
    """Lets a logger's record through at most once a minute."""

    def __init__(self) -> None:
        super().__init__()
        self._at = -WARN_EVERY_S

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self._at < WARN_EVERY_S:
            return False
        self._at = now
        return True


class _quiet:  # noqa: N801 - reads as a statement: `with _quiet("what"):`
    """Swallow (and log at debug) any error of ours: telemetry never raises into the agent."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is not None and isinstance(exc, Exception):
            log.debug("otelbench.sdk: %s failed: %r", self.what, exc)
            return True
        return False
