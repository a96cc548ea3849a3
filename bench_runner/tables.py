"""Reports on a terminal (``bench``, suites, the demo's summary): tables at most a width
wide in which nothing is cut or left out; columns that do not fit go on to a second table,
and long text wraps. ``shorten`` puts text on one line within a limit (the query table of
``otelbench sql`` cuts its cells with it too)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import RenderableType

WRAP_MIN = 24  # a wrapping text column keeps at least this many characters in its table


@dataclass(frozen=True)
class Column:
    """A column of ``fitting_tables``: numbers (``right``) and short text stay whole on one
    line; ``wrap`` text (a description, a reason) folds at its spaces into what is left."""

    header: str
    right: bool = False
    wrap: bool = False


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, "…" marking a cut."""
    one_line = text.replace("\r\n", "\n").replace("\n", "⏎")
    return one_line if len(one_line) <= limit else one_line[: max(limit - 1, 0)] + "…"


def fitting_tables(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, *, title: str = "",
                   more: str = "(more columns)", **table_options: Any) -> list[RenderableType]:
    """``rows`` as tables at most ``width`` wide, every value whole: the first column (what
    a row is about) heads each table, the next columns follow while they fit, the rest go
    on to another table titled ``more``. Headers never wrap; a first column wider than a
    ``2/5`` of ``width`` folds. ``table_options`` go to rich's ``Table`` (box, lines…)."""
    import io

    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    probe = Console(file=io.StringIO(), width=1_000_000)
    first_max = max(width * 2 // 5, 12)

    def table(label: str, shown: list[int], cells: Sequence[Sequence[str]]) -> Table:
        t = Table(title=label or None, title_justify="left", title_style="bold", header_style="bold", **table_options)
        for i in shown:
            c = columns[i]
            t.add_column(c.header, justify="right" if c.right else "left", overflow="fold",
                         no_wrap=not c.wrap and i != 0, max_width=first_max if i == 0 else None,
                         min_width=len(c.header) if c.wrap else None)
        for row in cells:
            t.add_row(*(Text(row[i]) for i in shown))  # Text: a value is never read as markup
        return t

    narrow = [[v[:max(WRAP_MIN, len(c.header))] if c.wrap else v for c, v in zip(columns, row)] for row in rows]
    groups: list[list[int]] = [[0]]
    for i in range(1, len(columns)):
        trial = groups[-1] + [i]
        if len(trial) > 2 and Measurement.get(probe, probe.options, table("", trial, narrow)).maximum > width:
            groups.append([0, i])
        else:
            groups[-1] = trial
    out: list[RenderableType] = [Text(title, style="bold")] if title else []
    for n, shown in enumerate(groups):
        out.append(table(more if n else "", shown, rows))
    return out
