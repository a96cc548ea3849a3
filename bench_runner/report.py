"""The bench report on a terminal, readable at 80 columns as at 200.

One model: a vertical report in the shape bench-llm's users know — a header block
(model, GGUF status, path, size, arch, quant), the speed cases one per row with median and
95 % CI, each test with PASS/FAIL and its reason, the summary block, the confidence with
its reasons numbered under it, and where the JSON was saved. Several models (and
``--compare``): a table of the columns that fit the terminal, the others in a second
table, the confidence reasons under them keyed by model. Nothing a person needs is cut:
numbers are never shortened (a column that does not fit moves to the next table), text
wraps.
"""

from __future__ import annotations

from typing import Any, Iterable

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from otelbench.storage.labels import model_label
from otelbench.bench_runner.tables import Column, fitting_tables

HEADLINE_CASE = "medium-200"
PREFILL_CASE = "prefill-2k"


def _stat(summary: dict[str, Any], case: str, metric: str) -> dict[str, Any]:
    return ((summary.get("cases") or {}).get(case) or {}).get(metric) or {}


def _median_ci(s: dict[str, Any], fmt: str = "{:.1f}", sep: str = " ") -> str:
    if not s or s.get("median") is None:
        return "—"
    text = fmt.format(s["median"])
    if s.get("ci95_low") is not None and s.get("ci95_high") is not None:
        text += f"{sep}[{fmt.format(s['ci95_low'])}–{fmt.format(s['ci95_high'])}]"
    return text


