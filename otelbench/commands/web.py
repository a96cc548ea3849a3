"""``otelbench web``: serve the read-only web UI over a lake (web/, docs/web.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from storage import DEFAULT_LAKE
from web.config import DEFAULT_WEB_ENDPOINT


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("web", help="serve the read-only web UI (leaderboard, agent profiles, badges)",
                       description="Serve the web UI over the lake: leaderboard, agent profiles, README badges, "
                       "and a JSON twin of every page under /api. Read-only.")
    p.add_argument("--config", default=None, help="config file (its privacy: section and lake path)")
    p.add_argument("--lake", type=Path, default=None, help=f"lake folder (default: the config's, else {DEFAULT_LAKE})")
    p.add_argument("--endpoint", default=DEFAULT_WEB_ENDPOINT, help="host:port (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from collector.config import ConfigError, load_config
    from processors.config import Privacy
    from web.app import create_app

    config = None
    if args.config:
        try:
            config = load_config(args.config)
        except ConfigError as exc:
            print(f"otelbench web: {exc}", file=sys.stderr)
            return 2
    lake = args.lake or (config.lake_path if config else DEFAULT_LAKE)
    host, _, port = args.endpoint.rpartition(":")
    app = create_app(lake, config.privacy if config else Privacy())
    print(f"otelbench: web UI on http://{host}:{port}", flush=True)
    uvicorn.run(app, host=host, port=int(port), log_level="warning")
    return 0


def child_main(lake: str, privacy: object, endpoint: str, parent_pid: int) -> None:
    """The web UI inside ``otelbench serve``, in a process of its own (collector.child): its
    DuckDB and templates stay out of the receiver, and it dies with serve."""
    import signal

    import uvicorn

    from collector.flusher import _die_with_parent
    from web.app import create_app

    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # serve decides when we stop (SIGTERM)
    host, _, port = endpoint.rpartition(":")
    uvicorn.run(create_app(lake, privacy), host=host, port=int(port), log_level="warning")  # type: ignore[arg-type]
