"""normalize.rows: tables of OTLP input (real protobuf classes) → expected columns.

The span, log and bad-input tables live in ``cases.py``, shared with
``test_columnar.py``, which checks the columnar path against this one on each case.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otelbench.normalize.pricing import compute_cost
from otelbench.normalize.rows import normalize_logs, normalize_metrics, normalize_traces
from otelbench.testing.otlp import END, PARENT, SERVICE, SPAN_ID, START, TRACE, av, event, kvs, make_span, trace_request
from otelbench.storage.schema import LOGS, METRICS, SPANS
from tests.normalize.cases import (AGENT_CALLS, AGENTS, CONVERSATIONS, COSTS, ERRORS, FINISH_REASONS, KINDS_AND_STATUSES,
                                   LOG_EVENT_NAMES, LOG_EVENTS, MALFORMED, MESSAGE_IDS, MESSAGE_ROWS, MODELS,
                                   OPERATIONS, PARENT_IDS, PROVIDERS, SPAN_ARGS, SPAN_TABLES, TOOL_IO, TOOLS, TTFTS,
                                   USAGE)


# -- helpers ---------------------------------------------------------------------------


def rows(columns: dict[str, list]) -> list[dict[str, Any]]:
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def one_span(attrs: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    (row,) = rows(normalize_traces(trace_request(make_span(attrs, **kw)), "alice"))
    return row


def subset(row: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in expected}


# -- column layout, core fields ---------------------------------------------------------


def test_columns_are_the_schema_in_order_with_equal_lengths() -> None:
    req = trace_request(make_span(), make_span(span_id=b"\x02" * 8))
    rs2 = req.resource_spans.add()
    rs2.scope_spans.add().spans.append(make_span(span_id=b"\x03" * 8))
    for columns, table, n in (
        (normalize_traces(req, None), SPANS, 3),
        (normalize_traces(ExportTraceServiceRequest(), None), SPANS, 0),
        (normalize_logs(ExportLogsServiceRequest(), None), LOGS, 0),
        (normalize_metrics(ExportMetricsServiceRequest(), None), METRICS, 0),
    ):
        assert list(columns) == table.columns
        assert {len(v) for v in columns.values()} == {n}


def test_core_span_fields() -> None:
    row = one_span({"http.method": "GET"}, name="GET /x", kind=Span.SPAN_KIND_SERVER,
                   trace_state="k=v", flags=257, dropped_attributes_count=2,
                   dropped_events_count=3, dropped_links_count=4,
                   status=Status(code=Status.STATUS_CODE_ERROR, message="boom"))
    assert row == row | {
        "trace_id": TRACE.hex(), "span_id": SPAN_ID.hex(), "parent_span_id": PARENT.hex(),
        "trace_state": "k=v", "name": "GET /x", "kind": "server", "service_name": SERVICE,
        "scope_name": "test.scope", "scope_version": "1.0",
        "start_time": START // 1000, "end_time": END // 1000, "duration_ms": 1500.0,
        "status_code": "error", "status_message": "boom", "flags": 257, "owner": "alice",
        "dropped_attributes_count": 2, "dropped_events_count": 3, "dropped_links_count": 4,
        "span_type": "other", "operation": None, "agent_name": None, "cost_usd": None,
        "input_messages": None, "output_messages": None, "events": "[]", "links": "[]",
    }
    assert row["trace_id"] == "5b8efff798038103d269b633813fc60c"


@pytest.mark.parametrize(("parent", "expected"), PARENT_IDS)
def test_parent_span_id(parent: bytes, expected: str | None) -> None:
    assert one_span(parent=parent)["parent_span_id"] == expected


@pytest.mark.parametrize(("kind", "status", "want"), KINDS_AND_STATUSES)
def test_kind_and_status_names(kind: int, status: int, want: tuple[str, str]) -> None:
    row = one_span(kind=kind, status=Status(code=status))
    assert (row["kind"], row["status_code"]) == want


def test_raw_attributes_survive_as_json() -> None:
    attrs = {"s": "x", "b": True, "i": -7, "d": 1.5, "bytes": b"\x00\xff", "empty": None,
             "arr": ["a", 1, [2.5]], "kv": {"k": {"nested": [True]}}, "gen_ai.request.model": "gpt-4o"}
    link = Span.Link(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, trace_state="a=b",
                     attributes=kvs({"link.kind": "follows"}), flags=1)
    row = one_span(attrs, events=[event("retry", {"attempt": 2}, t=42)], links=[link])
    assert json.loads(row["attributes"]) == {**attrs, "bytes": base64.b64encode(b"\x00\xff").decode()}
    assert json.loads(row["resource_attributes"]) == {"service.name": SERVICE}
    assert json.loads(row["scope_attributes"]) == {}
    assert json.loads(row["events"]) == [
        {"name": "retry", "time_unix_nano": 42, "attributes": {"attempt": 2}, "dropped_attributes_count": 0}]
    assert json.loads(row["links"]) == [
        {"trace_id": "01" * 16, "span_id": "02" * 8, "trace_state": "a=b",
         "attributes": {"link.kind": "follows"}, "flags": 1}]
    assert " " not in row["links"]  # compact JSON


# -- operation, span type, provider ----------------------------------------------------

@pytest.mark.parametrize(("attrs", "name", "operation", "span_type"), OPERATIONS)
def test_operation_and_span_type(attrs: dict, name: str, operation: str | None, span_type: str) -> None:
    row = one_span(attrs, name=name)
    assert (row["operation"], row["span_type"]) == (operation, span_type)


@pytest.mark.parametrize(("attrs", "provider"), PROVIDERS)
def test_provider(attrs: dict, provider: str | None) -> None:
    assert one_span(attrs)["provider"] == provider


# -- models, tokens, coercion ---------------------------------------------------------

TOKENS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens",
          "cache_write_tokens", "reasoning_tokens")

@pytest.mark.parametrize(("attrs", "want"), USAGE)
def test_token_usage(attrs: dict, want: tuple) -> None:
    row = one_span(attrs)
    assert tuple(row[k] for k in TOKENS) == want


@pytest.mark.parametrize(("attrs", "want"), MODELS)
def test_models(attrs: dict, want: tuple) -> None:
    row = one_span(attrs)
    assert (row["request_model"], row["response_model"]) == want


# -- cost ------------------------------------------------------------------------------

@pytest.mark.parametrize(("attrs", "cost", "source"), COSTS)
def test_cost(attrs: dict, cost: float | None, source: str | None) -> None:
    row = one_span(attrs)
    assert row["cost_source"] == source
    assert row["cost_usd"] == (None if cost is None else pytest.approx(cost))


def test_computed_cost_matches_pricing_module() -> None:
    row = one_span({"gen_ai.request.model": "claude-sonnet-4-20250514", "gen_ai.usage.input_tokens": 5000,
                    "gen_ai.usage.output_tokens": 300, "gen_ai.usage.cache_read.input_tokens": 4000,
                    "gen_ai.usage.cache_creation.input_tokens": 500})
    assert row["cost_usd"] == pytest.approx(compute_cost("claude-sonnet-4", 5000, 300, 4000, 500))


# -- agent, tool, conversation, ttft, finish reasons, errors -----------------------------

@pytest.mark.parametrize(("attrs", "name", "parent", "agent", "agent_id"), AGENTS)
def test_agent(attrs: dict, name: str, parent: bytes, agent: str | None, agent_id: str | None) -> None:
    row = one_span(attrs, name=name, parent=parent)
    assert (row["agent_name"], row["agent_id"]) == (agent, agent_id)


def test_a_root_of_a_genai_trace_is_not_named_after_the_service() -> None:
    """The service is the views' last fallback for a run's agent, after every span of the
    run that names one; baked into the root it would outrank them."""
    root = make_span({"http.route": "/ask"}, name="POST /ask", parent=b"")
    child = make_span({"gen_ai.operation.name": "chat"}, name="chat m", span_id=b"\x05" * 8, parent=SPAN_ID)
    other_trace_root = make_span({}, name="GET /health", parent=b"", trace=b"\x09" * 16)
    got = rows(normalize_traces(trace_request(root, child, other_trace_root), None))
    assert [r["agent_name"] for r in got] == [None, None, None]


@pytest.mark.parametrize(("attrs", "name", "want"), TOOLS)
def test_tool(attrs: dict, name: str, want: tuple) -> None:
    row = one_span(attrs, name=name)
    assert (row["tool_name"], row["tool_call_id"]) == want


@pytest.mark.parametrize(("attrs", "name", "want"), TOOL_IO)
def test_tool_io(attrs: dict, name: str, want: tuple) -> None:
    row = one_span(attrs, name=name)
    assert (row["tool_arguments"], row["tool_result"]) == want


@pytest.mark.parametrize(("attrs", "want"), CONVERSATIONS)
def test_conversation_id(attrs: dict, want: str | None) -> None:
    assert one_span(attrs)["conversation_id"] == want


@pytest.mark.parametrize(("attrs", "want"), AGENT_CALLS)
def test_agent_call_id(attrs: dict, want: str | None) -> None:
    assert one_span(attrs)["agent_call_id"] == want


@pytest.mark.parametrize(("attrs", "events", "want"), TTFTS)
def test_ttft(attrs: dict, events: list, want: float | None) -> None:
    assert one_span(attrs, events=events)["ttft_ms"] == (None if want is None else pytest.approx(want))


@pytest.mark.parametrize(("attrs", "want"), FINISH_REASONS)
def test_finish_reasons(attrs: dict, want: list | None) -> None:
    assert one_span(attrs)["finish_reasons"] == want


@pytest.mark.parametrize(("attrs", "events", "status", "want"), ERRORS)
def test_errors(attrs: dict, events: list, status: Status, want: tuple) -> None:
    row = one_span(attrs, events=events, status=status)
    assert (row["error_type"], row["error_message"]) == want


# -- messages --------------------------------------------------------------------------


@pytest.mark.parametrize(("attrs", "events", "inp", "out"), MESSAGE_ROWS, ids=MESSAGE_IDS)
def test_messages(attrs: dict, events: list, inp: list | None, out: list | None) -> None:
    row = one_span(attrs, events=events)
    got_in = None if row["input_messages"] is None else json.loads(row["input_messages"])
    got_out = None if row["output_messages"] is None else json.loads(row["output_messages"])
    assert (got_in, got_out) == (inp, out)


def test_message_columns_are_json_text() -> None:
    row = one_span({"gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "é"}]}]})
    assert row["input_messages"] == '[{"role":"user","parts":[{"type":"text","content":"é"}]}]'


# -- logs ------------------------------------------------------------------------------


def log_request(*records: LogRecord) -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.extend(kvs({"service.name": SERVICE}))
    sl = rl.scope_logs.add()
    sl.scope.name = "test.logs"
    sl.log_records.extend(records)
    return req


def one_log(event_name: str = "", body: Any = None, attrs: dict | None = None, **kw: Any) -> dict[str, Any]:
    rec = LogRecord(event_name=event_name, attributes=kvs(attrs), **kw)
    if body is not None:
        rec.body.CopyFrom(av(body))
    (row,) = rows(normalize_logs(log_request(rec), "bob"))
    return row


def test_log_core_fields() -> None:
    row = one_log(body="plain text", attrs={"k": 1}, time_unix_nano=START, observed_time_unix_nano=END,
                  trace_id=TRACE, span_id=SPAN_ID, severity_number=9, severity_text="INFO", flags=1,
                  dropped_attributes_count=2)
    assert row == {
        "time": START // 1000, "observed_time": END // 1000, "trace_id": TRACE.hex(), "span_id": SPAN_ID.hex(),
        "severity_number": 9, "severity_text": "INFO", "event_name": None, "body": '"plain text"',
        "service_name": SERVICE, "scope_name": "test.logs", "flags": 1, "owner": "bob",
        "resource_attributes": json.dumps({"service.name": SERVICE}, separators=(",", ":")),
        "attributes": '{"k":1}', "dropped_attributes_count": 2, "message_direction": None, "messages": None,
    }


@pytest.mark.parametrize(("kw", "want"), [
    ({"time_unix_nano": 5000, "observed_time_unix_nano": 9000}, (5, 9)),
    ({"observed_time_unix_nano": 9000}, (9, 9)),
    ({}, (None, None)),
])
def test_log_time_falls_back_to_observed(kw: dict, want: tuple) -> None:
    row = one_log(**kw)
    assert (row["time"], row["observed_time"]) == want


@pytest.mark.parametrize(("event_name", "attrs", "want"), LOG_EVENT_NAMES)
def test_log_event_name(event_name: str, attrs: dict, want: str | None) -> None:
    assert one_log(event_name, attrs=attrs)["event_name"] == want


@pytest.mark.parametrize(("event_name", "body", "attrs", "direction", "messages"), LOG_EVENTS)
def test_log_message_events(event_name: str, body: Any, attrs: dict, direction: str | None, messages: Any) -> None:
    row = one_log(event_name, body, attrs)
    assert row["message_direction"] == direction
    assert (None if row["messages"] is None else json.loads(row["messages"])) == messages


# -- metrics ---------------------------------------------------------------------------


def metric_request(*metrics: m.Metric) -> ExportMetricsServiceRequest:
    req = ExportMetricsServiceRequest()
    rm = req.resource_metrics.add()
    rm.resource.attributes.extend(kvs({"service.name": SERVICE}))
    sm = rm.scope_metrics.add()
    sm.scope.name = "test.metrics"
    sm.metrics.extend(metrics)
    return req


_PT = {"start_time_unix_nano": START, "time_unix_nano": END, "attributes": kvs({"gen_ai.request.model": "m"})}
_EXEMPLAR = m.Exemplar(time_unix_nano=END, as_double=0.7, trace_id=TRACE, span_id=SPAN_ID,
                       filtered_attributes=kvs({"x": 1}))

METRICS_CASES = [
    ("gauge", m.Metric(name="g", unit="1", gauge=m.Gauge(data_points=[m.NumberDataPoint(as_int=3, **_PT)])),
     {"metric_type": "gauge", "aggregation_temporality": None, "is_monotonic": None, "value": 3.0,
      "count": None, "unit": "1"},
     {"value": 3, "exemplars": []}),
    ("sum", m.Metric(name="s", sum=m.Sum(aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE,
                                         is_monotonic=True,
                                         data_points=[m.NumberDataPoint(as_double=2.5, exemplars=[_EXEMPLAR], **_PT)])),
     {"metric_type": "sum", "aggregation_temporality": "cumulative", "is_monotonic": True, "value": 2.5},
     {"value": 2.5, "exemplars": [{"time_unix_nano": END, "value": 0.7, "trace_id": TRACE.hex(),
                                   "span_id": SPAN_ID.hex(), "filtered_attributes": {"x": 1}}]}),
    ("histogram", m.Metric(name="gen_ai.client.token.usage", unit="{token}", histogram=m.Histogram(
        aggregation_temporality=m.AGGREGATION_TEMPORALITY_DELTA,
        data_points=[m.HistogramDataPoint(count=3, sum=60.0, min=10.0, max=30.0, bucket_counts=[1, 2, 0],
                                          explicit_bounds=[16.0, 64.0], **_PT)])),
     {"metric_type": "histogram", "aggregation_temporality": "delta", "value": None, "count": 3, "sum": 60.0,
      "min": 10.0, "max": 30.0, "bucket_counts": [1, 2, 0], "explicit_bounds": [16.0, 64.0]},
     {"count": 3, "sum": 60.0, "bucket_counts": [1, 2, 0], "explicit_bounds": [16.0, 64.0]}),
    ("histogram-no-sum", m.Metric(name="h", histogram=m.Histogram(
        data_points=[m.HistogramDataPoint(count=1, bucket_counts=[1], **_PT)])),
     {"sum": None, "min": None, "max": None, "aggregation_temporality": None},
     {"sum": None, "min": None}),
    ("exponential_histogram", m.Metric(name="e", exponential_histogram=m.ExponentialHistogram(
        aggregation_temporality=m.AGGREGATION_TEMPORALITY_DELTA,
        data_points=[m.ExponentialHistogramDataPoint(
            count=4, sum=8.0, scale=2, zero_count=1, zero_threshold=0.001,
            positive=m.ExponentialHistogramDataPoint.Buckets(offset=-1, bucket_counts=[1, 2]),
            **_PT)])),
     {"metric_type": "exponential_histogram", "count": 4, "sum": 8.0, "bucket_counts": None},
     {"scale": 2, "zero_count": 1, "zero_threshold": 0.001, "positive": {"offset": -1, "bucket_counts": [1, 2]},
      "negative": {"offset": 0, "bucket_counts": []}}),
    ("summary", m.Metric(name="q", summary=m.Summary(data_points=[m.SummaryDataPoint(
        count=10, sum=5.0, quantile_values=[m.SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=0.4)],
        **_PT)])),
     {"metric_type": "summary", "count": 10, "sum": 5.0, "aggregation_temporality": None},
     {"quantile_values": [{"quantile": 0.5, "value": 0.4}]}),
]


@pytest.mark.parametrize(("metric", "columns", "data"), [c[1:] for c in METRICS_CASES],
                         ids=[c[0] for c in METRICS_CASES])
def test_metric_points(metric: m.Metric, columns: dict, data: dict) -> None:
    (row,) = rows(normalize_metrics(metric_request(metric), "carol"))
    assert subset(row, columns) == columns
    assert subset(json.loads(row["data"]), data) == data
    assert row == row | {"time": END // 1000, "start_time": START // 1000, "metric_name": metric.name,
                         "service_name": SERVICE, "scope_name": "test.metrics", "owner": "carol",
                         "attributes": '{"gen_ai.request.model":"m"}'}


def test_one_row_per_data_point_and_empty_metrics_skipped() -> None:
    pts = [m.NumberDataPoint(as_int=i, time_unix_nano=END) for i in range(3)]
    req = metric_request(m.Metric(name="g", gauge=m.Gauge(data_points=pts)), m.Metric(name="nodata"))
    columns = normalize_metrics(req, None)
    assert columns["value"] == [0.0, 1.0, 2.0]
    assert columns["start_time"] == [None, None, None]


# -- bad input never raises --------------------------------------------------------------

@pytest.mark.parametrize("attrs", MALFORMED)
def test_malformed_values_are_kept_not_fatal(attrs: dict) -> None:
    events = [event("gen_ai.choice", {"message": "{", "finish_reason": 1}), event("exception", {"exception.type": 1})]
    row = one_span(attrs, events=events)
    assert json.loads(row["attributes"]).keys() == attrs.keys()
    for column in ("input_messages", "output_messages"):
        assert row[column] is None or isinstance(json.loads(row[column]), list)


# -- the tables test_columnar.py shares ----------------------------------------------------


def test_every_span_table_is_shared_with_the_columnar_test() -> None:
    """test_columnar.py checks the columnar path on every case of cases.SPAN_TABLES: each
    parametrized test here whose cases build a span must be listed there, as it is here."""
    found = {}
    for name, fn in globals().items():
        for mark in getattr(fn, "pytestmark", []) if name.startswith("test_") else []:
            names = mark.args[0]
            names = tuple(x.strip() for x in names.split(",")) if isinstance(names, str) else tuple(names)
            if mark.name == "parametrize" and SPAN_ARGS & set(names):
                found[name] = (names, list(mark.args[1]), mark.kwargs.get("ids"))
    assert found == SPAN_TABLES
