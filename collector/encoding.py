"""OTLP wire formats: protobuf and OTLP/JSON bodies, gzip, responses, error bodies.

OTLP/JSON is not plain proto3 JSON: trace and span ids are hex, not base64
(https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding), so ids are
rewritten before ``json_format`` sees them. Enums arrive as integers, int64 as
strings or numbers, and unknown fields are ignored.
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from otelbench.collector.errors import MalformedRequest, PayloadTooLarge, UnsupportedMediaType
from otelbench.normalize.requests import REQUEST_TYPES

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

RESPONSE_TYPES: dict[str, type[Message]] = {
    "traces": trace_service_pb2.ExportTraceServiceResponse,
    "logs": logs_service_pb2.ExportLogsServiceResponse,
    "metrics": metrics_service_pb2.ExportMetricsServiceResponse,
}
# partial_success.rejected_<what> per signal
REJECTED_FIELD = {"traces": "rejected_spans", "logs": "rejected_log_records", "metrics": "rejected_data_points"}

_HEX_ID_KEYS = frozenset(("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"))


def media_type(content_type: str | None) -> str:
    """The request's format (PROTOBUF or JSON), else 415."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base == PROTOBUF:
        return PROTOBUF
    if base == JSON:
        return JSON
    raise UnsupportedMediaType(
        f"unsupported content type {content_type!r}: use {PROTOBUF} or {JSON}"
    )


def decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo Content-Encoding with a hard cap on the inflated size (gzip bombs → 413)."""
    enc = (encoding or "identity").strip().lower()
    if enc in ("", "identity"):
        return body
    if enc not in ("gzip", "deflate"):
        raise MalformedRequest(f"unsupported content encoding {encoding!r}: use gzip")
    d = zlib.decompressobj(wbits=31 if enc == "gzip" else 15)
    try:
        out = d.decompress(body, limit + 1)
    except zlib.error as exc:
        raise MalformedRequest(f"body is not valid {enc}: {exc}") from exc
    if len(out) > limit or d.unconsumed_tail:
        raise PayloadTooLarge(f"decompressed body exceeds the {limit}-byte limit")
    if not d.eof:
        raise MalformedRequest(f"body is truncated {enc}")
    return out


def _hex_ids_to_base64(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _HEX_ID_KEYS and isinstance(value, str):
                if value:
                    try:
                        node[key] = base64.b64encode(bytes.fromhex(value)).decode()
                    except ValueError as exc:
                        raise MalformedRequest(f"{key} {value[:40]!r} is not hex") from exc
            elif isinstance(value, (dict, list)):
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, (dict, list)):
                _hex_ids_to_base64(item)


def decode(signal: str, body: bytes, fmt: str) -> Message:
    """Parse a request body; anything undecodable is a 400 with the parser's reason."""
    request = REQUEST_TYPES[signal]()
    if fmt == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise MalformedRequest(f"body is not a valid {request.DESCRIPTOR.name} protobuf: {exc}") from exc
        return request
    try:
        tree = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedRequest(f"body is not valid JSON: {exc}") from exc
    if not isinstance(tree, dict):
        raise MalformedRequest(f"body must be a JSON object ({request.DESCRIPTOR.name})")
    _hex_ids_to_base64(tree)
    try:
        json_format.ParseDict(tree, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise MalformedRequest(f"body is not a valid OTLP/JSON {request.DESCRIPTOR.name}: {exc}") from exc
    return request


def encode_response(signal: str, rejected: int, message: str | None, fmt: str) -> bytes:
    response = RESPONSE_TYPES[signal]()
    if rejected or message:
        ps = response.partial_success
        setattr(ps, REJECTED_FIELD[signal], rejected)
        ps.error_message = message or ""
    if fmt == JSON:
        return orjson.dumps(json_format.MessageToDict(response))
    return response.SerializeToString()


def encode_status(grpc_code: int, message: str, fmt: str) -> bytes:
    """A ``google.rpc.Status`` body, as OTLP/HTTP error responses carry."""
    if fmt == JSON:
        return orjson.dumps({"code": grpc_code, "message": message})
    return status_pb2.Status(code=grpc_code, message=message).SerializeToString()
