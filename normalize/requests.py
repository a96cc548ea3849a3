"""The OTLP export request class of each signal: what a logged payload decodes into.

The receivers decode requests into these (``collector/encoding.py``) and the Parquet
exporter decodes the write-ahead log's payloads into them for ``normalize.rows``.
Light on purpose (protobuf classes only): the receiver process imports it.
"""

from __future__ import annotations

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

REQUEST_TYPES: dict[str, type[Message]] = {
    "traces": ExportTraceServiceRequest,
    "logs": ExportLogsServiceRequest,
    "metrics": ExportMetricsServiceRequest,
}
