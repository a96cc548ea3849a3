"""The read-only MCP server through the official ``mcp`` client: in memory, over streamable
HTTP at ``/mcp`` of a real ``otelbench web``, and over stdio from ``otelbench mcp`` — on a
lake the real collector wrote from real OTel SDK spans (agent runs, judged and clustered
by the real processors with the judge's endpoint a stub, and the real bench runner's spans
against a scripted OpenAI-compatible server). Answers must equal the web's JSON twins."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from otelbench.testing.agent_runs import Run
from otelbench.testing.failures import CORE, as_agent_runs, planted_failures
from otelbench.testing.wait import run_async
from otelbench.testing.serve import ROOT, serve_web
from otelbench.storage.privacy import Privacy
from tests.web.lakes import collector, judge_and_cluster, rows, send
from otelbench.web import mcp_server
from otelbench.web.app import create_app
from otelbench.web.site import Site

SECRET = "TOP-SECRET-PAYROLL-FIGURES"
HIDDEN_INPUT = "the-hidden-input-text"
PRIVACY = Privacy(private_agents=("payroll",), hide_io_agents=("quiet",))
FAMILIES = [f for f in CORE if f.error_type is not None]
TOOLS = {"search_agents", "search_runs", "get_agent", "get_run", "list_benchmarks", "get_model", "compare",
         "get_instrumentation_report", "get_replays"}


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from otelbench.bench_runner import runner, servers
    from otelbench.bench_runner.hardware import probe_hardware
    from otelbench.bench_runner.spans import BenchSpans
    from otelbench.testing.openai_stub import StubServer

    tmp = tmp_path_factory.mktemp("mcp")
    quiet = planted_failures(FAMILIES[2:3], 6, seed=6)
    runs = [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(5)]
    runs += [Run("calc", "Divide by zero", None, error="ZeroDivisionError: division by zero")]
    runs += [Run("calc-pro", "What is 2 + 2?", "4", cost=0.01, tool="add", tool_arguments='{"a": 2, "b": 2}',
                 tool_result="4")] * 3
    runs += as_agent_runs(planted_failures(FAMILIES[:2], 6, successes=2, seed=5), "support-bot")
    runs += as_agent_runs(quiet, "quiet", task=HIDDEN_INPUT)
    runs += [Run("payroll", SECRET, SECRET)] * 2
    with collector(tmp) as (url, root):
        send(url, root, runs)
        with StubServer() as stub, pytest.MonkeyPatch.context() as mp:
            mp.setenv("HOME", str(tmp))  # no GGUF lookup in the developer's model folders
            spans = BenchSpans(url)
            server = dataclasses.replace(servers.probe(stub.base_url("normal")), models=())
            runner.run_model("stub-model", server, probe_hardware(measure_bandwidth=False), spans,
                             runner.Options(quick=True))
            assert spans.shutdown()["failures"] == 0
    judge_and_cluster(root)
    quiet_texts = [t for col in ("error_message", "output") for t in quiet[col].to_list() if t]
    return {"root": root, "quiet_texts": quiet_texts}


@pytest.fixture(scope="module")
def web(lake: dict[str, Any]) -> TestClient:
    return TestClient(create_app(lake["root"], PRIVACY, refresh_s=0))


@pytest.fixture(scope="module")
def server(lake: dict[str, Any]) -> Any:
    return mcp_server.build(Site(lake["root"], PRIVACY, refresh_s=0))


def call(target: Any, tool: str, args: dict[str, Any] | None = None) -> Any:
    """One tool call through the official client; the CallToolResult."""
    from mcp import Client

    async def go() -> Any:
        async with Client(target) as client:
            return await client.call_tool(tool, args or {})

    return run_async(go)


def answer(target: Any, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = call(target, tool, args)
    assert not result.is_error, result.content
    return result.structured_content


def error(target: Any, tool: str, args: dict[str, Any] | None = None) -> str:
    result = call(target, tool, args)
    assert result.is_error
    text = " ".join(c.text for c in result.content)
    assert "Traceback" not in text and 'File "' not in text  # a message, never a stack trace
    return text


def trace_of(lake: dict[str, Any], agent: str, status: str = "ok") -> str:
    return rows(lake["root"], "SELECT trace_id FROM agent_runs WHERE agent = $a AND status = $s ORDER BY trace_id",
                {"a": agent, "s": status})[0][0]


def test_the_tools_say_what_they_do_and_are_read_only(server: Any) -> None:
    from mcp import Client

    async def go() -> Any:
        async with Client(server) as client:
            return (await client.list_tools()).tools, client.instructions

    tools, instructions = run_async(go)
    assert {t.name for t in tools} == TOOLS and "self-reported telemetry" in instructions
    for t in tools:
        assert len(t.description) > 60 and t.input_schema["type"] == "object", t.name
        assert t.annotations.read_only_hint and not t.annotations.destructive_hint, t.name
    schema = {t.name: t.input_schema for t in tools}
    assert schema["search_agents"]["properties"]["sort"]["enum"] == ["runs", "success", "score", "cost", "latency"]
    assert schema["get_agent"]["required"] == ["name"] and schema["compare"]["required"] == ["a", "b"]
    assert all(p.get("description") for s in schema.values() for p in s.get("properties", {}).values())


def test_answers_are_the_web_pages_numbers(server: Any, web: TestClient, lake: dict[str, Any]) -> None:
    page = web.get("/api/agents/support-bot").json()
    got = answer(server, "get_agent", {"name": "support-bot"})
    assert got["evidence"] == "self-reported telemetry"
    for key in ("runs", "success_rate", "score", "cost_per_run", "p50_ms", "p95_ms", "last_run"):
        assert got["agent"][key] == page["agent"][key], key
    assert got["cost"] == page["cost"] and got["agent"]["url"] == "/agents/support-bot"
    assert [c["size"] for c in got["clusters"]] == [c["size"] for c in page["clusters"]] and got["clusters"]
    failed = rows(lake["root"], "SELECT trace_id FROM agent_runs WHERE agent = 'support-bot' AND status = 'error'")
    assert {r["trace_id"] for r in got["recent_failures"]} <= {t for (t,) in failed}
    assert len(got["recent_failures"]) == min(len(failed), mcp_server.RECENT)
    assert all(r["status"] == "error" for r in got["recent_failures"])

    board = web.get("/api/leaderboard?sort=success&window=all").json()
    found = answer(server, "search_agents", {"query": "CALC", "sort": "success", "window": "all"})
    assert [a["agent"] for a in found["agents"]] == [a["agent"] for a in board["agents"] + board["unranked"]
                                                     if "calc" in a["agent"]] == ["calc", "calc-pro"]
    assert found["agents"][0]["success_rate"] == pytest.approx(5 / 6) and found["matched"] == 2
    by_runs = web.get("/api/leaderboard?window=all").json()["agents"]
    assert [a["agent"] for a in answer(server, "search_agents", {"limit": 2, "window": "all"})["agents"]] == [
        a["agent"] for a in by_runs][:2]

    trace = trace_of(lake, "calc", "error")
    run = answer(server, "get_run", {"trace_id": trace})
    twin = web.get(f"/api/runs/{trace}").json()
    assert run["run"]["status"] == twin["run"]["status"] == "error" and run["spans"] == len(twin["spans"])
    assert [s["name"] for s in run["span_list"]] == [s["name"] for s in twin["spans"]]
    assert run["eval"]["score"] == twin["eval"]["score"] is not None and run["eval"]["reasoning"]

    trace = trace_of(lake, "calc-pro")
    run, twin = answer(server, "get_run", {"trace_id": trace}), web.get(f"/api/runs/{trace}").json()
    asked = [(t["tool_name"], t["arguments"], t["result"]) for s in run["span_list"] for t in s["tool_calls"]]
    assert asked == [(t["tool_name"], t["arguments"], t["result"]) for s in twin["spans"] for t in s["tool_calls"]]
    assert asked == [("add", '{"a": 2, "b": 2}', "4")] and run["unasked_tool_calls"] == []

    assert answer(server, "compare", {"a": "calc", "b": "calc-pro"})["lines"] == web.get(
        "/api/vs/calc/calc-pro").json()["lines"]
    bench = answer(server, "list_benchmarks")
    assert bench == web.get("/api/benchmarks").json() and bench["evidence"] == "benchmark evidence" and bench["suites"]
    model = answer(server, "get_model", {"name": "stub-model"})
    assert model == web.get("/api/models/stub-model").json() and model["runs"]


def test_a_private_agent_is_as_absent_as_an_unknown_one(server: Any, lake: dict[str, Any]) -> None:
    assert error(server, "get_agent", {"name": "payroll"}).replace("payroll", "X") == error(
        server, "get_agent", {"name": "nobody"}).replace("nobody", "X")
    assert "payroll" not in json.dumps(answer(server, "search_agents", {"window": "all", "limit": 200}))
    private_run = trace_of(lake, "payroll")
    assert "no agent run" in error(server, "get_run", {"trace_id": private_run})
    assert "payroll" in error(server, "compare", {"a": "calc", "b": "payroll"})  # named by the asker, not found
    for tool, args in (("get_agent", {"name": "calc"}), ("list_benchmarks", {}), ("get_model", {"name": "stub-model"})):
        assert SECRET not in json.dumps(answer(server, tool, args))


def test_a_hide_io_agent_gives_figures_but_no_text_of_its_runs(server: Any, lake: dict[str, Any]) -> None:
    agent = answer(server, "get_agent", {"name": "quiet"})
    assert agent["io_hidden"] and agent["agent"]["runs"] == 6 and agent["recent_failures"]
    assert all(r["input"] is None and r["output"] is None for r in agent["recent_runs"] + agent["recent_failures"])
    assert agent["clusters"] and all(c["description"] is None for c in agent["clusters"])
    run = answer(server, "get_run", {"trace_id": trace_of(lake, "quiet", "error")})
    for body in (json.dumps(agent), json.dumps(run)):
        assert HIDDEN_INPUT not in body
        for text in lake["quiet_texts"]:
            assert text not in body


@pytest.mark.parametrize("tool, args, says", [
    ("search_agents", {"sort": "bogus"}, "sort"),
    ("search_agents", {"limit": 0}, "limit"),
    ("search_agents", {"window": "1y"}, "window"),
    ("get_agent", {}, "name"),
    ("get_agent", {"name": "nobody"}, "no agent named 'nobody'"),
    ("get_run", {"trace_id": "not-a-trace"}, "no agent run with trace id 'not-a-trace'"),
    ("get_model", {"name": "no-such-model"}, "no-such-model"),
    ("compare", {"a": "calc", "b": "calc-pro", "kind": "planets"}, "kind"),
    ("compare", {"a": "calc", "b": "stub-model"}, "no two agents and no two models"),
])
def test_bad_arguments_are_tool_errors_that_say_what(server: Any, tool: str, args: dict[str, Any], says: str) -> None:
    assert says in error(server, tool, args)


def test_served_at_mcp_by_the_web_over_streamable_http(lake: dict[str, Any], server: Any) -> None:
    with serve_web(lake["root"]) as url:
        got = answer(f"{url}/mcp", "get_agent", {"name": "calc"})
        assert got["agent"] == answer(server, "get_agent", {"name": "calc"})["agent"]
        assert "calc" in error(f"{url}/mcp", "get_agent", {"name": "calc/nope"})
        # another site's page cannot reach it through a name that resolves here
        probe = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"accept": "application/json, text/event-stream"}
        assert httpx.post(f"{url}/mcp", json=probe, headers={**headers, "host": "evil.example"}).status_code == 421
        assert httpx.post(f"{url}/mcp", json=probe, headers=headers).status_code == 200
        assert httpx.get(f"{url}/agents/calc").status_code == 200  # the pages stay as they were


def test_served_over_stdio_by_otelbench_mcp(lake: dict[str, Any], server: Any) -> None:
    from mcp import StdioServerParameters

    command = StdioServerParameters(command=sys.executable, args=["-m", "otelbench", "mcp", "--lake", str(lake["root"]),
                                                                  "--web-url", "http://web.example:8000"], cwd=str(ROOT))
    got = answer(command, "get_agent", {"name": "calc"})
    mine = answer(server, "get_agent", {"name": "calc"})["agent"]
    assert got["agent"] == {**mine, "url": "http://web.example:8000/agents/calc"}
    assert "no agent named 'nobody'" in error(command, "get_agent", {"name": "nobody"})


def test_otelbench_mcp_without_a_lake_says_so(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "otelbench", "mcp", "--lake", str(tmp_path / "none")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no lake at" in done.stderr and done.stdout == ""
