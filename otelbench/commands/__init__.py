"""The ``otelbench`` sub-commands, one module each (otelbench/cli.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otelbench.collector.config import Config


def add_lake_args(p: argparse.ArgumentParser) -> None:
    """``--config`` and ``--lake``, for a command that reads a lake under a config's rules."""
    from otelbench.storage import DEFAULT_LAKE

    p.add_argument("--config", default=None, help="config file (its privacy: section and lake path)")
    p.add_argument("--lake", default=None, help=f"lake folder or s3://bucket/prefix (default: the config's, else {DEFAULT_LAKE})")


def lake_and_config(args: Any, command: str) -> tuple[Path | str, Config | None] | None:
    """The lake and config ``add_lake_args`` asked for; None after saying on stderr why a
    config cannot be used (the command then exits with 2)."""
    from otelbench.collector.config import ConfigError, load_config
    from otelbench.storage import DEFAULT_LAKE

    config = None
    if args.config:
        try:
            config = load_config(args.config)
        except ConfigError as exc:
            print(f"otelbench {command}: {exc}", file=sys.stderr)
            return None
    return args.lake or (config.lake_path if config else DEFAULT_LAKE), config
