"""Send random spans and log records through the real OTel SDK, read them back from the
lake two ways, and list every difference from what was sent.

``send_spans`` makes spans of ``SpanSpec``s with the SDK's tracer (attributes, events
with attributes, links with attributes, a resource of its own) and exports them to a
collector over OTLP/HTTP protobuf, gRPC, or OTLP/JSON (the SDK's own encoding rendered as
JSON, as the JavaScript exporter sends it); ``send_logs`` does the same for log records,
whose attributes take every ``AnyValue`` kind. What was sent is what the SDK exported
(its spans and records, after its own cleaning: it decodes a span's bytes attribute to
text), so a difference is the lake's, not the SDK's.

The lake is read through the views (``spans``, ``logs``) and, independently, from the
Parquet files with the rule docs/schema.md gives their readers (``attributes_moved``:
put back ``key: column``). ``compare`` lists differences key for key
(``attribute_maps.differences``). Used by tests/test_roundtrip.py and
benchmarks/roundtrip.py.
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Link, SpanContext, TraceFlags

from otelbench.collector.flusher import batch_id, collector_id
from otelbench.testing import attribute_maps as am
from otelbench.testing.otlp import kv, kvs, trace_request
from otelbench.testing.otlp_capture import protobuf_to_otlp_json
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake
from otelbench.storage.files import data_files
from otelbench.storage.lake import Lake
from otelbench.storage.schema import LOGS, MOVED_ATTRIBUTES, SPANS

PROTOCOLS = ("http/protobuf", "grpc", "http/json")
# span events the normalizer reads messages from, and the SDK's exception event
EVENT_NAMES = ("gen_ai.content.prompt", "gen_ai.content.completion", "gen_ai.user.message", "gen_ai.choice",
               "exception")
_SPAN_COLUMNS = ["span_id", "attributes", "attributes_moved", "events", "links", "resource_attributes",
                 "scope_attributes", *MOVED_ATTRIBUTES.values()]


@dataclass
class SpanSpec:
    name: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)


def span_specs(rng: random.Random, n: int) -> list[SpanSpec]:
    """``n`` spans: most with maps of their own, a run of one layout (16 or more spans whose
    maps have the same keys and value kinds), events and links now and then."""
    out = []
    layout = None
    if n >= 16 and rng.random() < 0.5:  # scalars only: an array sends a map down the generic path
        layout = {k: v for k, v in am.span_attributes(rng).items() if not isinstance(v, tuple)}
    for i in range(n):
        attrs = am.one_layout(rng, layout) if layout is not None and i < 16 else am.span_attributes(rng)
        events = [(rng.choice(EVENT_NAMES) if rng.random() < 0.5 else am.text(rng, 10) or "event",
                   am.span_attributes(rng)) for _ in range(rng.choice((0, 0, 0, 1, 2)))]
        links = [am.span_attributes(rng) for _ in range(rng.choice((0, 0, 0, 1, 2)))]
        out.append(SpanSpec(rng.choice(("chat gpt-4o", "invoke_agent a", "execute_tool t", am.text(rng, 10) or "op")),
                            attrs, events, links))
    return out


@dataclass
class Endpoints:
    http: str  # http://127.0.0.1:<port>
    grpc: str  # 127.0.0.1:<port>


class Target:
    """A running collector (``collector.wiring.Collector``) and its lake, as the round
    trip uses them: where to send, how to check, when to compact."""

    def __init__(self, collector: Any) -> None:
        self.collector = collector
        self.to = Endpoints(f"http://127.0.0.1:{collector.http_port}", f"127.0.0.1:{collector.grpc_port}")
        self.location = str(collector.config.exporters.parquet.path)
        self.lake = Lake(self.location, collector_id(collector.config))

    def differences(self, spans: dict[str, dict[str, Any]], logs: dict[str, dict[str, Any]]) -> list[str]:
        """Once all that was acknowledged is in Parquet: every difference from what was sent,
        in the views and in the files."""
        self.collector.wait_flushed()
        return (compare(spans, spans_in_view(self.location, list(spans)), "spans view")
                + compare(spans, spans_in_files(self.lake, list(spans)), "spans files")
                + compare(logs, logs_in_view(self.location, list(logs)), "logs view")
                + compare(logs, logs_in_files(self.lake, list(logs)), "logs files"))

    def arrived(self, spans: dict[str, Any], logs: dict[str, Any]) -> list[str]:
        """``differences`` once every span and log record is in this lake's views: for a
        collector that others forward to, whose flush this side cannot wait for."""
        def all_there() -> bool:
            return (len(spans_in_view(self.location, list(spans))) >= len(spans)
                    and len(logs_in_view(self.location, list(logs))) >= len(logs))

        wait_for(all_there, what="the forwarded spans and log records in the upstream lake")
        return self.differences(spans, logs)

    def compact(self) -> dict[str, int]:
        """Merge the flushed files of spans and logs, as the collector's compactor would
        (``Lake.compact``, now); returns the files merged, by table."""
        self.collector.wait_flushed()
        below = batch_id(self.collector.state.flushed_pos)
        return {t.name: self.lake.compact(t.name, below_batch_id=below, min_files=2) for t in (SPANS, LOGS)}


def send_spans(to: Endpoints, specs: Sequence[SpanSpec], resource: dict[str, Any], protocol: str,
               rng: random.Random, start_ns: int | None = None,
               scope: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Export the spans (starting at ``start_ns``, a microsecond apart; None: now) from a
    tracer with ``scope`` attributes; returns, by span id (hex), what the SDK sent:
    ``attributes``, ``events`` and ``links`` (their attributes, in order), ``resource``
    and ``scope``."""
    exporter = _Recording(_span_exporter(to, protocol))
    provider = TracerProvider(resource=Resource.create(resource), id_generator=_FreshIds())
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=512))
    tracer = provider.get_tracer("otelbench.testing.roundtrip", attributes=scope)
    for i, s in enumerate(specs):
        links = [Link(SpanContext(rng.getrandbits(128) or 1, rng.getrandbits(64) or 1, False, TraceFlags(1)), a)
                 for a in s.links]
        t = None if start_ns is None else start_ns + 1000 * i
        span = tracer.start_span(s.name, attributes=s.attributes, links=links, start_time=t)
        for name, a in s.events:
            span.add_event(name, a, timestamp=t)
        span.end(None if t is None else t + 500)
    provider.force_flush()
    provider.shutdown()
    exporter.check(len(specs))
    return {format(sp.context.span_id, "016x"): {
        "attributes": dict(sp.attributes), "events": [dict(e.attributes) for e in sp.events],
        "links": [dict(ln.attributes) for ln in sp.links], "resource": dict(sp.resource.attributes),
        "scope": dict(sp.instrumentation_scope.attributes or {}),
    } for sp in exporter.items}


