"""Flattened OTLP key-value lists, in bulk: lookups by key, Python values, JSON text.

The key-value half of ``normalize.columnar`` (the columnar twin of
``normalize.rows``). ``KV`` holds a ``list<KeyValue>`` column flattened by pyarrow
to one row per key-value (``own``: its list), with its values in one typed column per
``AnyValue`` member and its keys dictionary-encoded once: alias, message-key and
repeated-key questions (``KV.lut``, ``KV.repeated_keys``) are asked of the few
distinct keys, not of every attribute.

The ``attributes`` JSON (``KV.objects``): lists sharing a layout (same keys, same value
types, in order) are written by polars' JSON writer as one struct column per layout, in
one pass over the text; rare layouts are assembled from per-value JSON fragments.
Nested array / kvlist values (serialized ``AnyValue`` bytes from ptars) are decoded with
``normalize.anyvalue``, as are the Python values of the rare rows that need them
(``KV.py_list``, ``py_attrs``). ``Events`` and ``links_json`` write the ``events`` and
``links`` JSON columns the same way, their attributes through ``KV``.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otelbench.normalize import anyvalue

# value kinds: which member of the AnyValue oneof is set
K_STR, K_BOOL, K_INT, K_DOUBLE, K_BYTES, K_STRINDEX, K_NONE, K_COMPLEX = range(8)
_KIND_FIELDS = ((K_STRINDEX, "string_value_strindex"), (K_BYTES, "bytes_value"), (K_DOUBLE, "double_value"),
                (K_INT, "int_value"), (K_BOOL, "bool_value"), (K_STR, "string_value"))
_KIND_COLUMN = {K_STR: "s", K_BOOL: "b", K_INT: "i", K_DOUBLE: "d", K_BYTES: "by", K_STRINDEX: "si"}

# Key-value lists sharing a layout are written by one polars JSON-writer call; rarer
# layouts are assembled from fragments.
_SHAPE_MIN = 16
_MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)

# -- JSON text ---------------------------------------------------------------------------

_ESC_FROM = ["\\", '"'] + [chr(c) for c in range(32)]
_ESC_TO = ["\\\\", '\\"'] + [orjson.dumps(chr(c)).decode()[1:-1] for c in range(32)]


def json_str(e: pl.Expr) -> pl.Expr:
    """A (short) string → its JSON literal."""
    return pl.concat_str([pl.lit('"'), e.str.replace_many(_ESC_FROM, _ESC_TO), pl.lit('"')])


def _json_long_str(e: pl.Expr) -> pl.Expr:
    """A long string → its JSON literal: polars' JSON writer escapes in one pass, and
    ``{"":"..."}`` is cut down to the literal (string views, no copy)."""
    return pl.struct(e.alias("")).struct.json_encode().str.slice(4).str.head(-1)


def _json_float(e: pl.Expr) -> pl.Expr:
    """A float as orjson writes it: shortest round-trip text, NaN and infinities → null."""
    return pl.when(e.is_finite()).then(e.cast(pl.String)).otherwise(pl.lit("null"))


# -- indices over flattened lists --------------------------------------------------------


def parents(lists: pa.Array) -> np.ndarray:
    """Per item of the flattened lists, the index of its list."""
    return pc.list_parent_indices(lists).to_numpy().astype(np.int64, copy=False)


def index(idx: np.ndarray) -> pl.Series:
    """Gather indices, null where negative."""
    return pl.Series(pa.array(idx, pa.int64(), mask=idx < 0))


def first_of_runs(own: np.ndarray) -> np.ndarray:
    """Of items ordered by owner, which one is each owner's first."""
    keep = np.ones(len(own), bool)
    keep[1:] = own[1:] != own[:-1]
    return keep


def last_of_runs(own: np.ndarray) -> np.ndarray:
    """Of items ordered by owner, which one is each owner's last."""
    keep = np.ones(len(own), bool)
    keep[:-1] = own[1:] != own[:-1]
    return keep


# -- Python values, as normalize.anyvalue gives them (for the rare rows) ------------------


def _py_value(v: dict[str, Any] | None) -> Any:
    """One ``AnyValue`` as ptars' ``to_pylist`` gives it → normalize.anyvalue's value."""
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


