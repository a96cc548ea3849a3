"""A run in the lake is a run the web serves, whatever state the rollups are in: a run that
came in after the rollup's last fold is read from the lake (the rollup's own rule, the
same privacy and hide_io), and reads the same as once it is folded in."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from otelbench.storage import rollups
from otelbench.storage.privacy import Privacy
from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.wait import run_async, wait_for
from otelbench.web import mcp_server
from otelbench.web.app import create_app
from otelbench.web.site import Site
from tests.web.lakes import collector, fold, rows, runs_in, send

PRIVACY = Privacy(private_agents=("payroll",), hide_io_agents=("diary",))


def test_a_run_the_rollup_does_not_know_yet_is_served_from_the_lake(tmp_path: Path) -> None:
    with collector(tmp_path) as (url, root):
        send(url, root, [Run("calc", "What is 1 + 1?", "2")])  # a rollup, built before the runs below
        client = TestClient(create_app(root, PRIVACY, refresh_s=0))  # no refresher: nothing folds them in
        assert client.get("/api/home").status_code == 200  # the web has answered with that rollup
        calc, payroll, diary = send_runs(url, [
            Run("calc", "What is 2 + 2?", "4", tool="add", tool_arguments='{"a": 2, "b": 2}', tool_result="4"),
            Run("payroll", "Pay Alice", "paid"),
            Run("diary", "Dear diary", "a secret"),
        ])
        wait_for(lambda: runs_in(root) == 4, what="the runs in the lake")
        assert rollups.pending(root)  # in the lake, not in the rollup

        page = client.get(f"/api/runs/{calc}")
        assert page.status_code == 200
        data = page.json()
        assert data["run"]["agent"] == "calc" and "What is 2 + 2?" in data["run"]["input"]
        lake_spans = rows(root, "SELECT name FROM spans WHERE trace_id = $t ORDER BY start_time, span_id", {"t": calc})
        assert [s["name"] for s in data["spans"]] == [n for (n,) in lake_spans] and len(lake_spans) >= 3
        (call,) = [t for s in data["spans"] for t in s["tool_calls"]]
        assert call["tool_name"] == "add" and call["result"] == "4"
        assert client.get(f"/runs/{calc}").status_code == 200

        # private stays private; hide_io stays hidden; a trace the lake lacks is no run
        assert client.get(f"/api/runs/{payroll}").status_code == 404
        assert client.get(f"/runs/{payroll}").status_code == 404
        hidden = client.get(f"/api/runs/{diary}").json()
        assert hidden["io_hidden"] and hidden["run"]["input"] is None and hidden["run"]["output"] is None
        assert "a secret" not in client.get(f"/runs/{diary}").text
        assert client.get(f"/api/runs/{'0' * 32}").status_code == 404
        # MCP's get_run reads the same page function
        server = mcp_server.build(Site(root, PRIVACY, refresh_s=0))
        got = get_run(server, calc)
        assert not got.is_error and got.structured_content["spans"] == len(data["spans"])
        assert get_run(server, payroll).is_error

        # once folded in, the rollup's answer is the same
        fold(root)
        assert not rollups.pending(root)
        assert client.get(f"/api/runs/{calc}").json() == data
        assert client.get(f"/api/runs/{diary}").json() == hidden
        assert client.get(f"/api/runs/{payroll}").status_code == 404


def get_run(server: object, trace: str) -> object:
    from mcp import Client

    async def go() -> object:
        async with Client(server) as client:
            return await client.call_tool("get_run", {"trace_id": trace})

    return run_async(go)
