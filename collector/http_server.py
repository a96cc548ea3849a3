"""OTLP/HTTP receiver: decode, call the core, encode. Nothing else.

POST ``/v1/traces``, ``/v1/logs``, ``/v1/metrics`` with ``application/x-protobuf``
or ``application/json`` bodies, optionally gzip-encoded; the response uses the
request's encoding (https://opentelemetry.io/docs/specs/otlp/#otlphttp). Also
``/metrics`` (the collector's own Prometheus metrics) and ``/healthz``.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from otelbench.collector import encoding
from otelbench.collector.errors import MethodNotAllowed, PayloadTooLarge, ReceiverError, http_status
from otelbench.collector.service import Ingest

_SIGNAL_PATHS = {"/v1/traces": "traces", "/v1/logs": "logs", "/v1/metrics": "metrics"}


def _bearer(request: Request) -> str | None:
    key = request.headers.get("x-bench-key")
    if key:
        return key
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return None


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"body of {declared} bytes exceeds the {limit}-byte limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"body exceeds the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


def _error_response(err: ReceiverError, fmt: str) -> Response:
    status, headers = http_status(err)
    body = encoding.encode_status(err.grpc_code, err.message, fmt)
    return Response(body, status_code=status, headers=headers, media_type=fmt)


def create_app(ingest: Ingest, *, max_body_bytes: int, metrics: Callable[[], str] | None = None) -> Starlette:
    telemetry = ingest.telemetry

    async def export(request: Request) -> Response:
        signal = _SIGNAL_PATHS[request.url.path]
        fmt = encoding.JSON if "json" in request.headers.get("content-type", "") else encoding.PROTOBUF
        telemetry.count(telemetry.requests, "http")
        try:
            if request.method != "POST":
                raise MethodNotAllowed(f"{request.method} is not allowed: OTLP/HTTP uses POST")
            fmt = encoding.media_type(request.headers.get("content-type"))
            sender = ingest.authenticate(_bearer(request), request.headers.get("x-bench-agent"))
            ingest.check_signal(signal)
            body = await _read_body(request, max_body_bytes)
            body = encoding.decompress(body, request.headers.get("content-encoding"), max_body_bytes)
            message = encoding.decode(signal, body, fmt)
            result = await asyncio.wrap_future(
                ingest.export(signal, message, body if fmt == encoding.PROTOBUF else None, sender)
            )
        except ReceiverError as err:
            telemetry.count(telemetry.refused, str(err.http_status))
            response = _error_response(err, fmt)
            if isinstance(err, MethodNotAllowed):
                response.headers["Allow"] = "POST"
            return response
        body = encoding.encode_response(signal, result.rejected, result.message, fmt)
        return Response(body, media_type=fmt)

    async def prometheus(request: Request) -> Response:
        return PlainTextResponse(metrics(), media_type="text/plain; version=0.0.4")

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("stopping" if ingest.stopping else "ok", status_code=503 if ingest.stopping else 200)

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    routes = [Route(path, export, methods=methods) for path in _SIGNAL_PATHS]
    routes.append(Route("/healthz", healthz))
    if metrics is not None:
        routes.append(Route("/metrics", prometheus))
    return Starlette(routes=routes)
