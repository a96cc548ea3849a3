"""OTLP requests → the lake's columnar rows: one pure function per signal.

``normalize_traces`` / ``normalize_logs`` / ``normalize_metrics`` take a decoded
``Export*ServiceRequest`` and the ingest key's owner (or None) and return
``{column: [values...]}`` with exactly the columns of ``storage.schema.SPANS`` /
``LOGS`` / ``METRICS``, in order, one entry per span / log record / data point.

Conventions of the output
-------------------------
- Timestamps: int microseconds since the epoch (UTC); an unset (0) optional time
  is None. Span start/end are always ints. A log record without ``time_unix_nano``
  takes its ``observed_time_unix_nano``, as the OTLP logs data model recommends.
- Ids: lowercase hex; an empty or all-zero id (a root span's parent) is None.
- JSON columns: compact JSON. AnyValue → string/bool/int/double as such, bytes →
  base64, array → list, kvlist → object. Every attribute is kept as sent
  (resource, scope, span, event and link attributes). Span ``events`` hold
  ``time_unix_nano`` (ns), as the schema names it.
- Empty strings in optional text fields (trace_state, status message, scope
  name/version, severity text) are None.

GenAI fields of a span (accepted aliases: ``ALIASES`` below, the table in
../shared/REFERENCE.md). Specs: https://opentelemetry.io/docs/specs/semconv/gen-ai/
(current and deprecated names), OpenInference
https://github.com/Arize-ai/openinference/blob/main/spec/semantic_conventions.md ,
OpenLLMetry https://github.com/traceloop/openllmetry (opentelemetry-semantic-conventions-ai).

- operation: ``gen_ai.operation.name``; else ``llm.request.type`` (OpenLLMetry:
  chat, completion→text_completion, embedding→embeddings, rerank); else
  ``openinference.span.kind`` (LLM→chat, EMBEDDING→embeddings, TOOL→execute_tool,
  AGENT→invoke_agent, RETRIEVER→retrieval, RERANKER→rerank, CHAIN→invoke_agent
  only when the span is agent-ish: an agent name attribute or "agent" in its
  name); else ``traceloop.span.kind`` (workflow→invoke_workflow,
  agent→invoke_agent, tool→execute_tool; task has no GenAI operation); else the
  span name's first word when it is a GenAI operation ("chat gpt-4o").
- span_type: chat/text_completion/generate_content→llm, embeddings→embedding,
  execute_tool→tool, retrieval→retrieval, invoke_agent/create_agent/
  invoke_workflow→agent; a span naming a model but no operation→llm; else other.
- provider: lowercased; ``az.ai.*``→``azure.ai.*`` and ``xai``→``x_ai`` (the
  values ``gen_ai.system`` used before it became ``gen_ai.provider.name``).
- agent_name: alias, then ``traceloop.entity.name`` on a traceloop agent span,
  then the span name after ``invoke_agent ``/``create_agent ``; an agent span
  still unnamed, and a root span of a trace that has a GenAI span *in the same
  request*, take the resource's ``service.name``. (A root exported in a later
  batch than its children is not seen as GenAI here; readers may apply the same
  fallback in SQL.)
- tool_name: alias, then ``traceloop.entity.name`` on a traceloop tool span, then
  the span name after ``execute_tool ``.
- tokens: integers given as int, double or numeric string are coerced.
  input_tokens is stored as sent, which the GenAI semconv defines as gross
  (cache reads included); total = reported total, else input + output when both
  are known.
- cost_usd: a reported cost (``gen_ai.usage.cost``, ``llm.cost.total``) →
  cost_source "reported"; else priced from normalize/prices.json with the
  response model (then the request model) → "computed"; else both None.
- ttft_ms: ``gen_ai.server.time_to_first_token`` or
  ``gen_ai.response.time_to_first_chunk``, both in seconds (×1000); else the
  time from span start to OpenInference's "First Token Stream Event" span event.
  Other spellings seen in the wild (``llm.ttft``...) do not state a unit and are
  not read; they stay in ``attributes``.
- finish_reasons: ``gen_ai.response.finish_reasons`` (array or JSON string),
  OpenInference ``llm.finish_reason``, else OpenLLMetry's
  ``gen_ai.completion.{i}.finish_reason``, else the output messages'.
- error_type: ``error.type``, else the last ``exception`` event's
  ``exception.type``; error_message: the status message, else that event's
  ``exception.message``.
- input/output messages: see ``normalize.messages.span_messages`` for the source
  order and ``normalize.messages`` for the shape. A JSON string that already has
  the target shape is stored as sent (parsed to check, not re-serialized).

Log records: event_name is ``LogRecord.event_name``, else the ``event.name``
attribute. GenAI message events set message_direction / messages:

- ``gen_ai.{system,user,assistant,tool}.message`` → "input", ``[message]``
  (role from the event name unless the body names one);
- ``gen_ai.choice`` → "output", ``[message]`` with the choice's finish_reason;
- ``gen_ai.client.inference.operation.details`` → "details", a JSON *object*
  ``{"input": [...]|null, "output": [...]|null}`` — one record carries both sides
  of the call; ``input`` leads with ``gen_ai.system_instructions`` as a system
  message, so ``messages->'input'`` has the shape of ``spans.input_messages`` and
  ``messages->'output'`` that of ``spans.output_messages``;
- any other record: both None.

Metrics: one row per data point of gauge, sum, histogram, exponential_histogram
and summary; ``data`` is the JSON of the whole point except its attributes
(which have their own column): times in ns, exemplars, quantiles, buckets.
"""

