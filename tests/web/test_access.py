"""Read keys and default-deny: what a visitor, a read key's grants, a bad key and a signed
link see on every kind of route (pages, JSON, badge, embed, share image, signed links) and
through the MCP tools — on a lake the real collector wrote from real OTel SDK spans, sent
with real ingest keys (one owner private)."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

from otelbench.collector.config import ApiKey
from otelbench.collector.keys import Keyring
from otelbench.testing.agent_runs import Run, send_runs
from otelbench.storage.privacy import Privacy
from tests.web.lakes import collector, fold, rows, runs_in
from otelbench.testing.wait import wait_for
from otelbench.web.app import create_app

SECRET = "TOP-SECRET-PAYROLL-FIGURES"
HUSHED = "a-hushed-teams-task"
INGEST, INGEST_HUSH = "ingest-team-01", "ingest-hush-01"
FULL, FIGURES, OWNER, EXPIRED = "read-full-0001", "read-figs-0001", "read-owner-001", "read-old-00001"
PRIVACY = Privacy(private_agents=("payroll",), private_owners=("hush",))


def keys() -> list[dict[str, Any]]:
    past = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)).isoformat()
    return [{"key": INGEST, "owner": "team"}, {"key": INGEST_HUSH, "owner": "hush"},
            {"key": FULL, "owner": "auditor", "scopes": ["read"], "grants": [{"agents": ["payroll"], "io": True}]},
            {"key": FIGURES, "owner": "board", "scopes": ["read"], "grants": [{"agents": ["payroll"]}]},
            {"key": OWNER, "owner": "hush-lead", "scopes": ["read"], "grants": [{"owners": ["hush"], "io": True}]},
            {"key": EXPIRED, "owner": "gone", "scopes": ["read"], "expires": past}]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("access")
    with collector(tmp, auth={"keys": keys()}) as (url, root):
        send_runs(url, [Run("calc", "What is 1 + 1?", "2")] * 2 + [Run("payroll", SECRET, SECRET)] * 2,
                  headers={"X-Bench-Key": INGEST})
        send_runs(url, [Run("hushed", HUSHED, "done")] * 2, headers={"X-Bench-Key": INGEST_HUSH})
        wait_for(lambda: runs_in(root) == 6, what="six runs")
    fold(root)
    return root


class Clock:
    """The time the app signs and checks links by: now, moved on by ``advance``."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.time() + self.skipped

    def advance(self, seconds: float) -> None:
        self.skipped += seconds


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def client(lake: Path, clock: Clock) -> TestClient:
    return TestClient(create_app(lake, PRIVACY, refresh_s=0, keyring=Keyring([ApiKey(**k) for k in keys()]),
                                 clock=clock))


def as_(key: str | None) -> dict[str, str]:
    return {"X-Bench-Key": key} if key else {}


def trace(lake: Path, agent: str) -> str:
    return rows(lake, "SELECT trace_id FROM agent_runs WHERE agent = $a", {"a": agent})[0][0]


def everything(client: TestClient, lake: Path, key: str | None, agent: str) -> dict[str, Any]:
    """What ``key`` gets on every route about ``agent``, and on the lists."""
    h, t = as_(key), trace(lake, agent)
    return {"board": [a["agent"] for a in client.get("/api/leaderboard?window=all", headers=h).json()["agents"]],
            "board_page": client.get("/leaderboard?window=all", headers=h).text,
            "home": client.get("/api/home", headers=h).json(),
            "agent": client.get(f"/api/agents/{agent}", headers=h), "page": client.get(f"/agents/{agent}", headers=h),
            "run": client.get(f"/api/runs/{t}", headers=h), "run_page": client.get(f"/runs/{t}", headers=h),
            "badge": client.get(f"/badge/{agent}.svg", headers=h).text,
            "embed": client.get(f"/embed/{agent}", headers=h), "image": client.get(f"/og/{agent}.png", headers=h),
            "insights": client.get(f"/api/agents/{agent}/insights", headers=h),
            "vs": client.get(f"/api/vs/calc/{agent}", headers=h)}


def test_public_visitors_see_nothing_private(client: TestClient, lake: Path) -> None:
    for agent in ("payroll", "hushed"):
        seen = everything(client, lake, None, agent)
        assert agent not in seen["board"] and agent not in seen["board_page"] and seen["home"]["instance"]["runs"] == 2
        for route in ("agent", "page", "run", "run_page", "embed", "image", "insights", "vs"):
            assert seen[route].status_code == 404, route
        assert "not found" in seen["badge"]


