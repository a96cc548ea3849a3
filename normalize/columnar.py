"""OTLP trace requests → the spans table in bulk: the columnar twin of ``normalize.rows``.

``normalize_traces_arrow(payloads, owners)`` takes serialized
``ExportTraceServiceRequest`` messages, one owner each, and returns a ``pyarrow.Table``
with exactly ``storage.schema.SPANS.schema`` whose rows are, in order, those of
``normalize_traces(ExportTraceServiceRequest.FromString(p), owner)`` for each payload
(JSON columns equal once parsed, everything else equal). A payload that does not
decode raises ``ValueError`` for the whole batch, where ``FromString`` raises
``DecodeError``.

``normalize.rows`` is the reference (the oracle this path is tested against) and
``normalize.conventions`` the one statement of the rules: this module and its parts
compile the conventions' tables into expressions, and compute the same columns as the
reference for a whole batch at once:

1. ``normalize.wire`` decodes every request to Arrow (nested lists, in C without Python's
   lock; ptars where it is not compiled); pyarrow flattens resource → scope → span and
   each key-value list into long columns.
2. The core OTLP columns (ids, times, status, resource and scope) are polars
   expressions, here.
3. ``normalize.columnar_attributes``: key-value lists, their keys dictionary-encoded once,
   and the ``attributes``, ``events`` and ``links`` JSON columns.
4. ``normalize.columnar_genai``: the GenAI columns (aliases, coercion, operation / span
   type / agent / tool, cost), with ``normalize.columnar_messages`` for the messages.
   Spans it cannot vectorize take their GenAI columns from the reference's per-span
   ``genai_fields`` (here, ``_reference_rows``); the reference's final root-agent pass
   follows.
5. A message attribute that is exactly its promoted column's text leaves ``attributes``
   (``_moved``; storage.schema.MOVED_ATTRIBUTES), as the reference leaves it out.

Costs: per call, a fixed ~30 ms of polars/pyarrow call overhead (batch a few thousand
spans or more); the first call in a process also compiles the message pattern (~0.1 s).
benchmarks/normalize.py measures µs per span against the reference.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otelbench.normalize import anyvalue, wire
from otelbench.normalize import conventions as cv
from otelbench.normalize import rows as ref
from otelbench.normalize.columnar_attributes import K_STR, KV, Events, links_json, parents, py_attrs
from otelbench.normalize.columnar_genai import GENAI_COLUMNS, genai_columns
from otelbench.storage.schema import MOVED_ATTRIBUTES, SPANS

# -- the entry point ---------------------------------------------------------------------


def normalize_traces_arrow(payloads: list[bytes], owners: list[str | None],
                           agents: list[str | None] | None = None) -> pa.Table:
    """Serialized ``ExportTraceServiceRequest`` payloads (one owner and one request agent
    each: the ``X-Bench-Agent`` header) → the spans table."""
    return normalize_decoded(wire.decode(payloads), owners, agents)


def normalize_decoded(decoded: pa.RecordBatch, owners: list[str | None],
                      agents: list[str | None] | None = None) -> pa.Table:
    """The same, from the payloads as ``normalize.wire.decode`` gives them (a row each)."""
    agents = [None] * decoded.num_rows if agents is None else agents
    if not decoded.num_rows == len(owners) == len(agents):
        raise ValueError(f"{decoded.num_rows} payloads but {len(owners)} owners and {len(agents)} agents")
    if not decoded.num_rows:
        return SPANS.schema.empty_table()
    rs_lists = decoded.column("resource_spans")
    rs, rs_req = pc.list_flatten(rs_lists), parents(rs_lists)
    ss_lists = rs.field("scope_spans")
    ss, ss_rs = pc.list_flatten(ss_lists), parents(ss_lists)
    sp_lists = ss.field("spans")
    spans, sp_ss = pc.list_flatten(sp_lists), parents(sp_lists)
    n = len(spans)
    if n == 0:
        return SPANS.schema.empty_table()
    sp_rs = ss_rs[sp_ss]
    sp = dict(zip([f.name for f in spans.type], spans.flatten()))

    core = _core(rs, ss, sp, sp_rs, sp_ss, rs_req[sp_rs], owners, agents)
    attrs = KV(sp["attributes"], n)
    events = Events(sp["events"], n)
    genai, reference = genai_columns(core, attrs, events)
    out = core.with_columns(**genai)
    if len(reference):
        out = _reference_rows(out, reference, sp)
    # the JSON columns are built as Arrow arrays; the others convert in one go
    drop, moved = _moved(attrs, out)
    built = {"attributes": (attrs.without(drop) if drop is not None else attrs).objects(), "attributes_moved": moved,
             "events": events.json(), "links": links_json(sp["links"], n)}
    table = out.select([c for c in SPANS.columns if c not in built]).to_arrow()
    columns = [built[c] if c in built else table.column(c) for c in SPANS.columns]
    return pa.Table.from_arrays(columns, names=SPANS.columns).cast(SPANS.schema)


def _moved(attrs: KV, out: pl.DataFrame) -> tuple[np.ndarray | None, pa.Array]:
    """The attributes stored once (storage.schema.MOVED_ATTRIBUTES): a string equal to its
    promoted column's text. Returns the key-value rows to leave out of ``attributes``
    (None: none) and the ``attributes_moved`` column."""
    n = attrs.n
    which = attrs.lut({key: w for w, key in enumerate(MOVED_ATTRIBUTES, 1)}, 0, np.int8)
    flags = []
    drop = np.zeros(attrs.m, bool)
    for w, column in enumerate(MOVED_ATTRIBUTES.values(), 1):
        last = attrs.last_row(which, w)  # the value that counts: the last, as in a dict
        spans = np.flatnonzero(last >= 0)
        spans = spans[attrs.kind[last[spans]] == K_STR]
        same = (attrs.df["s"].gather(last[spans]) == out[column].gather(spans)).fill_null(False).to_numpy()
        moved = np.zeros(n, bool)
        moved[spans[same]] = True
        drop |= (which == w) & moved[attrs.own]  # every row of the key: an earlier repeat too
        flags.append(moved)
    counts = np.sum(flags, axis=0, dtype=np.int32)
    if not counts.any():
        return None, pa.nulls(n, pa.list_(pa.string()))
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    values = np.empty(offsets[-1], object)
    at = offsets[:-1].copy()
    for key, moved in zip(MOVED_ATTRIBUTES, flags):  # in the table's order, as the reference lists them
        values[at[moved]] = key
        at += moved
    return drop, pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, pa.string()),
                                          mask=pa.array(counts == 0))


def warm_up() -> None:
    """Normalize one small agent trace, so that the first real batch does not pay for
    compiling the message pattern and polars' first calls (~0.15 s of CPU)."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    def kv(key: str, value: str | int) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=value))

    messages = '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]'
    tid, root = b"\x01" * 16, b"\x01" * 8
    spans = [
        Span(trace_id=tid, span_id=root, name="invoke_agent", attributes=[kv("gen_ai.operation.name", "invoke_agent")]),
        Span(trace_id=tid, span_id=b"\x02" * 8, parent_span_id=root, name="chat", attributes=[
            kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "m"), kv("gen_ai.usage.input_tokens", 1),
            kv("gen_ai.input.messages", messages), kv("gen_ai.output.messages", messages)],
            events=[Span.Event(name="gen_ai.choice", attributes=[kv("index", 0)])]),
        Span(trace_id=tid, span_id=b"\x03" * 8, parent_span_id=root, name="execute_tool",
             attributes=[kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", "t")]),
    ]
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.extend(spans)
    normalize_traces_arrow([request.SerializeToString()], [None])


def _core(rs: pa.StructArray, ss: pa.StructArray, sp: dict[str, pa.Array], sp_rs: np.ndarray, sp_ss: np.ndarray,
          sp_req: np.ndarray, owners: list[str | None], agents: list[str | None]) -> pl.DataFrame:
    """The OTLP columns of every span, and ``req`` (its payload) for the root pass."""
    # resources and scopes are few: their attributes go through the reference's Python
    res = [py_attrs(a) for a in pc.struct_field(rs.field("resource"), "attributes").to_pylist()]
    scope = ss.field("scope")
    status = dict(zip([f.name for f in sp["status"].type], sp["status"].flatten()))
    raw = pl.from_arrow(pa.table({
        "trace": sp["trace_id"], "span": sp["span_id"], "parent": sp["parent_span_id"], "ts": sp["trace_state"],
        "name": sp["name"], "kind": sp["kind"], "start": sp["start_time_unix_nano"], "end": sp["end_time_unix_nano"],
        "code": status["code"], "msg": status["message"], "flags": sp["flags"],
        **{f"dropped_{x}_count": sp[f"dropped_{x}_count"] for x in ("attributes", "events", "links")},
        "rs": sp_rs, "ss": sp_ss, "req": sp_req,
    }))
    per_block = {  # column → (one value per resource / scope / payload, which)
        "service_name": ([anyvalue.as_str(a.get("service.name")) for a in res], "rs"),
        "resource_attributes": ([orjson.dumps(a).decode() for a in res], "rs"),
        "scope_attributes": ([orjson.dumps(py_attrs(a)).decode()
                              for a in pc.struct_field(scope, "attributes").to_pylist()], "ss"),
        "owner": (owners, "req"),
        "request_agent": (agents, "req"),
    }
    core = raw.with_columns(
        sn=pl.lit(pl.Series(pc.struct_field(scope, "name"))).gather(pl.col("ss")),
        sv=pl.lit(pl.Series(pc.struct_field(scope, "version"))).gather(pl.col("ss")),
        **{name: pl.lit(pl.Series(values, dtype=pl.String)).gather(pl.col(by))
           for name, (values, by) in per_block.items()},
    ).with_columns(_core_exprs())
    # numpy, not polars: polars divides a column by a scalar as a multiplication by the
    # reciprocal, which is not always the double Python's int / float gives
    return core.with_columns(duration_ms=pl.Series(core["_ns"].to_numpy() / 1e6))


@functools.cache
def _core_exprs() -> list[pl.Expr]:
    c = pl.col
    parent_hex = c("parent").bin.encode("hex")
    return [
        c("trace").bin.encode("hex").alias("trace_id"),
        c("span").bin.encode("hex").alias("span_id"),
        pl.when(parent_hex.str.strip_chars("0") != "").then(parent_hex).alias("parent_span_id"),  # empty, zero: root
        pl.when(c("ts") != "").then(c("ts")).alias("trace_state"),
        c("kind").replace_strict(cv.KIND_NAMES, default="unspecified", return_dtype=pl.String),
        pl.when(c("sn") != "").then(c("sn")).alias("scope_name"),
        pl.when(c("sv") != "").then(c("sv")).alias("scope_version"),
        (c("start") // 1000).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).alias("start_time"),
        (c("end") // 1000).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).alias("end_time"),
        (c("end").cast(pl.Int128) - c("start").cast(pl.Int128)).cast(pl.Float64).alias("_ns"),
        c("code").fill_null(0).replace_strict(cv.STATUS_NAMES, default="unset", return_dtype=pl.String)
        .alias("status_code"),
        pl.when(c("msg") != "").then(c("msg")).alias("status_message"),
        *(c(f"dropped_{x}_count").cast(pl.Int64) for x in ("attributes", "events", "links")),
        c("flags").cast(pl.Int64),
    ]


def _reference_rows(out: pl.DataFrame, spans: np.ndarray, sp: dict[str, pa.Array]) -> pl.DataFrame:
    """The GenAI columns of the given spans, from the reference's per-span ``genai_fields``."""
    idx = pa.array(spans)
    attrs = [py_attrs(a) for a in sp["attributes"].take(idx).to_pylist()]
    events = [[{"name": e["name"], "time_unix_nano": e["time_unix_nano"], "attributes": py_attrs(e["attributes"]),
                "dropped_attributes_count": e["dropped_attributes_count"]} for e in es]
              for es in sp["events"].take(idx).to_pylist()]
    sub = out[spans]
    rows = []
    for a, es, name, start, service, message in zip(attrs, events, sub["name"], sub["start"], sub["service_name"],
                                                    sub["status_message"]):
        rows.append(ref.genai_fields(a, name, es, start, service, message))
    patched = {}
    mask = np.zeros(len(out), bool)
    mask[spans] = True
    for name, values in zip(GENAI_COLUMNS, zip(*rows)):
        col = out[name]
        if col.dtype == pl.List(pl.String):  # polars cannot scatter into a list column
            full: list[Any] = [None] * len(out)
            for i, v in zip(spans.tolist(), values):
                full[i] = v
            patched[name] = pl.select(pl.when(pl.lit(pl.Series(mask))).then(pl.Series(full, dtype=col.dtype))
                                      .otherwise(col)).to_series()
        else:
            patched[name] = col.scatter(spans, pl.Series(values, dtype=col.dtype))
    return out.with_columns(**patched)
