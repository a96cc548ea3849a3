"""OTLP requests → the lake's rows, one item at a time: the row path, and the oracle.

``normalize_traces`` / ``normalize_logs`` / ``normalize_metrics`` take a decoded
``Export*ServiceRequest`` and the ingest key's owner (or None) and return
``{column: [values...]}`` with exactly the columns of ``storage.schema.SPANS`` /
``LOGS`` / ``METRICS``, in order, one entry per span / log record / data point.

This is the path for logs and metrics, and for the spans the columnar path
(``normalize.columnar``) cannot vectorize (rare message shapes: it calls
``genai_fields`` for them). It is also the oracle: the columnar path must give the
same rows as ``normalize_traces`` for every input, and is differentially tested
against it (tests/normalize/test_columnar.py: the case tables, recorded
instrumentations, a seeded fuzz). Plain Python over the protobuf objects, written
to be read first and fast second.

The rules it applies (timestamps, ids, JSON columns, every GenAI field, log message
events, metric points): docs/normalization.md. The convention tables and rules both
paths share: ``normalize.conventions``.
"""

from __future__ import annotations

from typing import Any

import orjson

from otelbench.normalize import conventions as cv
from otelbench.normalize import message_sources as sources
from otelbench.normalize import messages as msgs
from otelbench.normalize import pricing, tool_io
from otelbench.normalize.anyvalue import as_str, attributes, hex_id, micros, value
from otelbench.storage.schema import LOGS, METRICS, MOVED_ATTRIBUTES, SPANS

_dumps = orjson.dumps

_FIELDS = cv.FIELDS
_NF = len(_FIELDS)

_SPAN_COLUMNS = [
    "trace_id", "span_id", "parent_span_id", "trace_state", "name", "kind", "service_name",
    "scope_name", "scope_version", "start_time", "end_time", "duration_ms", "status_code",
    "status_message", "flags", "owner", "request_agent", "resource_attributes", "scope_attributes", "attributes",
    "attributes_moved", "events", "links", "dropped_attributes_count", "dropped_events_count", "dropped_links_count",
    "span_type", "operation", "provider", "agent_name", "agent_id", "agent_call_id", "request_model",
    "response_model", "input_tokens", "output_tokens", "total_tokens", "cache_read_tokens",
    "cache_write_tokens", "reasoning_tokens", "cost_usd", "cost_source", "finish_reasons",
    "conversation_id", "tool_name", "tool_call_id", "tool_arguments", "tool_result", "ttft_ms", "error_type", "error_message",
    "input_messages", "output_messages",
]
# Rows are built as positional tuples for speed: fail at import if the schema moved.
if SPANS.columns != _SPAN_COLUMNS:  # pragma: no cover
    raise ImportError("storage.schema.SPANS changed: update normalize.rows")


# storage.schema.MOVED_ATTRIBUTES: attribute key → its column's place in genai_fields' tuple
_MOVED = tuple((key, _SPAN_COLUMNS.index(column) - _SPAN_COLUMNS.index("span_type"))
               for key, column in MOVED_ATTRIBUTES.items())


def _moved(attrs: dict[str, Any], genai: tuple) -> list[str] | None:
    """The attributes stored once: a string equal to its promoted column's text."""
    moved = [key for key, slot in _MOVED if (v := attrs.get(key)) is not None and isinstance(v, str) and v == genai[slot]]
    return moved or None


def _json(v: Any) -> str:
    return _dumps(v).decode()


# alias key → (its field's slot, its rank among the field's aliases, COERCE's type and converter,
# or KEY_COERCE's for a key that has its own)
_ALIAS_SLOT = {k: (slot, rank, *cv.KEY_COERCE.get(k, cv.COERCE[f]))
               for slot, f in enumerate(_FIELDS) for rank, k in enumerate(cv.ALIASES[f])}
_ALIAS_KEYS = frozenset(_ALIAS_SLOT)


def _columns(names: list[str], rows: list[tuple]) -> dict[str, list]:
    if not rows:
        return {c: [] for c in names}
    return {c: list(col) for c, col in zip(names, zip(*rows))}


