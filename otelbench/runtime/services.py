"""``Services``: what ``otelbench serve`` runs for a config, started and stopped in order."""

from __future__ import annotations

import os
from typing import Any, Callable

from otelbench.collector.wiring import Collector
from otelbench.runtime.scheduler import Scheduler
from otelbench.runtime.web import receivers_of
from otelbench.storage.process import Child


class Services:
    """What ``otelbench serve`` runs for a config: the collector, the processors' schedule
    (``processors.interval_s`` > 0) and the web UI (a ``web:`` section, in a child
    process). ``otelbench demo`` runs the same."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.collector: Collector | None = None
        self.scheduler: Scheduler | None = None
        self.web: Child | None = None

    def start(self, say: Callable[[str], None] = lambda line: None) -> Services:
        config = self.config
        self.collector = collector = Collector(config).start()
        if collector.http_port:
            say(f"OTLP/HTTP listening on http://{_host(config, 'http')}:{collector.http_port}")
        if collector.grpc_port:
            say(f"OTLP/gRPC listening on {_host(config, 'grpc')}:{collector.grpc_port}")
        if config.exporters.parquet:
            say(f"writing the lake to {config.exporters.parquet.path}")
        if config.processors is not None and config.processors.interval_s > 0:
            telemetry = f"http://127.0.0.1:{collector.http_port}" if collector.http_port else None
            self.scheduler = Scheduler(config, telemetry).start()
            collector.add_metrics(self.scheduler.metrics)
            say(f"judging and clustering every {config.processors.interval_s:g}s")
        if config.web is not None:
            receivers = receivers_of(config, collector.http_port, collector.grpc_port)
            # the write-ahead log and the shared state (its durable position): the live feed
            # follows acknowledged spans there, before they reach Parquet (collector/tail.py)
            self.web = Child("otelbench.runtime.web:child_main",
                             (str(config.lake_path), config.privacy, config.web, os.getpid(), receivers,
                              os.path.abspath(config.service.wal.dir), collector.state.fd, config.keys),
                             name="otelbench-web", pass_fds=(collector.state.fd,))
            self.web.start()
            say(f"web UI on http://{config.web.endpoint}")
        return self

    def stop(self) -> None:
        """The web, then the schedule, then the collector (flushing what was acknowledged)."""
        if self.web is not None:
            self.web.terminate()
            self.web.join(10)
        if self.scheduler is not None:
            self.scheduler.stop()
        if self.collector is not None:
            self.collector.stop()


def _host(config: Any, proto: str) -> str:
    endpoint = getattr(config.receivers.otlp.protocols, proto).endpoint
    return endpoint.rpartition(":")[0] or "0.0.0.0"
