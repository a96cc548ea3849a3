"""Replays in the web UI, their JSON twins and MCP's ``get_replays``: on a lake that holds
agent runs recorded from real frameworks (tests/testdata/recorded/), sent through a real
collector, and the results of the real ``otelbench replay`` against the canned stub sent
back through it (tests/bench_runner/test_replay.py's helpers): a candidate that asks for
another city, one that answers hostile markup, and one replay of a second agent that is
private. The figures must be plain SQL's over ``replay_runs``, every span text escaped,
a private agent's replays nowhere (404), a ``hide_io`` agent's texts withheld."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from otelbench.cli import main
from otelbench.collector.config import ApiKey
from otelbench.collector.keys import Keyring
from otelbench.storage.message_text import message_text
from otelbench.storage.privacy import Privacy
from otelbench.testing.openai_stub import MARKUP_REPLY, StubServer
from otelbench.testing.wait import wait_for
from otelbench.web.app import create_app
from tests.bench_runner.test_replay import OTHER_AGENT, WITH_CONTENT, recording
from tests.web.lakes import rows

PRIVATE = "weather_helper"  # the other agent's one run, replayed
PRIVACY = Privacy(private_agents=(PRIVATE,))
HIDE_IO = Privacy(hide_io_agents=("weather_agent",))
GRANT = "read-helper-01"  # a read key granting the private agent, with its texts
CANDIDATES = {"weather-berlin": "weather_agent", "markup": "weather_agent", "weather": PRIVATE}
FIGURES = ("runs", "match_share", "as_good_share", "calls_same_share", "recorded_ttft_ms", "candidate_ttft_ms",
           "recorded_model_ms", "candidate_model_ms", "recorded_output_tokens", "candidate_output_tokens",
           "recorded_cost_usd", "candidate_cost_usd")
# per replay and agent, as plain SQL over the view: the same figures, the ratios over the
# runs that have both sides (NULL where a side is missing, so left out of both)
SUMMARY_SQL = """SELECT replay_id, agent, count(*), avg(CASE WHEN behaviour_matches THEN 1 ELSE 0 END),
       avg(CASE WHEN at_least_as_good THEN 1 ELSE 0 END), sum(calls_matching) / sum(calls),
       median(CASE WHEN candidate_ttft_ms IS NOT NULL THEN recorded_ttft_ms END),
       median(CASE WHEN recorded_ttft_ms IS NOT NULL THEN candidate_ttft_ms END),
       median(CASE WHEN candidate_model_ms IS NOT NULL THEN recorded_model_ms END),
       median(CASE WHEN recorded_model_ms IS NOT NULL THEN candidate_model_ms END),
       avg(CASE WHEN candidate_output_tokens IS NOT NULL THEN recorded_output_tokens END),
       avg(CASE WHEN recorded_output_tokens IS NOT NULL THEN candidate_output_tokens END),
       avg(recorded_cost_usd), avg(candidate_cost_usd)
FROM replay_runs GROUP BY ALL ORDER BY ALL"""


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory, stub: Any) -> Iterator[dict[str, Any]]:
    """The lake and the replays' ids by candidate (each replay exported to the collector)."""
    tmp = tmp_path_factory.mktemp("replay_pages")
    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    ids = {}
    with recording(tmp, (*WITH_CONTENT, OTHER_AGENT)) as (root, endpoint):
        for candidate, agent in CANDIDATES.items():
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(["replay", "--agent", agent, "--lake", str(root), "--base-url", url, "--model", candidate,
                             "--otlp-endpoint", endpoint, "--json"])
            report = json.loads(out.getvalue())
            assert code == 0 and report["spans"]["failures"] == 0
            ids[candidate] = report["spans"]["replay_id"]
        replayed = len(WITH_CONTENT) * 2 + 1
        wait_for(lambda: rows(root, "SELECT count(*) FROM replay_runs")[0][0] == replayed,
                 what="the replays' spans in the lake")
    yield {"root": root, "ids": ids}


def client_of(root: Path, privacy: Privacy) -> TestClient:
    keys = [ApiKey(key=GRANT, owner="auditor", scopes=["read"], grants=[{"agents": [PRIVATE], "io": True}])]
    return TestClient(create_app(root, privacy, refresh_s=0, keyring=Keyring(keys)), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def client(lake: dict[str, Any]) -> Iterator[TestClient]:
    with client_of(lake["root"], PRIVACY) as c:  # its lifespan runs the MCP session manager
        yield c


def expected(root: Path, hidden: tuple[str, ...] = (PRIVATE,)) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r[0], r[1]): dict(zip(FIGURES, r[2:])) for r in rows(root, SUMMARY_SQL) if r[1] not in hidden}


