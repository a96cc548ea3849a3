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
    from collector.runtime import Collector

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    collector = Collector(config).start()
    if collector.http_port:
        print(f"otelbench: OTLP/HTTP listening on http://{_host(config, 'http')}:{collector.http_port}", flush=True)
    if collector.grpc_port:
        print(f"otelbench: OTLP/gRPC listening on {_host(config, 'grpc')}:{collector.grpc_port}", flush=True)
    if config.exporters.parquet:
        print(f"otelbench: writing the lake to {config.exporters.parquet.path}", flush=True)
    scheduler = None
    if config.processors is not None and config.processors.interval_s > 0:
        from otelbench.commands.process import Scheduler

        telemetry = f"http://127.0.0.1:{collector.http_port}" if collector.http_port else None
        scheduler = Scheduler(config, telemetry).start()
        print(f"otelbench: judging and clustering every {config.processors.interval_s:g}s", flush=True)
    web = None
    if config.web is not None:
        import os

        from collector.child import Child
        from otelbench.commands.web import receivers_of

        receivers = receivers_of(config, collector.http_port, collector.grpc_port)
        # the write-ahead log and the shared state (its durable position): the live feed
        # follows acknowledged spans there, before they reach Parquet (collector/tail.py)
        web = Child("otelbench.commands.web:child_main",
                    (str(config.lake_path), config.privacy, config.web, os.getpid(), receivers,
                     os.path.abspath(config.service.wal.dir), collector.state.fd, config.keys),
                    name="otelbench-web", pass_fds=(collector.state.fd,))
        web.start()
        print(f"otelbench: web UI on http://{config.web.endpoint}", flush=True)
    stop.wait()
    print("otelbench: stopping (flushing everything acknowledged)", flush=True)
    if web is not None:
        web.terminate()
        web.join(10)
    if scheduler is not None:
        scheduler.stop()
    collector.stop()
    print("otelbench: stopped", flush=True)
    return 0


def _host(config, proto: str) -> str:
    endpoint = getattr(config.receivers.otlp.protocols, proto).endpoint
    return endpoint.rpartition(":")[0] or "0.0.0.0"
