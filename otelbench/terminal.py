"""Query results on a terminal a person reads: a table that fits its width, or one record
per block (``--format line``).

The table works the way DuckDB's own CLI does: a long text cell is shortened with "…",
and when the columns still do not fit, the middle ones are left out with a note saying
how many and which (``--format line`` shows them all). Numbers are never shortened: a
column of numbers is left out whole rather than shown with a digit missing. Floats are
the shortest text that reads back to the same number (a FLOAT column: the same 32-bit
number). With ``width=None`` (a pipe, a file) nothing is shortened or left out.

Reports (``bench``, the demo's summary) use ``bench_runner.tables.fitting_tables`` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from otelbench.bench_runner.tables import shorten

MAX_CELL = 40  # a text cell longer than this is shortened on a terminal
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")
_BORDER = 3  # what the table's box adds per column ("│ " before, " " after), plus 1 at the end


def cell(value: Any, type_name: str = "") -> str:
    """One value as a person reads it (NULL is the caller's to show)."""
    from otelbench.storage import values

    if isinstance(value, float) and type_name == "FLOAT":
        import numpy as np

        return np.format_float_positional(np.float32(value), trim="-") if abs(value) < 1e16 else repr(np.float32(value))
    return values.text(value)


def is_numeric(type_name: str) -> bool:
    return type_name.split("(", 1)[0] in _NUMERIC


@dataclass
class Fitted:
    columns: list[int]  # indexes of the columns shown, in order
    gap_after: int | None  # the "…" column goes after this many shown columns
    widths: list[int]  # of every column, after shortening


def fit(columns: Sequence[str], cells: Sequence[Sequence[str]], numeric: Sequence[bool], width: int) -> Fitted:
    """Which columns a ``width``-wide table shows: every one if they fit with long text cut
    to ``MAX_CELL``; else as many as fit from both ends, the first column first."""
    widths = []
    for i, name in enumerate(columns):
        longest = max((len(r[i]) for r in cells), default=0)
        widths.append(max(len(name), longest if numeric[i] else min(longest, MAX_CELL)))
    if sum(widths) + _BORDER * len(widths) + 1 <= width:
        return Fitted(list(range(len(columns))), None, widths)
    left, right = [], []
    used = 1 + _BORDER + 1  # the frame and the "…" column
    lo, hi = 0, len(columns) - 1
    take_left = True
    while lo <= hi:
        i = lo if take_left else hi
        need = widths[i] + _BORDER
        if used + need > width:
            if take_left and not left:  # the first column always shows, cut to fit
                widths[i] = max(width - used - _BORDER, len("…"))
                left.append(i)
            break
        used += need
        if take_left:
            left.append(i)
            lo += 1
        else:
            right.insert(0, i)
            hi -= 1
        take_left = not take_left
    return Fitted(left + right, len(left), widths)


def print_table(columns: Sequence[str], types: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO,
                width: int | None) -> None:
    """The result as a table ``width`` characters wide at most (None: whole values)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    types = list(types) or [""] * len(columns)
    numeric = [is_numeric(t) for t in types]
    cells = [[cell(v, types[i]) for i, v in enumerate(r)] for r in rows]
    if width is None:
        fitted = Fitted(list(range(len(columns))), None, [0] * len(columns))
    else:
        fitted = fit(columns, cells, numeric, width)
    hidden = [columns[i] for i in range(len(columns)) if i not in fitted.columns]
    caption = f"{len(rows)} row" + ("" if len(rows) == 1 else "s")
    if hidden:
        names = ", ".join(hidden[:6]) + (", …" if len(hidden) > 6 else "")
        caption += (f"; {len(hidden)} of {len(columns)} columns not shown ({names}): "
                    "--format line shows every column")
    table = Table(header_style="bold", caption=caption, box=box.SQUARE, caption_justify="left")
    shown = list(fitted.columns)
    if fitted.gap_after is not None:
        shown.insert(fitted.gap_after, -1)
    for i in shown:
        if i < 0:
            table.add_column("…", justify="center", no_wrap=True)
        else:
            table.add_column(columns[i], justify="right" if numeric[i] else "left", no_wrap=width is not None,
                             overflow="ellipsis" if width is not None else "fold",
                             max_width=None if width is None or numeric[i] else max(fitted.widths[i], 1))
    for r, row in zip(cells, rows):
        line = []
        for i in shown:
            if i < 0:
                line.append(Text("…", style="dim"))
            elif row[i] is None:
                line.append(Text("NULL", style="dim"))
            else:
                # Text(...), not str: a value like "[red]" must print as itself, not as rich markup
                line.append(Text(r[i] if width is None else shorten(r[i], fitted.widths[i] if not numeric[i] else 10**9)))
        table.add_row(*line)
    Console(file=out, width=width or 100_000, highlight=False, soft_wrap=False).print(table)


def print_records(columns: Sequence[str], types: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO) -> None:
    """One block per row, a line per column (``name = value``, names right-aligned), the
    way DuckDB's ``.mode line`` shows wide rows; values whole."""
    types = list(types) or [""] * len(columns)
    pad = max((len(c) for c in columns), default=0)
    for n, row in enumerate(rows):
        if n:
            out.write("\n")
        for name, value, type_name in zip(columns, row, types):
            shown = "NULL" if value is None else cell(value, type_name)
            # a value's further lines start under its first, so the names stay a column
            out.write(f"{name.rjust(pad)} = {shown.replace(chr(10), chr(10) + ' ' * (pad + 3))}\n")
    out.write(f"\n{len(rows)} row{'' if len(rows) == 1 else 's'}\n")
