"""The demo's closing report: what each part of the pipeline made of the runs (the lake's
views through SQL), the pages to open, and a query to start from."""

from __future__ import annotations

from urllib.parse import quote

from rich.console import Console
from rich.text import Text

from otelbench.summary import DEMO_SECTIONS, print_summary
from otelbench.storage.duckdb import open_lake
from otelbench.storage.queries import reports

AGENT = "ops-helper"  # the demo's real agent (otelbench/demo/tool_agent.py)
OTHER = "sample-triage"  # a simulated one, to compare with
# on lines a shell takes as one argument (inside double quotes), each within 80 columns
EXAMPLE_SQL = ("SELECT agent, count(*) AS runs, round(avg(eval_score), 2) AS judge,\n"
               "       round(sum(cost_usd), 4) AS cost\n"
               "  FROM agent_runs GROUP BY agent ORDER BY runs DESC")


def links(lake: str, web: str) -> dict[str, str]:
    """The pages worth opening after the demo, by what they show."""
    with open_lake(lake) as gw:
        agent = AGENT if gw.query("SELECT 1 FROM agent_runs WHERE agent = $a LIMIT 1", {"a": AGENT}).rows else OTHER
        run, failed, suite, model = gw.query(reports.DEMO_LINKS, {"agent": agent}).rows[0]
    a = quote(agent, safe="")
    out = {
        "home (live)": f"{web}/",
        "leaderboard": f"{web}/leaderboard",
        "agent profile": f"{web}/agents/{a}",
        "compare": f"{web}/vs/{a}/{quote(OTHER if agent != OTHER else 'sample-coder', safe='')}",
        "badge (README)": f"{web}/badge/{a}.svg",
        "embed": f"{web}/embed/{a}",
    }
    if failed or run:
        out["a failed run" if failed else "a run"] = f"{web}/runs/{failed or run}"
    if suite:
        out["agent suite"] = f"{web}/benchmarks/{quote(suite, safe='')}"
    if model:
        out["model profile"] = f"{web}/models/{quote(model, safe='')}"
    out["benchmarks"] = f"{web}/benchmarks"
    out["MCP (streamable HTTP)"] = f"{web}/mcp"
    return out


def print_report(lake: str, console: Console, web: str, otlp: str) -> dict[str, str]:
    """The tables at the console's width; URLs, commands and paths each on one line however
    long (cut in two, they could not be copied)."""
    print_summary(lake, console, DEMO_SECTIONS, skip_empty=True)
    pages = links(lake, web)
    console.print("\n[bold]Open[/bold]")
    width = max(map(len, pages))
    for what, url in pages.items():
        console.print(Text(f"  {what:<{width}}  {url}"), soft_wrap=True)
    console.print("\n[bold]Send your own agent's telemetry[/bold]")
    console.print(Text(f"  export OTEL_EXPORTER_OTLP_ENDPOINT={otlp}"), soft_wrap=True)
    console.print("[bold]Ask the lake[/bold]")
    sql = "\n    ".join(EXAMPLE_SQL.splitlines())
    console.print(Text(f'  otelbench sql --lake {lake} "\n    {sql}"'), soft_wrap=True)
    return pages