def send_logs(to: Endpoints, maps: Sequence[dict[str, Any]], resource: dict[str, Any], protocol: str,
              tag: str, time_ns: int | None = None) -> dict[str, dict[str, Any]]:
    """Export one log record per map (body ``<tag>-<i>``, at ``time_ns``; None: now);
    returns, by body, what the SDK sent: ``attributes`` and ``resource``."""
    exporter = _Recording(_log_exporter(to, protocol))
    provider = LoggerProvider(resource=Resource.create(resource))
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    logger = provider.get_logger("otelbench.testing.roundtrip")
    for i, a in enumerate(maps):
        logger.emit(body=f"{tag}-{i}", attributes=a, timestamp=time_ns)
    provider.force_flush()
    provider.shutdown()
    exporter.check(len(maps))
    return {r.log_record.body: {"attributes": dict(r.log_record.attributes or {}),
                                "resource": dict(r.resource.attributes)} for r in exporter.items}


class _FreshIds(RandomIdGenerator):
    """Span and trace ids from the OS: the SDK's default draws from ``random``, which
    hypothesis seeds alike for every example (the same ids again: another example's rows)."""

    def generate_span_id(self) -> int:
        return secrets.randbits(64) or 1

    def generate_trace_id(self) -> int:
        return secrets.randbits(128) or 1


def send_raw_spans(to: Endpoints, maps: Sequence[dict[str, Any]], resource: dict[str, Any], fmt: str,
                   start_ns: int) -> dict[str, dict[str, Any]]:
    """What OTLP carries beyond the SDK's spans (bytes, key-value lists, arrays of mixed
    kinds, unset values, an empty key): one request of a span per map, built with
    otelbench.testing.otlp and posted as ``fmt`` (``protobuf`` or ``json``); returns, by
    span id, what was sent (``attributes``, ``resource``)."""
    maps, resource = [am.as_lists(a) for a in maps], am.as_lists(resource)
    ids = [secrets.token_bytes(8) for _ in maps]
    # every other span sends its first key twice: the earlier value must not read back
    spans = [Span(trace_id=secrets.token_bytes(16), span_id=i, name="raw",
                  attributes=[kv(k, "sent before") for k in list(a)[:n % 2]] + kvs(a),
                  start_time_unix_nano=start_ns, end_time_unix_nano=start_ns + 1000)
             for n, (a, i) in enumerate(zip(maps, ids))]
    body = trace_request(*spans, resource=resource).SerializeToString()
    if fmt == "json":
        body, media = json.dumps(protobuf_to_otlp_json("traces", body)).encode(), "application/json"
    else:
        media = "application/x-protobuf"
    r = httpx.post(f"{to.http}/v1/traces", content=body, headers={"Content-Type": media}, timeout=30)
    if r.status_code != 200:
        raise RuntimeError(f"the receiver answered {r.status_code}: {r.text[:200]}")
    return {i.hex(): {"attributes": a, "resource": resource} for a, i in zip(maps, ids)}


# -- exporters ------------------------------------------------------------------------------


