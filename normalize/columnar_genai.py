"""The GenAI columns in bulk: ``normalize.rows.genai_fields`` for a whole batch.

Part of ``normalize.columnar``. Alias resolution (the best-ranked alias of each
field in ``conventions.ALIASES`` that coerces as ``conventions.COERCE`` says), coercion,
the operation / span-type / agent / tool rules, cost (prices looked up once per
distinct model) and the event-derived fields (time to first token, exception) are
numpy and polars expressions. Python runs only for values of an unusual type (a
numeric string token count, a double named as a model...), through
``normalize.anyvalue``'s own converters. The message columns come from
``normalize.columnar_messages``; ``genai_columns`` also names the spans whose columns must
come from the reference instead.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import polars as pl
import pyarrow.compute as pc

from otelbench.normalize import anyvalue, pricing
from otelbench.normalize import conventions as cv
from otelbench.normalize import messages as msgs
from otelbench.normalize.columnar_attributes import (KV, K_BOOL, K_BYTES, K_COMPLEX, K_DOUBLE, K_INT, K_NONE, K_STR, K_STRINDEX,
                                        Events, first_of_runs, index, last_of_runs)
from otelbench.normalize.columnar_messages import finish_reasons, message_columns
from otelbench.storage.schema import SPANS

# -- the conventions' tables, indexed for lookups by number ------------------------------

_FIELDS = cv.FIELDS
_SLOT = {f: i for i, f in enumerate(_FIELDS)}
# alias key → field slot * 8 + rank: ordering by it puts a field's aliases best first
_ALIAS_CODE = {k: s * 8 + r for s, f in enumerate(_FIELDS) for r, k in enumerate(cv.ALIASES[f])}
assert max(len(keys) for keys in cv.ALIASES.values()) <= 8
# how a field coerces its value (conventions.COERCE): as_str, as_int, as_float, as_text
# or not at all
_STR, _INT, _FLOAT, _RAW, _TEXT = 0, 1, 2, 3, 4
_CONVERTER = {_STR: anyvalue.as_str, _INT: anyvalue.as_int, _FLOAT: anyvalue.as_float, _TEXT: anyvalue.as_text}
_SLOT_KIND = np.array([{None: _RAW, **{f: k for k, f in _CONVERTER.items()}}[cv.COERCE[f][1]] for f in _FIELDS],
                      np.int8)
# the alias codes of conventions.KEY_COERCE's keys (text fields read by conventions.json_text)
_JSON_TEXT_CODES = np.array(sorted(_ALIAS_CODE[k] for k in cv.KEY_COERCE), np.int64)
assert all(cv.KEY_COERCE[k][1] is cv.json_text and _SLOT_KIND[_ALIAS_CODE[k] >> 3] == _TEXT for k in cv.KEY_COERCE)

# span events that carry messages (normalize.message_sources._from_events)
_MSG_EVENTS = ["gen_ai.content.prompt", "gen_ai.content.completion", msgs.CHOICE_EVENT, *msgs.ROLE_EVENTS]
_EXCEPTION_KEYS = {"exception.type": 0, "exception.message": 1}  # of the last exception event
GENAI_COLUMNS = SPANS.columns[SPANS.columns.index("span_type"):]
_GENAI_COLUMNS_VECTORIZED = [c for c in GENAI_COLUMNS if c not in ("finish_reasons", "input_messages",
                                                                    "output_messages")]


# -- gathers, and the span events -----------------------------------------------------


def _div(ints: pl.Series, by: float) -> pl.Series:
    """``int / float`` as Python computes it. Not polars: it divides a column by a scalar
    as a multiplication by the reciprocal, which is not always the same double."""
    return pl.Series(ints.cast(pl.Float64).to_numpy() / by)


def _take(values: pl.Series, idx: np.ndarray) -> pl.Series:
    """values[idx], null where idx < 0."""
    return values.gather(index(idx))


def _spread(n: int, own: np.ndarray, values: pl.Series) -> pl.Series:
    """One value per distinct ``own`` → a column of n rows, null elsewhere."""
    idx = np.full(n, -1, np.int64)
    idx[own] = np.arange(len(own))
    return _take(values, idx)


def _event_fields(events: Events, start: pl.Series) -> tuple[pl.Series, pl.Series, pl.Series, np.ndarray]:
    """Per span, from its events: (ttft_ms from the first of ``conventions.TTFT_EVENTS``, exception.type
    and exception.message of the last "exception" event, mask of spans with message events)."""
    n = events.n
    null_f, null_s = pl.Series([None] * n, dtype=pl.Float64), pl.Series([None] * n, dtype=pl.String)
    if events.k == 0:
        return null_f, null_s, null_s, np.zeros(n, bool)
    names = events.df["name"]
    message_events = np.zeros(n, bool)
    message_events[events.own[names.is_in(_MSG_EVENTS).to_numpy()]] = True
    ttft = null_f
    first = np.flatnonzero(names.is_in(list(cv.TTFT_EVENTS)).to_numpy())
    if len(first):
        first = first[first_of_runs(events.own[first])]
        own = events.own[first]
        since_start = events.df["t"].gather(first).cast(pl.Int128) - start.gather(own).cast(pl.Int128)
        ttft = _spread(n, own, _div(since_start, 1e9) * 1000.0)
    exc_type = exc_message = null_s
    exc = np.flatnonzero(names.eq(cv.EXCEPTION_EVENT).to_numpy())
    if len(exc):
        exc = exc[last_of_runs(events.own[exc])]
        a = events.attrs
        which = a.lut(_EXCEPTION_KEYS, -1, np.int64)
        of_last = np.zeros(events.k, bool)
        of_last[exc] = True
        found = []
        for w in (0, 1):
            rows = np.flatnonzero((which == w) & of_last[a.own])
            rows = rows[last_of_runs(a.own[rows])]  # a repeated key: the last value
            found.append(_spread(n, events.own[a.own[rows]], _coerce(a, rows, _STR)))
        exc_type, exc_message = found
    return ttft, exc_type, exc_message, message_events


def _not_streamed(kv: KV) -> np.ndarray:
    """Per span, ``conventions.not_streamed``: one of ``STREAM_FLAGS`` (its last value) is false."""
    which = kv.lut({k: i for i, k in enumerate(cv.STREAM_FLAGS)}, -1, np.int64)
    out = np.zeros(kv.n, bool)
    for w in range(len(cv.STREAM_FLAGS)):
        last = kv.last_row(which, w)
        spans = np.flatnonzero(last >= 0)
        rows = last[spans]
        false = (kv.kind[rows] == K_BOOL) & ~kv.df["b"].gather(rows).fill_null(True).to_numpy()
        out[spans[false]] = True
    return out


# -- aliases -----------------------------------------------------------------------------


def _coerce(kv: KV, rows: np.ndarray, kind: int) -> pl.Series:
    """The values of ``rows`` coerced as ``anyvalue.as_str`` / ``as_int`` / ``as_float`` /
    ``as_text`` (``kind``) coerce them; null where those give None. The usual value type is a plain
    gather; the others are patched in, vectorized, or - a double named as a string, a
    numeric string... - through the converter itself."""
    vkind = kv.kind[rows]
    v = kv.df[{_STR: "s", _INT: "i", _FLOAT: "d", _TEXT: "s"}[kind]].gather(rows)
    if kind == _TEXT:  # a string as sent; other values (rare on these keys) their JSON, in Python
        v = v.set(v.str.len_bytes() == 0, None)
        patches: dict[int, tuple[str, Any]] = {}
        in_python: tuple[int, ...] = (K_BOOL, K_INT, K_DOUBLE, K_BYTES, K_STRINDEX, K_COMPLEX)
    elif kind == _STR:
        v = v.set(v.str.len_bytes() == 0, None)
        patches = {K_INT: ("i", pl.String), K_STRINDEX: ("si", pl.String), K_BYTES: ("by", None)}
        in_python = (K_DOUBLE,)
    elif kind == _INT:
        patches = {K_STRINDEX: ("si", pl.Int64), K_DOUBLE: ("d", pl.Int64)}
        in_python = (K_STR, K_BYTES)
    else:
        v = v.set(~v.is_finite(), None)
        patches = {K_INT: ("i", pl.Float64), K_STRINDEX: ("si", pl.Float64)}
        in_python = (K_STR, K_BYTES)
    for vk, (src, dtype) in patches.items():
        at = np.flatnonzero(vkind == vk)
        if not len(at):
            continue
        x = kv.df[src].gather(rows[at])
        if vk == K_BYTES:  # the base64 text (empty bytes: "", hence None)
            x = x.bin.encode("base64")
            x = x.set(x.str.len_bytes() == 0, None)
        elif vk == K_DOUBLE:  # as_int truncates a double within int64 (beyond: not storable)
            x = x.set(~((x >= -(2.0**63)) & (x < 2.0**63)), None).cast(pl.Int64, strict=False)
        else:
            x = x.cast(dtype)
        v = v.scatter(at, x)
    at = np.flatnonzero(np.isin(vkind, in_python))
    if len(at):
        py = [_CONVERTER[kind](x) for x in kv.py_list(rows[at])]
        v = v.scatter(at, pl.Series(py, dtype=v.dtype))
    return v


def _json_text(kv: KV, rows: np.ndarray, code: np.ndarray, v: pl.Series) -> pl.Series:
    """``v`` (the text values of attribute ``rows``) with those of KEY_COERCE's keys that
    read as a JSON string literal decoded (``conventions.json_text``, in Python: rare)."""
    quoted = (v.str.starts_with('"') & v.str.ends_with('"') & (v.str.len_bytes() >= 2)).fill_null(False).to_numpy()
    at = np.flatnonzero(quoted & np.isin(code, _JSON_TEXT_CODES))
    if not len(at):
        return v
    return v.scatter(at, pl.Series([cv.json_text(x) for x in kv.py_list(rows[at])], dtype=pl.String))


def _aliases(kv: KV) -> dict[str, pl.Series]:
    """Each field of ``conventions.ALIASES``, one column of spans: the value of the best-ranked
    alias that coerces (``conventions.COERCE``); ``_finish_row``: the attribute row holding the
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
    valid = kv.kind[rows] != K_NONE  # finish_reasons takes any value but an empty one
    values: dict[int, tuple[np.ndarray, pl.Series]] = {}
    for kind in (_STR, _INT, _FLOAT, _TEXT):
        p = np.flatnonzero(conv == kind)
        values[kind] = (p, _coerce(kv, rows[p], kind))
        if kind == _TEXT and len(p):
            values[kind] = (p, _json_text(kv, rows[p], code[p], values[kind][1]))
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


