"""A tiny OTLP/HTTP capture server: keeps every request body as sent, for recording fixtures.

Real SDK exporters post to ``<url>/<name>/v1/<signal>``; the body is kept, untrimmed, with
the name it came under (one name per recorded instrumentation or framework), and answered
200 with an empty ``Export…Response``. ``protobuf_to_otlp_json`` turns a body into the
OTLP/JSON the fixtures are stored as (hex ids, integer enums, int64 as strings):
https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding; ``otlp_json_to_protobuf``
turns one back. scripts/record_fixtures.py, record_frameworks.py and compare_frameworks.py
use it.
"""

from __future__ import annotations

import base64
import gzip
import http.server
import json
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

SIGNALS = ("traces", "logs", "metrics")

_REQUEST_TYPES = {
    "traces": "opentelemetry.proto.collector.trace.v1.trace_service_pb2:ExportTraceServiceRequest",
    "logs": "opentelemetry.proto.collector.logs.v1.logs_service_pb2:ExportLogsServiceRequest",
    "metrics": "opentelemetry.proto.collector.metrics.v1.metrics_service_pb2:ExportMetricsServiceRequest",
}
_ID_KEYS = {"traceId", "spanId", "parentSpanId"}


def _request_class(signal: str) -> Any:
    module, name = _REQUEST_TYPES[signal].split(":")
    return getattr(__import__(module, fromlist=[name]), name)


def _hex_ids(node: Any) -> Any:
    """OTLP/JSON writes trace and span ids as hex where proto3 JSON writes base64."""
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def protobuf_to_otlp_json(signal: str, body: bytes) -> dict[str, Any]:
    from google.protobuf import json_format

    request = _request_class(signal)()
    request.ParseFromString(body)
    return _hex_ids(json_format.MessageToDict(request, use_integers_for_enums=True))


def _base64_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode() if k in _ID_KEYS and isinstance(v, str) else _base64_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_base64_ids(v) for v in node]
    return node


def parse_otlp_json(signal: str, doc: dict[str, Any] | str) -> Any:
    """An OTLP/JSON document of one signal (hex ids, as the OTLP spec writes them) → its
    ``Export*ServiceRequest``. ``json_format`` reads ``bytes`` fields as base64, so the ids
    are re-encoded first; unknown fields are ignored, as OTLP/JSON receivers must."""
    from google.protobuf import json_format

    if isinstance(doc, str):
        doc = json.loads(doc)
    return json_format.Parse(json.dumps(_base64_ids(doc)), _request_class(signal)(), ignore_unknown_fields=True)


def otlp_json_to_protobuf(signal: str, doc: dict[str, Any]) -> bytes:
    """The inverse: an OTLP/JSON document (hex ids) → the serialized request, as an SDK sends it."""
    return parse_otlp_json(signal, doc).SerializeToString()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, names: frozenset[str] | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.names = names
        self.lock = threading.Lock()
        self.bodies: list[tuple[str, str, bytes]] = []  # (name, signal, protobuf)
        self.refused: list[tuple[str, int]] = []  # (path, status): a recording that lost a body says so


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        parts = self.path.strip("/").split("/")  # /<name>/v1/<signal>
        body = self._read_body()
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        status = 200
        if len(parts) != 3 or parts[1] != "v1" or parts[2] not in SIGNALS:
            status = 404
        elif self.server.names is not None and parts[0] not in self.server.names:
            status = 404
        elif self.headers.get("Content-Type") != "application/x-protobuf":
            status = 415
        with self.server.lock:
            if status == 200:
                self.server.bodies.append((parts[0], parts[2], body))
            else:
                self.server.refused.append((self.path, status))
        if status != 200:
            self.send_error(status)
            return
        # an empty Export*ServiceResponse serializes to zero bytes
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _read_body(self) -> bytes:
        """The request body, sized by Content-Length or sent chunked (the OTel JS exporters stream it)."""
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            return self.rfile.read(int(self.headers.get("Content-Length", 0)))
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()  # the CRLF after each chunk
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers, then the empty line
            pass
        return b"".join(chunks)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class CaptureServer:
    """The capture server on 127.0.0.1 and a free port, served from a thread while in ``with``.

    ``names`` limits the accepted ``<name>`` path segments (None: any).
    """

    def __init__(self, names: frozenset[str] | None = None) -> None:
        self._server = _Server(names)
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-capture", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def bodies(self, name: str | None = None) -> list[tuple[str, str, bytes]]:
        """The bodies received so far, in arrival order (one name's, or all)."""
        with self._server.lock:
            return [b for b in self._server.bodies if name is None or b[0] == name]

    @property
    def refused(self) -> list[tuple[str, int]]:
        with self._server.lock:
            return list(self._server.refused)

    def __enter__(self) -> CaptureServer:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def write_recordings(bodies: list[tuple[str, str, bytes]], folder: Path) -> list[Path]:
    """``<folder>/<signal>-<n>.json`` for each body, numbered per signal in arrival order."""
    counts: dict[str, int] = {}
    written = []
    for _name, signal, body in bodies:
        counts[signal] = counts.get(signal, 0) + 1
        path = folder / f"{signal}-{counts[signal]}.json"
        path.write_text(json.dumps(protobuf_to_otlp_json(signal, body), indent=1) + "\n")
        written.append(path)
    return written
