"""``otelbench sql``: one read-only query over the lake, printed as a table, CSV or JSON.

Goes through ``storage.duckdb.open_lake``, so the CLI gets exactly the web UI's views and
lockdown. ``--print-views`` prints the views as a script for the ``duckdb`` CLI instead.
"""

from __future__ import annotations

import argparse
import base64
import csv
import datetime as dt
import decimal
import json
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

DEFAULT_LAKE = Path("data/lake")
FORMATS = ("table", "csv", "json")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sql",
        help="run a read-only SQL query over the lake",
        description="Run one read-only SQL statement over the lake's views (spans, logs, metrics, "
        "llm_calls, tool_calls, agent_runs, ...; see docs/schema.md). Pass '-' to read it from stdin.",
    )
    configure(parser)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lake", type=Path, default=DEFAULT_LAKE, help=f"lake folder (default: ./{DEFAULT_LAKE})")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    parser.add_argument(
        "--print-views",
        action="store_true",
        help="print the view definitions as a script for the duckdb CLI, and exit",
    )
    parser.add_argument("query", nargs="?", metavar="SQL", help="the statement to run, or - for stdin")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # storage imports duckdb: kept here so `otelbench --help` and other commands stay light
    from storage import queries
    from storage.duckdb import QueryError, open_lake

    if args.print_views:
        try:
            sys.stdout.write(queries.print_views(args.lake))
        except ValueError as exc:
            return _fail(str(exc))
        return 0
    sql = sys.stdin.read() if args.query == "-" else args.query
    if not sql or not sql.strip():
        print("otelbench sql: error: give a SQL statement (or --print-views)", file=sys.stderr)
        return 2
    try:
        with open_lake(args.lake) as gateway:
            result = gateway.query(sql)
    except (QueryError, ValueError) as exc:
        return _fail(str(exc))
    render(args.format, result.columns, result.rows, sys.stdout)
    return 0


def render(fmt: str, columns: list[str], rows: Sequence[tuple[Any, ...]], out: TextIO) -> None:
    if fmt == "json":
        body = [dict(zip(columns, (_plain(v) for v in row))) for row in rows]
        out.write(json.dumps(body, ensure_ascii=False, indent=2) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(v) for v in row])
    else:
        _rich_table(columns, rows, out)


def _rich_table(columns: list[str], rows: Sequence[tuple[Any, ...]], out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    caption = f"{len(rows)} row" + ("" if len(rows) == 1 else "s")
    table = Table(header_style="bold", caption=caption)
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        # Text(...), not str: a value like "[red]" must print as itself, not as rich markup
        table.add_row(*(Text("NULL", style="dim") if v is None else Text(_cell(v)) for v in row))
    # Piped output: no terminal width to respect, so never squeeze the columns.
    width = None if out.isatty() else 100_000
    Console(file=out, width=width, highlight=False, soft_wrap=False).print(table)


def _plain(value: Any) -> Any:
    """A DuckDB value as JSON: ISO 8601 times, arrays for lists, objects for structs and maps."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _cell(value: Any) -> str:
    """A value as one text cell: NULL is empty, nested values are JSON."""
    if value is None:
        return ""
    plain = _plain(value)
    if isinstance(plain, (list, dict)):
        return json.dumps(plain, ensure_ascii=False)
    return str(plain)


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
