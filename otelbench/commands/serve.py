"""``otelbench serve``: run the pipelines described in the config until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from collector.config import DEFAULT_CONFIG_PATH, ConfigError, load_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the collector (OTLP receivers → write-ahead log → Parquet lake)")
    p.add_argument("--config", default=DEFAULT_CONFIG_PATH, help="config file (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"otelbench: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=config.service.telemetry.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    services = Services(config).start(say=lambda line: print(f"otelbench: {line}", flush=True))
    stop.wait()
    print("otelbench: stopping (flushing everything acknowledged)", flush=True)
    services.stop()
    print("otelbench: stopped", flush=True)
    return 0


class Services:
    """What ``otelbench serve`` runs for a config: the collector, the processors' schedule
    (``processors.interval_s`` > 0) and the web UI (a ``web:`` section, in a child
    process). ``otelbench demo`` runs the same."""

    def __init__(self, config) -> None:
        self.config = config
        self.collector = None
        self.scheduler = None
        self.web = None

    def start(self, say=lambda line: None) -> Services:
        from collector.runtime import Collector

        config = self.config
        self.collector = collector = Collector(config).start()
        if collector.http_port:
            say(f"OTLP/HTTP listening on http://{_host(config, 'http')}:{collector.http_port}")
        if collector.grpc_port:
            say(f"OTLP/gRPC listening on {_host(config, 'grpc')}:{collector.grpc_port}")
        if config.exporters.parquet:
            say(f"writing the lake to {config.exporters.parquet.path}")
        if config.processors is not None and config.processors.interval_s > 0:
            from otelbench.commands.process import Scheduler

            telemetry = f"http://127.0.0.1:{collector.http_port}" if collector.http_port else None
            self.scheduler = Scheduler(config, telemetry).start()
            say(f"judging and clustering every {config.processors.interval_s:g}s")
        if config.web is not None:
            import os

            from collector.child import Child
            from otelbench.commands.web import receivers_of

            receivers = receivers_of(config, collector.http_port, collector.grpc_port)
            # the write-ahead log and the shared state (its durable position): the live feed
            # follows acknowledged spans there, before they reach Parquet (collector/tail.py)
            self.web = Child("otelbench.commands.web:child_main",
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


def _host(config, proto: str) -> str:
    endpoint = getattr(config.receivers.otlp.protocols, proto).endpoint
    return endpoint.rpartition(":")[0] or "0.0.0.0"
