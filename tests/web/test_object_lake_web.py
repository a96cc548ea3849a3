"""The web UI and MCP's reader over a lake in a bucket (moto_server): the same answers as
over the same rows in a folder, rollups kept in the bucket."""

from __future__ import annotations

from pathlib import Path

import httpx

from otelbench.testing.rows import agent, batch, llm, tool
from otelbench.testing.serve import serve_web
from otelbench.storage import rollups
from otelbench.storage.lake import Lake


def _runs() -> dict:
    spans = []
    for n in range(1, 16):
        name = "planner" if n % 3 else "coder"
        status = {"status_code": "error", "status_message": "boom"} if n % 5 == 0 else {}
        spans += [agent(n, 1, name=name, at=60.0 * n, **status), llm(n, 2, 1, input_tokens=100 * n),
                  tool(n, 3, 1, name="search")]
    return batch(spans=spans)


def _answers(url: str) -> tuple:
    with httpx.Client(base_url=url, timeout=60) as http:
        board = http.get("/api/leaderboard?window=all").json()
        agents = {a["agent"]: (a["runs"], a["success_rate"]) for a in board["agents"] + board["unranked"]}
        profile = http.get("/api/agents/planner").json()
        run = http.get(f"/api/runs/{'0' * 31}5").json()
        page = http.get("/agents/coder")
    return agents, profile["agent"]["runs"], run["run"]["status"], page.status_code


def test_the_web_over_a_bucket_answers_as_over_a_folder(s3_lake: str, tmp_path: Path) -> None:
    for location in (s3_lake, tmp_path / "lake"):
        lk = Lake(location)
        lk.init()
        lk.write_batch("0001", _runs())
    with serve_web(s3_lake) as bucket_url, serve_web(tmp_path / "lake") as folder_url:
        from_bucket = _answers(bucket_url)
        assert from_bucket == _answers(folder_url)
    agents, planner_runs, status, page = from_bucket
    assert agents == {"planner": (10, 0.8), "coder": (5, 0.8)} and planner_runs == 10
    assert status == "error" and page == 200
    assert rollups.stamp(s3_lake) is not None  # the rollup lives in the bucket beside the lake
    assert rollups.current(s3_lake).index.startswith(s3_lake + "/_rollups/")


def test_otelbench_mcp_over_a_bucket_answers_as_over_a_folder(s3_lake: str, tmp_path: Path) -> None:
    import os
    import sys

    from mcp import StdioServerParameters

    from otelbench.testing.serve import ROOT
    from otelbench.storage.privacy import Privacy
    from tests.web.test_mcp import answer
    from otelbench.web import mcp_server
    from otelbench.web.site import Site

    for location in (s3_lake, tmp_path / "lake"):
        lk = Lake(location)
        lk.init()
        lk.write_batch("0001", _runs())
    # the AWS variables reach the server only when given: the stdio client passes a safe few
    command = StdioServerParameters(command=sys.executable, args=["-m", "otelbench", "mcp", "--lake", s3_lake],
                                    cwd=str(ROOT), env=dict(os.environ))
    from_bucket = answer(command, "get_agent", {"name": "planner"})["agent"]
    from_folder = answer(mcp_server.build(Site(tmp_path / "lake", Privacy(), refresh_s=0)), "get_agent",
                         {"name": "planner"})["agent"]
    assert from_bucket["runs"] == 10 and from_bucket == {**from_folder, "url": from_bucket["url"]}
