"""Ingest keys with scopes, expiry, revocation and quotas: real OTel SDK exporters (HTTP and
gRPC) against a real collector on real ports, the lake read back through its views; the
windows' arithmetic with a clock of the test's own."""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelbench.collector.config import ApiKey, KeyQuotas
from otelbench.collector.errors import Forbidden, QuotaExceeded, Unauthenticated
from otelbench.collector.keys import Keyring
from otelbench.storage.duckdb import open_lake

ALICE, BOB, READER, OLD, GONE = "alice-key-0001", "bob-key-00002", "reader-key-003", "old-key-00004", "gone-key-0005"
HASHED = "hashed-key-0006"


def keys() -> list[dict[str, Any]]:
    past = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)).isoformat()
    return [{"key": ALICE, "owner": "alice", "quotas": {"spans_per_day": 10}},
            {"key": BOB, "owner": "bob", "quotas": {"requests_per_minute": 3}},
            {"key": READER, "owner": "carol", "scopes": ["read"]},
            {"key": OLD, "owner": "dave", "expires": past},
            {"key": GONE, "owner": "erin", "revoked": True},
            {"key_sha256": hashlib.sha256(HASHED.encode()).hexdigest(), "owner": "frank"}]


_ids = iter(range(1, 10**9))


def post(collector: Any, key: str | None, spans: int = 1, name: str = "s") -> httpx.Response:
    """One OTLP/JSON export of ``spans`` new spans (a real client's shape, by hand: the
    status codes and headers are what is under test)."""
    now = time.time_ns()
    ids = [next(_ids) for _ in range(spans)]
    body = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": name}}]},
                               "scopeSpans": [{"spans": [
                                   {"traceId": f"{i:032x}", "spanId": f"{i:016x}", "name": f"{name}-{i}",
                                    "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1000)}
                                   for i in ids]}]}]}
    headers = {"X-Bench-Key": key} if key else {}
    return httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", json=body, headers=headers, timeout=10)


def rows(collector: Any, sql: str) -> list[tuple]:
    collector.wait_flushed()
    with open_lake(Path(collector.config.exporters.parquet.path)) as gw:
        return gw.query(sql, max_rows=None).rows


def test_who_may_send(make_collector) -> None:
    c = make_collector(auth={"keys": keys()})
    assert post(c, ALICE).status_code == 200 and post(c, HASHED, name="frank").status_code == 200
    for key, status, says in ((None, 401, "missing or unknown"), ("no-such-key-1", 401, "missing or unknown"),
                              (OLD, 401, "expired at"), (GONE, 401, "was revoked"), (READER, 403, "may not ingest")):
        r = post(c, key)
        assert r.status_code == status and says in r.json()["message"], (key, r.text)
        assert key is None or key not in r.text  # a key is never echoed
    assert rows(c, "SELECT owner, count(*) FROM spans GROUP BY owner ORDER BY owner") == [("alice", 1), ("frank", 1)]


def test_a_daily_quota_refuses_the_request_that_would_pass_it_and_stores_none_of_it(make_collector) -> None:
    c = make_collector(auth={"keys": keys()})
    assert post(c, ALICE, spans=6).status_code == 200
    over = post(c, ALICE, spans=6)  # 12 > 10: refused whole
    assert over.status_code == 429 and int(over.headers["retry-after"]) > 0
    assert "quota spans_per_day (10)" in over.json()["message"] and "6 used today" in over.json()["message"]
    assert post(c, ALICE, spans=4).status_code == 200  # exactly up to the quota
    assert post(c, ALICE, spans=1).status_code == 429
    assert rows(c, "SELECT count(*) FROM spans") == [(10,)]  # what was acknowledged, and nothing else
    usage = rows(c, "SELECT owner, spans, traces, llm_calls FROM key_usage")
    assert usage == [("alice", 10, 10, 0)]
    metrics = httpx.get(f"http://127.0.0.1:{c.http_port}/metrics").text
    fingerprint = hashlib.sha256(ALICE.encode()).hexdigest()[:12]
    assert f'otelbench_key_items_total{{owner="alice",key="{fingerprint}"}} 10' in metrics
    assert f'otelbench_key_quota_refused_requests_total{{owner="alice",key="{fingerprint}",quota="spans_per_day"}} 2' \
        in metrics
    assert ALICE not in metrics


def test_requests_per_minute_over_http_and_grpc(make_collector) -> None:
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    now = [time.time() // 60 * 60 + 20]  # 20 s into a minute, until the test moves it
    c = make_collector(auth={"keys": keys()}, clock=lambda: now[0])
    assert [post(c, BOB).status_code for _ in range(3)] == [200, 200, 200]
    refused = post(c, BOB)
    assert refused.status_code == 429 and "requests_per_minute (3)" in refused.json()["message"]
    assert refused.headers["retry-after"] == "40"  # the rest of the minute
    channel = grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}")
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    with pytest.raises(grpc.RpcError) as err:
        stub.Export(trace_service_pb2.ExportTraceServiceRequest(), metadata=(("x-bench-key", BOB),), timeout=10)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "requests_per_minute" in err.value.details()
    with pytest.raises(grpc.RpcError) as err:
        stub.Export(trace_service_pb2.ExportTraceServiceRequest(), metadata=(("x-bench-key", READER),), timeout=10)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    channel.close()
    now[0] += 40  # the next minute: a new window
    assert [post(c, BOB).status_code for _ in range(4)] == [200, 200, 200, 429]


def test_the_windows_reset_on_the_minute_and_at_midnight_utc() -> None:
    now = [dt.datetime(2026, 12, 3, 23, 59, 30, tzinfo=dt.timezone.utc).timestamp()]
    ring = Keyring([ApiKey(key="k" * 12, owner="o", quotas=KeyQuotas(requests_per_minute=2, spans_per_day=5,
                                                                       bytes_per_day=1000))], clock=lambda: now[0])
    e = ring.find("k" * 12)
    ring.admit(e), ring.admit(e)
    with pytest.raises(QuotaExceeded) as over:
        ring.admit(e)
    assert over.value.retry_after_s == 30
    ring.charge(e, 5, 10)
    with pytest.raises(QuotaExceeded) as over:
        ring.charge(e, 1, 10)
    assert over.value.retry_after_s == 30 and "resets at 00:00 UTC" in str(over.value)
    with pytest.raises(QuotaExceeded, match="bytes_per_day"):
        ring.charge(e, 0, 991)
    now[0] += 31  # the next minute, and the next day
    ring.admit(e)
    ring.charge(e, 5, 1000)
    with pytest.raises(Unauthenticated):
        ring.find("k" * 11 + "x")
    with pytest.raises(Forbidden):
        ring.find("k" * 12, "read")


def test_a_key_is_given_in_clear_or_as_its_digest_never_both() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="either key or key_sha256"):
        ApiKey(owner="o")
    with pytest.raises(ValidationError, match="either key or key_sha256"):
        ApiKey(key="k" * 12, key_sha256="0" * 64, owner="o")
    with pytest.raises(ValidationError, match="time zone"):
        ApiKey(key="k" * 12, owner="o", expires=dt.datetime(2030, 1, 1))
