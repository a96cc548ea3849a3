"""exporters.otlp: forwarding acknowledged batches to an upstream OTLP/HTTP endpoint.

Two kinds of upstream, both real HTTP servers on free ports: a second otelbench collector
(what was sent lands in its lake), and ``Upstream`` below, which records every request and
answers from a script — the upstream's failure modes (5xx, 429 with Retry-After, permanent
4xx, hanging up, holding an answer) on demand. The retry rules are driven through the
forwarder itself; the queue bound and the "never in the ingest path" promise through a
collector, whose ``/metrics`` counts each batch's outcome.
"""

from __future__ import annotations

import gzip
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from otelbench.exporters import otlp
from otelbench.exporters.config import OtlpExporter
from otelbench.exporters.otlp import OtlpForwarder
from otelbench.testing.collector import collector_config
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake
from otelbench.testing.otlp import agent_request, logs_request

PB = {"Content-Type": "application/x-protobuf"}
FAST_BACKOFF_S = 0.05  # the first retry's wait in these tests (0.5 s in production), doubling as there


# -- the scripted upstream ------------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes  # as it came over the wire
    at: float  # time.monotonic() when it arrived

    @property
    def payload(self) -> bytes:
        """The OTLP protobuf the body carries."""
        return gzip.decompress(self.body) if self.headers.get("content-encoding") == "gzip" else self.body


@dataclass
class Upstream:
    """An OTLP/HTTP endpoint that records every request, then answers the next scripted
    ``(status, headers)`` — ``then`` once the script is used up. ``hang_up`` closes that many
    connections without an answer; the next ``stall`` requests are answered only once
    ``release`` is set (a slow or stuck upstream)."""

    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    then: tuple[int, dict[str, str]] = (200, {})
    hang_up: int = 0
    stall: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    requests: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with upstream._lock:
                    upstream.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                      body, time.monotonic()))
                    hang_up, stall = upstream.hang_up > 0, upstream.stall > 0
                    upstream.hang_up -= hang_up
                    upstream.stall -= stall
                    status, headers = upstream.script.pop(0) if upstream.script else upstream.then
                if hang_up:  # a crashed upstream: the connection ends without a status line
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if stall:
                    upstream.release.wait()
                self.send_response(status)
                for name, value in {"Content-Type": "application/x-protobuf", **headers, "Content-Length": "0"}.items():
                    self.send_header(name, value)
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="upstream", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def payloads(self, path: str | None = None) -> list[bytes]:
        return [r.payload for r in self.requests if path is None or r.path == path]


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.close()


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A port with nothing listening (bound, so no one else takes it): connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def forwarder() -> Iterator:
    """``make(endpoint, **config)``: a forwarder of traces and logs with its own counters."""
    started: list[OtlpForwarder] = []

    def make(endpoint: str, **config: Any) -> OtlpForwarder:
        fwd = OtlpForwarder(OtlpExporter(endpoint=endpoint, **config), Outcomes(), frozenset({"traces", "logs"}))
        started.append(fwd)
        return fwd

    yield make
    for fwd in started:
        fwd.stop()


@pytest.fixture
def fast_backoff(monkeypatch) -> None:
    monkeypatch.setattr(otlp, "BACKOFF_START_S", FAST_BACKOFF_S)


