"""web/intervals.py: the mean judge score's 95 % interval, on known data and as the
leaderboard, the agent page, their JSON twins and MCP show it."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import openai
import pytest
from scipy import stats
from starlette.testclient import TestClient

from otelbench.processors import pipeline
from otelbench.processors.config import Clusters, Processors
from otelbench.storage import rollups
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.storage.privacy import Privacy
from otelbench.testing.judge_stub import MODEL, JudgeStub
from otelbench.testing.rows import agent, batch
from otelbench.web.app import create_app
from otelbench.web.intervals import mean_interval

T_975_3 = 3.182446305284263  # Student's t, 97.5th percentile, 3 degrees of freedom (any table)


def test_the_interval_of_known_scores():
    scores = [0.2, 0.4, 0.6, 0.8]
    sd = statistics.stdev(scores)
    low, high = mean_interval(statistics.mean(scores), sd, len(scores))
    assert (low, high) == pytest.approx((0.5 - T_975_3 * sd / 2, 0.5 + T_975_3 * sd / 2))
    assert (low, high) == pytest.approx((0.0892, 0.9108), abs=1e-4)
    # a mean of bounded scores stays within [0, 1]; one run has no spread to read
    assert mean_interval(0.5, statistics.stdev([0, 0, 1, 1]), 4) == (0.0, 1.0)
    assert mean_interval(0.7, None, 1) is None and mean_interval(None, None, 0) is None
    # more runs of the same spread: a narrower interval about the same mean
    wide, narrow = mean_interval(0.5, 0.2, 5), mean_interval(0.5, 0.2, 50)
    assert narrow[1] - narrow[0] < wide[1] - wide[0] and sum(narrow) == pytest.approx(1.0)


def _msg(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """Agent ``a`` with 8 runs and ``b`` with one, judged by a stub whose score depends on
    the run, then judged again (repeats must not move the intervals), folded."""
    root = tmp_path_factory.mktemp("lake")
    lake = Lake(root)
    lake.init()
    lake.write_batch("01", batch(spans=[
        agent(n, 1, name="b" if n == 9 else "a", at=60.0 * n, input_messages=_msg("user", f"task number {n}"),
              output_messages=_msg("assistant", "done")) for n in range(1, 10)]))

    def score_of(prompt: str, before: int) -> float:
        n = int(re.search(r"task number (\d+)\b", prompt).group(1))
        return round((n * 0.37) % 1 * 0.9 + 0.05 + 0.03 * before, 4)

    with JudgeStub(score_of=score_of) as stub:
        llm = pipeline.Llm(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), MODEL, True)
        settings = Processors(window_hours=24 * 365 * 50, clusters=Clusters(enabled=False))
        pipeline.run(settings, Privacy(), root, llm=llm)
        settings = settings.model_copy(update={"judge": settings.judge.model_copy(update={"rejudge_sample": 5})})
        assert pipeline.run(settings, Privacy(), root, llm=llm).rejudged == 5
    rollups.refresh(root)
    return root


def _expected(root: Path, name: str) -> tuple[float, float]:
    """The t-interval of an agent's scores, from the view's rows and scipy alone."""
    with open_lake(root) as gw:
        scores = [r[0] for r in gw.query("SELECT eval_score FROM agent_runs WHERE agent = $a AND eval_score IS NOT NULL",
                                         {"a": name}, max_rows=None).rows]
    low, high = stats.t.interval(0.95, len(scores) - 1, loc=statistics.mean(scores),
                                 scale=statistics.stdev(scores) / len(scores) ** 0.5)
    assert 0 < low < high < 1  # the known data's interval is not clipped
    return low, high


def test_the_pages_and_their_twins_show_the_interval_sql_and_scipy_compute(judged):
    client = TestClient(create_app(judged, Privacy()))
    low, high = _expected(judged, "a")
    found = client.get("/api/leaderboard?window=all").json()
    board = {a["agent"]: a for a in [*found["agents"], *found["unranked"]]}
    assert (board["a"]["score_low"], board["a"]["score_high"]) == pytest.approx((low, high))
    assert board["b"]["judged"] == 1 and board["b"]["score_low"] is None is board["b"]["score_high"]
    profile = client.get("/api/agents/a").json()
    figures = profile.get("agent", profile)
    assert (figures["score_low"], figures["score_high"]) == pytest.approx((low, high))
    page = client.get("/leaderboard?window=all").text
    assert re.search(rf'data-figure="score_interval"[^>]*>{low:.2f}–{high:.2f}<', page)
    assert re.search(rf'data-figure="score_interval"[^>]*>{low:.2f}–{high:.2f}<', client.get("/agents/a").text)
    assert "score_interval" not in client.get("/agents/b").text  # one judged run: no interval


def test_mcp_answers_the_same_interval(judged):
    from otelbench.web import mcp_server
    from otelbench.web.site import Site
    from tests.web.test_mcp import answer

    server = mcp_server.build(Site(judged, Privacy(), refresh_s=0))
    low, high = _expected(judged, "a")
    got = answer(server, "get_agent", {"name": "a"})["agent"]
    assert (got["score_low"], got["score_high"]) == pytest.approx((low, high))
    found = {a["agent"]: a for a in answer(server, "search_agents", {"query": "", "window": "all"})["agents"]}
    assert (found["a"]["score_low"], found["a"]["score_high"]) == pytest.approx((low, high))


def test_the_comparison_shows_each_sides_interval(judged):
    client = TestClient(create_app(judged, Privacy()))
    low, high = _expected(judged, "a")
    twin = client.get("/api/vs/a/b").json()
    assert (twin["a"]["score_low"], twin["a"]["score_high"]) == pytest.approx((low, high))
    line = next(r for r in client.get("/vs/a/b").text.splitlines() if 'data-line="score"' in r)
    assert line.count('data-figure="score_interval"') == 1 and f"{low:.2f}–{high:.2f}" in line  # b: one judged run
    # b's one judged run has no interval: the means differ, and no winner is named on them
    score = next(l for l in twin["lines"] if l["figure"] == "score")
    assert score["a"] != score["b"] and score["winner"] is None and "fewer than two judged runs" in score["note"]
    page = client.get("/vs/a/b").text
    row = page[page.index('data-line="score"'):]
    assert "fewer than two judged runs" in row[:row.index("</tr>")]


@pytest.mark.parametrize(("a", "b", "winner", "note"), [
    ((0.6, 0.9), (0.1, 0.5), "a", None),  # apart: the higher wins
    ((0.1, 0.5), (0.6, 0.9), "b", None),
    ((0.4, 0.7), (0.6, 0.9), None, "overlap"),  # overlapping: no winner
    ((0.4, 0.7), (None, None), None, "fewer than two"),
])
def test_a_score_winner_only_where_the_intervals_do_not_overlap(a, b, winner, note):
    from otelbench.web.pages.compare import score_winner

    got, why = score_winner({"score_low": a[0], "score_high": a[1]}, {"score_low": b[0], "score_high": b[1]})
    assert got == winner and (why is None if note is None else note in why)