def genai_columns(core: pl.DataFrame, kv: KV, events: Events) -> tuple[dict[str, pl.Series], np.ndarray]:
    """The GenAI columns of every span (normalize.genai_fields, vectorized), and the spans whose
    columns must come from the reference instead."""
    al = _aliases(kv)
    ttft_event, exc_type, exc_message, message_events = _event_fields(events, core["start"])
    messages, reference, outputs = message_columns(kv, message_events)
    g = pl.DataFrame({
        **{f: al[f] for f in _FIELDS if f != "finish_reasons"},
        "name": core["name"], "service": core["service_name"], "status_message": core["status_message"],
        "ttft_event": ttft_event, "not_streamed": _not_streamed(kv), "exc_type": exc_type, "exc_message": exc_message,
        **_price_columns(al["response_model"], al["request_model"]),
    })
    for stage in _genai_exprs():  # eager: on batches this size, planning a lazy query costs more
        g = g.with_columns(stage)
    res = g.select(_GENAI_COLUMNS_VECTORIZED).with_columns(messages)
    columns = {name: res[name] for name in res.columns}
    columns["finish_reasons"] = finish_reasons(kv, al["_finish_row"], res["output_messages"], outputs)
    return columns, np.flatnonzero(reference)


def _provider(lowered: pl.Expr) -> pl.Expr:
    """conventions.provider on a lowercased column: the renames, first match wins."""
    rules = [(lowered.str.starts_with(old), pl.concat_str([pl.lit(new), lowered.str.slice(len(old))]))
             for old, new in cv.PROVIDER_PREFIX_RENAMES.items()]
    rules += [(lowered == old, pl.lit(new)) for old, new in cv.PROVIDER_RENAMES.items()]
    chain = pl.when(rules[0][0]).then(rules[0][1])
    for condition, value in rules[1:]:
        chain = chain.when(condition).then(value)
    return chain.otherwise(lowered)


