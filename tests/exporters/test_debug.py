"""exporters.debug in a real collector: one summary line per interval, per signal routed to it."""

from __future__ import annotations

import logging
import random

import httpx
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from otelbench.testing.wait import wait_for
from otelbench.testing.otlp import agent_request, logs_request

PB = {"Content-Type": "application/x-protobuf"}
LOGGER = "otelbench.exporter.debug"


def _pipelines(**exporters: list[str]) -> dict:
    return {"pipelines": {s: {"receivers": ["otlp"], "exporters": e} for s, e in exporters.items()}}


def _post(collector, signal: str, body: bytes) -> None:
    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/{signal}", content=body, headers=PB)
    assert r.status_code == 200, r.text


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_counts_batches_and_bytes_of_its_signals_and_reports_them_once_on_stop(make_collector, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    c = make_collector(exporters={"debug": {"interval_s": 3600}},
                       service=_pipelines(traces=["parquet", "debug"], logs=["parquet"], metrics=["parquet", "debug"]))
    bodies = [agent_request(random.Random(seed), 5).SerializeToString() for seed in (1, 2)]
    for body in bodies:
        _post(c, "traces", body)
    _post(c, "logs", logs_request([LogRecord(body=AnyValue(string_value="hello"))]).SerializeToString())  # not routed
    assert _lines(caplog) == []  # counted, not logged per batch
    c.stop()
    # one line for the whole (unfinished) interval; metrics sent nothing, logs are not its signal
    assert _lines(caplog) == [f"debug: traces: 2 batches / {sum(map(len, bodies))} bytes"]


def test_reports_every_interval_and_starts_each_interval_from_zero(make_collector, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    c = make_collector(exporters={"debug": {"interval_s": 0.05}},
                       service=_pipelines(traces=["parquet", "debug"]))
    first = agent_request(random.Random(3), 4).SerializeToString()
    _post(c, "traces", first)
    wait_for(lambda: _lines(caplog), what="the first interval's line")
    second = agent_request(random.Random(4), 7).SerializeToString()
    _post(c, "traces", second)
    wait_for(lambda: len(_lines(caplog)) == 2, what="the next interval's line")
    assert _lines(caplog) == [f"debug: traces: 1 batches / {len(first)} bytes",
                              f"debug: traces: 1 batches / {len(second)} bytes"]