def py_attrs(kvs: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A ``KeyValue`` list → normalize.anyvalue.attributes' dict (the last repeated key wins)."""
    out: dict[str, Any] = {}
    for kv in kvs or ():
        out[kv["key"]] = _py_value(kv["value"])
    return out


# -- key-value lists ---------------------------------------------------------------------


class KV:
    """A ``list<KeyValue>`` column, flattened: one row per key-value, ``own`` its list."""

    def __init__(self, lists: pa.Array, n: int) -> None:
        self.n = n
        kv = pc.list_flatten(lists)
        self.own = parents(lists)
        self.m = m = len(kv)
        self.counts = np.bincount(self.own, minlength=n)
        self.starts = np.zeros(n + 1, np.int64)
        np.cumsum(self.counts, out=self.starts[1:])
        keys = pc.dictionary_encode(kv.field("key"))
        self.key_idx = keys.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        self.keys: list[str] = keys.dictionary.to_pylist()
        self.value = kv.field("value")
        cols = dict(zip([f.name for f in self.value.type], self.value.flatten()))
        self.kind = np.full(m, K_NONE, np.int8)
        for code, name in _KIND_FIELDS:
            self.kind[cols[name].is_valid().to_numpy(zero_copy_only=False)] = code
        nested = (cols["array_value"].is_valid().to_numpy(zero_copy_only=False)
                  | cols["kvlist_value"].is_valid().to_numpy(zero_copy_only=False))
        self.kind[nested] = K_COMPLEX
        self.complex = np.flatnonzero(nested)
        self.strings = cols["string_value"]  # Arrow, for normalize._messages
        self.df = pl.DataFrame({
            "s": pl.Series(cols["string_value"]), "b": pl.Series(cols["bool_value"]),
            "i": pl.Series(cols["int_value"]), "d": pl.Series(cols["double_value"]),
            "by": pl.Series(cols["bytes_value"]), "si": pl.Series(cols["string_value_strindex"]).cast(pl.Int64),
        })
        self._nested: dict[int, Any] | None = None

    def without(self, drop: np.ndarray) -> KV:
        """The same lists without the rows ``drop`` marks (a boolean per row)."""
        keep = np.flatnonzero(~drop)
        sub = object.__new__(KV)
        sub.n, sub.m, sub.keys = self.n, len(keep), self.keys
        sub.own, sub.key_idx, sub.kind = self.own[keep], self.key_idx[keep], self.kind[keep]
        sub.counts = np.bincount(sub.own, minlength=self.n)
        sub.starts = np.zeros(self.n + 1, np.int64)
        np.cumsum(sub.counts, out=sub.starts[1:])
        sub.complex = np.flatnonzero(sub.kind == K_COMPLEX)
        sub.value = self.value.take(pa.array(keep)) if len(sub.complex) else self.value.slice(0, 0)
        sub.df = self.df[keep]
        sub.strings = None
        sub._nested = None
        return sub

    def lut(self, table: dict[str, Any], default: Any, dtype: Any) -> np.ndarray:
        """Each row's key looked up in ``table`` (once per distinct key)."""
        per_key = np.array([table.get(k, default) for k in self.keys] or [default], dtype=dtype)
        return per_key[self.key_idx] if self.m else np.zeros(0, dtype)

    def last_row(self, which: np.ndarray, w: int) -> np.ndarray:
        """Per list, its last row whose ``which`` is ``w`` (-1: none)."""
        rows = np.flatnonzero(which == w)
        keep = last_of_runs(self.own[rows])
        out = np.full(self.n, -1, np.int64)
        out[self.own[rows[keep]]] = rows[keep]
        return out

    def nested(self) -> dict[int, Any]:
        """Python values of the array / kvlist rows, decoded with normalize.anyvalue."""
        if self._nested is None:
            vals = self.value.take(pa.array(self.complex)).to_pylist() if len(self.complex) else []
            self._nested = {int(r): _py_value(v) for r, v in zip(self.complex, vals)}
        return self._nested

    def py_list(self, rows: np.ndarray) -> list[Any]:
        """The Python values (normalize.anyvalue's) of some rows."""
        rows = np.asarray(rows, np.int64)
        out: list[Any] = [None] * len(rows)
        if self.m == 0:
            return out
        kinds = self.kind[rows]
        for kind, col in _KIND_COLUMN.items():
            at = np.flatnonzero(kinds == kind)
            if len(at):
                vals = self.df[col].gather(rows[at]).to_list()
                if kind == K_BYTES:
                    vals = [base64.b64encode(v).decode() for v in vals]
                for j, v in zip(at.tolist(), vals):
                    out[j] = v
        nested = self.nested()
        for j in np.flatnonzero(kinds == K_COMPLEX).tolist():
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
        if kind == K_NONE:
            return pl.repeat(None, len(rows), dtype=pl.Null)
        values = pl.col(_KIND_COLUMN[kind]).gather(pl.lit(pl.Series(rows)))
        return values.bin.encode("base64") if kind == K_BYTES else values

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
        """The values of ``rows`` as JSON text, as orjson writes normalize.anyvalue's values."""
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
        at = np.flatnonzero(self.kind[rows] == K_COMPLEX)
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
    prefix = (pl.select(pl.when(pl.lit(pl.Series(first_of_runs(own)))).then(pl.lit(open_)).otherwise(pl.lit(","))
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


class Events:
    """The span events, flattened."""

    def __init__(self, lists: pa.Array, n: int) -> None:
        self.n = n
        ev = pc.list_flatten(lists)
        self.own = parents(lists)
        self.k = len(ev)
        f = dict(zip([x.name for x in ev.type], ev.flatten()))
        self.df = pl.DataFrame({"name": pl.Series(f["name"]), "t": pl.Series(f["time_unix_nano"]),
                                "dropped": pl.Series(f["dropped_attributes_count"]).cast(pl.Int64)})
        self.attrs = KV(f["attributes"], self.k)

    def json(self) -> pa.Array:
        if self.k == 0:
            return pa.array(["[]"] * self.n, pa.string())
        c = pl.col
        frags = self.df.with_columns(a=pl.Series(self.attrs.objects())).select(pl.concat_str([
            pl.lit('{"name":'), json_str(c("name")), pl.lit(',"time_unix_nano":'), c("t").cast(pl.String),
            pl.lit(',"attributes":'), c("a"), pl.lit(',"dropped_attributes_count":'), c("dropped").cast(pl.String),
            pl.lit("}"),
        ])).to_series()
        return _assemble(pl.Series([""] * self.k, dtype=pl.String), frags, self.own, self.n, "[", "]")


def links_json(lists: pa.Array, n: int) -> pa.Array:
    ln = pc.list_flatten(lists)
    if len(ln) == 0:
        return pa.array(["[]"] * n, pa.string())
    f = dict(zip([x.name for x in ln.type], ln.flatten()))
    c = pl.col

    def hex_id(col: str) -> pl.Expr:  # normalize.anyvalue.hex_id: empty or all-zero → null
        h = c(col).bin.encode("hex")
        return pl.when(h.str.strip_chars("0") != "").then(pl.concat_str([pl.lit('"'), h, pl.lit('"')])) \
            .otherwise(pl.lit("null"))

    df = pl.DataFrame({"t": pl.Series(f["trace_id"]), "s": pl.Series(f["span_id"]), "ts": pl.Series(f["trace_state"]),
                       "flags": pl.Series(f["flags"]).cast(pl.Int64),
                       "a": pl.Series(KV(f["attributes"], len(ln)).objects())})
    frags = df.select(pl.concat_str([
        pl.lit('{"trace_id":'), hex_id("t"), pl.lit(',"span_id":'), hex_id("s"), pl.lit(',"trace_state":'),
        pl.when(c("ts") != "").then(json_str(c("ts"))).otherwise(pl.lit("null")),
        pl.lit(',"attributes":'), c("a"), pl.lit(',"flags":'), c("flags").cast(pl.String), pl.lit("}"),
    ])).to_series()
    return _assemble(pl.Series([""] * len(ln), dtype=pl.String), frags, parents(lists), n, "[", "]")
