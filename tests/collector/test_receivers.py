"""The receivers end to end: real OTel SDK exporters → real ports → WAL → Parquet → DuckDB."""

from __future__ import annotations

import gzip
import random

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from otelbench.storage.duckdb import open_lake
from otelbench.testing.otlp import agent_request, kv, logs_request

PB = {"Content-Type": "application/x-protobuf"}


def q(collector, sql):
    collector.wait_flushed()
    return open_lake(collector.config.exporters.parquet.path).query(sql).rows


def _sdk_tracer(exporter):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-agent"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _emit_agent_run(provider, n_calls=3):
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent planner", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
        for i in range(n_calls):
            with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.prompt_tokens": 100 + i, "gen_ai.usage.completion_tokens": 10}):
                pass
        with tracer.start_as_current_span("execute_tool search", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}):
            pass


@pytest.mark.parametrize("transport", ["http", "grpc", "grpc-gzip"])
def test_sdk_exporters_deliver_spans(collector, transport):
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces")
    else:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True,
                                    compression=grpc.Compression.Gzip if transport == "grpc-gzip" else None)
    provider = _sdk_tracer(exporter)
    _emit_agent_run(provider)
    assert provider.force_flush(10_000)
    provider.shutdown()
    rows = q(collector, "SELECT span_type, count(*), sum(input_tokens) FROM spans GROUP BY 1 ORDER BY 1")
    assert rows == [("agent", 1, None), ("llm", 3, 303), ("tool", 1, None)]
    runs = q(collector, "SELECT agent, llm_calls, tool_calls, status FROM agent_runs")
    assert runs == [("planner", 3, 1, "ok")]
    assert q(collector, "SELECT DISTINCT service_name, provider FROM llm_calls") == [("sdk-agent", "openai")]


def test_sdk_log_exporter_and_message_events_join_spans(collector):
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    rng = random.Random(1)
    req = agent_request(rng, 2)
    span = req.resource_spans[0].scope_spans[0].spans[1]  # an llm span
    del span.attributes[:]
    span.attributes.extend([kv("gen_ai.operation.name", "chat"), kv("gen_ai.system", "openai"),
                            kv("gen_ai.request.model", "gpt-4o")])
    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", content=req.SerializeToString(), headers=PB)
    assert r.status_code == 200
    # the GenAI events of that call, as openai-v2 sends them: log records correlated by ids
    user = LogRecord(time_unix_nano=span.start_time_unix_nano, trace_id=span.trace_id, span_id=span.span_id,
                     attributes=[kv("event.name", "gen_ai.user.message"), kv("gen_ai.system", "openai")])
    user.body.kvlist_value.values.append(kv("content", "What is 2+2?"))
    choice = LogRecord(time_unix_nano=span.end_time_unix_nano, trace_id=span.trace_id, span_id=span.span_id,
                       attributes=[kv("event.name", "gen_ai.choice"), kv("gen_ai.system", "openai")])
    choice.body.kvlist_value.values.extend([kv("index", 0), kv("finish_reason", "stop")])
    msg = choice.body.kvlist_value.values.add(key="message")
    msg.value.kvlist_value.values.extend([kv("role", "assistant"), kv("content", "4")])
    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/logs",
                   content=logs_request([user, choice]).SerializeToString(), headers=PB)
    assert r.status_code == 200
    rows = q(collector, f"SELECT input_messages, output_messages FROM llm_calls WHERE span_id = '{span.span_id.hex()}'")
    assert "What is 2+2?" in rows[0][0] and '"4"' in rows[0][1]
    assert q(collector, "SELECT count(*) FROM logs WHERE event_name = 'gen_ai.choice'") == [(1,)]


def test_json_gzip_and_partial_success(collector):
    tid, sid = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
    body = {
        "resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-agent"}}]},
            "scopeSpans": [{"scope": {"name": "js"}, "unknownField": 1, "spans": [
                {"traceId": tid, "spanId": sid, "name": "chat llama", "kind": 3,
                 "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": 1700000001000000000,
                 "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "42"}}]},
                {"traceId": "", "spanId": "0102030405060708", "name": "no trace id"},
            ]}],
        }]
    }
    import orjson

    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", content=gzip.compress(orjson.dumps(body)),
                   headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert r.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert "trace_id" in r.json()["partialSuccess"]["errorMessage"]
    assert q(collector, "SELECT trace_id, span_id, kind, input_tokens, service_name FROM spans") == [
        (tid, sid, "client", 42, "json-agent")]


