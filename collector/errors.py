"""Receiver errors and their one mapping to HTTP and gRPC status.

Mirrors the OTel Collector's ``receiver/otlpreceiver/internal/errors``: the core
raises these; the HTTP and gRPC adapters translate them here and nowhere else.
Permanent errors (bad data) are not retried by OTLP clients; retryable ones carry
a Retry-After / RetryInfo delay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.rpc import code_pb2  # the gRPC status codes (google.rpc.Code), without importing grpc


@dataclass
class ReceiverError(Exception):
    message: str
    retry_after_s: int | None = None

    http_status = 500
    grpc_code = code_pb2.INTERNAL  # google.rpc.Code (a class attribute, not a dataclass field)
    retryable = False

    def __str__(self) -> str:
        return self.message


class MalformedRequest(ReceiverError):
    http_status = 400
    grpc_code = code_pb2.INVALID_ARGUMENT


class Unauthenticated(ReceiverError):
    http_status = 401
    grpc_code = code_pb2.UNAUTHENTICATED


class Forbidden(ReceiverError):
    """A known key without the scope the request needs (a read-only key sending data)."""

    http_status = 403
    grpc_code = code_pb2.PERMISSION_DENIED


class NotFound(ReceiverError):
    http_status = 404
    grpc_code = code_pb2.UNIMPLEMENTED


class MethodNotAllowed(ReceiverError):
    http_status = 405
    grpc_code = code_pb2.UNIMPLEMENTED


class PayloadTooLarge(ReceiverError):
    http_status = 413
    grpc_code = code_pb2.RESOURCE_EXHAUSTED


class UnsupportedMediaType(ReceiverError):
    http_status = 415
    grpc_code = code_pb2.INVALID_ARGUMENT


class TooManyRequests(ReceiverError):
    """Too many requests in flight: the client should slow down."""

    http_status = 429
    # RESOURCE_EXHAUSTED is only retried by clients when RetryInfo is attached;
    # UNAVAILABLE is always retried, so backpressure uses it on gRPC.
    grpc_code = code_pb2.UNAVAILABLE
    retryable = True


class QuotaExceeded(ReceiverError):
    """A key's quota is used up: retry after the window resets (Retry-After / RetryInfo).
    RESOURCE_EXHAUSTED on gRPC: clients retry it only after the RetryInfo delay, not at once."""

    http_status = 429
    grpc_code = code_pb2.RESOURCE_EXHAUSTED
    retryable = True


class Unavailable(ReceiverError):
    """The write-ahead log is full or the service is stopping."""

    http_status = 503
    grpc_code = code_pb2.UNAVAILABLE
    retryable = True


def http_status(err: ReceiverError) -> tuple[int, dict[str, str]]:
    """Status code and extra headers for an error."""
    headers = {}
    if err.retry_after_s is not None:
        headers["Retry-After"] = str(err.retry_after_s)
    return err.http_status, headers


def grpc_status(err: ReceiverError) -> Any:
    """The ``grpc.StatusCode`` for an error (grpc is imported by the gRPC receiver only)."""
    import grpc

    return next(c for c in grpc.StatusCode if c.value[0] == err.grpc_code)
