"""Agent suites in the web UI, its JSON twins and MCP's ``list_benchmarks``: on a lake the
real ``otelbench suite run`` wrote through a real collector (tests/web/suite_lake.py: two
suite versions, a public agent whose answers hold markup, a ``hide_io`` one, one private
by name and one sent with a private owner's key). The figures must be ``suite_runs``'
own, the versions never put together, nothing of a private agent shown to who may not
see it, no text of a ``hide_io`` one, every span text escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from otelbench.collector.config import ApiKey
from otelbench.collector.keys import Keyring
from otelbench.testing.wait import run_async
from otelbench.storage.privacy import Privacy
from tests.web.lakes import rows
from tests.web.suite_lake import (FIGURES, FULL, HUSHED, MARKUP, OWNER, QUIET_ANSWER, QUIET_STDERR, SECRET, keys)
from otelbench.web import mcp_server
from otelbench.web.pages import suites
from otelbench.web.access import Access
from otelbench.web.app import create_app
from otelbench.web.site import Site

PRIVACY = Privacy(private_agents=("secret-agent",), private_owners=("hush",), hide_io_agents=("quiet",))
HIDDEN_AGENTS = ("secret-agent", "hushed")
FIGURES_OF = ("run_id", "pass_rate", "pass_rate_low", "pass_rate_high", "trials", "passed", "failed", "errors",
              "cost_usd", "latency_p50_ms")
# each agent's latest complete run of the whole suite per version, as plain SQL over the view
STANDING_SQL = f"""SELECT suite_version, agent, {', '.join(FIGURES_OF)} FROM suite_runs
WHERE status = 'complete' AND NOT partial
QUALIFY row_number() OVER (PARTITION BY suite_version, agent ORDER BY start_time DESC) = 1
ORDER BY suite_version, agent"""


@pytest.fixture(scope="module")
def client(suite_lake: Path) -> TestClient:
    return TestClient(create_app(suite_lake, PRIVACY, refresh_s=0,
                                 keyring=Keyring([ApiKey(**k) for k in keys()])))


def standing(lake: Path, hidden: tuple[str, ...] = HIDDEN_AGENTS) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for r in rows(lake, STANDING_SQL):
        if r[1] not in hidden:
            found[(r[0], r[1])] = dict(zip(FIGURES_OF, r[2:]))
    return found


def versions(lake: Path) -> dict[str, str]:
    """Declared version (``chores-v1``) → full version (with its content hash)."""
    return {v.split("+")[0]: v for (v,) in rows(lake, "SELECT DISTINCT suite_version FROM suite_runs")}


def everything(client: TestClient, lake: Path, key: str | None = None) -> dict[str, str]:
    """Every page and JSON twin that shows agent suites, as text, for a reader with ``key``."""
    h = {"X-Bench-Key": key} if key else {}
    full = versions(lake)
    paths = ["/benchmarks", "/benchmarks/chores", "/benchmarks/chores-v1", f"/benchmarks/{quote(full['chores-v2'])}",
             "/agents/alpha", "/agents/quiet"]
    out = {}
    for p in paths:
        out[p] = client.get(p, headers=h).text
        out[f"/api{p}"] = client.get(f"/api{p}", headers=h).text
    return out


def test_benchmarks_lists_each_agents_standing_run_per_version_as_sql_has_it(client: TestClient,
                                                                               suite_lake: Path) -> None:
    data = client.get("/api/benchmarks").json()["agent_suites"]
    assert data["evidence"] == "benchmark evidence" and data["label"] == suites.LABEL
    shown = {(v["suite_version"], a["agent"]): {k: a[k] for k in FIGURES_OF}
             for v in data["suites"] for a in v["agents"]}
    expected = standing(suite_lake)
    assert shown.keys() == expected.keys() and len(shown) == 3  # alpha on both versions, quiet on v1
    for key, figures in expected.items():
        assert shown[key] == pytest.approx(figures), key
    full = versions(suite_lake)
    # alpha's latest run on v1 is a partial one (--cases): the complete one before it stands
    assert shown[(full["chores-v1"], "alpha")]["pass_rate"] == 1.0
    assert shown[(full["chores-v2"], "alpha")]["pass_rate"] == pytest.approx(4 / 6)  # never 10 of 12 pooled
    assert [v["suite_version"] for v in data["suites"]] == [full["chores-v1"], full["chores-v2"]]
    v1 = data["suites"][0]
    assert [a["agent"] for a in v1["agents"]] == ["alpha", "quiet"]  # by pass rate
    assert v1["runs"] == 4 and v1["url"] == f"/benchmarks/{quote(full['chores-v1'], safe='')}"

    page = client.get("/benchmarks").text
    assert "Agent suites" in page and suites.LABEL in page
    for (version, agent), figures in expected.items():
        row = re.search(rf'<tr data-run="{figures["run_id"]}" data-agent="{agent}"[^>]*>(.*?)</tr>', page, re.S)
        assert row, (version, agent)
        low, high = (round(figures[k] * 100) for k in ("pass_rate_low", "pass_rate_high"))
        assert f"{round(figures['pass_rate'] * 100)}%" in row[1] and f"{low}%–{high}%" in row[1]
        assert f'data-figure="trials">{figures["trials"]}<' in row[1]


def test_a_suite_page_keeps_each_version_apart_with_the_cases_of_each_agents_run(client: TestClient,
                                                                                 suite_lake: Path) -> None:
    full = versions(suite_lake)
    by_name = client.get("/api/benchmarks/chores").json()
    assert by_name["kind"] == "agent" and by_name["evidence"] == "benchmark evidence"
    assert [v["suite_version"] for v in by_name["versions"]] == [full["chores-v1"], full["chores-v2"]]
    for v in by_name["versions"]:  # nothing of one version in another's section
        assert {r["suite_version"] for r in v["runs"] + v["agents"] + [t["run"] for t in v["tables"]]} == {
            v["suite_version"]}
    declared = client.get("/api/benchmarks/chores-v1").json()
    exact = client.get(f"/api/benchmarks/{quote(full['chores-v1'], safe='')}").json()
    assert declared["versions"] == exact["versions"] == by_name["versions"][:1]
    v1 = declared["versions"][0]
    assert [r["status"] for r in v1["runs"]] == ["complete"] * 4 and [r["partial"] for r in v1["runs"]].count(True) == 1
    alpha = next(t for t in v1["tables"] if t["run"]["agent"] == "alpha")
    run_id = standing(suite_lake)[(full["chores-v1"], "alpha")]["run_id"]
    assert alpha["run"]["run_id"] == run_id and alpha["run"]["standing"] and not alpha["io_hidden"]
    cases = rows(suite_lake, """SELECT case_id, checker, count(*) FILTER (WHERE passed), count(*),
                                       arg_max(reason, repeat), arg_max(output, repeat)
                                FROM suite_cases WHERE run_id = $r GROUP BY ALL ORDER BY case_id""", {"r": run_id})
    got = sorted(alpha["cases"], key=lambda c: c["case_id"])
    assert [(c["case_id"], c["checker"], c["passed"], c["repeats"], c["last_reason"]) for c in got] == [
        c[:5] for c in cases]
    assert {c["case_id"]: c["trials"][-1]["output"] for c in got} == {c[0]: c[5] for c in cases}
    assert next(c for c in got if c["case_id"] == "markup")["trials"][0]["output"] == MARKUP
    # a case trace is the runner's, not an agent run: no run page for it, the evidence is inline
    trace = got[0]["trials"][0]["trace_id"]
    assert client.get(f"/api/runs/{trace}").status_code == 404

    page = client.get("/benchmarks/chores").text
    assert suites.LABEL in page and f'<table class="cases" data-run="{run_id}">' in page
    assert "&lt;script&gt;window.__sentinel = &#34;pwned&#34;&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script" not in page and "<img" not in page  # the answer's markup is text, and the page has none
    assert client.get("/api/benchmarks/nope").json() == {"error": "no benchmark suite named 'nope'"}


def test_the_web_reads_a_runs_cases_as_suite_cases_has_them(suite_lake: Path) -> None:
    """Differential: the case spans read alone (storage/queries/web_suites.py CASES, no
    join with the agents' spans) give the very rows of the ``suite_cases`` view."""
    from otelbench.storage.duckdb import open_lake
    from otelbench.storage.queries import web_suites as q

    columns = ("run_id", "trace_id", "span_id", "start_time", "duration_ms", "case_id", "repeat", "checker",
               "verdict", "reason", "input", "output", "stderr", "exit_code", "timed_out", "flooded", "owner")
    with open_lake(suite_lake) as gw:
        run_ids = [r[0] for r in gw.query("SELECT run_id FROM suite_runs", max_rows=None).rows]
        got = gw.query(q.CASES, {"run_ids": run_ids, "private_owners": [], "chars": 10**6}, max_rows=None)
        view = gw.query(f"SELECT {', '.join(columns)} FROM suite_cases ORDER BY trace_id", max_rows=None).rows
    mine = sorted((tuple(dict(zip(got.columns, r))[c] for c in columns) for r in got.rows), key=lambda r: r[1])
    assert len(mine) == len(view) == 6 * 6 + 2 + 1 and mine == view


def test_the_profile_shows_benchmark_evidence_apart_from_telemetry(client: TestClient, suite_lake: Path) -> None:
    full = versions(suite_lake)
    data = client.get("/api/agents/alpha").json()
    block = data["benchmarks"]
    assert block["evidence"] == "benchmark evidence" and block["label"] == suites.LABEL
    expected = {k: v for k, v in standing(suite_lake).items() if k[1] == "alpha"}
    shown = {(r["suite_version"], r["agent"]): {k: r[k] for k in FIGURES_OF} for r in block["results"]}
    assert shown.keys() == expected.keys() and len(shown) == 2
    assert all(shown[k] == pytest.approx(f) for k, f in expected.items())
    assert data["agent"]["runs"] == 2  # its telemetry counts its own runs, none of the suite's cases
    page = client.get("/agents/alpha").text
    section = page[page.index('<section class="evidence" id="benchmark-evidence">'):]
    section = section[:section.index("</section>")]
    assert "Benchmark evidence" in section and suites.LABEL in section
    assert f'href="/benchmarks/{quote(full["chores-v2"], safe="")}"' in section
    assert page.index("benchmark-evidence") > page.index("Recent runs")  # below the telemetry, boxed apart


def test_a_private_agents_results_appear_nowhere_to_who_may_not_see_it(client: TestClient, suite_lake: Path) -> None:
    for path, body in everything(client, suite_lake).items():
        for text in (*HIDDEN_AGENTS, SECRET, HUSHED):
            assert text not in body, (path, text)
    # its own suite answers exactly as an unknown one does
    for route in ("/api/benchmarks/", "/benchmarks/"):
        vault, nobody = client.get(f"{route}vault"), client.get(f"{route}nobody")
        assert vault.status_code == nobody.status_code == 404
        assert vault.text.replace("vault", "X") == nobody.text.replace("nobody", "X")
    assert client.get("/api/agents/secret-agent").status_code == 404


def test_a_hide_io_agent_shows_its_figures_but_no_input_answer_stderr_or_reason(client: TestClient,
                                                                               suite_lake: Path) -> None:
    for path, body in everything(client, suite_lake).items():
        assert QUIET_ANSWER not in body and QUIET_STDERR not in body, path
    v1 = client.get("/api/benchmarks/chores-v1").json()["versions"][0]
    quiet = next(t for t in v1["tables"] if t["run"]["agent"] == "quiet")
    assert quiet["io_hidden"] and quiet["run"]["pass_rate"] == pytest.approx(2 / 6)
    for c in quiet["cases"]:
        assert c["input"] is None and c["last_reason"] is None
        assert all(t[f] is None for t in c["trials"] for f in ("output", "stderr", "reason"))
        assert [t["verdict"] for t in c["trials"]]  # the verdicts stay
    alpha = next(t for t in v1["tables"] if t["run"]["agent"] == "alpha")
    assert all(c["input"] for c in alpha["cases"])
    assert "This agent's inputs, answers, stderr and reasons are hidden." in client.get("/benchmarks/chores").text


def test_read_keys_see_what_their_grants_name(client: TestClient, suite_lake: Path) -> None:
    full_view = everything(client, suite_lake, FULL)
    assert "secret-agent" in full_view["/api/benchmarks"] and SECRET in full_view["/api/benchmarks/chores"]
    assert client.get("/api/benchmarks/vault", headers={"X-Bench-Key": FULL}).status_code == 200
    assert "hushed" not in full_view["/api/benchmarks"]  # another grant's
    figures = everything(client, suite_lake, FIGURES)  # the agent's figures, not its texts
    assert "secret-agent" in figures["/api/benchmarks"] and not any(SECRET in b for b in figures.values())
    expected = standing(suite_lake, hidden=("hushed",))
    secret = [a for v in json.loads(figures["/api/benchmarks"])["agent_suites"]["suites"] for a in v["agents"]
              if a["agent"] == "secret-agent"]
    assert [{k: a[k] for k in FIGURES_OF} for a in secret] == [
        pytest.approx(f) for (v, agent), f in expected.items() if agent == "secret-agent"]
    owner = everything(client, suite_lake, OWNER)
    assert HUSHED in owner["/api/benchmarks/chores"] and "secret-agent" not in owner["/api/benchmarks"]


def _answer(server: Any, tool: str) -> dict[str, Any]:
    from mcp import Client

    async def go() -> Any:
        async with Client(server) as c:
            return await c.call_tool(tool, {})

    result = run_async(go)
    assert not result.is_error, result.content
    return result.structured_content


def test_list_benchmarks_returns_the_agent_suites_as_the_json_twin_does(client: TestClient, suite_lake: Path) -> None:
    site = Site(suite_lake, PRIVACY, refresh_s=0)
    got = _answer(mcp_server.build(site), "list_benchmarks")
    assert got == client.get("/api/benchmarks").json()
    agents = got["agent_suites"]
    assert agents["evidence"] == "benchmark evidence" and agents["label"] == suites.LABEL
    assert {(v["suite_version"], a["agent"]) for v in agents["suites"] for a in v["agents"]} == set(
        standing(suite_lake))
    for v in agents["suites"]:
        for a in v["agents"]:
            assert {"pass_rate", "pass_rate_low", "pass_rate_high", "trials"} <= a.keys()
    body = json.dumps(got)
    assert not any(t in body for t in (*HIDDEN_AGENTS, SECRET, HUSHED, QUIET_ANSWER))
    keyed = mcp_server.build(site, access=Access(PRIVACY, Keyring([ApiKey(**k) for k in keys()])), key=FULL)
    assert "secret-agent" in json.dumps(_answer(keyed, "list_benchmarks"))


def test_the_suite_runs_are_read_once_per_rollup_version(suite_lake: Path) -> None:
    site = Site(suite_lake, PRIVACY, refresh_s=0)
    first = suites.runs(site)
    assert suites.runs(site) is first and site.viewing(Privacy()) is not site
    assert suites.runs(site.viewing(Privacy())) is not first  # another reader's, computed for it
    assert {r["agent"] for r in suites.runs(site.viewing(Privacy()))} >= set(HIDDEN_AGENTS)
