"""A short report of the lake, printed by the demo (and later by other commands)."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from storage.queries import reports
from storage.duckdb import open_lake

SECTIONS = (
    ("Agent runs by agent", reports.SUMMARY_BY_AGENT),
    ("LLM calls by model", reports.SUMMARY_BY_MODEL),
    ("Tool calls by tool", reports.SUMMARY_BY_TOOL),
)
# otelbench demo: what each part made of the runs (empty sections are left out)
DEMO_SECTIONS = (
    ("Leaderboard: agents (telemetry; sample-* agents are simulated sample data)", reports.DEMO_LEADERBOARD),
    ("Models: otelbench bench --quick (benchmark evidence)", reports.DEMO_MODELS),
    ("Agent suites (benchmark evidence: fixed tasks, not telemetry)", reports.DEMO_SUITES),
    ("Failure clusters (largest three per agent)", reports.DEMO_CLUSTERS),
)


_TEXT_COLUMNS = ("agent", "model", "provider", "tool", "cost_source", "suite_version", "description",
                 "quantization", "confidence", "95% CI")


def _model(value: object) -> str:
    """A model id that is a file path (llama-cpp-python names models by their GGUF) → the file's name."""
    return value.rsplit("/", 1)[-1] if isinstance(value, str) and value.startswith("/") else _fmt(value)


def _fmt(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.4f}" if abs(value) < 1 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_summary(lake: str, console: Console, sections: tuple[tuple[str, str], ...] = SECTIONS,
                  *, skip_empty: bool = False) -> None:
    gateway = open_lake(lake)
    if not console.is_terminal:  # piped (CI logs, files): no width to respect, print tables whole
        console = Console(file=console.file, width=100_000, highlight=False, soft_wrap=False)
    for title, sql in sections:
        result = gateway.query(sql)
        if skip_empty and not result.rows:
            continue
        model = result.columns.index("model") if "model" in result.columns else -1
        rows = [[_model(v) if i == model else _fmt(v) for i, v in enumerate(row)] for row in result.rows]
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                      collapse_padding=True)
        for i, col in enumerate(result.columns):
            # headers wrap at their spaces; values never: a number keeps every digit, a
            # long name folds over lines rather than losing its end
            widest = max((len(r[i]) for r in rows), default=1)
            text = col in _TEXT_COLUMNS
            table.add_column(col.replace("_", " "), justify="left" if text else "right", overflow="fold",
                             min_width=min(widest, 8) if text else widest)
        for row in rows:
            table.add_row(*row)
        console.print(table)
