"""The ``web:`` section of ``otel-config.yaml`` (docs/config.md): with it, ``otelbench
serve`` also serves the web UI, in a process of its own. Pydantic only, so the receiver
stays light."""

from __future__ import annotations

from otelbench.storage.config_base import Strict

DEFAULT_WEB_ENDPOINT = "127.0.0.1:8000"


class Web(Strict):
    endpoint: str = DEFAULT_WEB_ENDPOINT  # host:port the UI listens on
    # Host headers the MCP endpoint (/mcp) accepts besides 127.0.0.1, localhost and [::1]:
    # the names the web is reached by (DNS-rebinding protection; web/mcp_server.py)
    mcp_hosts: list[str] = []
