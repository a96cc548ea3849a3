"""The web UI as ``otelbench serve`` and ``otelbench web`` run it: the receivers and keys it
is handed, and its process inside serve (``child_main``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otelbench.collector.config import Config
    from otelbench.web.config import Web
    from otelbench.web.receivers import Receivers

# uvicorn's WebSocket settings for the live dashboard: a viewer sends nothing, so 4 KiB a
# message is plenty; no per-message deflate, which would compress each feed once per viewer
# (and hold ~40 KiB of zlib state per connection)
WEBSOCKET = {"ws_max_size": 4096, "ws_per_message_deflate": False}


def keyring_of(config: Config | None) -> Any:
    """The config's keys as the web checks read keys with (None: no keys, public data only)."""
    from otelbench.collector.keys import Keyring

    return Keyring(config.keys) if config is not None and config.keys else None


def receivers_of(config: Config, http_port: int | None = None, grpc_port: int | None = None) -> Receivers:
    """The collector's OTLP endpoints as the home page shows them: the config's, with the
    ports the receivers were bound to when known (``otelbench serve``: a config may say 0)."""
    from otelbench.web.receivers import Receivers

    otlp = config.receivers.otlp
    protocols = otlp.protocols if otlp else None

    def endpoint(proto: object, port: int | None) -> str | None:
        if proto is None:
            return None
        host, _, configured = proto.endpoint.rpartition(":")  # type: ignore[attr-defined]
        return f"{host}:{port or configured}"

    return Receivers(http=endpoint(protocols and protocols.http, http_port),
                     grpc=endpoint(protocols and protocols.grpc, grpc_port),
                     auth=bool(otlp and otlp.auth.keys))


def child_main(lake: str, privacy: object, web: Web, parent_pid: int, receivers: Receivers | None = None,
               wal_dir: str | None = None, state_fd: int | None = None, keys: tuple = ()) -> None:
    """The web UI inside ``otelbench serve``, in a process of its own (storage.process): its
    DuckDB and templates stay out of the receiver, and it dies with serve. Given the
    write-ahead log and the collector's shared state, its live feed follows acknowledged
    spans there (``collector.tail``) instead of waiting for them to reach Parquet."""
    import signal

    import uvicorn

    from otelbench.collector.keys import Keyring
    from otelbench.storage.process import die_with_parent
    from otelbench.web.app import create_app

    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # serve decides when we stop (SIGTERM)
    spans = None
    if wal_dir is not None and state_fd is not None:
        from otelbench.collector.state import SharedState
        from otelbench.collector.tail import WalSpans
        from otelbench.web.feed import SPAN_COLUMNS

        state = SharedState(fd=state_fd)
        spans = WalSpans(wal_dir, lambda: state.durable_pos, SPAN_COLUMNS)
    host, _, port = web.endpoint.rpartition(":")
    app = create_app(lake, privacy, receivers, live_spans=spans, mcp_hosts=web.mcp_hosts,  # type: ignore[arg-type]
                     keyring=Keyring(keys) if keys else None)
    uvicorn.run(app, host=host, port=int(port), log_level="warning", **WEBSOCKET)
