"""Load OTLP/JSON test files (hex ids, as the OTLP spec writes them) into protobuf requests.

Python's ``json_format.Parse`` reads ``bytes`` fields as base64, so the trace and span
ids are re-encoded first; unknown fields are ignored, as OTLP/JSON receivers must.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

RECORDED = Path(__file__).parent / "recorded"

REQUEST_TYPES: dict[str, type[Message]] = {
    "traces": ExportTraceServiceRequest,
    "logs": ExportLogsServiceRequest,
    "metrics": ExportMetricsServiceRequest,
}
# Spans, links, log records and exemplars name their ids with these keys.
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


def _base64_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode() if k in _ID_KEYS and isinstance(v, str) else _base64_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_base64_ids(v) for v in node]
    return node


def parse_otlp_json(signal: str, doc: dict[str, Any] | str) -> Message:
    """An OTLP/JSON document of one signal → its ``Export*ServiceRequest``."""
    if isinstance(doc, str):
        doc = json.loads(doc)
    return json_format.Parse(json.dumps(_base64_ids(doc)), REQUEST_TYPES[signal](), ignore_unknown_fields=True)


def load(path: Path) -> Message:
    """A file named ``<signal>-<n>.json`` → its request."""
    signal = path.name.split("-", 1)[0]
    return parse_otlp_json(signal, path.read_text())


def recorded(instrumentation: str, signal: str) -> list[Message]:
    """Every recorded request of one signal from one instrumentation, in the order sent."""
    paths = sorted((RECORDED / instrumentation).glob(f"{signal}-*.json"), key=lambda p: int(p.stem.split("-")[-1]))
    return [load(p) for p in paths]
