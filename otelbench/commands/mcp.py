"""``otelbench mcp``: the read-only MCP server over stdio (web/mcp_server.py, docs/mcp.md),
for an assistant that starts it as a command; the web app serves the same tools at /mcp."""

from __future__ import annotations

import argparse
import sys

from otelbench.commands import add_lake_args, lake_and_config
from otelbench.runtime.web import keyring_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve the read-only MCP tools over stdio (for Claude Code, Codex, ...)",
                       description="Serve otelbench's read-only MCP tools (search_agents, get_agent, get_run, "
                       "list_benchmarks, get_model, compare) over stdio. The web UI serves the same tools at /mcp.")
    add_lake_args(p)
    p.add_argument("--web-url", default=None,
                   help="the web UI's address, for links in the answers (default: links are paths)")
    p.add_argument("--key", default=None,
                   help="a read key of the config: see what its grants add to public data (default: $OTELBENCH_KEY)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import logging

    from otelbench.storage.privacy import Privacy
    from otelbench.storage.duckdb import QueryError, open_lake
    from otelbench.web import mcp_server
    from otelbench.web.site import Site

    if (found := lake_and_config(args, "mcp")) is None:
        return 2
    lake, config = found
    try:
        open_lake(lake).close()  # no lake: say so now, not as every tool's error
    except QueryError as exc:
        print(f"otelbench mcp: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # stdout carries the protocol alone
    import os

    from otelbench.web.access import Access, Denied

    site = Site(lake, config.privacy if config else Privacy())
    access = Access(site.privacy, keyring_of(config))
    key = args.key or os.environ.get("OTELBENCH_KEY")
    if key:
        try:
            access.privacy_of({"x-bench-key": key})
        except Denied as exc:
            print(f"otelbench mcp: {exc}", file=sys.stderr)
            return 2
    try:
        mcp_server.build(site, args.web_url, access, key).run()  # stdio
    finally:
        site.close()
    return 0