def test_protobuf_partial_success_response(collector):
    req = agent_request(random.Random(2), 4)
    req.resource_spans[0].scope_spans[0].spans[2].span_id = b"\x00" * 8
    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", content=req.SerializeToString(), headers=PB)
    resp = ExportTraceServiceResponse.FromString(r.content)
    assert r.status_code == 200 and resp.partial_success.rejected_spans == 1
    assert q(collector, "SELECT count(*) FROM spans") == [(3,)]


def _status(r: httpx.Response) -> status_pb2.Status:
    return status_pb2.Status.FromString(r.content)


@pytest.mark.parametrize(
    "method, headers, body, code, reason",
    [
        ("POST", PB, b"\xff\xff\xff garbage", 400, "not a valid ExportTraceServiceRequest"),
        ("POST", {"Content-Type": "application/json"}, b"{not json", 400, "not valid JSON"),
        ("POST", {"Content-Type": "application/json"}, b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
         400, "is not hex"),
        ("POST", {"Content-Type": "text/plain"}, b"hello", 415, "unsupported content type"),
        ("POST", {}, b"", 415, "unsupported content type"),
        ("GET", PB, None, 405, "uses POST"),
        ("PUT", PB, b"", 405, "uses POST"),
        ("POST", {**PB, "Content-Encoding": "br"}, b"xx", 400, "unsupported content encoding"),
        ("POST", {**PB, "Content-Encoding": "gzip"}, b"not gzip at all", 400, "not valid gzip"),
        ("POST", {**PB, "Content-Encoding": "gzip"}, gzip.compress(b"\0" * (2 << 20)), 413, "exceeds"),  # bomb
        ("POST", PB, b"\0" * ((1 << 20) + 10), 413, "exceeds"),
    ],
)
def test_malformed_requests_get_clear_errors(make_collector, method, headers, body, code, reason):
    c = make_collector(receivers={"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0", "max_request_body_size_mib": 1}}}})
    r = httpx.request(method, f"http://127.0.0.1:{c.http_port}/v1/traces", content=body, headers=headers)
    assert r.status_code == code
    if r.headers["content-type"].startswith("application/json"):
        assert reason in r.json()["message"]
    else:
        assert reason in _status(r).message
    if code == 405:
        assert r.headers["allow"] == "POST"
    # nothing else was lost: a good request right after still lands
    ok = httpx.post(f"http://127.0.0.1:{c.http_port}/v1/traces",
                    content=agent_request(random.Random(3), 2).SerializeToString(), headers=PB)
    assert ok.status_code == 200


def test_auth_keys_and_owner(make_collector):
    key = "secret-key-alice"
    c = make_collector(auth={"keys": [{"key": key, "owner": "alice"}, {"key": "secret-key-bob", "owner": "bob"}]})
    url = f"http://127.0.0.1:{c.http_port}/v1/traces"
    body = agent_request(random.Random(4), 2).SerializeToString()
    assert httpx.post(url, content=body, headers=PB).status_code == 401
    assert httpx.post(url, content=body, headers={**PB, "X-Bench-Key": "wrong-key-123"}).status_code == 401
    assert httpx.post(url, content=body, headers={**PB, "X-Bench-Key": key}).status_code == 200
    body2 = agent_request(random.Random(5), 3).SerializeToString()
    assert httpx.post(url, content=body2, headers={**PB, "Authorization": "Bearer secret-key-bob"}).status_code == 200
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    ch = grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}")
    export = ch.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
    with pytest.raises(grpc.RpcError) as info:
        export(body)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    export(agent_request(random.Random(6), 1).SerializeToString(), metadata=[("x-bench-key", key)])
    assert q(c, "SELECT owner, count(*) FROM spans GROUP BY 1 ORDER BY 1") == [("alice", 3), ("bob", 3)]