def _resource(resource: Any) -> tuple[str | None, str]:
    attrs = attributes(resource.attributes)
    return as_str(attrs.get("service.name")), _json(attrs)


# -- traces ----------------------------------------------------------------------------


def genai_fields(attrs: dict[str, Any], name: str, events: list, start: int, service: str | None,
           status_message: str | None) -> tuple:
    """The promoted GenAI columns of one span."""
    vals: list[Any] = [None] * _NF
    hits = _ALIAS_KEYS.intersection(attrs)  # iterates attrs, not the 60 aliases
    if hits:
        ranks = [99] * _NF
        for k in hits:
            slot, rank, typ, conv = _ALIAS_SLOT[k]
            if rank < ranks[slot]:
                v = attrs[k]
                if v.__class__ is not typ or not v:
                    if conv is not None:
                        v = conv(v)
                if v is not None:
                    vals[slot] = v
                    ranks[slot] = rank
    (op, req_type, oi_kind, tl_kind, tl_entity, provider, agent, agent_id, graph_node, req_model,
     resp_model, in_tok, out_tok, total, cache_r, cache_w, reasoning, cost, finish,
     conversation, agent_call_id, tool, tool_call_id, tool_args, tool_result, ttft_s, error_type) = vals
    oi = oi_kind.upper() if oi_kind is not None else None

    if cv.INVOCATION_PARAMETERS in attrs:
        req_model, resp_model = cv.invocation_models(attrs, req_model, resp_model)
    if resp_model is None and oi == cv.LLM_KIND:
        resp_model = cv.langchain_response_model(attrs.get("output.value"))
    if op is None:
        op = cv.operation(req_type, oi_kind, tl_kind, agent is not None, name)
    first, _, rest = name.partition(" ")
    span_type = cv.span_type(op, bool(req_model or resp_model) and not cv.not_a_call(oi_kind, name))

    if provider is not None:
        provider = cv.provider(provider)

    if agent is None and tl_kind == cv.TRACELOOP_AGENT:
        agent = tl_entity
    if agent is None and rest and first in cv.AGENT_NAME_OPS:
        agent = rest
    if agent is None and oi == cv.AGENT_KIND:
        agent = cv.metadata_agent_name(attrs.get(cv.METADATA)) or graph_node
    # An agent span that names no agent stays unnamed: the views fall back to the request's
    # agent or the service only when no span of the run names one (docs/normalization.md).
    if tool is None and tl_kind == cv.TRACELOOP_TOOL:
        tool = tl_entity
    if tool is None and rest and first == cv.TOOL_NAME_OP:
        tool = rest
    if tool_call_id is None and oi == cv.TOOL_KIND:
        tool_call_id = cv.langchain_tool_call_id(attrs.get("output.value"))
    if tool_args is None or tool_result is None:
        io = (tool_io.openinference(attrs) if oi == cv.TOOL_KIND
              else tool_io.traceloop(attrs) if tl_kind == cv.TRACELOOP_TOOL else None)
        if io is not None:
            tool_args = io[0] if tool_args is None else tool_args
            tool_result = io[1] if tool_result is None else tool_result

    if total is None and in_tok is not None and out_tok is not None and abs(in_tok + out_tok) < 2**63:
        total = in_tok + out_tok  # beyond int64 no BIGINT column holds it: no total

    cost_source = None
    if cost is not None and (cost != 0 or not (in_tok or out_tok)):
        cost_source = "reported"
    elif in_tok is not None or out_tok is not None:
        # a reported 0 for a call that used tokens is what OpenLIT sends offline: priced
        # instead when the model's price is known (the 0 stays in `attributes`)
        # the response model names the exact snapshot that served (and was billed)
        price = (resp_model and pricing.lookup(resp_model)) or (req_model and pricing.lookup(req_model))
        if price:
            cost = pricing.cost(price, in_tok, out_tok, cache_r, cache_w)
            cost_source = "computed"
        elif cost is not None:
            cost_source = "reported"  # a reported 0 for a model without a price stays

    error_message = status_message
    if events:
        exc = None
        for e in events:
            n = e["name"]
            if n == cv.EXCEPTION_EVENT:
                exc = e["attributes"]
            elif n in cv.TTFT_EVENTS and ttft_s is None:
                ttft_s = (e["time_unix_nano"] - start) / 1e9
        if exc is not None:
            error_type = error_type or as_str(exc.get("exception.type"))
            error_message = error_message or as_str(exc.get("exception.message"))

    if ttft_s is not None and cv.not_streamed(attrs):
        ttft_s = None

    inp = out = None
    if events or not sources.MESSAGE_KEYS.isdisjoint(attrs):
        inp, out = sources.span_messages(attrs, events)
    if finish is not None or out is not None or cv.OPENLLMETRY_FIRST_FINISH in attrs:
        finish = cv.finish_reasons(finish, attrs, out)
    return (
        span_type, op, provider, agent, agent_id, agent_call_id, req_model, resp_model,
        in_tok, out_tok, total, cache_r, cache_w, reasoning, cost, cost_source, finish,
        conversation, tool, tool_call_id, tool_args, tool_result, None if ttft_s is None else ttft_s * 1000.0,
        error_type, error_message, msgs.dump(inp), msgs.dump(out),
    )