def _span_exporter(to: Endpoints, protocol: str) -> Any:
    if protocol == "grpc":
        return GrpcSpans(endpoint=to.grpc, insecure=True)
    if protocol == "http/json":
        return _JsonExporter(f"{to.http}/v1/traces", "traces", encode_spans)
    return HttpSpans(endpoint=f"{to.http}/v1/traces")


def _log_exporter(to: Endpoints, protocol: str) -> Any:
    if protocol == "grpc":
        return GrpcLogs(endpoint=to.grpc, insecure=True)
    if protocol == "http/json":
        return _JsonExporter(f"{to.http}/v1/logs", "logs", encode_logs)
    return HttpLogs(endpoint=f"{to.http}/v1/logs")


class _JsonExporter:
    """The SDK's OTLP encoding, sent as OTLP/JSON (hex ids, int64 as strings, NaN as "NaN")."""

    def __init__(self, url: str, signal: str, encode: Any) -> None:
        self.url, self.signal, self.encode = url, signal, encode

    def export(self, items: Sequence[Any]) -> bool:
        doc = protobuf_to_otlp_json(self.signal, self.encode(items).SerializeToString())
        r = httpx.post(self.url, content=json.dumps(doc), headers={"Content-Type": "application/json"}, timeout=30)
        return r.status_code == 200

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


class _Recording:
    """An exporter that keeps what it exported, and whether the receiver took it."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.items, self.failed = inner, [], 0

    def export(self, items: Sequence[Any]) -> Any:
        result = self.inner.export(items)
        ok = result is True or getattr(result, "name", "") == "SUCCESS"
        if ok:
            self.items.extend(items)
        else:
            self.failed += len(items)
        return result

    def check(self, n: int) -> None:
        if self.failed or len(self.items) != n:
            raise RuntimeError(f"the receiver took {len(self.items)} of {n} items ({self.failed} failed)")

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


# -- reading back ---------------------------------------------------------------------------


def _span_record(attributes: str, events: str, links: str, resource: str, scope: str) -> dict[str, Any]:
    return {"attributes": json.loads(attributes), "events": [e["attributes"] for e in json.loads(events)],
            "links": [ln["attributes"] for ln in json.loads(links)], "resource": json.loads(resource),
            "scope": json.loads(scope)}


def spans_in_view(location: str, span_ids: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """(span id, its record) of each row of the ``spans`` view with one of ``span_ids``."""
    with open_lake(location) as gw:
        rows = gw.query("SELECT span_id, attributes, events, links, resource_attributes, scope_attributes FROM spans "
                        "WHERE list_contains($ids, span_id)", {"ids": list(span_ids)}, max_rows=None).rows
    return [(sid, _span_record(*rest)) for sid, *rest in rows]


def spans_in_files(lake: Lake, span_ids: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """The same, read from the Parquet files: ``attributes`` with each key that
    ``attributes_moved`` names put back from its column (docs/schema.md)."""
    wanted, out = set(span_ids), []
    for f in data_files(lake.fs, SPANS):
        for row in lake.fs.read_parquet(f.path, _SPAN_COLUMNS).to_pylist():
            if row["span_id"] in wanted:
                rec = _span_record(row["attributes"], row["events"], row["links"], row["resource_attributes"],
                                   row["scope_attributes"])
                for k in row["attributes_moved"] or ():
                    rec["attributes"][k] = row[MOVED_ATTRIBUTES[k]]
                out.append((row["span_id"], rec))
    return out


def logs_in_view(location: str, bodies: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    with open_lake(location) as gw:
        rows = gw.query("SELECT body, attributes, resource_attributes FROM logs WHERE list_contains($b, body)",
                        {"b": [json.dumps(b) for b in bodies]}, max_rows=None).rows
    return [(json.loads(b), {"attributes": json.loads(a), "resource": json.loads(r)}) for b, a, r in rows]


def logs_in_files(lake: Lake, bodies: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    wanted, out = {json.dumps(b) for b in bodies}, []
    for f in data_files(lake.fs, LOGS):
        for row in lake.fs.read_parquet(f.path, ["body", "attributes", "resource_attributes"]).to_pylist():
            if row["body"] in wanted:
                out.append((json.loads(row["body"]), {"attributes": json.loads(row["attributes"]),
                                                      "resource": json.loads(row["resource_attributes"])}))
    return out


def compare(sent: dict[str, dict[str, Any]], read: list[tuple[str, dict[str, Any]]], where: str) -> list[str]:
    """Every difference between what was sent and the rows read: a row missing, stored
    twice or never sent, and each value that does not read back as sent."""
    out: list[str] = []
    seen: dict[str, dict[str, Any]] = {}
    for ident, rec in read:
        if ident in seen:
            out.append(f"{where} {ident}: stored twice")
        seen[ident] = rec
    for ident, want in sent.items():
        got = seen.get(ident)
        if got is None:
            out.append(f"{where} {ident}: missing")
            continue
        for part, value in want.items():
            out += am.differences(value, got[part], f"{where} {ident} {part}")
    out += [f"{where} {ident}: not sent" for ident in seen.keys() - sent.keys()]
    return out