from __future__ import annotations

from typing import Any

import orjson

from normalize import messages as msgs
from normalize import pricing
from normalize.anyvalue import as_float, as_int, as_str, attributes, hex_id, micros, value
from storage.schema import LOGS, METRICS, SPANS

_dumps = orjson.dumps

# canonical field → attribute keys, best first.
ALIASES: dict[str, tuple[str, ...]] = {
    "operation": ("gen_ai.operation.name",),
    "llm_request_type": ("llm.request.type",),
    "openinference_kind": ("openinference.span.kind",),
    "traceloop_kind": ("traceloop.span.kind",),
    "traceloop_entity": ("traceloop.entity.name",),
    "provider": ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"),
    "agent_name": ("gen_ai.agent.name", "agent.name"),
    "agent_id": ("gen_ai.agent.id",),
    "request_model": ("gen_ai.request.model", "llm.request.model_name", "llm.request.model",
                      "llm.model_name", "embedding.model_name"),
    "response_model": ("gen_ai.response.model", "llm.response.model_name", "llm.response.model"),
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                     "llm.token_count.prompt", "llm.usage.prompt_tokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                      "llm.token_count.completion", "llm.usage.completion_tokens"),
    "total_tokens": ("gen_ai.usage.total_tokens", "llm.usage.total_tokens", "llm.token_count.total"),
    "cache_read_tokens": ("gen_ai.usage.cache_read.input_tokens",
                          "gen_ai.usage.cache_read_input_tokens",
                          "llm.token_count.prompt_details.cache_read"),
    "cache_write_tokens": ("gen_ai.usage.cache_creation.input_tokens",
                           "gen_ai.usage.cache_creation_input_tokens",
                           "llm.token_count.prompt_details.cache_write"),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens",
                         "llm.token_count.completion_details.reasoning"),
    "cost": ("gen_ai.usage.cost", "llm.cost.total"),
    "finish_reasons": ("gen_ai.response.finish_reasons", "llm.finish_reason"),
    "conversation_id": ("gen_ai.conversation.id", "session.id"),
    "tool_name": ("gen_ai.tool.name", "tool.name"),
    "tool_call_id": ("gen_ai.tool.call.id", "tool_call.id"),
    "ttft_s": ("gen_ai.server.time_to_first_token", "gen_ai.response.time_to_first_chunk"),
    "error_type": ("error.type",),
}
_FIELDS = tuple(ALIASES)
_NF = len(_FIELDS)

REQUEST_TYPE_OPS = {"chat": "chat", "completion": "text_completion",
                     "embedding": "embeddings", "rerank": "rerank"}
OPENINFERENCE_OPS = {"LLM": "chat", "EMBEDDING": "embeddings", "TOOL": "execute_tool",
                      "AGENT": "invoke_agent", "RETRIEVER": "retrieval", "RERANKER": "rerank"}
TRACELOOP_OPS = {"workflow": "invoke_workflow", "agent": "invoke_agent", "tool": "execute_tool"}
SPAN_TYPE_OF_OPERATION = {
    "chat": "llm", "text_completion": "llm", "generate_content": "llm",
    "embeddings": "embedding", "execute_tool": "tool", "retrieval": "retrieval",
    "invoke_agent": "agent", "create_agent": "agent", "invoke_workflow": "agent",
}
NAME_OPS = frozenset(SPAN_TYPE_OF_OPERATION)
# OpenInference's streaming instrumentations mark the first chunk with this span event.
FIRST_TOKEN_EVENT = "First Token Stream Event"
KIND_NAMES = dict(enumerate(("unspecified", "internal", "server", "client", "producer", "consumer")))
STATUS_NAMES = dict(enumerate(("unset", "ok", "error")))
_TEMPORALITY = (None, "delta", "cumulative")

