"""OTLP trace requests → the spans table in bulk: the columnar twin of ``collector.normalize``.

``normalize_traces_arrow(payloads, owners)`` takes serialized
``ExportTraceServiceRequest`` messages, one owner each, and returns a ``pyarrow.Table``
with exactly ``storage.schema.SPANS.schema`` whose rows are, in order, those of
``normalize_traces(ExportTraceServiceRequest.FromString(p), owner)`` for each payload
(JSON columns equal once parsed, everything else equal). A payload that does not
decode raises ``ValueError`` for the whole batch, where ``FromString`` raises
``DecodeError``.

``collector.normalize`` stays the reference and the one statement of the rules: this
module imports its alias table, maps and per-span functions, and computes the same
columns for a whole batch at once:

1. ptars decodes every request to Arrow (nested lists); pyarrow flattens resource →
   scope → span and each key-value list into long columns.
2. Keys are dictionary-encoded once: alias, message-key and repeated-key questions
   are asked of the few distinct keys, not of every attribute.
3. Alias resolution, coercion, the operation / span-type / agent / tool rules, cost
   (prices looked up once per distinct model) and the core columns are numpy and
   polars expressions. Python runs only for values of an unusual type (a numeric
   string token count, a double named as a model...), through ``collector.anyvalue``'s
   own converters.
4. The ``attributes`` JSON: spans sharing a layout (same keys, same value types, in
   order) are written by polars' JSON writer as one struct column per layout, in one
   pass over the text; rare layouts are assembled from per-value JSON fragments.
   Nested array / kvlist values (serialized ``AnyValue`` bytes from ptars) are decoded
   with ``collector.anyvalue``.

Messages come in three tiers. A ``gen_ai.input.messages`` / ``gen_ai.output.messages``
string that a strict pattern proves to be JSON in the canonical GenAI shape is kept as
sent, as the reference keeps it (``gen_ai.system_instructions`` made of text parts is
prepended as a system message): vectorized, the common case. Other values of those
three keys (structured AnyValues, old shapes, JSON the pattern cannot vouch for) go
through ``collector.messages.span_messages`` per span. Spans with any other message
source (OpenLLMetry / OpenInference indexed attributes, message span events) take all
their GenAI columns from the reference's per-span ``genai_fields``.

Costs: per call, a fixed ~30 ms of polars/pyarrow call overhead (batch a few thousand
spans or more); the first call in a process also compiles the message pattern (~0.1 s).
benchmarks/normalize.py measures µs per span against the reference.
"""

from __future__ import annotations

import base64
import functools
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from collector import anyvalue, pricing
from collector import messages as msgs
from collector import normalize as ref
from storage.schema import SPANS

# -- the reference's tables, indexed for lookups by number ------------------------------

_FIELDS = tuple(ref.ALIASES)
_SLOT = {f: i for i, f in enumerate(_FIELDS)}
# alias key → field slot * 8 + rank: ordering by it puts a field's aliases best first
_ALIAS_CODE = {k: s * 8 + r for s, f in enumerate(_FIELDS) for r, k in enumerate(ref.ALIASES[f])}
assert max(len(keys) for keys in ref.ALIASES.values()) <= 8
# how a field coerces its value (normalize.COERCE): as_str, as_int, as_float or not at all
_STR, _INT, _FLOAT, _RAW = 0, 1, 2, 3
_CONVERTER = {_STR: anyvalue.as_str, _INT: anyvalue.as_int, _FLOAT: anyvalue.as_float}
_SLOT_KIND = np.array([{None: _RAW, **{f: k for k, f in _CONVERTER.items()}}[ref.COERCE[f][1]] for f in _FIELDS],
                      np.int8)

# value kinds: which member of the AnyValue oneof is set
_K_STR, _K_BOOL, _K_INT, _K_DOUBLE, _K_BYTES, _K_STRINDEX, _K_NONE, _K_COMPLEX = range(8)
_KIND_FIELDS = ((_K_STRINDEX, "string_value_strindex"), (_K_BYTES, "bytes_value"), (_K_DOUBLE, "double_value"),
                (_K_INT, "int_value"), (_K_BOOL, "bool_value"), (_K_STR, "string_value"))
_KIND_COLUMN = {_K_STR: "s", _K_BOOL: "b", _K_INT: "i", _K_DOUBLE: "d", _K_BYTES: "by", _K_STRINDEX: "si"}

_MSG_FAST = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
_MSG_OTHER = msgs.MESSAGE_KEYS - set(_MSG_FAST)
# span events that carry messages (collector.messages._from_events)
_MSG_EVENTS = ["gen_ai.content.prompt", "gen_ai.content.completion", msgs.CHOICE_EVENT, *msgs.ROLE_EVENTS]
_EXCEPTION_KEYS = {"exception.type": 0, "exception.message": 1}
_GENAI_COLUMNS = SPANS.columns[SPANS.columns.index("span_type"):]

# Key-value lists sharing a layout are written by one polars JSON-writer call; rarer
# layouts are assembled from fragments.
_SHAPE_MIN = 16
_MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)

# -- JSON text ---------------------------------------------------------------------------

_ESC_FROM = ["\\", '"'] + [chr(c) for c in range(32)]
_ESC_TO = ["\\\\", '\\"'] + [orjson.dumps(chr(c)).decode()[1:-1] for c in range(32)]


def _json_str(e: pl.Expr) -> pl.Expr:
    """A (short) string → its JSON literal."""
    return pl.concat_str([pl.lit('"'), e.str.replace_many(_ESC_FROM, _ESC_TO), pl.lit('"')])


def _json_long_str(e: pl.Expr) -> pl.Expr:
    """A long string → its JSON literal: polars' JSON writer escapes in one pass, and
    ``{"":"..."}`` is cut down to the literal (string views, no copy)."""
    return pl.struct(e.alias("")).struct.json_encode().str.slice(4).str.head(-1)


def _json_float(e: pl.Expr) -> pl.Expr:
    """A float as orjson writes it: shortest round-trip text, NaN and infinities → null."""
    return pl.when(e.is_finite()).then(e.cast(pl.String)).otherwise(pl.lit("null"))