class Outcomes:
    """The ``Count`` a forwarder reports to (the collector passes its /metrics counters)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def __call__(self, outcome: str, n: int = 1) -> None:
        with self._lock:
            self._counts[outcome] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {k: v for k, v in self._counts.items() if v}


def _outcomes(fwd: OtlpForwarder) -> dict[str, int]:
    return fwd.count.snapshot()  # type: ignore[attr-defined]


def _settled(fwd: OtlpForwarder, n: int) -> dict[str, int]:
    """Wait until ``n`` batches have an outcome; return the outcomes."""
    return wait_for(lambda: sum(_outcomes(fwd).values()) == n and _outcomes(fwd),
                    what=f"{n} batches forwarded or given up")


def _body(seed: int, n_spans: int = 5) -> bytes:
    return agent_request(random.Random(seed), n_spans).SerializeToString()


# -- retries, through the forwarder ------------------------------------------------------------


@pytest.mark.parametrize("status", sorted(otlp.RETRYABLE))
def test_a_retryable_answer_is_retried_with_doubling_backoff(forwarder, upstream, fast_backoff, status):
    upstream.script = [(status, {}), (status, {})]
    fwd = forwarder(upstream.url)
    fwd.offer("traces", body := _body(1))
    assert _settled(fwd, 1) == {"sent": 1}
    assert upstream.payloads() == [body] * 3
    first, second, third = (r.at for r in upstream.requests)
    assert second - first >= FAST_BACKOFF_S and third - second >= 2 * FAST_BACKOFF_S


def test_an_upstream_that_hangs_up_is_retried(forwarder, upstream, fast_backoff):
    upstream.hang_up = 2
    fwd = forwarder(upstream.url)
    fwd.offer("traces", body := _body(2))
    assert _settled(fwd, 1) == {"sent": 1}
    assert upstream.payloads() == [body] * 3


def test_an_upstream_slower_than_timeout_s_is_retried(forwarder, upstream, fast_backoff):
    upstream.stall = 1  # the first answer comes only at the end of the test
    fwd = forwarder(upstream.url, timeout_s=0.2)
    fwd.offer("traces", body := _body(14))
    assert _settled(fwd, 1) == {"sent": 1}
    assert len(upstream.requests) >= 2 and upstream.payloads() == [body] * len(upstream.requests)  # at least once


def test_retry_after_is_honoured(forwarder, upstream, fast_backoff):
    upstream.script = [(429, {"Retry-After": "1"})]
    fwd = forwarder(upstream.url)
    fwd.offer("traces", _body(3))
    assert _settled(fwd, 1) == {"sent": 1}
    first, second = (r.at for r in upstream.requests)
    assert second - first >= 1.0  # the upstream's wait, not the forwarder's 0.05 s backoff


def test_a_retry_after_past_max_elapsed_gives_the_batch_up_at_once(forwarder, upstream):
    upstream.script = [(503, {"Retry-After": "3600"})]
    fwd = forwarder(upstream.url, max_elapsed_s=300)
    fwd.offer("traces", first := _body(4))
    assert _settled(fwd, 1) == {"failed_retries_exhausted": 1}
    fwd.offer("traces", second := _body(5))  # the next batch is not held up behind it
    assert _settled(fwd, 2) == {"failed_retries_exhausted": 1, "sent": 1}
    assert upstream.payloads() == [first, second]  # the first was never sent again


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 500])
def test_a_permanent_answer_is_not_retried(forwarder, upstream, caplog, status):
    upstream.script = [(status, {"Retry-After": "1"})]  # a Retry-After does not make it retryable
    fwd = forwarder(upstream.url)
    fwd.offer("traces", first := _body(6))
    assert _settled(fwd, 1) == {"failed_permanent": 1}
    fwd.offer("traces", second := _body(7))
    assert _settled(fwd, 2) == {"failed_permanent": 1, "sent": 1}
    assert upstream.payloads() == [first, second]
    refusals = [r.getMessage() for r in caplog.records if r.name == "otelbench.exporter.otlp"]
    assert len(refusals) == 1 and str(status) in refusals[0]


def test_retrying_stops_after_max_elapsed(forwarder, upstream, fast_backoff):
    upstream.then = (503, {})
    fwd = forwarder(upstream.url, max_elapsed_s=0.5)
    fwd.offer("traces", first := _body(8))
    assert _settled(fwd, 1) == {"failed_retries_exhausted": 1}
    tries = len(upstream.requests)
    assert tries >= 2 and upstream.payloads() == [first] * tries
    upstream.then = (200, {})
    fwd.offer("traces", second := _body(9))
    assert _settled(fwd, 2) == {"failed_retries_exhausted": 1, "sent": 1}
    assert upstream.payloads()[tries:] == [second]


def test_an_unreachable_upstream_is_retried_then_given_up(forwarder, refused_url, fast_backoff):
    fwd = forwarder(refused_url, max_elapsed_s=0.3)
    fwd.offer("traces", _body(10))
    assert _settled(fwd, 1) == {"failed_retries_exhausted": 1}


def test_stop_cuts_a_retry_wait_short_and_accounts_for_every_batch(forwarder, upstream):
    """A sender waiting out a long Retry-After must not hold up the collector's stop (it
    waited for it up to DRAIN_ON_STOP_S + timeout_s, then left it running, the queue uncounted)."""
    upstream.then = (429, {"Retry-After": "60"})
    fwd = forwarder(upstream.url, timeout_s=1)
    for seed in (11, 12, 13):
        fwd.offer("traces", _body(seed))
    wait_for(lambda: upstream.requests, what="the first attempt")  # then it waits 60 s to retry
    fwd.stop()
    assert not fwd._thread.is_alive()
    outcomes = _outcomes(fwd)
    assert "sent" not in outcomes and sum(outcomes.values()) == 3, outcomes


# -- through a collector -------------------------------------------------------------------------


def _pipelines(**exporters: list[str]) -> dict:
    return {"pipelines": {s: {"receivers": ["otlp"], "exporters": e} for s, e in exporters.items()}}


def _post(collector, signal: str, body: bytes, **headers: str) -> httpx.Response:
    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/{signal}", content=body, headers={**PB, **headers})
    assert r.status_code == 200, r.text
    return r


def _forward_counts(collector) -> dict[str, float]:
    """``otelbench_exporter_forward_batches_total`` by outcome, as /metrics serves it."""
    text = httpx.get(f"http://127.0.0.1:{collector.http_port}/metrics").text
    prefix = 'otelbench_exporter_forward_batches_total{outcome="'
    return {line[len(prefix):].split('"')[0]: float(line.split()[-1])
            for line in text.splitlines() if line.startswith(prefix)}


def _spans_in_lake(collector) -> int:
    collector.wait_flushed()
    return open_lake(collector.config.exporters.parquet.path).query("SELECT count(*) FROM spans").rows[0][0]


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_each_acknowledged_batch_is_forwarded_as_logged(make_collector, upstream, compression):
    c = make_collector(exporters={"otlp": {"endpoint": upstream.url, "compression": compression,
                                           "headers": {"x-upstream-key": "k-123"}}},
                       service=_pipelines(traces=["parquet", "otlp"], logs=["parquet", "otlp"], metrics=["parquet"]))
    spans = agent_request(random.Random(20), 200).SerializeToString()
    _post(c, "traces", spans)
    logs = logs_request([LogRecord(time_unix_nano=time.time_ns(), body=AnyValue(string_value="hello"))]).SerializeToString()
    _post(c, "logs", logs)
    partly_bad = agent_request(random.Random(21), 4)
    partly_bad.resource_spans[0].scope_spans[0].spans[1].trace_id = b""  # rejected: partial success
    _post(c, "traces", partly_bad.SerializeToString())
    tid, sid = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
    as_json = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": tid, "spanId": sid, "name": "chat llama", "startTimeUnixNano": "1700000000000000000",
         "endTimeUnixNano": "1700000001000000000"}]}]}]}
    _post(c, "traces", orjson.dumps(as_json), **{"Content-Type": "application/json"})
    gauge = ExportMetricsServiceRequest()
    metric = gauge.resource_metrics.add().scope_metrics.add().metrics.add(name="queue.depth")
    metric.gauge.data_points.add(as_double=3.0, time_unix_nano=time.time_ns())
    _post(c, "metrics", gauge.SerializeToString())  # stored, not forwarded: its pipeline has no otlp

    sent = wait_for(lambda: _forward_counts(c).get("sent") == 4 and _forward_counts(c))
    assert sent == {"sent": 4}
    assert [r.path for r in upstream.requests] == ["/v1/traces", "/v1/logs", "/v1/traces", "/v1/traces"]
    for r in upstream.requests:
        assert r.headers["content-type"] == "application/x-protobuf"
        assert r.headers["x-upstream-key"] == "k-123"
        assert r.headers.get("content-encoding") == ("gzip" if compression == "gzip" else None)
    forwarded = upstream.payloads()
    assert forwarded[0] == spans and forwarded[1] == logs  # the very bytes the client sent
    if compression == "gzip":
        assert len(upstream.requests[0].body) < len(spans) / 2  # it compresses
    else:
        assert upstream.requests[0].body == spans
    kept = ExportTraceServiceRequest.FromString(forwarded[2]).resource_spans[0].scope_spans[0].spans
    assert [s.span_id for s in kept] == [s.span_id for i, s in enumerate(partly_bad.resource_spans[0].scope_spans[0].spans)
                                         if i != 1]  # what was stored, not the rejected span
    (from_json,) = ExportTraceServiceRequest.FromString(forwarded[3]).resource_spans[0].scope_spans[0].spans
    assert (from_json.trace_id.hex(), from_json.span_id.hex(), from_json.name) == (tid, sid, "chat llama")


def test_a_stuck_upstream_drops_the_oldest_batches_counted_and_never_holds_up_ingestion(make_collector, upstream):
    upstream.stall = 1  # it takes the first request and answers it only when released
    c = make_collector(exporters={"otlp": {"endpoint": upstream.url, "queue_size": 2, "timeout_s": 120}},
                       service=_pipelines(traces=["parquet", "otlp"]))
    bodies = [_body(30 + i, 10) for i in range(5)]
    _post(c, "traces", bodies[0])
    wait_for(lambda: upstream.requests, what="the first batch on its way")  # the sender is stuck on it
    for body in bodies[1:]:
        _post(c, "traces", body)  # 2 and 3 queue up; 4 and 5 push them out, oldest first
    assert _forward_counts(c) == {"dropped_queue_full": 2}
    assert _spans_in_lake(c) == 50  # all acknowledged and stored while the upstream answered nothing
    assert len(upstream.requests) == 1
    upstream.release.set()
    assert wait_for(lambda: _forward_counts(c).get("sent") == 3 and _forward_counts(c)) == {
        "dropped_queue_full": 2, "sent": 3}
    assert upstream.payloads() == [bodies[0], bodies[3], bodies[4]]


def test_an_unreachable_upstream_never_fails_ingestion(make_collector, refused_url, fast_backoff):
    c = make_collector(exporters={"otlp": {"endpoint": refused_url, "max_elapsed_s": 0.2}},
                       service=_pipelines(traces=["parquet", "otlp"]))
    for i in range(3):
        _post(c, "traces", _body(40 + i, 10))
    assert _spans_in_lake(c) == 30
    assert wait_for(lambda: _forward_counts(c).get("failed_retries_exhausted") == 3 and _forward_counts(c)) == {
        "failed_retries_exhausted": 3}


@pytest.fixture
def upstream_collector(tmp_path: Path) -> Iterator:
    """A second collector, with its own lake and log, that takes only keyed requests."""
    from otelbench.collector.wiring import Collector

    c = Collector(collector_config(tmp_path / "upstream", auth={"keys": [{"key": "edge-key-123", "owner": "edge"}]}))
    c.start()
    yield c
    c.stop()


def _rows(collector, sql: str) -> list[tuple]:
    collector.wait_flushed()
    return open_lake(collector.config.exporters.parquet.path).query(sql).rows


def test_a_real_upstream_collector_stores_every_signal_as_sent(make_collector, upstream_collector):
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    edge = make_collector(
        exporters={"otlp": {"endpoint": f"http://127.0.0.1:{upstream_collector.http_port}",
                            "headers": {"x-bench-key": "edge-key-123"}}},
        service=_pipelines(**{s: ["parquet", "otlp"] for s in ("traces", "logs", "metrics")}))
    # traces from the SDK over HTTP, metrics from the SDK over gRPC, logs as a plain protobuf POST
    provider = TracerProvider(resource=Resource.create({"service.name": "edge-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{edge.http_port}/v1/traces")))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent planner", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 42}):
            pass
    assert provider.force_flush(10_000)
    provider.shutdown()
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"127.0.0.1:{edge.grpc_port}", insecure=True), export_interval_millis=3_600_000)
    meters = MeterProvider(metric_readers=[reader])
    meters.get_meter("test").create_counter("gen_ai.client.token.count").add(42, {"gen_ai.token.type": "input"})
    meters.shutdown()  # one collection, exported before shutdown returns
    _post(edge, "logs", logs_request([LogRecord(time_unix_nano=time.time_ns(),
                                                body=AnyValue(string_value="a log line"))]).SerializeToString())

    wait_for(lambda: _forward_counts(edge).get("sent") == 3, what="three batches forwarded")
    for table, order in (("spans", "span_id"), ("logs", "body"), ("metrics", "metric_name")):
        sql = f"SELECT * EXCLUDE (owner) FROM {table} ORDER BY {order}"
        here, there = _rows(edge, sql), _rows(upstream_collector, sql)
        assert here and there == here, table
        assert _rows(upstream_collector, f"SELECT DISTINCT owner FROM {table}") == [("edge",)]
    assert _rows(upstream_collector, "SELECT name, input_tokens FROM spans ORDER BY name") == [
        ("chat gpt-4o", 42), ("invoke_agent planner", None)]
