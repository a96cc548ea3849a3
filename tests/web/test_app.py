"""The web UI's first routes against a lake written by the real collector from real OTel
SDK spans: figures as SQL computes them, 404/400, badges, privacy, hostile span content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from otelbench.testing.agent_runs import Run
from otelbench.testing.collector import lake_of_runs
from otelbench.storage.privacy import Privacy
from otelbench.storage.duckdb import open_lake
from otelbench.web.app import create_app

HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_OUTPUT = '"><img src=x onerror=alert(2)>'
SECRET = "TOP-SECRET-PAYROLL-FIGURES"
HIDDEN_INPUT = "the-hidden-input-text"
HIDDEN_ARGUMENTS, HIDDEN_RESULT = '{"account": "hidden-tool-argument"}', "hidden-tool-result"
HOSTILE_ARGUMENTS, HOSTILE_RESULT = '{"q": "<script>alert(3)</script>"}', "</pre><script>alert(4)</script>"


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    runs = [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(6)]
    runs += [Run("calc", "Divide by zero", None, error="ZeroDivisionError: division by zero")]
    runs += [Run("payroll", SECRET, SECRET)] * 3
    runs += [Run("quiet", HIDDEN_INPUT, "a hidden answer", tool="lookup", tool_arguments=HIDDEN_ARGUMENTS,
                 tool_result=HIDDEN_RESULT)] * 2
    runs += [Run(HOSTILE_NAME, "hi", HOSTILE_OUTPUT, tool="search", tool_arguments=HOSTILE_ARGUMENTS,
                 tool_result=HOSTILE_RESULT)]
    return lake_of_runs(tmp_path_factory.mktemp("web"), runs)


def _sql(lake: Path, sql: str) -> list[tuple]:
    with open_lake(lake) as gw:
        return gw.query(sql, max_rows=None).rows


@pytest.fixture(scope="module")
def client(lake: Path) -> TestClient:
    return TestClient(create_app(lake, Privacy(private_agents=("payroll",), hide_io_agents=("quiet",))))


def test_the_leaderboard_shows_what_sql_computes(client: TestClient, lake: Path) -> None:
    board = client.get("/api/leaderboard?window=all").json()
    by_agent = {a["agent"]: a for a in board["agents"] + board["unranked"]}
    runs, ok = _sql(lake, "SELECT count(*), count(*) FILTER (WHERE status <> 'error') FROM agent_runs "
                          "WHERE agent = 'calc'")[0]
    assert by_agent["calc"]["runs"] == runs == 7
    assert by_agent["calc"]["success_rate"] == pytest.approx(ok / runs)
    page = client.get("/leaderboard?window=all")
    assert page.status_code == 200 and ">calc</a>" in page.text and ">86%<" in page.text


def test_rates_rank_only_agents_with_enough_runs(client: TestClient) -> None:
    board = client.get("/api/leaderboard?window=all&sort=success").json()
    assert [a["agent"] for a in board["agents"]] == ["calc"]
    assert {a["agent"] for a in board["unranked"]} == {"quiet", HOSTILE_NAME}


def test_an_agent_profile_and_its_twin(client: TestClient) -> None:
    data = client.get("/api/agents/calc").json()
    assert data["agent"]["runs"] == 7 and len(data["recent_runs"]) == 7
    assert {r["status"] for r in data["recent_runs"]} == {"ok", "error"}
    page = client.get("/agents/calc")
    assert page.status_code == 200 and "<h1>calc</h1>" in page.text and "86%" in page.text
    assert client.get("/api/agents/calc/insights").json() == {"agent": "calc", "clusters": []}


def test_unknown_things_and_bad_parameters_say_what(client: TestClient) -> None:
    page = client.get("/agents/nobody")
    assert page.status_code == 404 and "no agent named &#39;nobody&#39;" in page.text
    assert client.get("/api/agents/nobody").json() == {"error": "no agent named 'nobody'"}
    bad = client.get("/api/leaderboard?sort=vibes")
    assert bad.status_code == 400 and "sort must be one of" in bad.json()["error"]
    assert client.post("/leaderboard").status_code == 405


def test_badges(client: TestClient) -> None:
    svg = client.get("/badge/calc.svg?metric=success")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert svg.headers["cache-control"] == "max-age=60" and ">86%<" in svg.text
    assert client.get("/badge/calc.svg", headers={"If-None-Match": svg.headers["etag"]}).status_code == 304
    runs = client.get("/badge/calc.svg?metric=runs").text
    assert ">runs<" in runs and ">7<" in runs
    missing = client.get("/badge/nobody.svg")
    assert missing.status_code == 200 and ">not found<" in missing.text
    assert client.get("/badge/calc.svg?metric=vibes").status_code == 400


def test_security_headers(client: TestClient) -> None:
    headers = client.get("/leaderboard").headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    # one script from this origin (/static/live.js), never inline; its WebSocket back here only
    assert "script-src 'self';" in headers["content-security-policy"]
    assert "connect-src 'self';" in headers["content-security-policy"]
    assert "unsafe-inline" not in headers["content-security-policy"].split("script-src")[1].split(";")[0]
    assert headers["x-content-type-options"] == "nosniff"


ROUTES = ["/", "/api/home", "/leaderboard?window=all", "/api/leaderboard?window=all", "/leaderboard?tab=models",
          "/api/leaderboard?tab=models", "/benchmarks", "/api/benchmarks", "/agents/quiet", "/api/agents/quiet",
          "/api/agents/quiet/insights", "/badge/quiet.svg?metric=runs", "/embed/quiet", "/embed/quiet?theme=dark&size=lg",
          "/agents/calc", "/api/agents/calc", "/vs/calc/quiet", "/api/vs/calc/quiet", "/metrics"]
NAMED = ["/agents/{}", "/api/agents/{}", "/api/agents/{}/insights", "/badge/{}.svg", "/badge/{}.svg?metric=runs",
         "/embed/{}", "/og/{}.png", "/vs/{}/calc", "/api/vs/{}/calc", "/vs/calc/{}", "/models/{}", "/api/models/{}"]


def test_a_private_agent_appears_nowhere_and_hidden_io_is_never_shown(client: TestClient, lake: Path) -> None:
    quiet_runs = [r[0] for r in _sql(lake, "SELECT trace_id FROM agent_runs WHERE agent = 'quiet'")]
    for route in ROUTES + [f"/runs/{t}" for t in quiet_runs] + [f"/api/runs/{t}" for t in quiet_runs]:
        body = client.get(route).text
        assert "payroll" not in body and SECRET not in body, route
        assert HIDDEN_INPUT not in body and "a hidden answer" not in body, route
    for route in NAMED:  # asked by name: the very answer an unknown name gets
        private, unknown = client.get(route.format("payroll")), client.get(route.format("nobody12"))
        assert private.status_code == unknown.status_code, route
        assert private.text.replace("payroll", "nobody12") == unknown.text, route
        assert SECRET not in private.text
    assert client.get("/agents/payroll").status_code == 404
    assert client.get("/api/agents/quiet").json()["agent"]["runs"] == 2
    for trace in (r[0] for r in _sql(lake, "SELECT trace_id FROM agent_runs WHERE agent = 'payroll'")):
        for route in ("/runs/{}", "/api/runs/{}"):  # a private run: the answer an unknown trace id gets
            private, unknown = client.get(route.format(trace)), client.get(route.format("0" * 32))
            assert (private.status_code, private.text.replace(trace, "0" * 32)) == (404, unknown.text), route


def test_hostile_span_content_is_inert_text(client: TestClient) -> None:
    from urllib.parse import quote

    for route in ["/", "/leaderboard?window=all", f"/agents/{quote(HOSTILE_NAME, safe='')}",
                  f"/badge/{quote(HOSTILE_NAME, safe='')}.svg?metric=runs"]:
        body = client.get(route).text
        assert "<script>alert(1)" not in body and "<img src=x" not in body, route
    page = client.get(f"/agents/{quote(HOSTILE_NAME, safe='')}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(2)&gt;" in page


def _trace_of(lake: Path, agent: str) -> str:
    return _sql(lake, f"SELECT trace_id FROM agent_runs WHERE agent = '{agent}' ORDER BY start_time LIMIT 1")[0][0]


def test_a_run_page_shows_its_spans_as_sql_has_them(client: TestClient, lake: Path) -> None:
    trace = _trace_of(lake, "calc")
    data = client.get(f"/api/runs/{trace}").json()
    spans = _sql(lake, f"SELECT name FROM spans WHERE trace_id = '{trace}' ORDER BY start_time, span_id")
    assert [s["name"] for s in data["spans"]] == [n for (n,) in spans] and data["run"]["agent"] == "calc"
    page = client.get(f"/runs/{trace}")
    assert page.status_code == 200 and "invoke_agent calc" in page.text and "What is 0 + 1?" in page.text
    assert f'href="/runs/{trace}"' in client.get("/agents/calc").text


def test_a_run_page_gives_span_attributes_as_sent(client: TestClient, lake: Path) -> None:
    # the root's message attributes are stored once, in their columns (attributes_moved):
    # the run page puts them back as the spans view does, with or without an answer
    for task, answer in (("What is 0 + 1?", "1"), ("Divide by zero", None)):
        trace = _sql(lake, f"SELECT trace_id FROM agent_runs WHERE agent = 'calc' AND input LIKE '%{task}%'")[0][0]
        shown = {s["span_id"]: json.loads(s["attributes"]) for s in client.get(f"/api/runs/{trace}").json()["spans"]}
        viewed = {sid: json.loads(a) for sid, a in _sql(lake, f"SELECT span_id, attributes FROM spans "
                                                             f"WHERE trace_id = '{trace}'")}
        assert shown == viewed
        root = next(a for a in shown.values() if a.get("gen_ai.operation.name") == "invoke_agent")
        text = [{"type": "text", "content": task}]
        assert root["gen_ai.input.messages"] == json.dumps([{"role": "user", "parts": text}])
        assert root.get("gen_ai.output.messages") == (None if answer is None else json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]))
        # the case this checks: keys stored once
        assert _sql(lake, f"SELECT 1 FROM spans WHERE trace_id = '{trace}' AND attributes_moved NOT NULL")


def test_private_and_hidden_runs(client: TestClient, lake: Path) -> None:
    private, unknown = client.get(f"/runs/{_trace_of(lake, 'payroll')}"), client.get("/runs/" + "0" * 32)
    assert private.status_code == unknown.status_code == 404
    assert SECRET not in private.text and "payroll" not in private.text
    assert client.get(f"/api/runs/{_trace_of(lake, 'payroll')}").status_code == 404
    for route in (f"/runs/{_trace_of(lake, 'quiet')}", f"/api/runs/{_trace_of(lake, 'quiet')}"):
        body = client.get(route)
        assert body.status_code == 200 and HIDDEN_INPUT not in body.text and "a hidden answer" not in body.text
    hostile = client.get(f"/runs/{_trace_of(lake, HOSTILE_NAME)}").text
    assert "<img src=x" not in hostile and "<script>alert(1)" not in hostile


def test_a_run_shows_each_tool_call_under_the_call_that_asked_for_it_escaped(client: TestClient, lake: Path) -> None:
    trace = _trace_of(lake, HOSTILE_NAME)
    data = client.get(f"/api/runs/{trace}").json()
    (chat,) = [s for s in data["spans"] if s["span_type"] == "llm"]
    (call,) = chat["tool_calls"]
    assert (call["tool_name"], call["tool_call_id"], call["arguments"], call["result"], call["llm_span_id"]) == (
        "search", "call_1", HOSTILE_ARGUMENTS, HOSTILE_RESULT, chat["span_id"])
    assert data["unasked_tool_calls"] == [] and all(s["tool_calls"] == [] for s in data["spans"] if s is not chat)
    page = client.get(f"/runs/{trace}").text
    # the tool call's row follows its chat's, its texts escaped
    assert page.index(f'data-span="{chat["span_id"]}"') < page.index(f'data-tool-call="{call["span_id"]}"')
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page and "&lt;/pre&gt;&lt;script&gt;alert(4)" in page
    assert "<script>alert(3)" not in page and "<script>alert(4)" not in page


def test_a_hide_io_runs_tool_calls_keep_no_text(client: TestClient, lake: Path) -> None:
    trace = _trace_of(lake, "quiet")
    data = client.get(f"/api/runs/{trace}").json()
    (call,) = [t for s in data["spans"] for t in s["tool_calls"]]
    assert call["tool_name"] == "lookup" and call["arguments"] is None and call["result"] is None
    for body in (client.get(f"/runs/{trace}").text, client.get(f"/api/runs/{trace}").text):
        assert "hidden-tool-argument" not in body and HIDDEN_RESULT not in body
    assert "arguments and result hidden" in client.get(f"/runs/{trace}").text


def test_the_embed_is_the_only_framable_route_and_has_sizes_and_themes(client: TestClient) -> None:
    for size in ("sm", "md", "lg"):
        for theme in ("light", "dark"):
            r = client.get(f"/embed/calc?size={size}&theme={theme}")
            assert r.status_code == 200 and ">calc</a>" in r.text and f'class="{theme}"' in r.text
            assert "frame-ancestors *" in r.headers["content-security-policy"] and "x-frame-options" not in r.headers
    assert ("judge score" in client.get("/embed/calc?size=md").text) and "judge score" not in client.get(
        "/embed/calc?size=sm").text
    assert client.get("/embed/calc?theme=neon").status_code == 400
    assert client.get("/embed/payroll").status_code == 404
    assert client.get("/agents/calc").headers["x-frame-options"] == "DENY"


def test_two_agents_side_by_side(client: TestClient) -> None:
    data = client.get("/api/vs/calc/quiet").json()
    lines = {line["figure"]: line for line in data["lines"]}
    assert lines["runs"]["a"] == 7 and lines["runs"]["b"] == 2 and lines["runs"]["winner"] == "a"
    assert lines["success_rate"]["winner"] == "b"  # quiet never failed
    page = client.get("/vs/calc/quiet")
    assert page.status_code == 200 and "calc</a> vs <a" in page.text
    assert client.get("/vs/calc/payroll").status_code == 404


def test_metrics_count_requests_per_route_and_status(lake: Path) -> None:
    fresh = TestClient(create_app(lake, Privacy()))
    fresh.get("/leaderboard")
    fresh.get("/agents/calc")
    fresh.get("/agents/nobody")
    text = fresh.get("/metrics").text
    assert 'otelbench_web_requests_total{route="leaderboard",status="200"} 1' in text
    assert 'otelbench_web_requests_total{route="agent",status="404"} 1' in text
    assert 'otelbench_web_request_seconds_count{route="agent"} 2' in text
