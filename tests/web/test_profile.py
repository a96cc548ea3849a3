"""An agent's profile (``/agents/{name}`` and its twin): charts, cost labels, failure
clusters with trend and examples, share snippets and link-preview tags, against a lake
written by the real collector from real OTel SDK spans, judged and clustered by the real
processors (the judge's endpoint a stub), every figure checked against plain SQL."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from otelbench.testing.agent_runs import Run
from otelbench.testing.failures import CORE, as_agent_runs, planted_failures
from otelbench.storage.privacy import Privacy
from tests.web.lakes import collector, judge_and_cluster, rows, send
from otelbench.web.app import create_app
from otelbench.web.pages.embeds import card_figures
from otelbench.web.series import log_bucket
from otelbench.web.site import Site

HOSTILE_NAME = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
SECRET = "TOP-SECRET-PAYROLL-FIGURES"
HIDDEN_INPUT = "the-hidden-input-text"
PRIVACY = Privacy(private_agents=("payroll",), hide_io_agents=("quiet",))
FAMILIES = [f for f in CORE if f.error_type is not None]


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("profile")
    quiet = planted_failures(FAMILIES[2:3], 6, seed=6)
    runs = [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(4)]
    runs += [Run("calc", "Price it", "1", cost=0.5), Run("calc", "Price it too", "2", cost=0.25)]  # reported
    runs += [Run("calc", "Price me", "3", model="gpt-4o")] * 2  # computed by otelbench
    runs += [Run("calc", "Divide by zero", None, error="ZeroDivisionError: division by zero")]
    runs += as_agent_runs(planted_failures(FAMILIES[:2], 6, successes=2, seed=5), "support-bot")
    runs += as_agent_runs(quiet, "quiet", task=HIDDEN_INPUT)
    runs += as_agent_runs(planted_failures(FAMILIES[3:4], 6, seed=7), "payroll", task=SECRET)
    runs += [Run(HOSTILE_NAME, "hi", "there")]
    with collector(tmp) as (url, root):
        send(url, root, runs)
    judge_and_cluster(root)
    quiet_texts = [t for col in ("error_message", "output") for t in quiet[col].to_list() if t]
    return {"root": root, "quiet_texts": quiet_texts}


@pytest.fixture(scope="module")
def client(lake: dict[str, Any]) -> TestClient:
    return TestClient(create_app(lake["root"], PRIVACY, figures_every_s=0))


def test_the_latency_histogram_counts_every_run_in_its_log_bucket(client: TestClient, lake: dict[str, Any]) -> None:
    data = client.get("/api/agents/support-bot").json()
    durations = [d for (d,) in rows(lake["root"], "SELECT duration_ms FROM agent_runs WHERE agent = 'support-bot'")]
    expected: dict[int, int] = {}
    for d in durations:
        expected[log_bucket(d)] = expected.get(log_bucket(d), 0) + 1
    buckets = data["latency"]["buckets"]
    assert sum(b["count"] for b in buckets) == len(durations) == 14
    first = min(expected)
    assert {first + i: b["count"] for i, b in enumerate(buckets) if b["count"]} == expected
    for b in buckets:  # the edges bracket the runs counted in them
        assert sum(b["lower"] <= max(d, 0.01) < b["upper"] for d in durations) == b["count"]
    page = client.get("/agents/support-bot").text
    assert page.count('<rect class="bar"') >= len(buckets) and 'class="chart histogram"' in page


def test_runs_and_failures_over_time_add_up_to_sql(client: TestClient, lake: dict[str, Any]) -> None:
    data = client.get("/api/agents/calc").json()["over_time"]
    runs, failed = rows(lake["root"], "SELECT count(*), count(*) FILTER (WHERE status = 'error') FROM agent_runs "
                                     "WHERE agent = 'calc'")[0]
    assert data["unit"] == "hour"  # everything was sent just now
    assert sum(p["runs"] for p in data["periods"]) == runs == 9
    assert sum(p["failures"] for p in data["periods"]) == failed == 1
    page = client.get("/agents/calc").text
    assert page.count('<g class="period">') == len(data["periods"]) and "per hour (UTC)" in page


def test_cost_is_shown_per_source_each_labelled(client: TestClient, lake: dict[str, Any]) -> None:
    cost = client.get("/api/agents/calc").json()["cost"]
    by_source = dict(rows(lake["root"], """SELECT cost_source, sum(cost_usd) FROM spans WHERE span_type = 'llm'
        AND trace_id IN (SELECT trace_id FROM agent_runs WHERE agent = 'calc') GROUP BY cost_source"""))
    assert cost["reported"]["total_usd"] == pytest.approx(by_source["reported"]) == pytest.approx(0.75)
    assert by_source["computed"] > 0 and cost["computed"]["total_usd"] == pytest.approx(by_source["computed"])
    assert (cost["reported"]["runs"], cost["computed"]["runs"]) == (2, 2)
    assert cost["source"] == "mixed" and cost["mixed_runs"] == 0  # two kinds of runs, none mixing in itself
    total = by_source["reported"] + by_source["computed"]
    assert cost["total_usd"] == pytest.approx(total) and cost["per_run_usd"] == pytest.approx(total / 9)
    assert cost["reported"]["per_run_usd"] == pytest.approx(0.75 / 9)
    page = client.get("/agents/calc").text
    assert re.search(r'id="cost-reported">\$0\.7500 total · \$0\.0833 per run', page)
    assert f'id="cost-computed">${by_source["computed"]:.4f} total' in page
    assert "total cost <span class=\"muted\">(mixed)</span>" in page


def test_each_recent_run_says_where_its_cost_comes_from(client: TestClient, lake: dict[str, Any]) -> None:
    recent = client.get("/api/agents/calc").json()["recent_runs"]
    truth = dict(rows(lake["root"], """SELECT trace_id, any_value(cost_source) FROM spans WHERE span_type = 'llm'
        AND trace_id IN (SELECT trace_id FROM agent_runs WHERE agent = 'calc') GROUP BY trace_id"""))
    assert {r["trace_id"]: r["cost_source"] for r in recent} == truth
    assert sorted(s for s in truth.values() if s) == ["computed", "computed", "reported", "reported"]


def test_every_agents_series_are_its_own(client: TestClient, lake: dict[str, Any]) -> None:
    # the series are computed for all agents at once and sliced per agent (web/every_agent.py):
    # each profile's counts are its own runs', whatever agents sort before or after it
    truth = {a: (n, failed, timed, cost) for a, n, failed, timed, cost in rows(lake["root"], """
        SELECT r.agent, count(*), count(*) FILTER (WHERE r.status = 'error'), count(r.duration_ms),
               (SELECT sum(cost_usd) FROM spans WHERE span_type = 'llm' AND trace_id IN
                   (SELECT trace_id FROM agent_runs WHERE agent = r.agent))
        FROM agent_runs AS r GROUP BY r.agent""")}
    assert len(truth) == 5
    for agent, (n, failed, timed, cost) in truth.items():
        got = client.get(f"/api/agents/{quote(agent, safe='')}")
        if agent == "payroll":
            assert got.status_code == 404
            continue
        data = got.json()
        assert sum(p["runs"] for p in data["over_time"]["periods"]) == n, agent
        assert sum(p["failures"] for p in data["over_time"]["periods"]) == failed, agent
        assert sum(b["count"] for b in data["latency"]["buckets"]) == timed, agent
        assert data["cost"]["total_usd"] == (pytest.approx(cost) if cost is not None else None), agent


def test_failure_clusters_with_trend_and_example_runs(client: TestClient, lake: dict[str, Any]) -> None:
    clusters = client.get("/api/agents/support-bot").json()["clusters"]
    members = dict(rows(lake["root"], "SELECT cluster_id, count(*) FROM cluster_members WHERE agent = 'support-bot' "
                                     "AND cluster_id >= 0 GROUP BY 1"))
    assert len(clusters) == 2 and {c["cluster_id"]: c["size"] for c in clusters} == members
    page = client.get("/agents/support-bot").text
    for c in clusters:
        assert sum(p["runs"] for p in c["trend"]["periods"]) == members[c["cluster_id"]]
        assert c["description"] and c["description"] in page
        assert c["examples"] and {e["trace_id"] for e in c["examples"]} <= set(c["example_trace_ids"])
        for e in c["examples"]:
            assert f'href="/runs/{e["trace_id"]}"' in page and e["status"] == "error"
        assert client.get(f'/runs/{c["examples"][0]["trace_id"]}').status_code == 200
    assert page.count('class="chart trend"') == 2


def test_a_hide_io_agent_shows_its_clusters_but_no_text_of_its_runs(client: TestClient, lake: dict[str, Any]) -> None:
    data = client.get("/api/agents/quiet").json()
    assert data["clusters"] and all(c["description"] is None and c["top_terms"] == [] for c in data["clusters"])
    assert data["clusters"][0]["examples"] and data["latency"]["buckets"]
    example = data["clusters"][0]["examples"][0]["trace_id"]
    run = client.get(f"/api/runs/{example}").json()  # its cluster, but not the description quoting it
    assert run["cluster"]["cluster_id"] == data["clusters"][0]["cluster_id"] and run["cluster"]["description"] is None
    for body in (client.get("/agents/quiet").text, client.get("/api/agents/quiet").text,
                 client.get("/api/agents/quiet/insights").text, client.get(f"/runs/{example}").text,
                 client.get(f"/api/runs/{example}").text):
        assert HIDDEN_INPUT not in body
        for text in lake["quiet_texts"]:
            assert text not in body


def test_a_private_agent_is_not_found_like_an_unknown_one(client: TestClient) -> None:
    for route in ("/agents/{}", "/api/agents/{}"):
        private, unknown = client.get(route.format("payroll")), client.get(route.format("nobody12"))
        assert private.status_code == unknown.status_code == 404
        assert private.text.replace("payroll", "nobody12") == unknown.text and SECRET not in private.text


def test_link_previews_point_at_the_share_image(client: TestClient, lake: dict[str, Any]) -> None:
    page = client.get("/agents/calc").text
    meta = dict(re.findall(r'<meta (?:property|name)="([^"]+)" content="([^"]*)">', page))
    assert meta["og:image"] == meta["twitter:image"] == "http://testserver/og/calc.png"
    assert meta["og:url"] == "http://testserver/agents/calc" and meta["og:title"] == "calc · otelbench"
    score = rows(lake["root"], "SELECT avg(eval_score) FROM agent_runs WHERE agent = 'calc'")[0][0]
    assert score is not None  # judged by the real judge, its endpoint the stub
    assert meta["og:description"] == f"9 runs · 89% success · judge score {score:.2f} · p50 " + meta[
        "og:description"].rsplit("p50 ", 1)[1] and meta["twitter:card"] == "summary_large_image"
    assert card_figures(Site(lake["root"], PRIVACY), "calc").score == pytest.approx(score)
    image = client.get(meta["og:image"])
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"


def test_badge_and_embed_snippets_work_as_copied(client: TestClient) -> None:
    share = client.get("/api/agents/calc").json()["share"]
    assert share["badge_markdown"]["success"] == (
        "[![success](http://testserver/badge/calc.svg?metric=success)](http://testserver/agents/calc)")
    snippet = share["embed"]["md"]
    assert snippet.startswith('<iframe src="http://testserver/embed/calc?size=md&amp;theme=light" ')
    src = re.search(r'src="([^"]+)"', snippet).group(1).replace("&amp;", "&")
    assert client.get(src).status_code == 200
    assert client.get(share["badges"]["runs"]).text.count(">9<") == 1
    page = client.get("/agents/calc").text  # shown as text to copy, not as an iframe
    assert "&lt;iframe src=&#34;http://testserver/embed/calc?size=md&amp;amp;theme=light&#34;" in page
    assert "<iframe" not in page


def test_a_hostile_name_stays_text_in_tags_snippets_and_charts(client: TestClient) -> None:
    path = quote(HOSTILE_NAME, safe="")
    page = client.get(f"/agents/{path}")
    assert page.status_code == 200
    assert "<script>alert(1)" not in page.text and "<img src=x" not in page.text
    assert f'content="http://testserver/og/{path}.png"' in page.text
    assert "Latency of &lt;script&gt;alert(1)&lt;/script&gt;" in page.text  # the chart's title, escaped
    snippet = client.get(f"/api/agents/{path}").json()["share"]["embed"]["sm"]
    assert "<script>" not in snippet and 'title="&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img' in snippet


def test_a_run_shows_the_judges_latest_score_and_reasoning_and_its_cluster(client: TestClient,
                                                                           lake: dict[str, Any]) -> None:
    judged = rows(lake["root"], """SELECT e.trace_id, e.score, e.reasoning, e.judge_model FROM evals AS e
                                   JOIN agent_runs AS r USING (trace_id) WHERE r.agent = 'support-bot'
                                   AND e.score IS NOT NULL ORDER BY e.trace_id""")
    assert judged
    for trace, score, reasoning, model in judged:
        got = client.get(f"/api/runs/{trace}").json()
        assert (got["eval"]["score"], got["eval"]["reasoning"], got["eval"]["judge_model"]) == (score, reasoning, model)
        assert got["run"]["eval_score"] == score  # the rollup agrees with the evals it read
    member = rows(lake["root"], "SELECT trace_id, cluster_id FROM cluster_members WHERE agent = 'support-bot' "
                                "AND cluster_id >= 0 LIMIT 1")[0]
    assert client.get(f"/api/runs/{member[0]}").json()["cluster"]["cluster_id"] == member[1]