def close(a: Any, b: Any) -> bool:
    return a == b if a is None or b is None else abs(a - b) <= 1e-9 * max(1.0, abs(b))


def test_the_list_holds_plain_sqls_figures(client: TestClient, lake: dict[str, Any]) -> None:
    data = client.get("/api/replays").json()
    assert data["evidence"] == "benchmark evidence"
    shown = {(r["replay_id"], r["agent"]): r for r in data["replays"]}
    want = expected(lake["root"])
    assert set(shown) == set(want) and len(want) == 2
    for key, figures in want.items():
        assert all(close(shown[key][f], v) for f, v in figures.items()), (key, shown[key], figures)
        r = shown[key]
        assert r["ratio_ttft_ms"] == pytest.approx(r["candidate_ttft_ms"] / r["recorded_ttft_ms"])
        assert r["url"] == f"/replays/{key[0]}" and r["candidate"] in CANDIDATES
    berlin = shown[(lake["ids"]["weather-berlin"], "weather_agent")]
    assert (berlin["match_share"], berlin["as_good_share"], berlin["runs"]) == (0, 1, len(WITH_CONTENT))
    html = client.get("/replays").text
    for (replay_id, agent), r in shown.items():
        assert f'href="/replays/{replay_id}"' in html
        row = re.search(rf'<tr data-replay="{replay_id}" data-agent="{agent}">(.*?)</tr>', html, re.S).group(1)
        cells = " ".join(re.sub(r"<[^>]+>", "", row).split())
        assert f"{r['match_share'] * 100:.0f}% ({r['runs'] * r['match_share']:.0f}/{r['runs']})" in cells
        assert f"{r['as_good_share'] * 100:.0f}% ({r['runs'] * r['as_good_share']:.0f}/{r['runs']})" in cells
        assert f"{r['calls_same_share'] * 100:.0f}% ({r['calls_matching']}/{r['calls']})" in cells
        assert r["ratio_model_ms"] is not None and f"×{r['ratio_model_ms']:.3g} · {r['runs_model_ms']} run" in cells
        # the recordings' models are priced, the stub's candidates are not
        assert r["recorded_cost_usd"] > 0 and r["candidate_cost_usd"] is None
        assert f"${r['recorded_cost_usd']:.4g} → no price" in cells
    # linked from the nav and from the agent's page
    assert 'href="/replays"' in client.get("/").text
    assert 'href="/replays?agent=weather_agent"' in client.get("/agents/weather_agent").text
    only = client.get("/api/replays?agent=weather_agent").json()["replays"]
    assert {r["agent"] for r in only} == {"weather_agent"} and len(only) == 2


def test_a_replay_puts_each_run_beside_its_recording_most_divergent_first(client: TestClient,
                                                                           lake: dict[str, Any]) -> None:
    replay_id = lake["ids"]["weather-berlin"]
    data = client.get(f"/api/replays/{replay_id}").json()
    want = rows(lake["root"], """SELECT trace_id, divergence, calls, calls_matching, candidate_ttft_ms,
                                        candidate_answer FROM replay_runs WHERE replay_id = $id
                                 ORDER BY divergence DESC, trace_id""", {"id": replay_id})
    assert [(r["trace_id"], r["divergence"], r["calls"], r["calls_matching"], r["candidate_ttft_ms"],
             r["candidate_answer"]) for r in data["runs"]] == [tuple(w) for w in want]
    recorded = dict(((t, (i, o)) for t, i, o in rows(lake["root"], "SELECT trace_id, input, output FROM agent_runs")))
    html = client.get(f"/replays/{replay_id}").text
    for r in data["runs"]:
        assert r["link"] == f"/runs/{r['trace_id']}" and f'href="/runs/{r["trace_id"]}"' in html
        assert r["recorded_input"] == recorded[r["trace_id"]][0][:1000]
        assert r["recorded_output"] == recorded[r["trace_id"]][1][:1000]
        assert "owner" not in r and "recorded_owner" not in r
    texts = " ".join(html.replace("&#39;", "'").replace("&#34;", '"').split())
    for r in data["runs"]:
        assert all(" ".join(message_text(r[f]).split()) in texts for f in ("recorded_input", "recorded_output"))
        assert " ".join(r["candidate_answer"].split()) in texts
    assert "What is the weather in Paris?" in texts
    # the sections in the JSON's order: the most divergent first
    assert re.findall(r'<section class="replayed" data-trace="(\w+)"', html) == [r["trace_id"] for r in data["runs"]]
    assert client.get("/replays/no-such-replay").status_code == 404
    assert client.get("/api/replays/no-such-replay").json() == {"error": "no replay with id 'no-such-replay'"}


