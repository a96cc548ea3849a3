"""A goodput sweep on a terminal: one row per load step (latency percentiles, throughput,
pass share, goodput, whether the step holds its SLO), then the highest load that holds.
Columns that do not fit the terminal go on to a second table (``tables.fitting_tables``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console, RenderableType
from rich.text import Text

from otelbench.bench_runner.tables import Column, fitting_tables

COLUMNS = (
    Column("load"), Column("sent", right=True), Column("ok", right=True), Column("pass", right=True),
    Column("good", right=True), Column("req/s", right=True), Column("goodput/s", right=True),
    Column("ttft p50/p95/p99 ms", right=True), Column("itl p50/p95/p99 ms", right=True),
    Column("e2e p50/p95/p99 ms", right=True), Column("holds"),
)


def _ms(qs: dict[str, float | None]) -> str:
    return "/".join("—" if qs.get(q) is None else f"{qs[q]:.0f}" for q in ("p50", "p95", "p99"))


def _itl(qs: dict[str, float | None]) -> str:
    return "/".join("—" if qs.get(q) is None else f"{qs[q]:.1f}" for q in ("p50", "p95", "p99"))


def step_row(step: dict[str, Any]) -> list[str]:
    n = step["load"]
    load = f"{n:g}/s" if step["mode"] == "rate" else f"{n:g} client" + ("" if n == 1 else "s")
    failed = [f"{label} ✗" for label, met in step["slo_checks"].items() if not met]
    if not step["pass_share_met"]:
        failed.append(f"pass<{step['min_pass']:.0%} ✗")
    verdict = "yes" if step["holds"] else "no" + (f" ({', '.join(failed)})" if failed else " (nothing completed)")
    lat = step["latency_ms"]
    return [load, str(step["sent"]), str(step["completed"]), f"{step['pass_share']:.0%}", str(step["good"]),
            f"{step['throughput_rps']:.2f}", f"{step['goodput_rps']:.2f}", _ms(lat["ttft"]), _itl(lat["itl"]),
            _ms(lat["e2e"]), verdict]


def sweep_report(result: dict[str, Any], width: int) -> list[RenderableType]:
    s = result["settings"]
    title = f"goodput — {result['model']}  (SLO {s['slo']}, min pass {s['min_pass']:.0%})"
    parts = fitting_tables(COLUMNS, [step_row(st) for st in result["steps"]], width, title=title)
    for mode in ("rate", "concurrency"):
        if mode in result["highest"]:
            best = result["highest"][mode]
            unit = "req/s" if mode == "rate" else "client" if best == 1 else "clients"
            text = f"highest {mode} holding the SLO: " + ("none" if best is None else f"{best:g} {unit}")
            parts.append(Text(text, style="bold green" if best is not None else "bold red"))
    return parts


def print_sweeps(results: list[dict[str, Any]], console: Console) -> None:
    for r in results:
        for part in sweep_report(r, console.width):
            console.print(part)
        if r.get("_file"):
            console.print(f"saved: {r['_file']}", highlight=False)
