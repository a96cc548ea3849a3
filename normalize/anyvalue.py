"""OTLP ``AnyValue`` / ``KeyValue`` → plain Python values, ready for JSON.

The mapping follows the OTLP/JSON rendering of ``AnyValue``
(https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding) except that
values are unwrapped: string, bool, int and double stay as they are, bytes
become a base64 string, an array becomes a list and a kvlist a dict. An
``AnyValue`` with nothing set becomes ``None``.

This sits in the hot path of span ingest: every attribute of every span goes
through :func:`attributes`, so it avoids a function call for the common case
(a non-empty string) and dispatches the rest on ``WhichOneof`` once.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable
from typing import Any

import orjson

_b64 = base64.b64encode
_INT64_MIN, _INT64_END = -(2**63), 2**63


def value(v: Any) -> Any:
    """Convert one ``AnyValue`` message to a plain Python value."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    if kind == "bytes_value":
        return _b64(v.bytes_value).decode()
    return getattr(v, kind)


def attributes(kvs: Iterable[Any]) -> dict[str, Any]:
    """Convert a repeated ``KeyValue`` field to a dict (last duplicate key wins)."""
    out: dict[str, Any] = {}
    for kv in kvs:
        v = kv.value
        # Most attributes are non-empty strings: one field read, no dispatch.
        s = v.string_value
        if s:
            out[kv.key] = s
            continue
        kind = v.WhichOneof("value")
        if kind is None:
            out[kv.key] = None
        elif kind == "array_value":
            out[kv.key] = [value(x) for x in v.array_value.values]
        elif kind == "kvlist_value":
            out[kv.key] = attributes(v.kvlist_value.values)
        elif kind == "bytes_value":
            out[kv.key] = _b64(v.bytes_value).decode()
        else:
            out[kv.key] = getattr(v, kind)
    return out


def hex_id(raw: bytes) -> str | None:
    """A trace or span id as lowercase hex; empty or all-zero (invalid) ids → None."""
    if not raw or not any(raw):
        return None
    return raw.hex()


def micros(nanos: int) -> int | None:
    """Nanoseconds since the epoch → microseconds; 0 (unset in OTLP) → None."""
    return nanos // 1000 if nanos else None


def as_str(v: Any) -> str | None:
    """A string attribute; numbers become their text, "" and other types None."""
    if type(v) is str:
        return v or None
    if type(v) in (int, float):
        return str(v)
    return None


def as_text(v: Any) -> str | None:
    """Any attribute as text: a string as sent ("" → None), any other value its JSON."""
    if type(v) is str:
        return v or None
    if v is None:
        return None
    return orjson.dumps(v).decode()


def as_int(v: Any) -> int | None:
    """An integer attribute sent as int, double or numeric string; bools, junk and numbers
    beyond int64 (the lake's BIGINT: a string or a double can name any) → None."""
    t = type(v)
    if t is int:
        return v
    if t is float:
        return int(v) if _INT64_MIN <= v < _INT64_END else None  # NaN compares False
    if t is str:
        try:
            i = int(v)
        except ValueError:
            return as_int(as_float(v))
        return i if _INT64_MIN <= i < _INT64_END else None
    return None


def as_float(v: Any) -> float | None:
    """A number sent as double, int or numeric string; NaN, infinities and junk → None."""
    t = type(v)
    if t is float:
        return v if math.isfinite(v) else None
    if t is int:
        return float(v)
    if t is str:
        try:
            f = float(v)
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None
