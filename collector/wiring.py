"""Wiring: build the components the config names, start them in order, stop them in reverse.

Start: open the write-ahead log (cutting a torn tail), start the flusher process
(which replays whatever the last run left), the compaction scheduler, the group
committer, the exporters, then the receivers. Stop (SIGTERM): refuse new requests, stop
the receivers, let the committer drain, stop a compaction in progress (its journal lets
the next start settle it), tell the flusher to write everything and wait for it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import uvicorn

from otelbench.collector import flusher, wal
from otelbench.collector.compactor import Scheduler
from otelbench.collector.keys import Keyring
from otelbench.collector.config import Config
from otelbench.collector.service import Ingest
from otelbench.collector.state import SharedState
from otelbench.collector.telemetry import Telemetry
from otelbench.storage import is_remote
from otelbench.storage.process import Child

log = logging.getLogger("otelbench.collector")

FLUSHER_START_TIMEOUT_S = 60.0
FLUSHER_STOP_TIMEOUT_S = 300.0


def _split_endpoint(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return (host.strip("[]") or "0.0.0.0"), int(port)


def _bind(endpoint: str) -> socket.socket:
    host, port = _split_endpoint(endpoint)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


class _ThreadServer(uvicorn.Server):
    """uvicorn in a background thread; the main thread owns the signals."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()


