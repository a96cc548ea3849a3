"""The main job end to end: ``otelbench demo --quick`` run as a user runs it, in a temporary
folder, against the real embedded model — then checked through SQL, the web's JSON routes
and MCP: bench results, agent runs, judge scores, failure clusters and suite results all
arrived, and every surface tells the same numbers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from otelbench.bench_runner import agent_suite
from otelbench.testing.serve import free_port, serve_web
from otelbench.storage.duckdb import open_lake
from otelbench.storage.queries import reports

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from otelbench.bench_runner.llama_server import LlamaServerMissing, find_llama_server

    try:
        find_llama_server()
    except LlamaServerMissing as exc:
        pytest.skip(str(exc))
    tmp = tmp_path_factory.mktemp("demo")
    ports = [str(free_port()) for _ in range(3)]
    done = subprocess.run(
        [sys.executable, "-m", "otelbench", "demo", "--quick", "--lake", str(tmp / "lake"), "--wal", str(tmp / "wal"),
         "--web-port", ports[0], "--http-port", ports[1], "--grpc-port", ports[2]],
        capture_output=True, text=True, cwd=tmp, timeout=1200,
        env={**os.environ, "HOME": str(tmp), "COLUMNS": "80"})  # a CI log reads like an 80-column terminal
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return {"lake": tmp / "lake", "out": done.stdout, "err": done.stderr, "tmp": tmp}


def sql(demo: dict[str, Any], query: str, params: Any = None) -> list[dict[str, Any]]:
    with open_lake(demo["lake"]) as gw:
        r = gw.query(query, params)
        return [dict(zip(r.columns, row)) for row in r.rows]


@pytest.fixture(scope="module")
def web(demo: dict[str, Any]) -> Iterator[str]:
    with serve_web(demo["lake"]) as url:
        yield url


def test_every_step_ran_and_said_so(demo: dict[str, Any]) -> None:
    out = demo["out"]
    for n, step in enumerate(("serve", "model", "bench", "agents", "judge + clusters", "report"), start=1):
        assert re.search(rf"\[{n}/6 \d+:\d\d\] {re.escape(step)} — (?!skipped)", out), step
    assert "--quick: stopping everything it started" in out
    for page in ("/leaderboard", "/agents/ops-helper", "/vs/ops-helper/", "/badge/ops-helper.svg",
                 "/embed/ops-helper", "/runs/", "/benchmarks/grounded-research", "/models/", "/mcp"):
        assert page in out, page
    assert "otelbench sql --lake" in out
    assert "Traceback" not in out + demo["err"]


# printed whole however long: a URL, a command or a path cut in two cannot be copied
WHOLE = re.compile(r"^  (\S.*?  +http://|export |otelbench sql |agent  |judge  )|^evidence: ")


def test_what_it_prints_fits_80_columns(demo: dict[str, Any]) -> None:
    wide = [line for line in demo["out"].splitlines() if len(line) > 80 and not WHOLE.match(line)]
    assert not wide, "\n".join(wide)
    for title in ("Leaderboard: agents", "Models: otelbench bench --quick", "Agent suites", "Failure clusters"):
        assert title in demo["out"], title


@pytest.mark.parametrize("width", [80, 200])
def test_the_report_shows_every_figure_at_80_and_200_columns(demo: dict[str, Any], width: int) -> None:
    import io

    from rich.console import Console

    from otelbench.demo.report import print_report

    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    print_report(str(demo["lake"]), console, "http://127.0.0.1:8000", "http://127.0.0.1:4318")
    text = console.export_text()
    assert all(len(line) <= width for line in text.splitlines() if not WHOLE.match(line))
    flat = " ".join(text.split())
    for r in sql(demo, "SELECT agent, count(*) AS runs FROM agent_runs GROUP BY agent"):
        assert re.search(rf"^ {re.escape(r['agent'])} +{r['runs']} ", text, re.M), r
    (bench,) = sql(demo, "SELECT model, quantization, decode_tps_median FROM bench_results")
    assert bench["model"].rsplit("/", 1)[-1] in text and bench["quantization"] in text
    assert f"{bench['decode_tps_median']:,.1f}" in text
    for c in sql(demo, reports.DEMO_CLUSTERS):
        assert " ".join(str(c["description"]).split()) in flat  # wrapped, never cut
    for header in ("judge score", "decode tok/s", "prefill tok/s", "TTFT ms", "pass rate", "% of failures"):
        assert header in text, header  # on one line
    assert ("(more columns)" in text) == (width == 80)
    assert "export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318" in text


def test_bench_results_arrived_as_spans(demo: dict[str, Any]) -> None:
    (bench,) = sql(demo, "SELECT * FROM bench_results")
    assert "SmolLM2" in bench["model"] and bench["quick"] is True
    assert bench["decode_tps_median"] > 0 and bench["tests_total"] > 0
    assert bench["quantization"]  # read from the GGUF file


def test_the_real_agent_ran_and_some_runs_failed_for_real_reasons(demo: dict[str, Any]) -> None:
    runs = sql(demo, "SELECT status, count(*) AS n FROM agent_runs WHERE agent = 'ops-helper' GROUP BY 1")
    by = {r["status"]: r["n"] for r in runs}
    assert by.get("ok", 0) >= 1 and by.get("error", 0) >= 1, by
    calls = sql(demo, "SELECT count(*) AS n FROM llm_calls WHERE agent = 'ops-helper'")[0]["n"]
    tools = sql(demo, "SELECT count(*) AS n FROM tool_calls WHERE agent = 'ops-helper'")[0]["n"]
    assert calls >= sum(by.values()) and tools >= 1
    kinds = {r["error_type"] for r in sql(demo, "SELECT DISTINCT s.error_type FROM agent_runs AS r JOIN spans AS s "
                                                "USING (trace_id) WHERE r.agent = 'ops-helper' AND r.status = 'error' "
                                                "AND s.span_type = 'agent' AND s.error_type IS NOT NULL")}
    assert kinds, "failed runs carry an error type"
    samples = sql(demo, "SELECT DISTINCT agent FROM agent_runs WHERE agent LIKE 'sample-%'")
    assert {r["agent"] for r in samples} == {"sample-triage", "sample-coder", "sample-researcher"}


def test_runs_were_judged_and_failures_clustered(demo: dict[str, Any]) -> None:
    judged = sql(demo, "SELECT agent, count(eval_score) AS judged, count(*) AS runs FROM agent_runs GROUP BY 1")
    assert all(r["judged"] >= 1 for r in judged), judged
    assert all(0 <= r["score"] <= 1 for r in sql(demo, "SELECT score FROM evals WHERE score IS NOT NULL"))
    clusters = sql(demo, "SELECT agent, cluster_id, size FROM failure_clusters")
    assert clusters, "the failures make at least one cluster"
    members = sql(demo, "SELECT agent, cluster_id, count(*) AS n FROM cluster_members WHERE cluster_id >= 0 GROUP BY 1, 2")
    assert {(m["agent"], m["cluster_id"]): m["n"] for m in members} == {
        (c["agent"], c["cluster_id"]): c["size"] for c in clusters}


def test_the_suite_ran_one_case_of_each_checker(demo: dict[str, Any]) -> None:
    (run,) = sql(demo, "SELECT * FROM suite_runs")
    assert run["suite"] == "grounded-research" and run["suite_version"].startswith("grounded-research-v1+")
    assert run["partial"] is True and run["status"] == "complete" and run["repeats"] == 1
    cases = sql(demo, "SELECT checker, verdict, agent, agent_spans, llm_calls FROM suite_cases")
    kinds = {c.check.kind for c in agent_suite.find("grounded-research").spec.cases}
    assert sorted(c["checker"] for c in cases) == sorted(kinds) and len(cases) == run["trials"]
    assert all(c["agent"] == "research-agent" and c["agent_spans"] >= 2 and c["llm_calls"] >= 1 for c in cases), cases
    assert run["passed"] + run["failed"] + run["errors"] == run["trials"]
    # benchmark evidence, not telemetry: no suite trace is an agent run
    assert not sql(demo, "SELECT 1 FROM agent_runs WHERE trace_id IN (SELECT trace_id FROM suite_cases)")


def test_the_web_tells_the_lakes_numbers(demo: dict[str, Any], web: str) -> None:
    board = httpx.get(f"{web}/api/leaderboard", params={"window": "all"}, timeout=30).json()
    shown = {a["agent"]: a for a in board["agents"] + board.get("unranked", [])}
    for r in sql(demo, "SELECT agent, count(*) AS runs, count(eval_score) AS judged, "
                       "count(*) FILTER (WHERE status = 'ok') AS ok FROM agent_runs GROUP BY 1"):
        a = shown[r["agent"]]
        assert (a["runs"], a["judged"]) == (r["runs"], r["judged"]), r["agent"]
        assert a["success_rate"] == pytest.approx(r["ok"] / r["runs"])
    profile = httpx.get(f"{web}/api/agents/ops-helper", timeout=30).json()
    clusters = sql(demo, "SELECT cluster_id FROM failure_clusters WHERE agent = 'ops-helper'")
    assert {c["cluster_id"] for c in profile["clusters"]} == {c["cluster_id"] for c in clusters}
    failed = sql(demo, "SELECT trace_id FROM agent_runs WHERE agent = 'ops-helper' AND status = 'error' LIMIT 1")
    page = httpx.get(f"{web}/runs/{failed[0]['trace_id']}", timeout=30)
    assert page.status_code == 200 and "ops-helper" in page.text
    (run,) = sql(demo, "SELECT suite_version, agent, pass_rate, trials FROM suite_runs")
    benchmarks = httpx.get(f"{web}/api/benchmarks", timeout=30).json()
    assert run["suite_version"] in str(benchmarks)
    (bench,) = sql(demo, "SELECT model, decode_tps_median FROM bench_results")
    assert bench["model"].rsplit("/", 1)[-1] in str(benchmarks)
    model = httpx.get(f"{web}/api/models/{quote(bench['model'], safe='')}", timeout=30)
    assert model.status_code == 200 and f"{bench['decode_tps_median']}"[:5] in model.text


def test_mcp_tells_the_same(demo: dict[str, Any], web: str) -> None:
    from tests.web.test_mcp import answer

    got = answer(f"{web}/mcp", "get_agent", {"name": "ops-helper"})
    (r,) = sql(demo, "SELECT count(*) AS runs, count(eval_score) AS judged FROM agent_runs WHERE agent = 'ops-helper'")
    assert (got["agent"]["runs"], got["agent"]["judged"]) == (r["runs"], r["judged"])
    listed = answer(f"{web}/mcp", "list_benchmarks")
    (run,) = sql(demo, "SELECT suite_version FROM suite_runs")
    assert run["suite_version"] in str(listed)


def test_the_doctor_reads_the_demos_lake(demo: dict[str, Any]) -> None:
    done = subprocess.run([sys.executable, "-m", "otelbench", "doctor", "--lake", str(demo["lake"]), "--since", "all",
                           "--format", "json"], capture_output=True, text=True, cwd=demo["tmp"], timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    services = {s["service"]: s for s in json.loads(done.stdout)["services"]}
    assert "ops-helper" in services and not {"otelbench-judge", "otelbench-bench"} & set(services)
    scopes = {sc["scope"]: sc for sc in services["ops-helper"]["scopes"]}
    openai = scopes["opentelemetry.instrumentation.openai_v2"]  # the real agent's instrumentation
    assert "genai" in openai["conventions"] and openai["llm_calls"] >= 1
    assert openai["shares"]["input_messages"] == 1.0  # the demo turns content capture on
    tools = [sc for sc in scopes.values() if sc["tool_calls"]]
    assert tools and all(sc["tool_arguments_share"] == 1.0 for sc in tools)  # its tools send their arguments
    findings = [f for s in services.values() for f in s["findings"] + [f for sc in s["scopes"] for f in sc["findings"]]]
    assert findings and all(len(f["fix"]) > 20 for f in findings)
