"""exporters.otlp: a collector forwards what it acknowledged to an upstream collector, and counts."""

from __future__ import annotations

import random

import httpx

from otelbench.testing.otlp import agent_request
from storage.duckdb import open_lake

PB = {"Content-Type": "application/x-protobuf"}


def test_forwards_acknowledged_batches_upstream_and_counts_them(make_collector, tmp_path) -> None:
    upstream = make_collector(parquet={"path": str(tmp_path / "upstream-lake")},
                              service={"wal": {"dir": str(tmp_path / "upstream-wal")}})
    edge = make_collector(
        exporters={"otlp": {"endpoint": f"http://127.0.0.1:{upstream.http_port}"}},
        service={"pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet", "otlp"]}}},
    )
    requests = [agent_request(random.Random(i), 20) for i in range(3)]
    for request in requests:
        r = httpx.post(f"http://127.0.0.1:{edge.http_port}/v1/traces", content=request.SerializeToString(), headers=PB)
        assert r.status_code == 200
    edge.stop()  # drains the forwarding queue
    assert edge.telemetry.forward == {"sent": 3}
    upstream.wait_flushed()
    rows = open_lake(upstream.config.exporters.parquet.path).query("SELECT count(*) FROM spans").rows
    assert rows == [(60,)]