@dataclass
class Collector:
    config: Config
    http_port: int | None = None
    grpc_port: int | None = None
    state: SharedState = field(default_factory=SharedState)
    clock: Callable[[], float] = time.time  # the keys' quota windows and expiry (a test's own: its minute)
    _stoppers: list[Any] = field(default_factory=list)
    _metrics: list[Callable[[], list[Any]]] = field(default_factory=list)

    def start(self) -> "Collector":
        cfg = self.config
        svc = cfg.service
        wal_dir = os.path.abspath(svc.wal.dir)
        workers, starts = flusher.plan_workers(Path(wal_dir), cfg.exporters.parquet.workers if cfg.exporters.parquet else 1)
        checkpoint_seq, _ = wal.split(min(starts.values()))
        writer = wal.WalWriter(
            wal_dir, svc.wal.segment_size_mib << 20, fsync=svc.wal.fsync, first_seq=checkpoint_seq + 1
        )
        self.state.set("durable_pos", writer.head)
        self.state.set("workers", workers)
        self.telemetry = Telemetry(self.state)
        self.telemetry.wal_bytes_on_start = wal.wal_bytes(wal_dir)
        parquet = cfg.exporters.parquet
        if parquet is not None:
            os.environ.update(parquet.s3.environment())  # for the workers, the compactor, serve's readers
        owner = flusher.collector_id(cfg)  # made now, before the workers read it
        settings = flusher.WorkerSettings.of(cfg)

        self._flushers = [
            Child("otelbench.collector.flusher:main", (settings, self.state.fd, k, starts, os.getpid()),
                  name=f"otelbench-flusher-{k}", pass_fds=(self.state.fd,), defaults=flusher.ALLOCATOR_ENV)
            for k in range(workers)
        ]
        for p in self._flushers:
            p.start()
        deadline = time.monotonic() + FLUSHER_START_TIMEOUT_S
        while not self.state.all_ready:
            for p in self._flushers:
                if not p.is_alive():
                    raise RuntimeError(f"flusher {p.name} failed to start (exit code {p.exitcode})")
            if time.monotonic() > deadline:
                raise RuntimeError("the flusher processes did not become ready")
            time.sleep(0.01)

        if parquet is not None and parquet.compaction.enabled:
            location = parquet.path if is_remote(parquet.path) else os.path.abspath(parquet.path)
            self._compactor = Scheduler(parquet.compaction, location, self.state, svc.telemetry.log_level,
                                        owner).start()

        def on_durable(pos: int, nbytes: int) -> None:
            self.state.set("durable_pos", pos)

        self.committer = wal.GroupCommitter(
            writer, max_pending_bytes=svc.limits.max_pending_mib << 20, on_durable=on_durable
        )
        forwarders = self._start_exporters()
        receiver = cfg.receivers.otlp
        self.ingest = Ingest(
            signals=cfg.service.pipelines.keys(),
            keys=Keyring(cfg.keys, self.clock),
            committer=self.committer,
            telemetry=self.telemetry,
            max_inflight=svc.limits.max_inflight_requests,
            max_unflushed_bytes=svc.limits.max_unflushed_mib << 20,
            retry_after_s=svc.limits.retry_after_s,
            forwarders=forwarders,
        )
        if receiver and receiver.protocols.grpc:
            self._start_grpc(receiver.protocols.grpc)
        if receiver and receiver.protocols.http:
            self._start_http(receiver.protocols.http)
        log.info("collector started (http=%s grpc=%s)", self.http_port, self.grpc_port)
        return self

    def _start_exporters(self) -> list[Any]:
        forwarders = []
        if self.config.exporters.otlp is not None:
            from otelbench.exporters.otlp import OtlpForwarder  # each exporter and receiver only when configured

            count = functools.partial(self.telemetry.count, self.telemetry.forward)
            fwd = OtlpForwarder(self.config.exporters.otlp, count, self.config.signals_to("otlp"))
            self._stoppers.append(fwd.stop)
            forwarders.append(fwd.offer)
        if self.config.exporters.debug is not None:
            from otelbench.exporters.debug import DebugExporter

            dbg = DebugExporter(self.config.exporters.debug, self.config.signals_to("debug"))
            self._stoppers.append(dbg.stop)
            forwarders.append(dbg.offer)
        return forwarders

    def _start_grpc(self, cfg: Any) -> None:
        from otelbench.collector.grpc_server import create_server

        server, self.grpc_port = create_server(
            self.ingest, cfg.endpoint, max_message_bytes=cfg.max_recv_msg_size_mib << 20
        )
        server.start()
        self._grpc = server

    def _start_http(self, cfg: Any) -> None:
        from otelbench.collector.http_server import create_app

        app = create_app(
            self.ingest,
            max_body_bytes=cfg.max_request_body_size_mib << 20,
            metrics=(lambda: self.telemetry.render(self.committer.pending_bytes, self._extra_metrics()))
            if self.config.service.telemetry.metrics
            else None,
        )
        sock = _bind(cfg.endpoint)
        self.http_port = sock.getsockname()[1]
        server = _ThreadServer(
            uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=30)
        )
        thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), name="otlp-http", daemon=True)
        thread.start()
        if not server.ready.wait(30):
            raise RuntimeError("the HTTP receiver did not start")
        self._http, self._http_thread = server, thread

    def add_metrics(self, metrics: Callable[[], list[Any]]) -> None:
        """More (name, kind, help, samples) for ``/metrics``, read at each scrape: what
        ``otelbench serve`` runs beside the collector (the processors' schedule)."""
        self._metrics.append(metrics)

    def _extra_metrics(self) -> list[Any]:
        return [m for more in (self.ingest.keys.metrics, *self._metrics) for m in more()]

    def wait_flushed(self, timeout_s: float = 30.0) -> None:
        """Block until everything acknowledged so far is in Parquet (tests, the demo)."""
        target = self.state.durable_pos
        deadline = time.monotonic() + timeout_s
        while self.state.flushed_pos < target:
            if not all(p.is_alive() for p in self._flushers):
                raise RuntimeError("a flusher process died")
            if time.monotonic() > deadline:
                raise TimeoutError(f"data up to WAL position {target} not flushed within {timeout_s}s")
            time.sleep(0.01)

    def stop(self) -> None:
        """Graceful: everything acknowledged is in Parquet when this returns."""
        self.ingest.stopping = True
        if getattr(self, "_http", None) is not None:
            self._http.should_exit = True
            self._http_thread.join(30)
        if getattr(self, "_grpc", None) is not None:
            self._grpc.stop(grace=10).wait()
        self.committer.close()
        for stop in self._stoppers:
            stop()
        if getattr(self, "_compactor", None) is not None:
            self._compactor.stop()
        self.state.set("stop", 1)
        deadline = time.monotonic() + FLUSHER_STOP_TIMEOUT_S
        for p in self._flushers:
            p.join(max(0.0, deadline - time.monotonic()))
        if any(p.is_alive() for p in self._flushers):
            log.error("flushers did not finish in time; the write-ahead log keeps the rest for the next start")
            for p in self._flushers:
                p.kill()
        elif self.state.flushed_pos == self.state.durable_pos:
            # everything is in Parquet: leave no log behind (the next start begins a new segment)
            wal.retire_before(self.config.service.wal.dir, wal.position(wal.split(self.state.durable_pos)[0] + 1, 0))
        log.info("collector stopped")
