"""A short report of the lake, printed by the demo (and later by other commands)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from storage import queries
from storage.duckdb import open_lake

SECTIONS = (
    ("Agent runs by agent", queries.SUMMARY_BY_AGENT),
    ("LLM calls by model", queries.SUMMARY_BY_MODEL),
    ("Tool calls by tool", queries.SUMMARY_BY_TOOL),
)


def _fmt(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.4f}" if abs(value) < 1 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_summary(lake: str, console: Console) -> None:
    gateway = open_lake(lake)
    for title, sql in SECTIONS:
        result = gateway.query(sql)
        table = Table(title=title, title_justify="left")
        for col in result.columns:
            table.add_column(col, justify="left" if col in ("agent", "model", "provider", "tool") else "right")
        for row in result.rows:
            table.add_row(*(_fmt(v) for v in row))
        console.print(table)
