"""A short report of the lake, printed by the demo (and later by other commands)."""

from __future__ import annotations

from rich import box
from rich.console import Console

from otelbench.storage.labels import model_label
from otelbench.bench_runner.tables import Column, fitting_tables
from otelbench.storage.queries import reports
from otelbench.storage.duckdb import open_lake

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
_WRAPPED = ("description",)  # long text: folds at its spaces into the width left


def _model(value: object) -> str:
    return model_label(value) if isinstance(value, str) else _fmt(value)


def _fmt(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if abs(value) >= 1:
            return f"{value:,.1f}"
        return f"{value:.2f}" if round(value, 2) == value else f"{value:.4f}"  # a score; a small cost
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_summary(lake: str, console: Console, sections: tuple[tuple[str, str], ...] = SECTIONS,
                  *, skip_empty: bool = False) -> None:
    """Each section's rows as tables that fit the console's width (a terminal's, else
    ``COLUMNS`` or 80: a CI log reads like a terminal): the first column in each table,
    the columns that do not fit in a second one, descriptions wrapped, nothing cut."""
    with open_lake(lake) as gateway:
        results = [(title, gateway.query(sql)) for title, sql in sections]
    for title, result in results:
        if skip_empty and not result.rows:
            continue
        model = result.columns.index("model") if "model" in result.columns else -1
        rows = [[_model(v) if i == model else _fmt(v) for i, v in enumerate(row)] for row in result.rows]
        columns = [Column(c.replace("_", " "), right=c not in _TEXT_COLUMNS, wrap=c in _WRAPPED)
                   for c in result.columns]
        console.print()
        for part in fitting_tables(columns, rows, console.width, title=title, box=box.SIMPLE_HEAD,
                                   pad_edge=False, collapse_padding=True):
            console.print(part)