_SPAN_COLUMNS = [
    "trace_id", "span_id", "parent_span_id", "trace_state", "name", "kind", "service_name",
    "scope_name", "scope_version", "start_time", "end_time", "duration_ms", "status_code",
    "status_message", "flags", "owner", "resource_attributes", "scope_attributes", "attributes",
    "events", "links", "dropped_attributes_count", "dropped_events_count", "dropped_links_count",
    "span_type", "operation", "provider", "agent_name", "agent_id", "request_model",
    "response_model", "input_tokens", "output_tokens", "total_tokens", "cache_read_tokens",
    "cache_write_tokens", "reasoning_tokens", "cost_usd", "cost_source", "finish_reasons",
    "conversation_id", "tool_name", "tool_call_id", "ttft_ms", "error_type", "error_message",
    "input_messages", "output_messages",
]
# Rows are built as positional tuples for speed: fail at import if the schema moved.
if SPANS.columns != _SPAN_COLUMNS:  # pragma: no cover
    raise ImportError("storage.schema.SPANS changed: update normalize.rows")
_AGENT_AT = _SPAN_COLUMNS.index("agent_name") - _SPAN_COLUMNS.index("span_type")  # in genai_fields's tuple


def _json(v: Any) -> str:
    return _dumps(v).decode()


# How each field's value is coerced: (the type that needs no work, the converter).
# Tokens may arrive as int, double or numeric string; a value that does not
# convert falls through to the next alias.
COERCE: dict[str, tuple[type | None, Any]] = {
    **{f: (str, as_str) for f in _FIELDS},
    **{f: (int, as_int) for f in _FIELDS if f.endswith("_tokens")},
    "cost": (None, as_float), "ttft_s": (None, as_float), "finish_reasons": (None, None),
}
_ALIAS_SLOT = {k: (slot, rank, *COERCE[f])
               for slot, f in enumerate(_FIELDS) for rank, k in enumerate(ALIASES[f])}
_ALIAS_KEYS = frozenset(_ALIAS_SLOT)


def _columns(names: list[str], rows: list[tuple]) -> dict[str, list]:
    if not rows:
        return {c: [] for c in names}
    return {c: list(col) for c, col in zip(names, zip(*rows))}


def _resource(resource: Any) -> tuple[str | None, str]:
    attrs = attributes(resource.attributes)
    return as_str(attrs.get("service.name")), _json(attrs)


# -- traces ----------------------------------------------------------------------------


def resolve_finish_reasons(v: Any, attrs: dict[str, Any], output: list | None) -> list[str] | None:
    if isinstance(v, str) and v.startswith("["):
        try:
            v = orjson.loads(v)
        except orjson.JSONDecodeError:
            pass
    if isinstance(v, list):
        return [str(x) for x in v if x is not None] or None
    if isinstance(v, str) and v:
        return [v]
    if "gen_ai.completion.0.finish_reason" in attrs:  # OpenLLMetry, one per choice
        out, i = [], 0
        while (fr := attrs.get(f"gen_ai.completion.{i}.finish_reason")) is not None:
            out.append(str(fr))
            i += 1
        return out
    return msgs.finish_reasons(output)


def _operation(req_type: str | None, oi_kind: str | None, tl_kind: str | None, has_agent: bool,
               name: str) -> str | None:
    """The operation of a span without ``gen_ai.operation.name``."""
    if req_type is not None:
        op = REQUEST_TYPE_OPS.get(req_type)
        if op is not None:
            return op
    if oi_kind is not None:
        oi_kind = oi_kind.upper()
        if oi_kind == "CHAIN" and (has_agent or "agent" in name.lower()):
            return "invoke_agent"  # LangChain's AgentExecutor & co. are CHAIN spans
        op = OPENINFERENCE_OPS.get(oi_kind)
        if op is not None:
            return op
    if tl_kind is not None:
        op = TRACELOOP_OPS.get(tl_kind)
        if op is not None:
            return op
    first = name.partition(" ")[0]
    return first if first in NAME_OPS else None


