"""``otelbench sql``: one read-only query over the lake, printed as a table fitted to the
terminal, one block per row (``--format line``), CSV or JSON.

Goes through ``storage.duckdb.open_lake``, so the CLI gets exactly the web UI's views and
lockdown. ``--print-views`` prints the views as a script for the ``duckdb`` CLI instead.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from otelbench.storage import DEFAULT_LAKE

FORMATS = ("table", "line", "csv", "json")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sql",
        help="run a read-only SQL query over the lake",
        description="Run one read-only SQL statement over the lake's views (spans, logs, metrics, "
        "llm_calls, tool_calls, agent_runs, ...; see docs/schema.md). Pass '-' to read it from stdin.",
    )
    configure(parser)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lake", default=DEFAULT_LAKE, help=f"lake folder or s3://bucket/prefix (default: {DEFAULT_LAKE})")
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (fitted to the terminal), line (a block per row: wide rows), csv or json "
                             "(exact values) (default: table)")
    parser.add_argument("--width", type=int, default=None, metavar="N",
                        help="fit the table to N columns (default: the terminal's; in a pipe, whole values)")
    parser.add_argument(
        "--print-views",
        action="store_true",
        help="print the view definitions as a script for the duckdb CLI, and exit",
    )
    parser.add_argument("--max-rows", type=int, default=None, metavar="N",
                        help="print at most N rows, and say so when there were more (default: all)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="stop the query after SECONDS (default: no limit)")
    parser.add_argument("--memory-limit", default=None, metavar="SIZE",
                        help="DuckDB's memory limit, e.g. 2GB (default: DuckDB's own, 80%% of the machine)")
    parser.add_argument("query", nargs="?", metavar="SQL", help="the statement to run, or - for stdin")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # storage imports duckdb: kept here so `otelbench --help` and other commands stay light
    from otelbench.storage.queries import views
    from otelbench.storage.duckdb import QueryError, open_lake

    if args.print_views:
        try:
            sys.stdout.write(views.print_views(args.lake))
        except ValueError as exc:
            return _fail(str(exc))
        return 0
    sql = sys.stdin.read() if args.query == "-" else args.query
    if not sql or not sql.strip():
        print("otelbench sql: error: give a SQL statement (or --print-views)", file=sys.stderr)
        return 2
    try:
        with open_lake(args.lake, memory_limit=args.memory_limit) as gateway:
            # an interactive tool: all rows, no time limit and DuckDB's own memory limit
            # unless asked (the gateway's defaults are for the web, MCP and processors)
            result = gateway.query(sql, max_rows=args.max_rows, timeout_s=args.timeout)
    except (QueryError, ValueError) as exc:
        return _fail(str(exc))
    width = args.width or (shutil.get_terminal_size().columns if sys.stdout.isatty() else None)
    render(args.format, result.columns, result.rows, sys.stdout, types=result.types, width=width)
    if result.truncated:
        print(f"otelbench sql: only the first {len(result.rows)} rows (--max-rows)", file=sys.stderr)
    return 0


def render(fmt: str, columns: list[str], rows: Sequence[tuple[Any, ...]], out: TextIO, *,
           types: Sequence[str] = (), width: int | None = None) -> None:
    """``rows`` in ``fmt``; a table or line output for a person (``otelbench.terminal``:
    ``width`` None keeps whole values), csv and json exact."""
    from otelbench import terminal
    from otelbench.storage import values

    if fmt == "json":
        out.write(values.dumps(values.records(columns, rows), indent=2) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([values.text(v) for v in row])
    elif fmt == "line":
        terminal.print_records(columns, types, rows, out)
    else:
        terminal.print_table(columns, types, rows, out, width)


def _fail(message: str) -> int:
    print(f"otelbench sql: {message}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Run the command on its own (tests, ``python -m otelbench.commands.sql``)."""
    parser = argparse.ArgumentParser(prog="otelbench sql")
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
