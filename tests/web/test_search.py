"""Run search (``/search``, ``/api/search``, MCP ``search_runs``) over a lake the real
collector wrote from real OTel SDK spans, judged and clustered by the real processors:
each filter narrows to what SQL over the lake's ``agent_runs`` finds, words of a task and
of an answer find their run, paging and sorting, privacy (a private agent's run never
found by an outsider; a ``hide_io`` run never found by words), escaping, and a new run
found once the refresh has run."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from otelbench.storage.privacy import Privacy
from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.wait import wait_for
from otelbench.web.app import create_app
from otelbench.web.pages.search import search
from otelbench.web.site import Site
from tests.web.lakes import collector, judge_and_cluster, rows, runs_in

PRIVACY = Privacy(private_agents=("vault",), hide_io_agents=("muted",))
FAILURE = "the parcel tool timed out at the depot"
SCRIPT = "<script>alert('task')</script> whale"
IMG = '"><img src=x onerror=alert(1)> answer'


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The lake and the collector writing it (still running: the freshness test sends more)."""
    tmp = tmp_path_factory.mktemp("search")
    with collector(tmp) as (url, root):
        first = [Run("scout", "find the blue whale", "the whale swims deep", model="gpt-4o", cost=0.5, seconds=2.0),
                 Run("scout", "count the sheep", "forty sheep", model="smollm2", cost=0.01, seconds=0.2),
                 *(Run("courier", f"deliver parcel {i}", None, error=FAILURE) for i in range(6)),
                 Run("courier", SCRIPT, IMG),
                 Run("vault", "whale secret zzqvaultzz", "zzqvaultzz"),
                 Run("muted", "whale mutedword", "mutedanswer"),
                 Run("relay", "an old relay", "done", seconds=3 * 86_400)]  # started three days ago
        send_runs(url, first)
        wait_for(lambda: runs_in(root) == len(first), what="the first runs in the lake")
        judge_and_cluster(root, score=0.75, privacy=PRIVACY)  # these are judged; the later ones are not
        middle = dt.datetime.now(dt.timezone.utc)
        later = [Run("scout", "a later whale sighting", "seen", model="gpt-4o", cost=0.2, seconds=0.5),
                 *(Run("relay", f"relay message {i} whale" if i % 2 else f"relay note {i}", "done") for i in range(7))]
        send_runs(url, later)
        wait_for(lambda: runs_in(root) == len(first) + len(later), what="the later runs in the lake")
        yield {"url": url, "root": root, "middle": middle}


@pytest.fixture(scope="module")
def site(lake: dict[str, Any]) -> Iterator[Site]:
    s = Site(lake["root"], PRIVACY, refresh_s=0)
    s.refresh()
    yield s
    s.close()


@pytest.fixture(scope="module")
def client(lake: dict[str, Any]) -> Iterator[TestClient]:
    with TestClient(create_app(lake["root"], PRIVACY, refresh_s=0), base_url="http://127.0.0.1") as c:
        yield c


def found(site: Site, **params: Any) -> set[str]:
    return {r["trace_id"] for r in search(site, {"per_page": 100, **params})["runs"]}


def sql(lake: dict[str, Any], where: str, params: dict[str, Any] | None = None) -> set[str]:
    return {r[0] for r in rows(lake["root"], f"SELECT trace_id FROM agent_runs WHERE agent <> 'vault' AND ({where})",
                               params)}


@pytest.mark.parametrize(("params", "where"), [
    ({}, "true"),
    ({"agent": "scout"}, "agent = 'scout'"),
    ({"status": "error"}, "status = 'error'"),
    ({"model": "gpt-4o"}, "trace_id IN (SELECT trace_id FROM llm_calls WHERE request_model = 'gpt-4o')"),
    ({"min_score": "0.5"}, "eval_score >= 0.5"),
    ({"max_score": "0.5"}, "eval_score <= 0.5"),
    ({"min_cost": "0.1"}, "cost_usd >= 0.1"),
    ({"max_cost": "0.1"}, "cost_usd <= 0.1"),
    ({"min_ms": "1000"}, "duration_ms >= 1000"),
    ({"max_ms": "1000"}, "duration_ms <= 1000"),
    ({"since": "MIDDLE"}, "start_time >= $middle"),
    ({"until": "MIDDLE"}, "start_time < $middle"),
    ({"window": "24h"}, "start_time >= now() - INTERVAL 24 HOUR"),
    ({"agent": "scout", "min_cost": "0.1", "status": "ok"}, "agent = 'scout' AND cost_usd >= 0.1 AND status = 'ok'"),
])
def test_each_filter_narrows_to_what_sql_finds(site: Site, lake: dict[str, Any], params: dict[str, str],
                                               where: str) -> None:
    middle = lake["middle"].isoformat()
    asked = {k: middle if v == "MIDDLE" else v for k, v in params.items()}
    expected = sql(lake, where, {"middle": lake["middle"]} if "$middle" in where else None)
    assert found(site, **asked) == expected
    assert expected or not params  # every case finds something, or it could not tell a filter from none
    if params:
        assert expected != sql(lake, "true"), "the filter must leave some runs out"