@functools.cache
def _genai_exprs() -> list[list[pl.Expr]]:
    """rows.genai_fields as polars expressions, in stages (each sees the previous ones)."""
    c = pl.col
    split = c("name").str.splitn(" ", 2)  # name.partition(" ")
    first, rest, oi_kind = c("first"), c("rest"), c("oi_kind")

    def mapped(col: pl.Expr, table: dict[str, str]) -> pl.Expr:
        return col.replace_strict(table, default=None, return_dtype=pl.String)

    derived = (  # conventions.operation
        pl.when(mapped(c("llm_request_type"), cv.REQUEST_TYPE_OPS).is_not_null())
        .then(mapped(c("llm_request_type"), cv.REQUEST_TYPE_OPS))
        .when((oi_kind == cv.CHAIN_KIND) & (c("agent_name").is_not_null()
                                            | c("name").str.to_lowercase().str.contains(cv.AGENT_WORD, literal=True)))
        .then(pl.lit("invoke_agent"))
        .when(c("not_a_call")).then(None)
        .when(mapped(oi_kind, cv.OPENINFERENCE_OPS).is_not_null()).then(mapped(oi_kind, cv.OPENINFERENCE_OPS))
        .when(mapped(c("traceloop_kind"), cv.TRACELOOP_OPS).is_not_null())
        .then(mapped(c("traceloop_kind"), cv.TRACELOOP_OPS))
        .when(first.is_in(list(cv.NAME_OPS))).then(first)
        .otherwise(mapped(first, cv.OTHER_NAME_OPS))
    )
    op = c("operation")
    # cost as pricing.cost computes it, in the same order of operations
    uncached = c("gross") - c("read") - c("write")
    uncached = pl.when(uncached < 0).then(c("gross")).otherwise(uncached)
    total = uncached.cast(pl.Float64) * c("pin") + c("output_tokens").fill_null(0).cast(pl.Float64) * c("pout")
    total = pl.when(c("read") != 0).then(total + c("read").cast(pl.Float64) * c("pcr")).otherwise(total)
    total = pl.when(c("write") != 0).then(total + c("write").cast(pl.Float64) * c("pcw")).otherwise(total)
    computed = (c("input_tokens").is_not_null() | c("output_tokens").is_not_null()) & c("has_price")
    used_tokens = (c("input_tokens").fill_null(0) != 0) | (c("output_tokens").fill_null(0) != 0)
    reported = c("cost").is_not_null() & ((c("cost") != 0) | ~used_tokens)
    # a sum beyond int64 cannot be stored (the reference's Python int fails the Arrow
    # conversion of the whole batch): no total
    total_fits = (c("input_tokens").cast(pl.Int128) + c("output_tokens").cast(pl.Int128)).abs() < 2**63
    provider = c("provider").str.to_lowercase()
    return [
        [split.struct.field("field_0").alias("first"), split.struct.field("field_1").alias("rest"),
         c("openinference_kind").str.to_uppercase().alias("oi_kind"),
         ((c("openinference_kind").str.to_uppercase() == cv.LLM_KIND)
          & pl.any_horizontal([c("name").str.ends_with(m) for m in cv.NOT_A_CALL_METHODS]))
         .fill_null(False).alias("not_a_call"),
         pl.when(c("pcr").is_not_null()).then(c("cache_read_tokens").fill_null(0)).otherwise(0).alias("read"),
         pl.when(c("pcw").is_not_null()).then(c("cache_write_tokens").fill_null(0)).otherwise(0).alias("write"),
         c("input_tokens").fill_null(0).alias("gross")],
        [pl.coalesce(c("operation"), derived).alias("operation")],
        [pl.when(op.is_not_null())
         .then(op.replace_strict(cv.SPAN_TYPE_OF_OPERATION, default="other", return_dtype=pl.String))
         .when((c("request_model").is_not_null() | c("response_model").is_not_null()) & ~c("not_a_call"))
         .then(pl.lit("llm")).otherwise(pl.lit("other")).alias("span_type")],
        [
            _provider(provider).alias("provider"),
            pl.coalesce(c("agent_name"), pl.when(c("traceloop_kind") == cv.TRACELOOP_AGENT).then(c("traceloop_entity")),
                        pl.when((rest != "") & first.is_in(list(cv.AGENT_NAME_OPS))).then(rest),
                        pl.when(oi_kind == cv.AGENT_KIND).then(c("graph_node"))).alias("agent_name"),
            pl.coalesce(c("total_tokens"), pl.when(total_fits).then(c("input_tokens") + c("output_tokens")))
            .alias("total_tokens"),
            # a reported 0 for a call that used tokens (OpenLIT offline) is priced when it can be
            pl.when(reported).then(c("cost")).when(computed).then(total * pricing.PER_TOKEN)
            .otherwise(c("cost")).alias("cost_usd"),
            pl.when(reported).then(pl.lit("reported")).when(computed).then(pl.lit("computed"))
            .when(c("cost").is_not_null()).then(pl.lit("reported")).alias("cost_source"),
            pl.coalesce(c("tool_name"), pl.when(c("traceloop_kind") == cv.TRACELOOP_TOOL).then(c("traceloop_entity")),
                        pl.when((rest != "") & (first == cv.TOOL_NAME_OP)).then(rest)).alias("tool_name"),
            pl.when(c("not_streamed")).then(None).when(c("ttft_s").is_not_null()).then(c("ttft_s") * 1000.0)
            .otherwise(c("ttft_event")).alias("ttft_ms"),
            pl.coalesce(c("error_type"), c("exc_type")).alias("error_type"),
            pl.coalesce(c("status_message"), c("exc_message")).alias("error_message"),
        ],
    ]
