"""The ``otelbench`` console script: one sub-command per module.

Each command module exposes ``add_parser(subparsers)`` (which registers its
sub-parser and sets ``func``) and keeps its imports lazy, so ``otelbench sql``
never pays for grpc and ``otelbench serve`` never pays for duckdb.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from otelbench.bench_runner.environment import set_default

# module path, in the order `otelbench --help` lists them
COMMANDS = (
    "otelbench.commands.serve",
    "otelbench.commands.sql",
    "otelbench.commands.doctor",
    "otelbench.commands.process",
    "otelbench.commands.demo",
    "otelbench.commands.bench",
    "otelbench.commands.model",
    "otelbench.commands.web",
    "otelbench.commands.mcp",
    "otelbench.commands.init",
    "otelbench.commands.suite",
    "otelbench.commands.gate",
    "otelbench.commands.replay",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otelbench",
        description="OpenTelemetry-native collector and analysis pipeline for AI agents and local models.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(name).add_parser(sub)
    for command in sub.choices.values():
        command.add_argument("--verbose", action="store_true",
                             help="also show the libraries' own log lines (gRPC's, for one) on the terminal")
    return parser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C: context managers stop what we started


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _interrupt)  # commands that own shutdown (serve) replace it
    # Our processes define pydantic models of their own (the config) and need no pydantic
    # plugin; one installed beside us (logfire's) loaded all of logfire into the receiver and
    # every flusher: +180 ms of start-up and ~20 MiB each. Set before any command module
    # (and its models) is imported; child processes inherit it; a user's own value wins,
    # and a command of the user's gets their environment back (bench_runner.environment).
    set_default(os.environ, "PYDANTIC_DISABLE_PLUGINS", "__all__")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verbose:
        # gRPC's C core logs at INFO to stderr — e.g. "skipping fork() handlers" each time a
        # process starts while a gRPC thread runs: noise for a person. Read when grpc is first
        # imported (every command imports it lazily, after this); children inherit it.
        set_default(os.environ, "GRPC_VERBOSITY", "ERROR")
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