def test_a_failure_cluster_finds_its_members(site: Site, client: TestClient, lake: dict[str, Any]) -> None:
    clusters = client.get("/api/agents/courier/insights").json()["clusters"]
    assert clusters, "the processors clustered courier's failures"
    for c in clusters:
        members = {r[0] for r in rows(lake["root"], "SELECT trace_id FROM cluster_members WHERE agent = 'courier' "
                                                   "AND cluster_id = $c", {"c": c["cluster_id"]})}
        assert found(site, agent="courier", cluster=str(c["cluster_id"])) == members and members
    assert client.get("/api/search?cluster=0").status_code == 400  # a cluster is an agent's
    headers = {"accept": "application/json, text/event-stream"}
    c = clusters[0]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_runs", "arguments": {"agent": "courier", "cluster": c["cluster_id"]}}}
    answer = client.post("/mcp", json=body, headers=headers).json()["result"]["structuredContent"]
    assert {r["trace_id"] for r in answer["runs"]} == found(site, agent="courier", cluster=str(c["cluster_id"]))


def test_words_of_a_task_and_of_an_answer_find_their_run(site: Site, lake: dict[str, Any]) -> None:
    blue = sql(lake, "input LIKE '%blue whale%'")
    assert len(blue) == 1
    assert found(site, q="blue") == blue  # a word of the task
    assert found(site, q="SWIMS") == blue  # of the answer, any case
    assert found(site, q="whale deep") == blue  # each word in either
    assert found(site, q="whale", agent="relay") == sql(lake, "agent = 'relay' AND input LIKE '%whale%'")
    assert found(site, q="nowhere") == set()
    assert found(site, q="whale") == sql(lake, "(input LIKE '%whale%' OR output LIKE '%whale%') AND agent <> 'muted'")


def test_paging_and_sorting(client: TestClient, lake: dict[str, Any]) -> None:
    every = sql(lake, "agent = 'relay'")
    pages, url = [], "/api/search?agent=relay&per_page=3&sort=oldest"
    page = client.get(url).json()
    assert page["total"] == len(every) == 8 and page["pages"] == 3
    for n in range(1, 4):
        page = client.get(f"{url}&page={n}").json()
        pages += page["runs"]
        assert page["page"] == n and (page["links"]["next"] is None) == (n == 3)
    ids = [r["trace_id"] for r in pages]
    assert len(ids) == len(set(ids)) and set(ids) == every
    starts = [r["start_time"] for r in pages]
    assert starts == sorted(starts)
    slowest = client.get("/api/search?sort=slowest&per_page=100").json()["runs"]
    assert [r["duration_ms"] for r in slowest] == sorted((r["duration_ms"] for r in slowest), reverse=True)
    assert client.get("/api/search?sort=sideways").status_code == 400
    assert client.get("/api/search?min_cost=lots").status_code == 400
    assert client.get("/api/search?page=100000").status_code == 400


def test_a_private_agents_runs_never_appear_for_an_outsider(site: Site, client: TestClient,
                                                            lake: dict[str, Any]) -> None:
    vault = {r[0] for r in rows(lake["root"], "SELECT trace_id FROM agent_runs WHERE agent = 'vault'")}
    assert vault
    for url in ("/api/search?q=secret", "/api/search?agent=vault", "/api/search?per_page=100",
                "/search?q=whale&per_page=100", "/search?agent=vault"):
        text = client.get(url).text
        assert "zzqvaultzz" not in text and not any(t in text for t in vault), url
    for url in ("/api/search?q=zzqvaultzz", "/api/search?agent=vault"):  # as an unknown word or agent: nothing
        assert client.get(url).json()["total"] == 0
    granted = site.viewing(Privacy(hide_io_agents=("muted",)))  # a read key granting vault
    assert found(granted, q="zzqvaultzz") == vault


def test_a_hide_io_run_never_matches_words_but_matches_filters(site: Site, client: TestClient) -> None:
    for reader in (site, site.viewing(Privacy())):  # not even for a reader who may read its texts
        assert found(reader, q="mutedword") == set() and found(reader, q="mutedanswer") == set()
        assert found(reader, q="whale", agent="muted") == set()
    shown = search(site, {"agent": "muted"})["runs"]
    assert len(shown) == 1 and shown[0]["task"] is None and shown[0]["answer"] is None and shown[0]["io_hidden"]
    assert "mutedword" not in client.get("/search?agent=muted").text


def test_span_text_is_escaped(client: TestClient) -> None:
    page = client.get("/search?q=whale&agent=courier")
    assert page.status_code == 200 and "&lt;script&gt;alert(" in page.text and "<script>alert(" not in page.text
    assert "<img src=x" not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert 'href="/search"' in client.get("/").text  # the nav links here


def test_the_mcp_tool_answers_as_the_json_twin(client: TestClient) -> None:
    headers = {"accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_runs", "arguments": {"q": "whale", "per_page": 50}}}
    answer = client.post("/mcp", json=body, headers=headers).json()["result"]["structuredContent"]
    twin = client.get("/api/search?q=whale&per_page=50").json()
    assert answer["total"] == twin["total"] > 0
    assert [r["trace_id"] for r in answer["runs"]] == [r["trace_id"] for r in twin["runs"]]
    assert all(r["link"].endswith(f"/runs/{r['trace_id']}") for r in answer["runs"])
    assert "zzqvaultzz" not in json.dumps(answer)


def test_a_new_run_is_found_once_the_refresh_has_run(site: Site, lake: dict[str, Any]) -> None:
    before = runs_in(lake["root"])
    [trace] = send_runs(lake["url"], [Run("scout", "a narwhal appears", "noted")])
    wait_for(lambda: runs_in(lake["root"]) == before + 1, what="the new run in the lake")
    assert found(site, q="narwhal") == set()  # in the lake, not yet in the index
    site.refresh()  # what the refresher does every refresh_s: fold the rollup, then the index
    assert found(site, q="narwhal") == {trace}