def test_span_text_is_escaped(client: TestClient, lake: dict[str, Any]) -> None:
    replay_id = lake["ids"]["markup"]
    data = client.get(f"/api/replays/{replay_id}").json()
    assert {r["candidate_answer"] for r in data["runs"]} == {MARKUP_REPLY}
    html = client.get(f"/replays/{replay_id}").text
    assert "<script>alert(1)" not in html and "<img src=x" not in html and "\u202e" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "[U+202E]" in html


def test_a_private_agents_replays_appear_nowhere(client: TestClient, lake: dict[str, Any]) -> None:
    private = lake["ids"]["weather"]
    helper_runs = [t for (t,) in rows(lake["root"], "SELECT trace_id FROM agent_runs WHERE agent = $a", {"a": PRIVATE})]
    assert len(helper_runs) == 1
    for path in ("/replays", "/api/replays", "/"):
        text = client.get(path).text
        assert private not in text and PRIVATE not in text and helper_runs[0] not in text, path
    assert client.get(f"/api/replays?agent={PRIVATE}").json()["replays"] == []  # the name asked is echoed
    assert client.get(f"/replays/{private}").status_code == 404
    assert client.get(f"/api/replays/{private}").status_code == 404
    assert mcp(client, {"replay_id": private})["isError"]
    assert private not in json.dumps(mcp(client, {})) and PRIVATE not in json.dumps(mcp(client, {}))
    assert mcp(client, {"agent": PRIVATE})["structuredContent"]["replays"] == []
    # a key granted the agent sees them, with the same figures as plain SQL
    granted = {"X-Bench-Key": GRANT}
    listed = client.get("/api/replays", headers=granted).json()["replays"]
    assert {(r["replay_id"], r["agent"]) for r in listed} == set(expected(lake["root"], hidden=()))
    page = client.get(f"/api/replays/{private}", headers=granted).json()
    assert [r["trace_id"] for r in page["runs"]] == helper_runs and page["runs"][0]["candidate_answer"]


def test_hide_io_withholds_the_texts_not_the_figures(lake: dict[str, Any]) -> None:
    replay_id = lake["ids"]["weather-berlin"]
    with client_of(lake["root"], HIDE_IO) as c:
        data = c.get(f"/api/replays/{replay_id}").json()
        html = c.get(f"/replays/{replay_id}").text
        listed = c.get("/api/replays").json()["replays"]
    assert data["runs"] and all(r["io_hidden"] for r in data["runs"])
    assert all(r[f] is None for r in data["runs"] for f in ("candidate_answer", "recorded_input", "recorded_output"))
    assert all(r["divergence"] is not None and r["calls"] for r in data["runs"])
    assert "It is sunny" not in html and "What is the weather in Paris?" not in html
    assert html.count("inputs and answers are hidden") == len(data["runs"])
    assert {r["replay_id"] for r in listed} >= {replay_id}


def mcp(client: TestClient, arguments: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    headers = {"accept": "application/json, text/event-stream", **({"X-Bench-Key": key} if key else {})}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_replays", "arguments": arguments}}
    return client.post("/mcp", json=body, headers=headers).json()["result"]


def test_the_mcp_tool_answers_as_the_json_twins(client: TestClient, lake: dict[str, Any]) -> None:
    assert mcp(client, {})["structuredContent"] == client.get("/api/replays").json()
    assert mcp(client, {"agent": "weather_agent"})["structuredContent"] == client.get(
        "/api/replays?agent=weather_agent").json()
    for candidate in ("weather-berlin", "markup"):
        replay_id = lake["ids"][candidate]
        assert mcp(client, {"replay_id": replay_id})["structuredContent"] == client.get(
            f"/api/replays/{replay_id}").json()
    private = lake["ids"]["weather"]
    assert mcp(client, {"replay_id": private}, GRANT)["structuredContent"] == client.get(
        f"/api/replays/{private}", headers={"X-Bench-Key": GRANT}).json()