def _size(n: int | None) -> str:
    if not n:
        return "—"
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _score(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _name(r: dict[str, Any]) -> str:
    return model_label(str(r.get("model", "?")))


def _reasons(r: dict[str, Any]) -> list[str]:
    return [x["message"] for x in (r.get("plausibility") or {}).get("reasons", [])]


# -- one model ---------------------------------------------------------------------------


def _block(title: str, rows: Iterable[tuple[str, str]]) -> Group:
    """``label  value`` lines under a bold title; values wrap, labels never."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for label, value in rows:
        grid.add_row(label, Text(value))
    return Group(Text(title, style="bold"), _indent(grid, 2))


def _indent(renderable: RenderableType, n: int) -> Padding:
    """``renderable`` ``n`` columns in, lines not padded out to the width (no trailing blanks)."""
    return Padding(renderable, (0, 0, 0, n), expand=False)


def header_block(r: dict[str, Any]) -> Group:
    g = r.get("gguf") or {}
    server = r.get("server") or {}
    hw = r.get("hardware") or {}
    cpu = hw.get("cpu") or {}
    params = g.get("parameter_count")
    arch = ", ".join(x for x in (g.get("architecture"), g.get("block_count") and f"{g['block_count']} blocks",
                                   g.get("context_length") and f"context {g['context_length']:,}") if x)
    memory = f", {hw['cpu_bandwidth_gbs']:.0f} GB/s memory" if hw.get("cpu_bandwidth_gbs") else ""
    return _block(f"otelbench bench — {_name(r)}", [
        ("model", str(r.get("model", "?"))),
        ("GGUF", str(g.get("status", "—")) + (f" ({g['reason']})" if g.get("status") != "READY" and g.get("reason")
                                                 else "")),
        ("path", str(g.get("path") or "—")),
        ("size", _size(g.get("size_bytes")) + (f", {params / 1e6:,.1f} M parameters" if params else "")),
        ("arch", arch or "—"),
        ("quant", str(g.get("quantization") or "—")),
        ("server", f"{server.get('kind', '?')} at {server.get('base_url', '?')}"),
        ("hardware", f"{cpu.get('model', '?')}, {cpu.get('usable_cores', '?')} cores, "
                     f"{_size(hw.get('ram_bytes'))} RAM{memory}"),
    ])


def speed_table(r: dict[str, Any]) -> Table:
    """A row per speed case: median [95 % CI] of decode, TTFT, prefill; runs."""
    s = r.get("summary") or {}
    table = Table(title="SPEED  median [95% CI]", title_justify="left", title_style="bold", box=None,
                  padding=(0, 1, 0, 2), header_style="bold")
    table.add_column("case", no_wrap=True)
    for col in ("decode tok/s", "TTFT ms", "prefill tok/s", "runs"):
        table.add_column(col, justify="right", no_wrap=True)
    for case in (s.get("cases") or {}):
        decode = _stat(s, case, "decode_tps")
        table.add_row(case, _median_ci(decode, sep="\n"), _median_ci(_stat(s, case, "ttft_ms"), "{:.0f}", "\n"),
                      _median_ci(_stat(s, case, "prefill_tps"), "{:.0f}", "\n"), str(decode.get("n", "—")))
    return table


def tests_block(r: dict[str, Any]) -> Table:
    """PASS/FAIL, the test, its category and its one-line reason (wrapped, never cut)."""
    table = Table(title=f"TESTS  ({(r.get('suite') or {}).get('version', '?')})", title_justify="left",
                  title_style="bold", box=None, show_header=False, padding=(0, 1, 0, 2))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for t in r.get("tests", []):
        verdict = Text("PASS", style="green") if t["passed"] else Text("FAIL", style="red")
        table.add_row(verdict, f"{t['name']} ({t['category']})", Text(" ".join(str(t.get("reason", "")).split())))
    return table


def summary_block(r: dict[str, Any]) -> Group:
    s = r.get("summary") or {}
    p = r.get("plausibility") or {}
    passed, total = s.get("tests_passed"), s.get("tests_total")
    rows = [
        (f"decode tok/s ({HEADLINE_CASE})", _median_ci(_stat(s, HEADLINE_CASE, "decode_tps"))),
        ("server decode tok/s", _median_ci(_stat(s, HEADLINE_CASE, "server_decode_tps"))),
        (f"TTFT ms ({HEADLINE_CASE})", _median_ci(_stat(s, HEADLINE_CASE, "ttft_ms"), "{:.0f}")),
        (f"prefill tok/s ({PREFILL_CASE})", _median_ci(_stat(s, PREFILL_CASE, "prefill_tps"), "{:.0f}")),
        ("ability", _score(s.get("ability_score")) + (f" ({passed} of {total} tests passed)" if total else "")),
        ("agent fitness", _score(s.get("agent_fitness_score"))),
        ("confidence", str(p.get("confidence", "—"))),
    ]
    parts: list[RenderableType] = [_block("SUMMARY", rows)]
    if _reasons(r):
        parts.append(_indent(_numbered(_reasons(r)), 4))
    return Group(*parts)


def _numbered(items: list[str]) -> Table:
    """``1. item`` lines, a wrapped item indented under its first line."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(overflow="fold")
    for i, item in enumerate(items, 1):
        grid.add_row(f"{i}.", Text(item))
    return grid


def model_report(r: dict[str, Any]) -> Group:
    """Everything about one model's run, top to bottom."""
    parts: list[RenderableType] = [header_block(r), Text(""), speed_table(r), Text("")]
    if r.get("tests"):
        parts += [tests_block(r), Text("")]
    parts.append(summary_block(r))
    return Group(*parts)


def print_saved(r: dict[str, Any], console: Console) -> None:
    """Where the JSON went, on one line however long (a path cut in two cannot be copied)."""
    if r.get("_file"):
        console.print(Text(f"saved {r['_file']}"), soft_wrap=True)


# -- several models ----------------------------------------------------------------------

_COLUMNS = (  # (header, right-aligned, value)
    ("size", True, lambda r, s: _size((r.get("gguf") or {}).get("size_bytes"))),
    ("arch", False, lambda r, s: (r.get("gguf") or {}).get("architecture") or "—"),
    ("quant", False, lambda r, s: (r.get("gguf") or {}).get("quantization") or "—"),
    ("decode tok/s", True, lambda r, s: _median_ci(_stat(s, HEADLINE_CASE, "decode_tps"), sep="\n")),
    ("server tok/s", True, lambda r, s: _median_ci(_stat(s, HEADLINE_CASE, "server_decode_tps"), sep="\n")),
    ("TTFT ms", True, lambda r, s: _median_ci(_stat(s, HEADLINE_CASE, "ttft_ms"), "{:.0f}", "\n")),
    ("prefill tok/s", True, lambda r, s: _median_ci(_stat(s, PREFILL_CASE, "prefill_tps"), "{:.0f}", "\n")),
    ("ability", True, lambda r, s: _score(s.get("ability_score"))),
    ("agent", True, lambda r, s: _score(s.get("agent_fitness_score"))),
    ("confidence", False, lambda r, s: str((r.get("plausibility") or {}).get("confidence", "—"))),
)


def summary_tables(results: list[dict[str, Any]], width: int, title: str = "otelbench results") -> list[RenderableType]:
    """The models' figures in as many tables as ``width`` needs, the model column in each
    (a cell is never cut: a column that does not fit moves to the next table)."""
    columns = [Column("model")] + [Column(header, right=right) for header, right, _ in _COLUMNS]
    rows = [[_name(r)] + [f(r, r.get("summary") or {}) for _, _, f in _COLUMNS] for r in results]
    return fitting_tables(columns, rows, width, title=title, show_lines=True)


def reasons_block(results: list[dict[str, Any]]) -> Group:
    """Under the tables: each model's confidence reasons, numbered."""
    parts: list[RenderableType] = []
    for r in results:
        reasons = _reasons(r)
        if not reasons:
            continue
        conf = (r.get("plausibility") or {}).get("confidence", "—")
        parts.append(Text.from_markup(f"[bold]{escape(_name(r))}[/] — confidence {escape(str(conf))}:"))
        parts.append(_indent(_numbered(reasons), 2))
    return Group(*parts)


def print_results(results: list[dict[str, Any]], console: Console, title: str = "otelbench results") -> None:
    """One model: its vertical report; several: the tables, then the reasons, the tests and
    where each JSON was saved."""
    if len(results) == 1:
        console.print(model_report(results[0]))
        print_saved(results[0], console)
        return
    for part in summary_tables(results, console.width, title):
        console.print(part)
    console.print(reasons_block(results))
    for r in results:
        if r.get("tests"):
            console.print(Text(_name(r), style="bold"))
            console.print(tests_block(r))
        print_saved(r, console)


def print_compare(results: list[dict[str, Any]], console: Console) -> None:
    """One set of tables per suite version: results of different suite versions are never mixed."""
    by_version: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_version.setdefault((r.get("suite") or {}).get("version", "unknown"), []).append(r)
    for version, group in sorted(by_version.items()):
        for part in summary_tables(group, console.width, title=f"comparison — suite {version}"):
            console.print(part)
        console.print(reasons_block(group))
    if len(by_version) > 1:
        console.print(f"[yellow]{len(by_version)} suite versions: their ability scores are not comparable[/]")