def test_a_read_key_sees_exactly_what_its_grants_name(client: TestClient, lake: Path) -> None:
    full = everything(client, lake, FULL, "payroll")
    assert "payroll" in full["board"] and full["home"]["instance"]["runs"] == 4
    for route in ("agent", "page", "run", "run_page", "embed", "image", "insights", "vs"):
        assert full[route].status_code == 200, route
    assert SECRET in full["agent"].text and SECRET in full["run_page"].text and "not found" not in full["badge"]
    assert full["agent"].json()["agent"]["runs"] == 2 and not full["agent"].json()["io_hidden"]
    # nothing beyond the grant: the private owner's agent stays absent
    assert client.get("/api/agents/hushed", headers=as_(FULL)).status_code == 404
    assert "hushed" not in full["board"]
    # and what it saw was not kept for the public (kept bodies and answers are per reader)
    public = everything(client, lake, None, "payroll")
    assert "payroll" not in public["board"] and "payroll" not in public["board_page"]
    assert public["agent"].status_code == 404 and SECRET not in public["board_page"]


def test_a_figures_only_grant_never_shows_a_text(client: TestClient, lake: Path) -> None:
    seen = everything(client, lake, FIGURES, "payroll")
    assert seen["agent"].status_code == 200 and seen["agent"].json()["agent"]["runs"] == 2
    assert seen["agent"].json()["io_hidden"]
    for route in ("agent", "page", "run", "run_page", "embed", "insights", "vs"):
        assert SECRET not in seen[route].text, route


def test_an_owner_grant_opens_that_owners_runs(client: TestClient, lake: Path) -> None:
    seen = everything(client, lake, OWNER, "hushed")
    assert "hushed" in seen["board"] and seen["agent"].status_code == 200 and HUSHED in seen["agent"].text
    assert client.get("/api/agents/payroll", headers=as_(OWNER)).status_code == 404


@pytest.mark.parametrize("key, says", [("no-such-key-0", "missing or unknown key"), (EXPIRED, "expired at"),
                                       (INGEST, "may not read")])
def test_a_key_that_cannot_read_is_refused_everywhere(client: TestClient, lake: Path, key: str, says: str) -> None:
    for path in ("/api/leaderboard", "/leaderboard", "/api/agents/calc", "/agents/calc", "/embed/calc",
                 f"/api/runs/{trace(lake, 'calc')}"):
        r = client.get(path, headers=as_(key))
        assert r.status_code == 401 and says in r.text and key not in r.text, path
    assert client.get("/api/agents/calc", headers={"Authorization": f"Bearer {key}"}).status_code == 401


def test_a_signed_link_shows_one_private_agent_for_a_while(client: TestClient, clock: Clock) -> None:
    assert client.get("/api/links/payroll").status_code == 401  # signing needs the key
    assert client.get("/api/links/hushed", headers=as_(FULL)).status_code == 404  # not the key's to share
    assert client.get("/api/links/payroll?ttl=0", headers=as_(FULL)).status_code == 400
    links = client.get("/api/links/payroll?ttl=60", headers=as_(FULL)).json()
    assert FULL not in json.dumps(links)
    embed, badge, image = (urlsplit(links[k]) for k in ("embed", "badge", "image"))
    assert client.get(f"{embed.path}?{embed.query}").status_code == 200  # no key: the link is enough
    assert "not found" not in client.get(f"{badge.path}?{badge.query}").text
    assert client.get(f"{image.path}?{image.query}").status_code == 200
    assert client.get(f"/embed/calc?{embed.query}").status_code == 401  # made for another agent
    tampered = embed.query.replace("exp=", "exp=9")
    assert client.get(f"{embed.path}?{tampered}").status_code == 401
    assert client.get(f"/api/agents/payroll?{embed.query}").status_code == 404  # only embeds, badges, images
    short = urlsplit(client.get("/api/links/payroll?ttl=1", headers=as_(FULL)).json()["embed"])
    clock.advance(2.1)
    r = client.get(f"{short.path}?{short.query}")
    assert r.status_code == 401 and "expired" in r.text


def test_mcp_tools_follow_the_same_policy(lake: Path) -> None:
    app = create_app(lake, PRIVACY, refresh_s=0, keyring=Keyring([ApiKey(**k) for k in keys()]))
    with TestClient(app, base_url="http://127.0.0.1") as c:  # its lifespan runs the MCP session manager
        _mcp_policy(lake, c)


def _mcp_policy(lake: Path, c: TestClient) -> None:
    def call(tool: str, args: dict[str, Any], key: str | None) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
        headers = {"accept": "application/json, text/event-stream", **as_(key)}
        return c.post("/mcp", json=body, headers=headers).json()["result"]

    assert call("get_agent", {"name": "payroll"}, None)["isError"]
    assert "payroll" not in json.dumps(call("search_agents", {"window": "all"}, None))
    granted = call("get_agent", {"name": "payroll"}, FULL)
    assert not granted["isError"] and granted["structuredContent"]["agent"]["runs"] == 2
    assert SECRET in json.dumps(call("get_run", {"trace_id": trace(lake, "payroll")}, FULL))
    figures = call("get_agent", {"name": "payroll"}, FIGURES)
    assert not figures["isError"] and SECRET not in json.dumps(figures)
    refused = call("search_agents", {}, EXPIRED)
    assert refused["isError"] and "expired" in refused["content"][0]["text"]