def genai_fields(attrs: dict[str, Any], name: str, events: list, start: int, service: str | None,
           status_message: str | None) -> tuple[tuple, bool]:
    """The promoted GenAI columns of one span, and whether the span is GenAI at all."""
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
    (op, req_type, oi_kind, tl_kind, tl_entity, provider, agent, agent_id, req_model,
     resp_model, in_tok, out_tok, total, cache_r, cache_w, reasoning, cost, finish,
     conversation, tool, tool_call_id, ttft_s, error_type) = vals

    if op is None:
        op = _operation(req_type, oi_kind, tl_kind, agent is not None, name)
    first, _, rest = name.partition(" ")
    span_type = SPAN_TYPE_OF_OPERATION.get(op) if op else None
    if span_type is None:
        span_type = "llm" if op is None and (req_model or resp_model) else "other"

    if provider is not None:
        provider = provider.lower()
        if provider.startswith("az.ai."):
            provider = "azure.ai." + provider[6:]
        elif provider == "xai":
            provider = "x_ai"

    if agent is None and tl_kind == "agent":
        agent = tl_entity
    if agent is None and rest and (first == "invoke_agent" or first == "create_agent"):
        agent = rest
    if agent is None and span_type == "agent":
        agent = service
    if tool is None and tl_kind == "tool":
        tool = tl_entity
    if tool is None and rest and first == "execute_tool":
        tool = rest

    if total is None and in_tok is not None and out_tok is not None:
        total = in_tok + out_tok

    cost_source = None
    if cost is not None:
        cost_source = "reported"
    elif in_tok is not None or out_tok is not None:
        # the response model names the exact snapshot that served (and was billed)
        price = (resp_model and pricing.lookup(resp_model)) or (req_model and pricing.lookup(req_model))
        if price:
            cost = pricing.cost(price, in_tok, out_tok, cache_r, cache_w)
            cost_source = "computed"

    error_message = status_message
    if events:
        exc = None
        for e in events:
            n = e["name"]
            if n == "exception":
                exc = e["attributes"]
            elif n == FIRST_TOKEN_EVENT and ttft_s is None:
                ttft_s = (e["time_unix_nano"] - start) / 1e9
        if exc is not None:
            error_type = error_type or as_str(exc.get("exception.type"))
            error_message = error_message or as_str(exc.get("exception.message"))

    inp = out = None
    if events or not msgs.MESSAGE_KEYS.isdisjoint(attrs):
        inp, out = msgs.span_messages(attrs, events)
    # error.type, session.id & co. alone do not make a span GenAI; a convention marker does.
    is_genai = (span_type != "other" or op is not None or provider is not None
                or oi_kind is not None or tl_kind is not None or in_tok is not None)
    if finish is not None or out is not None or "gen_ai.completion.0.finish_reason" in attrs:
        finish = resolve_finish_reasons(finish, attrs, out)
    return (
        span_type, op, provider, agent, agent_id, req_model, resp_model,
        in_tok, out_tok, total, cache_r, cache_w, reasoning, cost, cost_source, finish,
        conversation, tool, tool_call_id, None if ttft_s is None else ttft_s * 1000.0,
        error_type, error_message, msgs.dump(inp), msgs.dump(out),
    ), is_genai


def _event(e: Any) -> dict[str, Any]:
    return {"name": e.name, "time_unix_nano": e.time_unix_nano,
            "attributes": attributes(e.attributes),
            "dropped_attributes_count": e.dropped_attributes_count}


def _link(ln: Any) -> dict[str, Any]:
    return {"trace_id": hex_id(ln.trace_id), "span_id": hex_id(ln.span_id),
            "trace_state": ln.trace_state or None, "attributes": attributes(ln.attributes),
            "flags": ln.flags}


def normalize_traces(req: Any, owner: str | None) -> dict[str, list]:
    """``ExportTraceServiceRequest`` → ``{column: values}`` for ``storage.schema.SPANS``."""
    rows: list[tuple] = []
    roots: list[tuple[int, str | None, str | None]] = []  # (row, trace_id, service)
    genai_traces: set[str | None] = set()
    kinds, statuses = KIND_NAMES, STATUS_NAMES
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
                genai, is_genai = genai_fields(attrs, name, events, start, service, status_message)
                if is_genai:
                    genai_traces.add(trace_id)
                if parent is None and genai[_AGENT_AT] is None:
                    roots.append((len(rows), trace_id, service))
                rows.append((
                    trace_id, span.span_id.hex(), parent, span.trace_state or None, name,
                    kinds.get(span.kind, "unspecified"), service,
                    scope_name, scope_version, start // 1000, end // 1000, (end - start) / 1e6,
                    statuses.get(status.code, "unset"), status_message, span.flags,
                    owner, resource_json, scope_json, _dumps(attrs).decode(),
                    _dumps(events).decode() if events else "[]", links,
                    span.dropped_attributes_count, span.dropped_events_count,
                    span.dropped_links_count, *genai,
                ))
    cols = _columns(_SPAN_COLUMNS, rows)
    agent_col = cols["agent_name"]
    for i, trace_id, service in roots:
        if trace_id in genai_traces:
            agent_col[i] = service
    return cols


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
                direction, messages = msgs.log_messages(event_name, body, attrs)
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
                temporality = _TEMPORALITY[t] if 0 <= t < 3 else None
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
