"""Serialized ``ExportTraceServiceRequest`` messages → one Arrow record batch.

``decode(payloads)`` returns what ptars' ``list_to_record_batch`` returns — the same
schema (``SCHEMA``: resource → scope → span nested lists; each ``AnyValue`` a struct of
nullable members, an array or kvlist element kept as its serialized bytes) and the same
values — read by ``normalize._wire`` in C, with Python's lock released while it reads, so
that the flusher's other threads run meanwhile. ptars decodes where the extension is not
built (a machine without a C compiler); ``COMPILED`` says which. Both raise
``ValueError`` for a payload that is not valid protobuf, or a string that is not UTF-8.

tests/normalize/test_wire.py holds the two to the same answers, and to protobuf's own
parser where ptars departs from it (repeated singular fields, oneof members set twice).
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

try:
    from otelbench.normalize import _wire
except ImportError:  # not compiled: ptars decodes
    _wire = None

COMPILED = _wire is not None

# -- the schema (ptars' for ExportTraceServiceRequest) -------------------------------------


def _f(name: str, typ: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, typ, nullable=nullable)


def _list(item: pa.DataType) -> pa.DataType:
    return pa.list_(_f("item", item))


_ELEMENTS = pa.struct([_f("values", _list(pa.binary()))])
ANY_VALUE = pa.struct([
    _f("string_value", pa.string(), True), _f("bool_value", pa.bool_(), True), _f("int_value", pa.int64(), True),
    _f("double_value", pa.float64(), True), _f("array_value", _ELEMENTS, True),
    _f("kvlist_value", _ELEMENTS, True), _f("bytes_value", pa.binary(), True),
    _f("string_value_strindex", pa.int32(), True),
])
KEY_VALUE = pa.struct([_f("key", pa.string()), _f("value", ANY_VALUE, True), _f("key_strindex", pa.int32())])
ATTRIBUTES = _list(KEY_VALUE)
ENTITY_REF = pa.struct([_f("schema_url", pa.string()), _f("type", pa.string()),
                        _f("id_keys", _list(pa.string())), _f("description_keys", _list(pa.string()))])
RESOURCE = pa.struct([_f("attributes", ATTRIBUTES), _f("dropped_attributes_count", pa.uint32()),
                      _f("entity_refs", _list(ENTITY_REF))])
SCOPE = pa.struct([_f("name", pa.string()), _f("version", pa.string()), _f("attributes", ATTRIBUTES),
                   _f("dropped_attributes_count", pa.uint32())])
EVENT = pa.struct([_f("time_unix_nano", pa.uint64()), _f("name", pa.string()), _f("attributes", ATTRIBUTES),
                   _f("dropped_attributes_count", pa.uint32())])
LINK = pa.struct([_f("trace_id", pa.binary()), _f("span_id", pa.binary()), _f("trace_state", pa.string()),
                  _f("attributes", ATTRIBUTES), _f("dropped_attributes_count", pa.uint32()),
                  _f("flags", pa.uint32())])
STATUS = pa.struct([_f("message", pa.string()), _f("code", pa.int32())])
SPAN = pa.struct([
    _f("trace_id", pa.binary()), _f("span_id", pa.binary()), _f("trace_state", pa.string()),
    _f("parent_span_id", pa.binary()), _f("name", pa.string()), _f("kind", pa.int32()),
    _f("start_time_unix_nano", pa.uint64()), _f("end_time_unix_nano", pa.uint64()), _f("attributes", ATTRIBUTES),
    _f("dropped_attributes_count", pa.uint32()), _f("events", _list(EVENT)), _f("dropped_events_count", pa.uint32()),
    _f("links", _list(LINK)), _f("dropped_links_count", pa.uint32()), _f("status", STATUS, True),
    _f("flags", pa.uint32()),
])
SCOPE_SPANS = pa.struct([_f("scope", SCOPE, True), _f("spans", _list(SPAN)), _f("schema_url", pa.string())])
RESOURCE_SPANS = pa.struct([_f("resource", RESOURCE, True), _f("scope_spans", _list(SCOPE_SPANS)),
                            _f("schema_url", pa.string())])
SCHEMA = pa.schema([_f("resource_spans", _list(RESOURCE_SPANS))])


def decode(payloads: list[bytes]) -> pa.RecordBatch:
    """The payloads as one record batch of ``SCHEMA``, a row each."""
    if _wire is None:
        return _ptars().list_to_record_batch(payloads)
    columns = _wire.walk(payloads)
    return pa.RecordBatch.from_arrays([_Assembly(columns).payloads()], schema=SCHEMA)


@functools.cache
def _ptars_pool() -> Any:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from ptars import HandlerPool

    pool = HandlerPool([ExportTraceServiceRequest.DESCRIPTOR.file])
    return pool, pool.get_for_message(ExportTraceServiceRequest.DESCRIPTOR)


def _ptars() -> Any:
    """ptars' converter (its pool kept alive): the fallback, and the tests' second opinion."""
    return _ptars_pool()[1]


# -- assembly: _wire's buffers → nested arrays ---------------------------------------------

_EMPTY = pa.py_buffer(b"")
_FIRST = {name: first for name, first, _ in _wire.LAYOUT} if _wire is not None else {}  # level → its first column


class _Assembly:
    """Builds the nested arrays from ``_wire.walk``'s columns, bottom up, by level name."""

    def __init__(self, columns: list[tuple]) -> None:
        self.root = columns[0]
        self.cols = columns[1:]

    def _col(self, level: str, j: int, typ: pa.DataType, children: list[pa.Array] | None = None) -> pa.Array:
        rows, data, offsets, validity = self.cols[_FIRST[level] + j]
        bits = pa.py_buffer(validity) if validity is not None else None
        data = pa.py_buffer(data) if data is not None else _EMPTY
        if children is not None:  # a struct (validity only) or a list (offsets)
            buffers = [bits] if offsets is None else [bits, pa.py_buffer(offsets)]
            return pa.Array.from_buffers(typ, rows, buffers, children=children)
        if offsets is not None:
            return pa.Array.from_buffers(typ, rows, [bits, pa.py_buffer(offsets), data])
        return pa.Array.from_buffers(typ, rows, [bits, data])

    def _items(self, level: str, typ: pa.DataType) -> pa.Array:
        """The one column of a list's element level (strings or bytes)."""
        return self._col(level, 0, typ)

    @staticmethod
    def _struct(typ: pa.StructType, fields: list[pa.Array]) -> pa.Array:
        """A level's rows: a struct that is never null."""
        return pa.StructArray.from_arrays(fields, fields=list(typ))

    def _key_values(self, owner: str) -> pa.Array:
        lv = f"{owner}.kv"
        c = functools.partial(self._col, lv)
        array = c(7, _list(pa.binary()), [self._items(f"{lv}.array", pa.binary())])
        kvlist = c(9, _list(pa.binary()), [self._items(f"{lv}.kvlist", pa.binary())])
        value = c(1, ANY_VALUE, [
            c(2, pa.string()), c(3, pa.bool_()), c(4, pa.int64()), c(5, pa.float64()),
            c(6, _ELEMENTS, [array]), c(8, _ELEMENTS, [kvlist]), c(10, pa.binary()), c(11, pa.int32()),
        ])
        return self._struct(KEY_VALUE, [c(0, pa.string()), value, c(12, pa.int32())])

    def _attributes(self, level: str, j: int, owner: str) -> pa.Array:
        return self._col(level, j, ATTRIBUTES, [self._key_values(owner)])

    def _spans(self) -> pa.Array:
        c = functools.partial(self._col, "event")
        events = self._struct(EVENT, [c(0, pa.uint64()), c(1, pa.string()),
                                               self._attributes("event", 2, "event"), c(3, pa.uint32())])
        c = functools.partial(self._col, "link")
        links = self._struct(LINK, [c(0, pa.binary()), c(1, pa.binary()), c(2, pa.string()),
                                            self._attributes("link", 3, "link"), c(4, pa.uint32()),
                                            c(5, pa.uint32())])
        c = functools.partial(self._col, "span")
        status = c(14, STATUS, [c(15, pa.string()), c(16, pa.int32())])
        return self._struct(SPAN, [
            c(0, pa.binary()), c(1, pa.binary()), c(2, pa.string()), c(3, pa.binary()), c(4, pa.string()),
            c(5, pa.int32()), c(6, pa.uint64()), c(7, pa.uint64()), self._attributes("span", 8, "span"),
            c(9, pa.uint32()), c(10, _list(EVENT), [events]), c(11, pa.uint32()), c(12, _list(LINK), [links]),
            c(13, pa.uint32()), status, c(17, pa.uint32()),
        ])

    def payloads(self) -> pa.Array:
        c = functools.partial(self._col, "entity")
        entities = self._struct(ENTITY_REF, [
            c(0, pa.string()), c(1, pa.string()),
            c(2, _list(pa.string()), [self._items("entity.id_keys", pa.string())]),
            c(3, _list(pa.string()), [self._items("entity.description_keys", pa.string())]),
        ])
        c = functools.partial(self._col, "ss")
        scope = c(0, SCOPE, [c(1, pa.string()), c(2, pa.string()), self._attributes("ss", 3, "scope"),
                             c(4, pa.uint32())])
        scope_spans = self._struct(SCOPE_SPANS, [scope, c(5, _list(SPAN), [self._spans()]), c(6, pa.string())])
        c = functools.partial(self._col, "rs")
        resource = c(0, RESOURCE, [self._attributes("rs", 1, "resource"), c(2, pa.uint32()),
                                   c(3, _list(ENTITY_REF), [entities])])
        resource_spans = self._struct(RESOURCE_SPANS, [resource, c(4, _list(SCOPE_SPANS), [scope_spans]),
                                                             c(5, pa.string())])
        n, _, offsets, _ = self.root
        return pa.Array.from_buffers(_list(RESOURCE_SPANS), n, [None, pa.py_buffer(offsets)],
                                     children=[resource_spans])

