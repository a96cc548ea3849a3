"""collector.service, the ingest core: its in-flight bound, through real HTTP and gRPC clients.

Too many requests in flight is answered 429 + Retry-After (HTTP) and UNAVAILABLE + RetryInfo
(gRPC). The requests are held in flight on explicit state: the write-ahead log's fsync waits
for an event, so the requests that reached the core cannot be answered until the test lets
them, and the core's own in-flight gauge says when the slots are full.
"""

from __future__ import annotations

import random
import threading

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2

from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake
from otelbench.testing.otlp import agent_request

PB = {"Content-Type": "application/x-protobuf"}
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
CLIENT_TIMEOUT_S = 60  # a guard against a hung test, not a bound on the answer's speed


@pytest.fixture
def held_fsync(monkeypatch):
    """Returns ``hold(collector)``: from then on its log's fsync waits until the event is set."""
    release = threading.Event()

    def hold(collector) -> threading.Event:
        writer = collector.committer._writer
        sync = writer.sync

        def held() -> None:
            release.wait()
            sync()

        monkeypatch.setattr(writer, "sync", held)
        return release

    yield hold
    release.set()  # never leave the committer stuck, whatever the test did


def test_too_many_requests_in_flight_get_429_and_unavailable_with_retry_after(make_collector, held_fsync):
    c = make_collector(service={"limits": {"max_inflight_requests": 2, "retry_after_s": 5}})
    url = f"http://127.0.0.1:{c.http_port}/v1/traces"
    channel = grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}")
    export = channel.unary_unary(TRACE_EXPORT)
    release = held_fsync(c)

    # fill both slots: one request per transport, each waiting for its fsync
    held_http = agent_request(random.Random(1), 3)
    held_grpc = agent_request(random.Random(2), 4)
    answers: dict[str, object] = {}

    def send_http() -> None:
        answers["http"] = httpx.post(url, content=held_http.SerializeToString(), headers=PB, timeout=CLIENT_TIMEOUT_S)

    def send_grpc() -> None:
        answers["grpc"] = export(held_grpc.SerializeToString(), timeout=CLIENT_TIMEOUT_S)

    threads = [threading.Thread(target=send_http), threading.Thread(target=send_grpc)]
    for t in threads:
        t.start()
    wait_for(lambda: c.telemetry.inflight == 2, what="two requests held in flight")

    refused = agent_request(random.Random(3), 5).SerializeToString()
    r = httpx.post(url, content=refused, headers=PB, timeout=CLIENT_TIMEOUT_S)
    assert r.status_code == 429
    assert r.headers["retry-after"] == "5"
    assert "too many export requests in flight" in status_pb2.Status.FromString(r.content).message

    with pytest.raises(grpc.RpcError) as info:
        export(refused, timeout=CLIENT_TIMEOUT_S)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # retried by OTLP clients, unlike RESOURCE_EXHAUSTED
    details = status_pb2.Status.FromString(dict(info.value.trailing_metadata())["grpc-status-details-bin"])
    retry = error_details_pb2.RetryInfo()
    assert details.details[0].Unpack(retry) and retry.retry_delay.seconds == 5

    assert not answers, "the held requests are answered only once durable"
    release.set()
    for t in threads:
        t.join(CLIENT_TIMEOUT_S)
    assert answers["http"].status_code == 200
    assert answers["grpc"] == b""  # an empty ExportTraceServiceResponse: full success
    assert c.telemetry.inflight == 0
    # the slots are free again
    assert httpx.post(url, content=agent_request(random.Random(4), 6).SerializeToString(), headers=PB).status_code == 200

    metrics = httpx.get(f"http://127.0.0.1:{c.http_port}/metrics").text
    assert 'otelbench_receiver_refused_requests_total{code="429"} 2' in metrics
    assert 'otelbench_receiver_accepted_items_total{signal="traces",item="spans"} 13' in metrics
    c.wait_flushed()
    assert open_lake(c.config.exporters.parquet.path).query("SELECT count(*) FROM spans").rows == [(13,)]
    channel.close()
