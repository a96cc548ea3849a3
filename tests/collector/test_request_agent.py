"""Naming the agent without touching code: the X-Bench-Agent header and a key's default
agent, through real OTel SDK exporters (HTTP and gRPC), the log, the lake and the views."""

from __future__ import annotations

import random

import grpc
import httpx
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otelbench.collector import wal
from otelbench.collector.errors import MalformedRequest
from otelbench.collector.service import Sender
from otelbench.testing.otlp import agent_request
from otelbench.storage.duckdb import open_lake

KEY = "k" * 16


def _exporter(collector, transport: str, headers: dict[str, str]):
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", headers=headers)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, headers=headers)


def _run(exporter, *, named: str | None = None) -> None:
    """One run: a root without an agent name, a chat call under it; ``named``: an agent
    span between them that names itself."""
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2}
    with tracer.start_as_current_span("POST /ask"):
        if named:
            with tracer.start_as_current_span(f"invoke_agent {named}", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": named}):
                with tracer.start_as_current_span("chat gpt-4o-mini", attributes=chat):
                    pass
        else:
            with tracer.start_as_current_span("chat gpt-4o-mini", attributes=chat):
                pass
    provider.shutdown()


def _answers(collector) -> tuple[list, list, list]:
    collector.wait_flushed()
    with open_lake(collector.config.exporters.parquet.path) as gw:
        return (gw.query("SELECT DISTINCT request_agent FROM spans").rows,
                gw.query("SELECT agent FROM agent_runs").rows,
                gw.query("SELECT agent FROM llm_calls").rows)


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_the_header_names_the_agent_of_a_run_that_names_none(collector, transport: str) -> None:
    _run(_exporter(collector, transport, {"x-bench-agent": "weather_agent"}))
    assert _answers(collector) == ([("weather_agent",)], [("weather_agent",)], [("weather_agent",)])


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_an_agent_span_that_names_itself_outranks_the_header(collector, transport: str) -> None:
    _run(_exporter(collector, transport, {"x-bench-agent": "from-header"}), named="planner")
    _, runs, calls = _answers(collector)
    assert runs == [("planner",)] and calls == [("planner",)]


def test_without_a_header_or_a_key_default_the_service_names_it(collector) -> None:
    _run(_exporter(collector, "http", {}))
    assert _answers(collector) == ([(None,)], [("weather-app",)], [("weather-app",)])


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_a_keys_default_agent_and_the_header_over_it(make_collector, transport: str) -> None:
    c = make_collector(auth={"keys": [{"key": KEY, "owner": "alice", "agent": "key-default"}]})
    _run(_exporter(c, transport, {"x-bench-key": KEY}))
    _run(_exporter(c, transport, {"x-bench-key": KEY, "x-bench-agent": "header-wins"}))
    c.wait_flushed()
    with open_lake(c.config.exporters.parquet.path) as gw:
        assert gw.query("SELECT agent, owner FROM agent_runs ORDER BY agent").rows == [
            ("header-wins", "alice"), ("key-default", "alice")]


@pytest.mark.parametrize("bad", ["", "a" * 201, "tab\there"])
def test_a_bad_header_is_a_400_with_a_reason_and_stores_nothing(collector, bad: str) -> None:
    body = agent_request(random.Random(1), 3).SerializeToString()
    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", content=body,
                   headers={"Content-Type": "application/x-protobuf", "X-Bench-Agent": bad})
    assert r.status_code == 400 and b"X-Bench-Agent must be 1 to 200 printable characters" in r.content
    collector.wait_flushed()
    assert open_lake(collector.config.exporters.parquet.path).query("SELECT count(*) FROM spans").rows == [(0,)]


def test_a_bad_grpc_metadata_agent_is_invalid_argument(collector) -> None:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    channel = grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}")
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    with pytest.raises(grpc.RpcError) as err:
        stub.Export(agent_request(random.Random(2), 2), metadata=(("x-bench-agent", "a" * 300),))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    channel.close()


# ------------------------------------------------------------------ the log record and the sender
def test_the_log_carries_the_sender_and_reads_records_written_before_agents(tmp_path) -> None:
    import struct
    import zlib

    w = wal.WalWriter(tmp_path, 1 << 20)
    start = w.head
    # a record as version 2 wrote it (owner only), byte for byte
    owner = b"alice"
    old = wal.HEADER.pack(3, zlib.crc32(b"abc", zlib.crc32(owner, wal.SIGNAL_CODES["traces"])),
                          wal.SIGNAL_CODES["traces"], 0, len(owner)) + owner + b"abc"
    end = w.append(old + wal.encode_record("traces", "bob", b"def", "planner")
                   + wal.encode_record("traces", None, b"ghi", "solo") + wal.encode_record("logs", None, b"jkl"))
    w.sync()
    recs = [r for _, r in wal.read_records(tmp_path, start, end, 1 << 30) if r is not None]
    assert [(r.owner, r.agent, r.payload) for r in recs] == [
        ("alice", None, b"abc"), ("bob", "planner", b"def"), (None, "solo", b"ghi"), (None, None, b"jkl")]
    assert struct.calcsize("<IIBBH") == wal.HEADER.size  # the layout did not change


def test_authenticate_names_the_sender() -> None:
    from otelbench.collector.service import Ingest

    from otelbench.collector.config import ApiKey
    from otelbench.collector.keys import Keyring

    def ingest(keys):
        return Ingest(signals=["traces"], keys=Keyring(keys), committer=None, telemetry=None, max_inflight=1,
                      max_unflushed_bytes=1, retry_after_s=1)

    def who(s: Sender) -> tuple[str | None, str | None]:
        return s.owner, s.agent

    open_ = ingest([])
    assert open_.authenticate(None) == Sender(None, None)
    assert open_.authenticate(None, "  planner ") == Sender(None, "planner")
    keyed = ingest([ApiKey(key=KEY, owner="alice", agent="default-agent"), ApiKey(key="m" * 16, owner="bob")])
    assert who(keyed.authenticate(KEY)) == ("alice", "default-agent")
    assert who(keyed.authenticate(KEY, "header")) == ("alice", "header")
    assert who(keyed.authenticate("m" * 16)) == ("bob", None)
    for bad in ("sep\x1farated", "   ", "a" * 201):  # the log's separator can never reach it
        with pytest.raises(MalformedRequest):
            keyed.authenticate(KEY, bad)