def test_backpressure_503_with_retry_after(make_collector):
    # the flusher is told to wait an hour, so the WAL fills past its 1 MiB bound
    c = make_collector(parquet={"flush": {"interval_s": 3600, "max_rows": 10_000_000, "max_batch_mib": 1024}},
                       service={"limits": {"max_unflushed_mib": 1, "retry_after_s": 7}})
    url = f"http://127.0.0.1:{c.http_port}/v1/traces"
    rng = random.Random(7)
    codes = []
    for _ in range(20):
        r = httpx.post(url, content=agent_request(rng, 200).SerializeToString(), headers=PB)
        codes.append(r.status_code)
        if r.status_code != 200:
            break
    assert codes[-1] == 503 and 200 in codes
    assert r.headers["retry-after"] == "7"
    assert "write-ahead log is full" in _status(r).message
    ch = grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}")
    export = ch.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
    with pytest.raises(grpc.RpcError) as info:
        export(agent_request(rng, 5).SerializeToString())
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    details = dict(info.value.trailing_metadata())["grpc-status-details-bin"]
    retry = error_details_pb2.RetryInfo()
    status_pb2.Status.FromString(details).details[0].Unpack(retry)
    assert retry.retry_delay.seconds == 7
    metrics = httpx.get(f"http://127.0.0.1:{c.http_port}/metrics").text
    assert 'otelbench_receiver_refused_requests_total{code="503"} 2' in metrics


def test_signal_without_pipeline_is_404(tmp_path):
    from otelbench.collector.config import parse_config
    from otelbench.collector.wiring import Collector

    cfg = parse_config({
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": str(tmp_path / "lake")}},
        "service": {"wal": {"dir": str(tmp_path / "wal")},
                    "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
    })
    c = Collector(cfg).start()
    try:
        r = httpx.post(f"http://127.0.0.1:{c.http_port}/v1/metrics", content=b"", headers=PB)
        assert r.status_code == 404 and "no pipeline" in _status(r).message
    finally:
        c.stop()


def test_metrics_endpoint_counts(collector):
    url = f"http://127.0.0.1:{collector.http_port}"
    httpx.post(url + "/v1/traces", content=agent_request(random.Random(8), 10).SerializeToString(), headers=PB)
    collector.wait_flushed()
    text = httpx.get(url + "/metrics").text
    assert 'otelbench_receiver_accepted_items_total{signal="traces",item="spans"} 10' in text
    assert 'otelbench_flusher_flushed_items_total{signal="traces"} 10' in text
    assert "otelbench_flusher_last_flush_seconds" in text
    assert httpx.get(url + "/healthz").text == "ok"


def test_otlp_metrics_stored_raw(collector):
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/metrics"), export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader])
    meter = provider.get_meter("test")
    meter.create_counter("gen_ai.client.token.count").add(42, {"gen_ai.token.type": "input"})
    meter.create_histogram("gen_ai.client.operation.duration", unit="s").record(1.5)
    provider.shutdown()  # one collection, exported before shutdown returns
    rows = q(collector, "SELECT metric_name, metric_type, value, count, sum FROM metrics ORDER BY metric_name")
    assert rows == [("gen_ai.client.operation.duration", "histogram", None, 1, 1.5),
                    ("gen_ai.client.token.count", "sum", 42.0, None, None)]


def test_graceful_stop_flushes_everything(make_collector):
    c = make_collector(parquet={"flush": {"interval_s": 3600, "max_rows": 10_000_000, "max_batch_mib": 1024}})
    url = f"http://127.0.0.1:{c.http_port}/v1/traces"
    for i in range(5):
        assert httpx.post(url, content=agent_request(random.Random(i), 50).SerializeToString(), headers=PB).status_code == 200
    c.stop()  # flush interval is an hour: only the stop writes Parquet
    assert open_lake(c.config.exporters.parquet.path).query("SELECT count(*) FROM spans").rows == [(250,)]
    from otelbench.collector import wal
    assert wal.wal_bytes(c.config.service.wal.dir) == 0  # every segment retired but the (empty) current one
