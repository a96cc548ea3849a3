"""DuckDB values as JSON and as text: one rendering for the CLI, JSON routes and MCP.

``json_value`` turns what ``Gateway.query`` returns into plain JSON values (ISO 8601
times, seconds for intervals, numbers for decimals, base64 for blobs, arrays for lists,
objects for structs and maps; JSON has no NaN or infinity, so NaN is null and ±inf the
strings "Infinity"/"-Infinity"); ``text`` is the one-cell form (NULL empty, nested values
as JSON); ``records`` and ``result_json`` shape whole results.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Sequence
from typing import Any

__all__ = ["json_value", "text", "records", "result_json", "dumps"]


def json_value(value: Any) -> Any:
    """A DuckDB value as JSON."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return value


def text(value: Any) -> str:
    """A value as one text cell: NULL is empty, nested values are JSON."""
    if value is None:
        return ""
    plain = json_value(value)
    if isinstance(plain, (list, dict)):
        return json.dumps(plain, ensure_ascii=False)
    return str(plain)


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as JSON objects keyed by column name."""
    return [dict(zip(columns, (json_value(v) for v in row))) for row in rows]


def result_json(result: Any) -> dict[str, Any]:
    """A ``storage.duckdb.Result`` as the one JSON shape every JSON answer uses."""
    return {
        "columns": list(result.columns),
        "types": list(result.types),
        "rows": [[json_value(v) for v in row] for row in result.rows],
        "truncated": bool(result.truncated),
    }


def dumps(body: Any, *, indent: int | None = None) -> str:
    """JSON text of an already plain body (``records``, ``result_json``): UTF-8 kept,
    never NaN (strict JSON parsers reject it)."""
    return json.dumps(body, ensure_ascii=False, indent=indent, allow_nan=False)