def _event(e: Any) -> dict[str, Any]:
    return {"name": e.name, "time_unix_nano": e.time_unix_nano,
            "attributes": attributes(e.attributes),
            "dropped_attributes_count": e.dropped_attributes_count}


def _link(ln: Any) -> dict[str, Any]:
    return {"trace_id": hex_id(ln.trace_id), "span_id": hex_id(ln.span_id),
            "trace_state": ln.trace_state or None, "attributes": attributes(ln.attributes),
            "flags": ln.flags}


def normalize_traces(req: Any, owner: str | None, agent: str | None = None) -> dict[str, list]:
    """``ExportTraceServiceRequest`` → ``{column: values}`` for ``storage.schema.SPANS``;
    ``agent``: the agent the request named (the ``X-Bench-Agent`` header), every span's
    ``request_agent``."""
    rows: list[tuple] = []
    kinds, statuses = cv.KIND_NAMES, cv.STATUS_NAMES
    for rs in req.resource_spans:
        service, resource_json = _resource(rs.resource)
        for ss in rs.scope_spans:
            scope = ss.scope
            scope_name, scope_version = scope.name or None, scope.version or None
            scope_json = _json(attributes(scope.attributes))
            for span in ss.spans:
                attrs = attributes(span.attributes)
                events = span.events
                events = [_event(e) for e in events] if events else []
                links = span.links
                links = _json([_link(ln) for ln in links]) if links else "[]"
                trace_id = span.trace_id.hex()
                parent = span.parent_span_id
                parent = parent.hex() if parent and any(parent) else None
                name = span.name
                status = span.status
                status_message = status.message or None
                start, end = span.start_time_unix_nano, span.end_time_unix_nano
                genai = genai_fields(attrs, name, events, start, service, status_message)
                moved = _moved(attrs, genai)
                if moved:
                    attrs = {k: v for k, v in attrs.items() if k not in moved}
                rows.append((
                    trace_id, span.span_id.hex(), parent, span.trace_state or None, name,
                    kinds.get(span.kind, "unspecified"), service,
                    scope_name, scope_version, start // 1000, end // 1000, (end - start) / 1e6,
                    statuses.get(status.code, "unset"), status_message, span.flags,
                    owner, agent, resource_json, scope_json, _dumps(attrs).decode(), moved,
                    _dumps(events).decode() if events else "[]", links,
                    span.dropped_attributes_count, span.dropped_events_count,
                    span.dropped_links_count, *genai,
                ))
    return _columns(_SPAN_COLUMNS, rows)


# -- logs ------------------------------------------------------------------------------


