"""OTLP/gRPC receiver: the three ``Export`` services, decode → core → encode.

Handlers receive raw bytes (no deserializer) so the protobuf payload that is
logged is exactly what the client sent. grpcio's 4 MB default receive limit is
raised to the HTTP body limit; gzip-compressed messages are inflated by grpcio.
Backpressure is UNAVAILABLE with a ``RetryInfo`` detail, which OTLP exporters
honour (https://opentelemetry.io/docs/specs/otlp/#otlpgrpc-throttling).
"""

from __future__ import annotations

from concurrent import futures

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from otelbench.collector import encoding
from otelbench.collector.errors import ReceiverError, grpc_status
from otelbench.collector.service import Ingest

_SERVICES = {
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
    "metrics": "opentelemetry.proto.collector.metrics.v1.MetricsService",
}


def _sender(context: grpc.ServicerContext) -> tuple[str | None, str | None]:
    """The ingest key and the agent named in the call's metadata."""
    md = dict(context.invocation_metadata() or ())
    key = md.get("x-bench-key") or None
    auth = md.get("authorization", "")
    if key is None and auth[:7].lower() == "bearer ":
        key = auth[7:].strip()
    return key, md.get("x-bench-agent")


def _abort(context: grpc.ServicerContext, err: ReceiverError) -> None:
    code = grpc_status(err)
    if err.retry_after_s is not None:
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=err.retry_after_s)))
        status = status_pb2.Status(code=code.value[0], message=err.message, details=[detail])
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.abort(code, err.message)


def _handler(ingest: Ingest, signal: str):
    telemetry = ingest.telemetry

    def export(raw: bytes, context: grpc.ServicerContext) -> bytes:
        telemetry.count(telemetry.requests, "grpc")
        try:
            sender = ingest.authenticate(*_sender(context))
            message = encoding.decode(signal, raw, encoding.PROTOBUF)
            result = ingest.export(signal, message, raw, sender).result()
        except ReceiverError as err:
            telemetry.count(telemetry.refused, str(err.http_status))
            _abort(context, err)
            raise  # unreachable: abort raises
        return encoding.encode_response(signal, result.rejected, result.message, encoding.PROTOBUF)

    return grpc.unary_unary_rpc_method_handler(export)  # no (de)serializers: bytes in, bytes out


def create_server(ingest: Ingest, endpoint: str, *, max_message_bytes: int, workers: int = 16) -> tuple[grpc.Server, int]:
    """A started-ready (not started) server bound to ``endpoint``; returns it and the bound port."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="otlp-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ],
        maximum_concurrent_rpcs=workers * 4,
    )
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(_SERVICES[s], {"Export": _handler(ingest, s)}) for s in _SERVICES]
    )
    port = server.add_insecure_port(endpoint)
    if port == 0:
        raise OSError(f"cannot bind gRPC receiver to {endpoint}")
    return server, port
