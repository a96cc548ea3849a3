"""``otelbench serve``: run the pipelines described in the config until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from otelbench.collector.config import DEFAULT_CONFIG_PATH, ConfigError, load_config


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
    from otelbench.runtime.services import Services

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    services = Services(config).start(say=lambda line: print(f"otelbench: {line}", flush=True))
    stop.wait()
    print("otelbench: stopping (flushing everything acknowledged)", flush=True)
    services.stop()
    print("otelbench: stopped", flush=True)
    return 0
