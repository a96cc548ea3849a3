"""The terminal UI: progress while a model runs, then one summary table (also for --compare)."""

from __future__ import annotations

from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

HEADLINE_CASE = "medium-200"
PREFILL_CASE = "prefill-2k"


def _stat(summary: dict[str, Any], case: str, metric: str) -> dict[str, Any]:
    return ((summary.get("cases") or {}).get(case) or {}).get(metric) or {}


def _median_ci(s: dict[str, Any], fmt: str = "{:.1f}") -> str:
    if not s or s.get("median") is None:
        return "—"
    text = fmt.format(s["median"])
    if s.get("ci95_low") is not None and s.get("ci95_high") is not None:
        text += f" [{fmt.format(s['ci95_low'])}–{fmt.format(s['ci95_high'])}]"
    return text


def _size(n: int | None) -> str:
    if not n:
        return "—"
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _score(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def summary_table(results: Iterable[dict[str, Any]], title: str = "otelbench results") -> Table:
    table = Table(title=title, title_justify="left", show_lines=True)
    for col, justify in (("model", "left"), ("size", "right"), ("arch", "left"), ("quant", "left"),
                         ("decode tok/s (median [95% CI])", "right"), ("server decode tok/s", "right"),
                         ("TTFT ms", "right"), ("prefill tok/s", "right"), ("ability", "right"),
                         ("agent", "right"), ("confidence", "left")):
        table.add_column(col, justify=justify, overflow="fold")
    for r in results:
        s = r.get("summary") or {}
        g = r.get("gguf") or {}
        p = r.get("plausibility") or {}
        reasons = "; ".join(x["message"] for x in p.get("reasons", [])[:3])
        table.add_row(
            str(r.get("model", "?")).rsplit("/", 1)[-1],
            _size(g.get("size_bytes")),
            g.get("architecture") or "—",
            g.get("quantization") or "—",
            _median_ci(_stat(s, HEADLINE_CASE, "decode_tps")),
            _median_ci(_stat(s, HEADLINE_CASE, "server_decode_tps")),
            _median_ci(_stat(s, HEADLINE_CASE, "ttft_ms"), "{:.0f}"),
            _median_ci(_stat(s, PREFILL_CASE, "prefill_tps"), "{:.0f}"),
            _score(s.get("ability_score")),
            _score(s.get("agent_fitness_score")),
            f"{p.get('confidence', '—')}" + (f": {reasons}" if reasons else ""),
        )
    return table


def tests_table(result: dict[str, Any]) -> Table:
    table = Table(title=f"tests ({(result.get('suite') or {}).get('version')})", title_justify="left")
    for col in ("test", "category", "verdict", "reason"):
        table.add_column(col, overflow="fold")
    for t in result.get("tests", []):
        table.add_row(t["name"], t["category"], "[green]pass[/]" if t["passed"] else "[red]fail[/]",
                      t["reason"][:160].replace("[", "\\["))
    return table


def print_compare(results: list[dict[str, Any]], console: Console) -> None:
    """One table per suite version: results of different suite versions are never mixed."""
    by_version: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_version.setdefault((r.get("suite") or {}).get("version", "unknown"), []).append(r)
    for version, group in sorted(by_version.items()):
        console.print(summary_table(group, title=f"comparison — suite {version}"))
    if len(by_version) > 1:
        console.print(f"[yellow]{len(by_version)} suite versions: their ability scores are not comparable[/]")