def normalize_logs(req: Any, owner: str | None) -> dict[str, list]:
    """``ExportLogsServiceRequest`` → ``{column: values}`` for ``storage.schema.LOGS``."""
    rows: list[tuple] = []
    for rl in req.resource_logs:
        service, resource_json = _resource(rl.resource)
        for sl in rl.scope_logs:
            scope_name = sl.scope.name or None
            for rec in sl.log_records:
                attrs = attributes(rec.attributes)
                # LogRecord.event_name exists from OTLP 1.5; older clients use the attribute.
                event_name = getattr(rec, "event_name", "") or as_str(attrs.get("event.name"))
                body = value(rec.body) if rec.HasField("body") else None
                direction, messages = sources.log_messages(event_name, body, attrs)
                observed = micros(rec.observed_time_unix_nano)
                rows.append((
                    micros(rec.time_unix_nano) or observed, observed,
                    hex_id(rec.trace_id), hex_id(rec.span_id), rec.severity_number,
                    rec.severity_text or None, event_name,
                    None if body is None else _json(body), service, scope_name, rec.flags,
                    owner, resource_json, _json(attrs), rec.dropped_attributes_count,
                    direction, None if messages is None else _json(messages),
                ))
    return _columns(LOGS.columns, rows)


# -- metrics ---------------------------------------------------------------------------


def _exemplars(p: Any) -> list[dict[str, Any]]:
    return [{"time_unix_nano": e.time_unix_nano,
             "value": getattr(e, e.WhichOneof("value") or "as_double"),
             "trace_id": hex_id(e.trace_id), "span_id": hex_id(e.span_id),
             "filtered_attributes": attributes(e.filtered_attributes)} for e in p.exemplars]


def _opt(p: Any, field: str) -> float | None:
    return getattr(p, field) if p.HasField(field) else None


def _point(kind: str, p: Any) -> tuple[dict[str, Any], tuple]:
    """(data JSON object, (value, count, sum, min, max, bucket_counts, explicit_bounds))."""
    data: dict[str, Any] = {"start_time_unix_nano": p.start_time_unix_nano,
                            "time_unix_nano": p.time_unix_nano, "flags": p.flags}
    if kind == "gauge" or kind == "sum":
        v = getattr(p, p.WhichOneof("value") or "as_double")
        data["value"] = v
        data["exemplars"] = _exemplars(p)
        return data, (float(v), None, None, None, None, None, None)
    if kind == "summary":
        data.update(count=p.count, sum=p.sum, quantile_values=[
            {"quantile": q.quantile, "value": q.value} for q in p.quantile_values])
        return data, (None, p.count, p.sum, None, None, None, None)
    s, lo, hi = _opt(p, "sum"), _opt(p, "min"), _opt(p, "max")
    data.update(count=p.count, sum=s, min=lo, max=hi)
    if kind == "histogram":
        buckets, bounds = list(p.bucket_counts), list(p.explicit_bounds)
        data.update(bucket_counts=buckets, explicit_bounds=bounds, exemplars=_exemplars(p))
        return data, (None, p.count, s, lo, hi, buckets, bounds)
    data.update(
        scale=p.scale, zero_count=p.zero_count, zero_threshold=p.zero_threshold,
        positive={"offset": p.positive.offset, "bucket_counts": list(p.positive.bucket_counts)},
        negative={"offset": p.negative.offset, "bucket_counts": list(p.negative.bucket_counts)},
        exemplars=_exemplars(p),
    )
    return data, (None, p.count, s, lo, hi, None, None)


def normalize_metrics(req: Any, owner: str | None) -> dict[str, list]:
    """``ExportMetricsServiceRequest`` → ``{column: values}`` for ``storage.schema.METRICS``."""
    rows: list[tuple] = []
    for rm in req.resource_metrics:
        service, resource_json = _resource(rm.resource)
        for sm in rm.scope_metrics:
            scope_name = sm.scope.name or None
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                if kind is None:
                    continue
                agg = getattr(m, kind)
                t = getattr(agg, "aggregation_temporality", 0)
                temporality = cv.TEMPORALITY_NAMES[t] if 0 <= t < 3 else None
                monotonic = agg.is_monotonic if kind == "sum" else None
                for p in agg.data_points:
                    data, (v, count, s, lo, hi, buckets, bounds) = _point(kind, p)
                    rows.append((
                        micros(p.time_unix_nano), micros(p.start_time_unix_nano), m.name,
                        m.description or None, m.unit or None, kind, temporality, monotonic,
                        service, scope_name, owner, resource_json, _json(attributes(p.attributes)),
                        v, count, s, lo, hi, buckets, bounds, _json(data), p.flags,
                    ))
    return _columns(METRICS.columns, rows)
