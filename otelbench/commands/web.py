"""``otelbench web``: serve the read-only web UI over a lake (web/, docs/web.md)."""

from __future__ import annotations

import argparse

from otelbench.commands import add_lake_args, lake_and_config
from otelbench.runtime.web import WEBSOCKET, keyring_of, receivers_of
from otelbench.web.config import DEFAULT_WEB_ENDPOINT


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("web", help="serve the read-only web UI (leaderboard, agent profiles, badges)",
                       description="Serve the web UI over the lake: leaderboard, agent profiles, README badges, "
                       "and a JSON twin of every page under /api. Read-only.")
    add_lake_args(p)
    p.add_argument("--endpoint", default=DEFAULT_WEB_ENDPOINT, help="host:port (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from otelbench.storage.privacy import Privacy
    from otelbench.web.app import create_app

    if (found := lake_and_config(args, "web")) is None:
        return 2
    lake, config = found
    host, _, port = args.endpoint.rpartition(":")
    app = create_app(lake, config.privacy if config else Privacy(), receivers_of(config) if config else None,
                     mcp_hosts=config.web.mcp_hosts if config and config.web else (),
                     keyring=keyring_of(config))
    print(f"otelbench: web UI on http://{host}:{port}", flush=True)
    uvicorn.run(app, host=host, port=int(port), log_level="warning", **WEBSOCKET)
    return 0
