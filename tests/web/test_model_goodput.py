"""Goodput sweeps on the model page: a lake the real collector wrote from real sweeps
(``goodput_run.run_sweep`` against the paced stub, exported by the OTel SDK), read by the
page, its JSON twin and the MCP tool; figures against plain SQL on ``bench_goodput`` and
against the sweep's own result; a private owner's sweep shown nowhere."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from otelbench.bench_runner import goodput_run, load, servers
from otelbench.bench_runner.goodput import Plan, parse_slo
from otelbench.bench_runner.spans import BenchSpans
from otelbench.storage.duckdb import open_lake
from otelbench.storage.privacy import Privacy
from otelbench.testing.openai_stub import StubServer
from otelbench.web.app import create_app

PUBLIC_KEY, PRIVATE_KEY = "public-key-123", "private-key-123"
SECRET = "secret-sweeper"  # swept with a private owner's key


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("web_goodput")
    keys = [{"key": PUBLIC_KEY, "owner": "alice"}, {"key": PRIVATE_KEY, "owner": "hush"}]
    collector = Collector(collector_config(tmp, auth={"keys": keys})).start()
    url = f"http://127.0.0.1:{collector.http_port}"
    try:
        with StubServer() as stub:
            # the stub lists only its scripts: say it lists none, so any name is swept
            info = dataclasses.replace(servers.probe(stub.base_url("by-model", ttft_ms=20, rate=1000)), models=())
            public, private = BenchSpans(url, {"X-Bench-Key": PUBLIC_KEY}), BenchSpans(url, {"X-Bench-Key": PRIVATE_KEY})
            plan = Plan(parse_slo("ttft_p95<=2s"), min_pass=0.5, rates=(20, 40), concurrencies=(1,), requests=4)
            cases = load.suite_cases(["count_stars", "json_book"])
            result = goodput_run.run_sweep("stars", info, public, plan, cases)
            goodput_run.run_sweep(SECRET, info, private, plan, cases)
            exported = [public.shutdown(), private.shutdown()]
        collector.wait_flushed()
    finally:
        collector.stop()
    assert all(e["failures"] == 0 for e in exported)
    return {"lake": tmp / "lake", "result": result}


@pytest.fixture(scope="module")
def client(swept: dict[str, Any]) -> TestClient:
    return TestClient(create_app(swept["lake"], Privacy(private_owners=("hush",))))


def test_the_twin_has_every_step_as_the_lake_and_the_sweep_have_it(client: TestClient, swept: dict[str, Any]) -> None:
    data = client.get("/api/models/stars").json()
    assert data["runs"] == [] and len(data["goodput"]) == 1  # a model with a sweep and no bench run has a page
    (sweep,) = data["goodput"]
    assert sweep["slo"] == "ttft_p95<=2000ms" and sweep["min_pass"] == 0.5
    with open_lake(swept["lake"]) as gw:
        r = gw.query("SELECT mode, load, good, goodput_rps, holds FROM bench_goodput WHERE model = 'stars' "
                     "ORDER BY mode DESC, load")
        lake = [dict(zip(r.columns, row)) for row in r.rows]
    shown = [{k: s[k] for k in ("mode", "load", "good", "goodput_rps", "holds")} for s in sweep["steps"]]
    assert shown == lake
    ran = [{"mode": s["mode"], "load": s["load"], "good": s["good"], "goodput_rps": s["goodput_rps"],
            "holds": s["holds"]} for s in swept["result"]["steps"]]
    assert shown == ran and [s["good"] for s in shown] == [2, 2, 2]  # half of 4 right: count_stars, not json_book
    assert set(sweep["charts"]) == {"rate", "concurrency"}
    assert sweep["highest"] == {m: swept["result"]["highest"].get(m) for m in ("rate", "concurrency")}
    assert all(s["highest_holding"] == sweep["highest"][s["mode"]] for s in sweep["steps"])


def test_the_page_draws_a_chart_per_mode(client: TestClient, swept: dict[str, Any]) -> None:
    page = client.get("/models/stars")
    assert page.status_code == 200 and "Goodput sweeps" in page.text and "ttft_p95&lt;=2000ms" in page.text
    top = swept["result"]["highest"]
    said = "; ".join(f"no {m} holds" if top.get(m) is None else f"{top[m]:g} {'req/s' if m == 'rate' else 'clients'}"
                     for m in ("rate", "concurrency"))
    assert f"Highest load that holds, with every lower one: {said}." in page.text
    svgs = [ET.fromstring(s[: s.index("</svg>") + 6]) for s in page.text.split("<figure class=\"chart\">")[1:]]
    assert [len([c for c in svg.iter("{http://www.w3.org/2000/svg}circle") if c.get("class")]) for svg in svgs] == [2, 1]


def test_a_private_sweep_appears_nowhere(client: TestClient) -> None:
    assert client.get(f"/api/models/{SECRET}").status_code == 404
    assert SECRET not in client.get("/api/models/stars").text


def test_the_mcp_tool_answers_the_steps_without_the_svg(swept: dict[str, Any], client: TestClient) -> None:
    from mcp import Client

    from otelbench.testing.wait import run_async
    from otelbench.web import mcp_server
    from otelbench.web.site import Site

    server = mcp_server.build(Site(Path(swept["lake"]), Privacy(private_owners=("hush",)), refresh_s=0))

    async def go() -> Any:
        async with Client(server) as c:
            return await c.call_tool("get_model", {"name": "stars"})

    result = run_async(go)
    assert not result.is_error, result.content
    (sweep,) = result.structured_content["goodput"]
    assert "charts" not in sweep and "<svg" not in str(result.structured_content)
    twin = client.get("/api/models/stars").json()["goodput"][0]
    assert sweep["steps"] == twin["steps"]
