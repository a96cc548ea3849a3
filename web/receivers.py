"""How the home page tells an OpenTelemetry SDK to reach this instance's collector: its
OTLP receivers (``Receivers``, handed in by whoever starts the web) and the lines to run.

The collector's endpoints come from the config the web was started with (``otelbench web
--config``, ``otelbench serve``), else the collector's defaults. A receiver bound to every
interface (``0.0.0.0:4318``) is shown with the host the visitor reached this page on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The collector's defaults (collector/__init__.py): the web does not import the collector,
# tests/web/test_home.py checks that these agree.
DEFAULT_HTTP_ENDPOINT = "127.0.0.1:4318"
DEFAULT_GRPC_ENDPOINT = "127.0.0.1:4317"
_ANY_HOST = ("", "0.0.0.0", "::", "[::]")


@dataclass(frozen=True)
class Receivers:
    """The collector's OTLP endpoints (``host:port``; None: that receiver is off) and
    whether they want an ingest key."""

    http: str | None = DEFAULT_HTTP_ENDPOINT
    grpc: str | None = DEFAULT_GRPC_ENDPOINT
    auth: bool = False


def sdk_setup(receivers: Receivers, visitor_host: str) -> list[dict[str, Any]]:
    """One entry per receiver that is on: its protocol, URL, the environment variables an
    OTel SDK reads, and the lines to run for Python and for JavaScript (Node)."""
    out = []
    for protocol, endpoint, note in (("http/protobuf", receivers.http, "OTLP over HTTP: protobuf (or JSON)"),
                                     ("grpc", receivers.grpc, "OTLP over gRPC")):
        if endpoint is None:
            continue
        host, _, port = endpoint.rpartition(":")
        url = f"http://{visitor_host if host in _ANY_HOST else host}:{port}"
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
               "OTEL_SERVICE_NAME": "my-agent"}
        if receivers.auth:
            env["OTEL_EXPORTER_OTLP_HEADERS"] = "x-bench-key=YOUR_KEY"
        exports = "".join(f"export {k}={v}\n" for k, v in env.items())
        out.append({
            "protocol": protocol, "url": url, "port": port, "what": note, "env": env,
            "python": ("pip install opentelemetry-distro opentelemetry-exporter-otlp\n" + exports
                       + "opentelemetry-instrument python my_agent.py"),
            "js": ("npm install @opentelemetry/api @opentelemetry/auto-instrumentations-node\n" + exports
                   + "node --require @opentelemetry/auto-instrumentations-node/register my_agent.js"),
        })
    return out