# A conservative grammar of "JSON that orjson parses into canonical GenAI messages"
# (collector.messages.message returns every message unchanged): what it accepts, the
# reference stores verbatim; anything else takes the Python tier. Numbers are bounded
# so that none overflows a double (orjson rejects those), \u escapes exclude surrogates
# (orjson rejects lone ones), and the only message keys besides role and parts are
# spelled out, so that no (escaped) second "role" can hide among them. Values nest one
# level: deeper nesting makes the regex DFA thrash (100x slower), and is rare.
_WS = r"[ \t\n\r]*"
_SEP = rf"{_WS},{_WS}"
_CH = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u(?:[0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))'
_STRING = rf'"{_CH}*"'
_SCALAR = rf"(?:{_STRING}|-?(?:0|[1-9][0-9]{{0,19}})(?:\.[0-9]{{1,30}})?(?:[eE][+-]?[0-9]{{1,2}})?|true|false|null)"
_VALUE = (rf"(?:{_SCALAR}|\[{_WS}(?:{_SCALAR}(?:{_SEP}{_SCALAR})*{_WS})?\]"
          rf"|\{{{_WS}(?:{_STRING}{_WS}:{_WS}{_SCALAR}(?:{_SEP}{_STRING}{_WS}:{_WS}{_SCALAR})*{_WS})?\}})")
_MEMBER = rf"{_STRING}{_WS}:{_WS}{_VALUE}"
_PART = rf'\{{{_WS}(?:{_MEMBER}{_SEP})*"type"{_WS}:{_WS}{_VALUE}(?:{_SEP}{_MEMBER})*{_WS}\}}'
_EXTRA = rf'"(?:finish_reason|name)"{_WS}:{_WS}{_VALUE}'
_ROLE = rf'"role"{_WS}:{_WS}"{_CH}+"'
_PARTS = rf'"parts"{_WS}:{_WS}\[{_WS}(?:{_PART}(?:{_SEP}{_PART})*{_WS})?\]'
_MESSAGE = (rf"\{{{_WS}(?:{_EXTRA}{_SEP})*(?:{_ROLE}(?:{_SEP}{_EXTRA})*{_SEP}{_PARTS}"
            rf"|{_PARTS}(?:{_SEP}{_EXTRA})*{_SEP}{_ROLE})(?:{_SEP}{_EXTRA})*{_WS}\}}")
MESSAGES_RX = rf"^\[{_WS}{_MESSAGE}(?:{_SEP}{_MESSAGE})*{_WS}\]{_WS}$"
# system instructions made of parts that collector.messages.part keeps as they are
_TEXT_PART = (rf'\{{{_WS}(?:"type"{_WS}:{_WS}"text"{_SEP}"content"{_WS}:{_WS}{_VALUE}'
              rf'|"content"{_WS}:{_WS}{_VALUE}{_SEP}"type"{_WS}:{_WS}"text"){_WS}\}}')
SYSTEM_RX = rf"^\[{_WS}{_TEXT_PART}(?:{_SEP}{_TEXT_PART})*{_WS}\]{_WS}$"


# -- the entry point ---------------------------------------------------------------------


def normalize_traces_arrow(payloads: list[bytes], owners: list[str | None]) -> pa.Table:
    """Serialized ``ExportTraceServiceRequest`` payloads (one owner each) → the spans table."""
    if len(payloads) != len(owners):
        raise ValueError(f"{len(payloads)} payloads but {len(owners)} owners")
    if not payloads:
        return SPANS.schema.empty_table()
    rs_lists = _handler().list_to_record_batch(payloads).column("resource_spans")
    rs, rs_req = pc.list_flatten(rs_lists), _parents(rs_lists)
    ss_lists = rs.field("scope_spans")
    ss, ss_rs = pc.list_flatten(ss_lists), _parents(ss_lists)
    sp_lists = ss.field("spans")
    spans, sp_ss = pc.list_flatten(sp_lists), _parents(sp_lists)
    n = len(spans)
    if n == 0:
        return SPANS.schema.empty_table()
    sp_rs = ss_rs[sp_ss]
    sp = dict(zip([f.name for f in spans.type], spans.flatten()))

    core = _core(rs, ss, sp, sp_rs, sp_ss, rs_req[sp_rs], owners)
    attrs = _KV(sp["attributes"], n)
    events = _Events(sp["events"], n)
    genai, reference = _genai_columns(core, attrs, events)
    out = core.with_columns(**genai)
    if len(reference):
        out = _reference_rows(out, reference, sp)
    out = _root_agents(out)
    # the JSON columns are built as Arrow arrays; the others convert in one go
    built = {"attributes": attrs.objects(), "events": events.json(), "links": _links_json(sp["links"], n)}
    table = out.select([c for c in SPANS.columns if c not in built]).to_arrow()
    columns = [built[c] if c in built else table.column(c) for c in SPANS.columns]
    return pa.Table.from_arrays(columns, names=SPANS.columns).cast(SPANS.schema)


@functools.cache
def _ptars() -> Any:
    from ptars import HandlerPool

    pool = HandlerPool([ExportTraceServiceRequest.DESCRIPTOR.file])
    return pool, pool.get_for_message(ExportTraceServiceRequest.DESCRIPTOR)


def _handler() -> Any:
    """ptars' ``ExportTraceServiceRequest`` → Arrow converter (its pool kept alive)."""
    return _ptars()[1]


def _parents(lists: pa.Array) -> np.ndarray:
    return pc.list_parent_indices(lists).to_numpy().astype(np.int64, copy=False)


def _core(rs: pa.StructArray, ss: pa.StructArray, sp: dict[str, pa.Array], sp_rs: np.ndarray, sp_ss: np.ndarray,
          sp_req: np.ndarray, owners: list[str | None]) -> pl.DataFrame:
    """The OTLP columns of every span, and ``req`` (its payload) for the root pass."""
    # resources and scopes are few: their attributes go through the reference's Python
    res = [_py_attrs(a) for a in pc.struct_field(rs.field("resource"), "attributes").to_pylist()]
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
        "scope_attributes": ([orjson.dumps(_py_attrs(a)).decode()
                              for a in pc.struct_field(scope, "attributes").to_pylist()], "ss"),
        "owner": (owners, "req"),
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
        c("kind").replace_strict(ref.KIND_NAMES, default="unspecified", return_dtype=pl.String),
        pl.when(c("sn") != "").then(c("sn")).alias("scope_name"),
        pl.when(c("sv") != "").then(c("sv")).alias("scope_version"),
        (c("start") // 1000).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).alias("start_time"),
        (c("end") // 1000).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).alias("end_time"),
        (c("end").cast(pl.Int128) - c("start").cast(pl.Int128)).cast(pl.Float64).alias("_ns"),
        c("code").fill_null(0).replace_strict(ref.STATUS_NAMES, default="unset", return_dtype=pl.String)
        .alias("status_code"),
        pl.when(c("msg") != "").then(c("msg")).alias("status_message"),
        *(c(f"dropped_{x}_count").cast(pl.Int64) for x in ("attributes", "events", "links")),
        c("flags").cast(pl.Int64),
    ]


def _div(ints: pl.Series, by: float) -> pl.Series:
    """``int / float`` as Python computes it. Not polars: it divides a column by a scalar
    as a multiplication by the reciprocal, which is not always the same double."""
    return pl.Series(ints.cast(pl.Float64).to_numpy() / by)


def _take(values: pl.Series, idx: np.ndarray) -> pl.Series:
    """values[idx], null where idx < 0."""
    return values.gather(_index(idx))


def _index(idx: np.ndarray) -> pl.Series:
    """Gather indices, null where negative."""
    return pl.Series(pa.array(idx, pa.int64(), mask=idx < 0))


def _spread(n: int, own: np.ndarray, values: pl.Series) -> pl.Series:
    """One value per distinct ``own`` → a column of n rows, null elsewhere."""
    idx = np.full(n, -1, np.int64)
    idx[own] = np.arange(len(own))
    return _take(values, idx)


def _first_of_runs(own: np.ndarray) -> np.ndarray:
    keep = np.ones(len(own), bool)
    keep[1:] = own[1:] != own[:-1]
    return keep


def _last_of_runs(own: np.ndarray) -> np.ndarray:
    keep = np.ones(len(own), bool)
    keep[:-1] = own[1:] != own[:-1]
    return keep


# -- Python values, as collector.anyvalue gives them (for the rare rows) ------------------


def _py_value(v: dict[str, Any] | None) -> Any:
    """One ``AnyValue`` as ptars' ``to_pylist`` gives it → collector.anyvalue's value."""
    if v is None:
        return None
    for f in ("string_value", "bool_value", "int_value", "double_value"):
        if v[f] is not None:
            return v[f]
    if v["array_value"] is not None:
        return [anyvalue.value(AnyValue.FromString(b)) for b in v["array_value"]["values"]]
    if v["kvlist_value"] is not None:
        return anyvalue.attributes(KeyValue.FromString(b) for b in v["kvlist_value"]["values"])
    if v["bytes_value"] is not None:
        return base64.b64encode(v["bytes_value"]).decode()
    return v.get("string_value_strindex")


def _py_attrs(kvs: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A ``KeyValue`` list → collector.anyvalue.attributes' dict (the last repeated key wins)."""
    out: dict[str, Any] = {}
    for kv in kvs or ():
        out[kv["key"]] = _py_value(kv["value"])
    return out


# -- key-value lists ---------------------------------------------------------------------


class _KV:
    """A ``list<KeyValue>`` column, flattened: one row per key-value, ``own`` its list."""

    def __init__(self, lists: pa.Array, n: int) -> None:
        self.n = n
        kv = pc.list_flatten(lists)
        self.own = _parents(lists)
        self.m = m = len(kv)
        self.counts = np.bincount(self.own, minlength=n)
        self.starts = np.zeros(n + 1, np.int64)
        np.cumsum(self.counts, out=self.starts[1:])
        keys = pc.dictionary_encode(kv.field("key"))
        self.key_idx = keys.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        self.keys: list[str] = keys.dictionary.to_pylist()
        self.value = kv.field("value")
        cols = dict(zip([f.name for f in self.value.type], self.value.flatten()))
        self.kind = np.full(m, _K_NONE, np.int8)
        for code, name in _KIND_FIELDS:
            self.kind[cols[name].is_valid().to_numpy(zero_copy_only=False)] = code
        nested = (cols["array_value"].is_valid().to_numpy(zero_copy_only=False)
                  | cols["kvlist_value"].is_valid().to_numpy(zero_copy_only=False))
        self.kind[nested] = _K_COMPLEX
        self.complex = np.flatnonzero(nested)
        self.df = pl.DataFrame({
            "s": pl.Series(cols["string_value"]), "b": pl.Series(cols["bool_value"]),
            "i": pl.Series(cols["int_value"]), "d": pl.Series(cols["double_value"]),
            "by": pl.Series(cols["bytes_value"]), "si": pl.Series(cols["string_value_strindex"]).cast(pl.Int64),
        })
        self._nested: dict[int, Any] | None = None

    def lut(self, table: dict[str, Any], default: Any, dtype: Any) -> np.ndarray:
        """Each row's key looked up in ``table`` (once per distinct key)."""
        per_key = np.array([table.get(k, default) for k in self.keys] or [default], dtype=dtype)
        return per_key[self.key_idx] if self.m else np.zeros(0, dtype)

    def last_row(self, which: np.ndarray, w: int) -> np.ndarray:
        """Per list, its last row whose ``which`` is ``w`` (-1: none)."""
        rows = np.flatnonzero(which == w)
        keep = _last_of_runs(self.own[rows])
        out = np.full(self.n, -1, np.int64)
        out[self.own[rows[keep]]] = rows[keep]
        return out

    def nested(self) -> dict[int, Any]:
        """Python values of the array / kvlist rows, decoded with collector.anyvalue."""
        if self._nested is None:
            vals = self.value.take(pa.array(self.complex)).to_pylist() if len(self.complex) else []
            self._nested = {int(r): _py_value(v) for r, v in zip(self.complex, vals)}
        return self._nested

    def py_list(self, rows: np.ndarray) -> list[Any]:
        """The Python values (collector.anyvalue's) of some rows."""
        rows = np.asarray(rows, np.int64)
        out: list[Any] = [None] * len(rows)
        if self.m == 0:
            return out
        kinds = self.kind[rows]
        for kind, col in _KIND_COLUMN.items():
            at = np.flatnonzero(kinds == kind)
            if len(at):
                vals = self.df[col].gather(rows[at]).to_list()
                if kind == _K_BYTES:
                    vals = [base64.b64encode(v).decode() for v in vals]
                for j, v in zip(at.tolist(), vals):
                    out[j] = v
        nested = self.nested()
        for j in np.flatnonzero(kinds == _K_COMPLEX).tolist():
            out[j] = nested[int(rows[j])]
        return out

    def repeated_keys(self) -> np.ndarray:
        """Per list: does a key occur in it more than once?"""
        out = np.zeros(self.n, bool)
        k = len(self.keys)
        if self.m == 0:
            return out
        if self.n * k <= 2_000_000:  # a count per (list, key) fits a small array
            counts = np.bincount(self.own * k + self.key_idx, minlength=self.n * k)
            out[np.flatnonzero(counts > 1) // k] = True
        else:
            dup = pl.DataFrame({"o": self.own, "k": self.key_idx}).select(
                pl.struct("o", "k").is_duplicated()).to_series().to_numpy()
            out[self.own[dup]] = True
        return out

    def objects(self) -> pa.Array:
        """One JSON object per list: every key with its (last) value, as the reference's
        ``orjson.dumps(attributes(...))`` (compact; key order aside)."""
        n, m, counts, starts = self.n, self.m, self.counts, self.starts
        if m == 0:
            return pa.array(["{}"] * n, pa.string())
        # group the lists by layout: a hash of (key, kind, position) over their rows
        token = (self.key_idx * 8 + self.kind).astype(np.uint64)
        pos = (np.arange(m) - starts[self.own]).astype(np.uint64)
        mixed = (token + np.uint64(1)) * _MIX1 + (pos + np.uint64(1)) * _MIX2
        mixed ^= mixed >> np.uint64(29)
        nonempty = counts > 0
        layout = np.zeros(n, np.uint64)
        layout[nonempty] = np.add.reduceat(mixed, starts[:-1][nonempty])
        nested = np.zeros(n, bool)
        nested[self.own[self.complex]] = True
        eligible = np.flatnonzero(nonempty & ~nested & ~self.repeated_keys())
        _, inverse, sizes = np.unique(layout[eligible], return_inverse=True, return_counts=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        parts: list[pl.Series] = []
        where = np.full(n, -1, np.int64)  # each list's row in the parts, concatenated
        done = 0
        generic = nonempty.copy()
        for g in np.flatnonzero(sizes >= _SHAPE_MIN):
            members = eligible[order[bounds[g]:bounds[g + 1]]]
            k = counts[members[0]]
            rows = starts[members][:, None] + np.arange(k)
            if not ((counts[members] == k).all() and (token[rows] == token[rows[0]]).all()):
                continue  # a hash collision: the generic path will do
            fields = [self._field(int(self.kind[r]), rows[:, c]).alias(self.keys[self.key_idx[r]])
                      for c, r in enumerate(rows[0])]
            # eager: a lazy query's planning costs more than the work on batches this size
            parts.append(self.df.select(pl.struct(fields).struct.json_encode()).to_series())
            where[members] = np.arange(done, done + len(members))
            done += len(members)
            generic[members] = False
        lists = np.flatnonzero(generic)
        if len(lists):
            parts.append(self._fragments(lists))
            where[lists] = np.arange(done, done + len(lists))
            done += len(lists)
        parts.append(pl.Series(["{}"], dtype=pl.String))
        where[where < 0] = done
        return pl.concat(parts, rechunk=False).rechunk().gather(where).to_arrow().cast(pa.string())

    def _field(self, kind: int, rows: np.ndarray) -> pl.Expr:
        """The values of ``rows`` (all of one kind) for polars' JSON writer."""
        if kind == _K_NONE:
            return pl.repeat(None, len(rows), dtype=pl.Null)
        values = pl.col(_KIND_COLUMN[kind]).gather(pl.lit(pl.Series(rows)))
        return values.bin.encode("base64") if kind == _K_BYTES else values

    def _fragments(self, lists: np.ndarray) -> pl.Series:
        """JSON objects of some lists (sorted), from per-value JSON fragments."""
        rows = np.flatnonzero(np.isin(self.own, lists))
        own, key_idx = self.own[rows], self.key_idx[rows]
        # a repeated key keeps its last value, as in a dict: ordered by (list, key) and
        # then latest first, the first row of each (list, key) is the one to keep
        sk = own * max(len(self.keys), 1) + key_idx
        order = np.lexsort((-rows, sk))
        keep = np.ones(len(rows), bool)
        keep[order[1:]] = sk[order][1:] != sk[order][:-1]
        rows, own, key_idx = rows[keep], own[keep], key_idx[keep]
        key_json = pl.Series([orjson.dumps(k).decode() + ":" for k in self.keys], dtype=pl.String)
        objects = _assemble(key_json.gather(key_idx), self._value_json(rows), np.searchsorted(lists, own),
                            len(lists), "{", "}")
        return pl.Series(objects)

    def _value_json(self, rows: np.ndarray) -> pl.Series:
        """The values of ``rows`` as JSON text, as orjson writes collector.anyvalue's values."""
        s, b, i, d, by, si = (pl.col(c) for c in ("s", "b", "i", "d", "by", "si"))
        out = self.df[rows].select(
            pl.when(s.is_not_null()).then(_json_long_str(s))
            .when(b.is_not_null()).then(pl.when(b).then(pl.lit("true")).otherwise(pl.lit("false")))
            .when(i.is_not_null()).then(i.cast(pl.String))
            .when(d.is_not_null()).then(_json_float(d))
            .when(by.is_not_null()).then(pl.concat_str([pl.lit('"'), by.bin.encode("base64"), pl.lit('"')]))
            .when(si.is_not_null()).then(si.cast(pl.String))
            .otherwise(pl.lit("null"))
        ).to_series()
        at = np.flatnonzero(self.kind[rows] == _K_COMPLEX)
        if len(at):
            nested = self.nested()
            out = out.scatter(at, pl.Series([orjson.dumps(nested[int(r)]).decode() for r in rows[at]],
                                            dtype=pl.String))
        return out


def _assemble(keys: pl.Series, values: pl.Series, own: np.ndarray, n: int, open_: str, close: str) -> pa.Array:
    """Rows ordered by owner → one JSON text per owner: ``open_``, each row's key (may be
    empty) and value, comma-separated, then ``close``. The pieces are gathered as polars
    string views (no text copied) into one list per owner, joined once by Arrow."""
    m = len(own)
    counts = np.bincount(own, minlength=n)
    prefix = (pl.select(pl.when(pl.lit(pl.Series(_first_of_runs(own)))).then(pl.lit(open_)).otherwise(pl.lit(","))
                        + pl.lit(keys)).to_series() if m else pl.Series([], dtype=pl.String))
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    list_offsets = 2 * starts + np.arange(n + 1)  # per owner: a prefix and a value per row, then the close
    idx = np.empty(2 * m + n, np.int64)
    pos = 2 * np.arange(m) + own
    idx[pos] = np.arange(m)
    idx[pos + 1] = m + np.arange(m)
    idx[list_offsets[1:] - 1] = np.where(counts > 0, 2 * m, 2 * m + 1)
    pieces = pl.concat([prefix, values, pl.Series([close, open_ + close], dtype=pl.String)]).rechunk().gather(idx)
    lists = pa.LargeListArray.from_arrays(pa.array(list_offsets), pieces.to_arrow())
    return pc.binary_join(lists, pa.scalar("", pa.large_string())).cast(pa.string())


# -- events and links --------------------------------------------------------------------


class _Events:
    """The span events, flattened."""

    def __init__(self, lists: pa.Array, n: int) -> None:
        self.n = n
        ev = pc.list_flatten(lists)
        self.own = _parents(lists)
        self.k = len(ev)
        f = dict(zip([x.name for x in ev.type], ev.flatten()))
        self.df = pl.DataFrame({"name": pl.Series(f["name"]), "t": pl.Series(f["time_unix_nano"]),
                                "dropped": pl.Series(f["dropped_attributes_count"]).cast(pl.Int64)})
        self.attrs = _KV(f["attributes"], self.k)

    def json(self) -> pa.Array:
        if self.k == 0:
            return pa.array(["[]"] * self.n, pa.string())
        c = pl.col
        frags = self.df.with_columns(a=pl.Series(self.attrs.objects())).select(pl.concat_str([
            pl.lit('{"name":'), _json_str(c("name")), pl.lit(',"time_unix_nano":'), c("t").cast(pl.String),
            pl.lit(',"attributes":'), c("a"), pl.lit(',"dropped_attributes_count":'), c("dropped").cast(pl.String),
            pl.lit("}"),
        ])).to_series()
        return _assemble(pl.Series([""] * self.k, dtype=pl.String), frags, self.own, self.n, "[", "]")

    def per_span(self, start: pl.Series) -> tuple[pl.Series, pl.Series, pl.Series, np.ndarray]:
        """(ttft_ms from the first "First Token Stream Event", exception.type and
        exception.message of the last "exception" event, mask of spans with message events)."""
        n = self.n
        null_f, null_s = pl.Series([None] * n, dtype=pl.Float64), pl.Series([None] * n, dtype=pl.String)
        if self.k == 0:
            return null_f, null_s, null_s, np.zeros(n, bool)
        names = self.df["name"]
        message_events = np.zeros(n, bool)
        message_events[self.own[names.is_in(_MSG_EVENTS).to_numpy()]] = True
        ttft = null_f
        first = np.flatnonzero(names.eq(ref.FIRST_TOKEN_EVENT).to_numpy())
        if len(first):
            first = first[_first_of_runs(self.own[first])]
            own = self.own[first]
            since_start = self.df["t"].gather(first).cast(pl.Int128) - start.gather(own).cast(pl.Int128)
            ttft = _spread(n, own, _div(since_start, 1e9) * 1000.0)
        exc_type = exc_message = null_s
        exc = np.flatnonzero(names.eq("exception").to_numpy())
        if len(exc):
            exc = exc[_last_of_runs(self.own[exc])]
            a = self.attrs
            which = a.lut(_EXCEPTION_KEYS, -1, np.int64)
            of_last = np.zeros(self.k, bool)
            of_last[exc] = True
            found = []
            for w in (0, 1):
                rows = np.flatnonzero((which == w) & of_last[a.own])
                rows = rows[_last_of_runs(a.own[rows])]  # a repeated key: the last value
                found.append(_spread(n, self.own[a.own[rows]], _coerce(a, rows, _STR)))
            exc_type, exc_message = found
        return ttft, exc_type, exc_message, message_events


def _links_json(lists: pa.Array, n: int) -> pa.Array:
    ln = pc.list_flatten(lists)
    if len(ln) == 0:
        return pa.array(["[]"] * n, pa.string())
    f = dict(zip([x.name for x in ln.type], ln.flatten()))
    c = pl.col

    def hex_id(col: str) -> pl.Expr:  # collector.anyvalue.hex_id: empty or all-zero → null
        h = c(col).bin.encode("hex")
        return pl.when(h.str.strip_chars("0") != "").then(pl.concat_str([pl.lit('"'), h, pl.lit('"')])) \
            .otherwise(pl.lit("null"))

    df = pl.DataFrame({"t": pl.Series(f["trace_id"]), "s": pl.Series(f["span_id"]), "ts": pl.Series(f["trace_state"]),
                       "flags": pl.Series(f["flags"]).cast(pl.Int64),
                       "a": pl.Series(_KV(f["attributes"], len(ln)).objects())})
    frags = df.select(pl.concat_str([
        pl.lit('{"trace_id":'), hex_id("t"), pl.lit(',"span_id":'), hex_id("s"), pl.lit(',"trace_state":'),
        pl.when(c("ts") != "").then(_json_str(c("ts"))).otherwise(pl.lit("null")),
        pl.lit(',"attributes":'), c("a"), pl.lit(',"flags":'), c("flags").cast(pl.String), pl.lit("}"),
    ])).to_series()
    return _assemble(pl.Series([""] * len(ln), dtype=pl.String), frags, _parents(lists), n, "[", "]")


# -- aliases -----------------------------------------------------------------------------


def _coerce(kv: _KV, rows: np.ndarray, kind: int) -> pl.Series:
    """The values of ``rows`` coerced as ``anyvalue.as_str`` / ``as_int`` / ``as_float``
    (``kind``) coerce them; null where those give None. The usual value type is a plain
    gather; the others are patched in, vectorized, or - a double named as a string, a
    numeric string... - through the converter itself."""
    vkind = kv.kind[rows]
    v = kv.df[{_STR: "s", _INT: "i", _FLOAT: "d"}[kind]].gather(rows)
    if kind == _STR:
        v = v.set(v.str.len_bytes() == 0, None)
        patches = {_K_INT: ("i", pl.String), _K_STRINDEX: ("si", pl.String), _K_BYTES: ("by", None)}
        in_python: tuple[int, ...] = (_K_DOUBLE,)
    elif kind == _INT:
        patches = {_K_STRINDEX: ("si", pl.Int64), _K_DOUBLE: ("d", pl.Int64)}
        in_python = (_K_STR, _K_BYTES)
    else:
        v = v.set(~v.is_finite(), None)
        patches = {_K_INT: ("i", pl.Float64), _K_STRINDEX: ("si", pl.Float64)}
        in_python = (_K_STR, _K_BYTES)
    for vk, (src, dtype) in patches.items():
        at = np.flatnonzero(vkind == vk)
        if not len(at):
            continue
        x = kv.df[src].gather(rows[at])
        if vk == _K_BYTES:  # the base64 text (empty bytes: "", hence None)
            x = x.bin.encode("base64")
            x = x.set(x.str.len_bytes() == 0, None)
        elif vk == _K_DOUBLE:  # as_int truncates a finite double (beyond int64: not storable)
            x = x.set(~x.is_finite() | (x.abs() >= 9.2e18), None).cast(pl.Int64, strict=False)
        else:
            x = x.cast(dtype)
        v = v.scatter(at, x)
    at = np.flatnonzero(np.isin(vkind, in_python))
    if len(at):
        py = [_CONVERTER[kind](x) for x in kv.py_list(rows[at])]
        if kind == _INT:
            py = [x if x is None or -(2**63) <= x < 2**63 else None for x in py]
        v = v.scatter(at, pl.Series(py, dtype=v.dtype))
    return v


def _aliases(kv: _KV) -> dict[str, pl.Series]:
    """Each field of ``ref.ALIASES``, one column of spans: the value of the best-ranked
    alias that coerces (``ref.COERCE``); ``_finish_row``: the attribute row holding the
    (raw) finish_reasons value."""
    n = kv.n
    code = kv.lut(_ALIAS_CODE, -1, np.int64)
    rows = np.flatnonzero(code >= 0)
    own, code = kv.own[rows], code[rows]
    if kv.repeated_keys()[own].any():
        # a repeated key counts with its last value only, as in the reference's dict
        sk = own * 256 + code
        order = np.lexsort((-rows, sk))
        last = np.ones(len(rows), bool)
        last[order[1:]] = sk[order][1:] != sk[order][:-1]
        rows, own, code = rows[last], own[last], code[last]
    slot, rank = code >> 3, code & 7
    conv = _SLOT_KIND[slot] if len(slot) else np.zeros(0, np.int8)
    valid = kv.kind[rows] != _K_NONE  # finish_reasons takes any value but an empty one
    values: dict[int, tuple[np.ndarray, pl.Series]] = {}
    for kind in (_STR, _INT, _FLOAT):
        p = np.flatnonzero(conv == kind)
        values[kind] = (p, _coerce(kv, rows[p], kind))
        valid[p] = values[kind][1].is_not_null().to_numpy()
    # per field and span, the valid alias of the best rank (a field's ranks are distinct)
    winner = np.full((len(_FIELDS), n), -1, np.int64)
    for r in range(7, -1, -1):
        m = valid & (rank == r)
        winner[slot[m], own[m]] = np.flatnonzero(m)
    out: dict[str, pl.Series] = {}
    for kind, (p, v) in values.items():
        position = np.full(len(rows) + 1, -1, np.int64)  # alias row → row of v; winner -1 → -1
        position[p] = np.arange(len(p))
        slots = np.flatnonzero(_SLOT_KIND == kind)
        taken = _take(v, position[winner[slots]].ravel())  # one gather for all the fields of a kind
        for j, s in enumerate(slots):
            out[_FIELDS[s]] = taken.slice(j * n, n)
    out["_finish_row"] = _take(pl.Series(rows, dtype=pl.Int64), winner[_SLOT["finish_reasons"]])
    return out


# -- messages ----------------------------------------------------------------------------


def _messages(kv: _KV, message_events: np.ndarray) -> tuple[pl.DataFrame, np.ndarray, dict[int, Any]]:
    """(input_messages and output_messages, mask of the spans left to the reference,
    {span: Python output messages} of the spans assembled in Python)."""
    n = kv.n
    which = kv.lut({k: i for i, k in enumerate(_MSG_FAST)}, -1, np.int64)
    reference = message_events.copy()
    reference[kv.own[kv.lut({k: True for k in _MSG_OTHER}, False, bool)]] = True
    rows = {name: kv.last_row(which, w) for w, name in enumerate(("inp", "out", "sys"))}
    odd = np.zeros(n, bool)
    strings = {}
    for name, r in rows.items():
        kind = np.where(r >= 0, kv.kind[np.maximum(r, 0)] if kv.m else _K_NONE, _K_NONE)
        odd |= (kind != _K_STR) & (kind != _K_NONE)  # e.g. a structured AnyValue message list
        strings[name] = pl.col("s").gather(pl.lit(_index(np.where(kind == _K_STR, r, -1)))).alias(name)
    c = pl.col

    def nonempty(name: str) -> pl.Expr:
        return (c(name).str.len_bytes() > 0).fill_null(False)

    checks = kv.df.select(**strings).with_columns(  # one select: polars runs the patterns in parallel
        inp_ok=nonempty("inp") & c("inp").str.contains(MESSAGES_RX).fill_null(False),
        out_ok=nonempty("out") & c("out").str.contains(MESSAGES_RX).fill_null(False),
        sys_parts=nonempty("sys") & c("sys").str.contains(SYSTEM_RX).fill_null(False),
        sys_text=nonempty("sys") & ~c("sys").str.contains(r"^[\[{]").fill_null(False),  # plain text: a text part
        sys_other=nonempty("sys"),
    ).select(  # (eager selects do not share subexpressions: each pattern runs once, above)
        "sys", "sys_parts", "sys_text", "sys_other",
        input_messages=pl.when(c("inp_ok")).then(c("inp")), output_messages=pl.when(c("out_ok")).then(c("out")),
        inp=nonempty("inp") & ~c("inp_ok"), out=nonempty("out") & ~c("out_ok"),  # present, not proven canonical
    )
    flag = {name: checks[name].to_numpy() for name in ("inp", "out", "sys_parts", "sys_text", "sys_other")}
    fast = ~odd & ~flag["inp"] & ~flag["out"] & (~flag["sys_other"] | flag["sys_parts"] | flag["sys_text"])
    input_messages, output_messages = checks["input_messages"], checks["output_messages"]
    with_system = np.flatnonzero(fast & (flag["sys_parts"] | flag["sys_text"]))
    if len(with_system):
        parts = pl.when(c("parts")).then(c("sys")).otherwise(
            pl.concat_str([pl.lit('[{"type":"text","content":'), _json_str(c("sys")), pl.lit("}]")]))
        system = pl.concat_str([pl.lit('{"role":"system","parts":'), parts, pl.lit("}")])
        joined = pl.DataFrame({"sys": checks["sys"].gather(with_system), "parts": flag["sys_parts"][with_system],
                               "inp": input_messages.gather(with_system)}).select(
            pl.when(c("inp").is_null()).then(pl.concat_str([pl.lit("["), system, pl.lit("]")]))
            .otherwise(pl.concat_str([pl.lit("["), system, pl.lit(","), c("inp").str.slice(1)]))).to_series()
        input_messages = input_messages.scatter(with_system, joined)
    outputs: dict[int, Any] = {}
    in_python = np.flatnonzero(~fast & ~reference)
    if len(in_python):
        names = ("inp", "out", "sys")
        values = {name: kv.py_list(np.maximum(rows[name][in_python], 0)) for name in names}
        ins, outs = [], []
        for j, i in enumerate(in_python.tolist()):
            attrs = {key: values[name][j] for key, name in zip(_MSG_FAST, names) if rows[name][i] >= 0}
            inp, out = msgs.span_messages(attrs, [])
            ins.append(msgs.dump(inp))
            outs.append(msgs.dump(out))
            outputs[i] = out
        input_messages = input_messages.scatter(in_python, pl.Series(ins, dtype=pl.String))
        output_messages = output_messages.scatter(in_python, pl.Series(outs, dtype=pl.String))
    return pl.DataFrame({"input_messages": input_messages, "output_messages": output_messages}), reference, outputs


def _finish_reasons(kv: _KV, finish_row: pl.Series, output: pl.Series, outputs: dict[int, Any]) -> pl.Series:
    """A plain string value → [it], vectorized; a list, a JSON-looking string, or no
    usable value but output messages → the reference's ``resolve_finish_reasons``."""
    n = kv.n
    has = finish_row.is_not_null()
    rows = finish_row.fill_null(0)
    s = kv.df["s"].gather(rows) if kv.m else pl.Series([None] * n, dtype=pl.String)
    by = kv.df["by"].gather(rows) if kv.m else pl.Series([None] * n, dtype=pl.Binary)
    text = pl.select(pl.when(has).then(pl.coalesce(s, by.bin.encode("base64")))).to_series()
    simple = text.is_not_null() & (text != "") & ~text.str.starts_with("[")
    nested = np.zeros(max(kv.m, 1), bool)
    nested[kv.complex] = True
    is_list = has & pl.Series(nested).gather(rows)
    odd = is_list | (text.is_not_null() & text.str.starts_with("[")) | (~simple & ~is_list & output.is_not_null())
    result = pl.select(pl.when(simple).then(pl.concat_list([text]))).to_series()
    odd_rows = odd.arg_true().to_list()
    if odd_rows:
        full: list[Any] = [None] * n
        found = finish_row.gather(odd_rows).to_list()
        values = kv.py_list(np.array([0 if r is None else r for r in found], np.int64))
        for i, r, v, o in zip(odd_rows, found, values, output.gather(odd_rows).to_list()):
            out = outputs[i] if i in outputs else None if o is None else orjson.loads(o)
            full[i] = ref.resolve_finish_reasons(None if r is None else v, {}, out)
        result = pl.select(pl.when(odd).then(pl.Series(full, dtype=pl.List(pl.String))).otherwise(result)).to_series()
    return result


# -- the GenAI columns -------------------------------------------------------------------


def _price_ids(models: pl.Series, prices: list[pricing.Price], ids: dict[str, int]) -> np.ndarray:
    """Per row, the index of its model's price in ``prices`` (added as found), -1: none."""
    enc = pc.dictionary_encode(models.to_arrow())
    per_model = []
    for m in enc.dictionary.to_pylist():
        price = pricing.lookup(m)
        if price is None:
            per_model.append(-1)
        else:
            per_model.append(ids.setdefault(m, len(prices)))
            if per_model[-1] == len(prices):
                prices.append(price)
    per_model.append(-1)  # null models
    codes = pc.fill_null(enc.indices, len(per_model) - 1).to_numpy(zero_copy_only=False)
    return np.array(per_model, np.int64)[codes]


def _price_columns(response_model: pl.Series, request_model: pl.Series) -> dict[str, pl.Series]:
    """The price of each span's response model, else of its request model (the
    reference's order): per 1M tokens, null where there is none."""
    prices: list[pricing.Price] = []
    ids: dict[str, int] = {}
    resp, req = _price_ids(response_model, prices, ids), _price_ids(request_model, prices, ids)
    pid = np.where(resp >= 0, resp, req)
    out = {}
    for col, field in (("pin", "input"), ("pout", "output"), ("pcr", "cache_read"), ("pcw", "cache_write")):
        table = np.array([np.nan if getattr(p, field) is None else getattr(p, field) for p in prices] + [np.nan])
        out[col] = pl.Series(table[np.where(pid >= 0, pid, len(prices))], nan_to_null=True)
    out["has_price"] = pl.Series(pid >= 0)
    return out


def _genai_columns(core: pl.DataFrame, kv: _KV, events: _Events) -> tuple[dict[str, pl.Series], np.ndarray]:
    """The GenAI columns of every span (normalize.genai_fields, vectorized), and the spans whose
    columns must come from the reference instead."""
    al = _aliases(kv)
    ttft_event, exc_type, exc_message, message_events = events.per_span(core["start"])
    messages, reference, outputs = _messages(kv, message_events)
    g = pl.DataFrame({
        **{f: al[f] for f in _FIELDS if f != "finish_reasons"},
        "name": core["name"], "service": core["service_name"], "status_message": core["status_message"],
        "ttft_event": ttft_event, "exc_type": exc_type, "exc_message": exc_message,
        **_price_columns(al["response_model"], al["request_model"]),
    })
    for stage in _genai_exprs():  # eager: on batches this size, planning a lazy query costs more
        g = g.with_columns(stage)
    res = g.select(_GENAI_COLUMNS_VECTORIZED + ["_is_genai"]).with_columns(messages)
    columns = {name: res[name] for name in res.columns}
    columns["finish_reasons"] = _finish_reasons(kv, al["_finish_row"], res["output_messages"], outputs)
    return columns, np.flatnonzero(reference)


_GENAI_COLUMNS_VECTORIZED = [c for c in _GENAI_COLUMNS if c not in ("finish_reasons", "input_messages",
                                                                    "output_messages")]


@functools.cache
def _genai_exprs() -> list[list[pl.Expr]]:
    """normalize.genai_fields as polars expressions, in stages (each sees the previous ones)."""
    c = pl.col
    split = c("name").str.splitn(" ", 2)  # name.partition(" ")
    first, rest, oi_kind = c("first"), c("rest"), c("oi_kind")

    def mapped(col: pl.Expr, table: dict[str, str]) -> pl.Expr:
        return col.replace_strict(table, default=None, return_dtype=pl.String)

    derived = (  # normalize._operation
        pl.when(mapped(c("llm_request_type"), ref.REQUEST_TYPE_OPS).is_not_null())
        .then(mapped(c("llm_request_type"), ref.REQUEST_TYPE_OPS))
        .when((oi_kind == "CHAIN") & (c("agent_name").is_not_null()
                                      | c("name").str.to_lowercase().str.contains("agent", literal=True)))
        .then(pl.lit("invoke_agent"))
        .when(mapped(oi_kind, ref.OPENINFERENCE_OPS).is_not_null()).then(mapped(oi_kind, ref.OPENINFERENCE_OPS))
        .when(mapped(c("traceloop_kind"), ref.TRACELOOP_OPS).is_not_null())
        .then(mapped(c("traceloop_kind"), ref.TRACELOOP_OPS))
        .when(first.is_in(list(ref.NAME_OPS))).then(first)
    )
    op, span_type = c("operation"), c("span_type")
    # cost as pricing.cost computes it, in the same order of operations
    uncached = c("gross") - c("read") - c("write")
    uncached = pl.when(uncached < 0).then(c("gross")).otherwise(uncached)
    total = uncached.cast(pl.Float64) * c("pin") + c("output_tokens").fill_null(0).cast(pl.Float64) * c("pout")
    total = pl.when(c("read") != 0).then(total + c("read").cast(pl.Float64) * c("pcr")).otherwise(total)
    total = pl.when(c("write") != 0).then(total + c("write").cast(pl.Float64) * c("pcw")).otherwise(total)
    computed = (c("input_tokens").is_not_null() | c("output_tokens").is_not_null()) & c("has_price")
    # a sum beyond int64 cannot be stored (the reference's Python int fails the Arrow
    # conversion of the whole batch): no total
    total_fits = (c("input_tokens").cast(pl.Int128) + c("output_tokens").cast(pl.Int128)).abs() < 2**63
    provider = c("provider").str.to_lowercase()
    return [
        [split.struct.field("field_0").alias("first"), split.struct.field("field_1").alias("rest"),
         c("openinference_kind").str.to_uppercase().alias("oi_kind"),
         pl.when(c("pcr").is_not_null()).then(c("cache_read_tokens").fill_null(0)).otherwise(0).alias("read"),
         pl.when(c("pcw").is_not_null()).then(c("cache_write_tokens").fill_null(0)).otherwise(0).alias("write"),
         c("input_tokens").fill_null(0).alias("gross")],
        [pl.coalesce(c("operation"), derived).alias("operation")],
        [pl.when(op.is_not_null())
         .then(op.replace_strict(ref.SPAN_TYPE_OF_OPERATION, default="other", return_dtype=pl.String))
         .when(c("request_model").is_not_null() | c("response_model").is_not_null())
         .then(pl.lit("llm")).otherwise(pl.lit("other")).alias("span_type")],
        [
            # error.type, session.id & co. alone do not make a span GenAI; a convention marker does
            ((span_type != "other") | op.is_not_null() | c("provider").is_not_null()
             | c("openinference_kind").is_not_null() | c("traceloop_kind").is_not_null()
             | c("input_tokens").is_not_null()).alias("_is_genai"),
            pl.when(provider.str.starts_with("az.ai."))
            .then(pl.concat_str([pl.lit("azure.ai."), provider.str.slice(6)]))
            .when(provider == "xai").then(pl.lit("x_ai")).otherwise(provider).alias("provider"),
            pl.coalesce(c("agent_name"), pl.when(c("traceloop_kind") == "agent").then(c("traceloop_entity")),
                        pl.when((rest != "") & first.is_in(["invoke_agent", "create_agent"])).then(rest),
                        pl.when(span_type == "agent").then(c("service"))).alias("agent_name"),
            pl.coalesce(c("total_tokens"), pl.when(total_fits).then(c("input_tokens") + c("output_tokens")))
            .alias("total_tokens"),
            pl.when(c("cost").is_not_null()).then(c("cost")).when(computed).then(total * pricing._PER_TOKEN)
            .alias("cost_usd"),
            pl.when(c("cost").is_not_null()).then(pl.lit("reported")).when(computed).then(pl.lit("computed"))
            .alias("cost_source"),
            pl.coalesce(c("tool_name"), pl.when(c("traceloop_kind") == "tool").then(c("traceloop_entity")),
                        pl.when((rest != "") & (first == "execute_tool")).then(rest)).alias("tool_name"),
            pl.when(c("ttft_s").is_not_null()).then(c("ttft_s") * 1000.0).otherwise(c("ttft_event")).alias("ttft_ms"),
            pl.coalesce(c("error_type"), c("exc_type")).alias("error_type"),
            pl.coalesce(c("status_message"), c("exc_message")).alias("error_message"),
        ],
    ]


def _reference_rows(out: pl.DataFrame, spans: np.ndarray, sp: dict[str, pa.Array]) -> pl.DataFrame:
    """The GenAI columns of the given spans, from the reference's per-span ``genai_fields``."""
    idx = pa.array(spans)
    attrs = [_py_attrs(a) for a in sp["attributes"].take(idx).to_pylist()]
    events = [[{"name": e["name"], "time_unix_nano": e["time_unix_nano"], "attributes": _py_attrs(e["attributes"]),
                "dropped_attributes_count": e["dropped_attributes_count"]} for e in es]
              for es in sp["events"].take(idx).to_pylist()]
    sub = out[spans]
    rows = []
    for a, es, name, start, service, message in zip(attrs, events, sub["name"], sub["start"], sub["service_name"],
                                                    sub["status_message"]):
        genai, is_genai = ref.genai_fields(a, name, es, start, service, message)
        rows.append((*genai, is_genai))
    patched = {}
    mask = np.zeros(len(out), bool)
    mask[spans] = True
    for name, values in zip([*_GENAI_COLUMNS, "_is_genai"], zip(*rows)):
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


def _root_agents(out: pl.DataFrame) -> pl.DataFrame:
    """A root span still without an agent name, in a trace that has a GenAI span in the
    same request, takes its service's name (the reference's final pass)."""
    c = pl.col
    in_genai_trace = c("_is_genai").any().over(["req", "trace_id"])
    return out.with_columns(agent_name=pl.when(c("parent_span_id").is_null() & c("agent_name").is_null()
                                               & in_genai_trace).then(c("service_name")).otherwise(c("agent_name")))
