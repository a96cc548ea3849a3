"""The processors' tables (evals, failure_clusters, cluster_members) in a real lake, and
what agent_runs reads from them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from otelbench.testing.rows import agent, batch, llm
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.storage.queries.views import JUDGE_SERVICE

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lk = Lake(tmp_path / "lake")
    lk.init()
    lk.write_batch("01", batch(spans=[agent(1, 1, name="a"), llm(1, 2, 1), agent(2, 1, name="a"), llm(2, 2, 1)]))
    return lk


def evals(*rows: tuple) -> pl.DataFrame:
    cols = ("trace_id", "score", "judge_model", "judge_version", "error", "judged_at")
    frame = pl.DataFrame([dict(zip(cols, r)) for r in rows],
                         schema={"trace_id": pl.String, "score": pl.Float64, "judge_model": pl.String,
                                 "judge_version": pl.String, "error": pl.String,
                                 "judged_at": pl.Datetime("us", "UTC")})
    return frame.with_columns(agent=pl.lit("a"), reasoning=pl.lit("because"), method=pl.lit("json"),
                              raw_answer=pl.lit(None, pl.String), attempts=pl.lit(1, pl.Int64),
                              input_truncated=pl.lit(False))


def tid(n: int) -> str:
    return f"{n:032x}"


def test_a_rejudged_run_replaces_its_row_and_agent_runs_reads_the_latest_score(lake: Lake) -> None:
    lake.append("evals", evals((tid(1), None, "smol", "v1", "unusable answer", T0),
                               (tid(2), 0.2, "smol", "v1", None, T0)))
    # the error retried by the same judge, and a second judge version for run 2
    lake.append("evals", evals((tid(1), 0.9, "smol", "v1", None, T0 + dt.timedelta(minutes=1)),
                               (tid(2), 0.7, "smol", "v2", None, T0 + dt.timedelta(minutes=2))))
    with open_lake(lake.root) as gw:
        rows = gw.query("SELECT trace_id[-1:], judge_version, score, error FROM evals ORDER BY ALL").rows
        assert rows == [("1", "v1", 0.9, None), ("2", "v1", 0.2, None), ("2", "v2", 0.7, None)]
        assert gw.query("SELECT trace_id[-1:], eval_score FROM agent_runs ORDER BY 1").rows == [("1", 0.9), ("2", 0.7)]


def test_an_error_is_not_a_score(lake: Lake) -> None:
    lake.append("evals", evals((tid(1), 0.4, "smol", "v1", None, T0),
                               (tid(1), None, "qwen", "v1", "timeout", T0 + dt.timedelta(minutes=1))))
    with open_lake(lake.root) as gw:
        assert gw.query("SELECT eval_score FROM agent_runs WHERE trace_id = $t", {"t": tid(1)}).rows == [(0.4,)]


def test_the_judges_own_calls_are_not_runs(lake: Lake) -> None:
    lake.write_batch("02", batch(spans=[llm(3, 1, None, service_name=JUDGE_SERVICE)]))
    with open_lake(lake.root) as gw:
        assert gw.query("SELECT count(*) FROM agent_runs").rows == [(2,)]
        assert gw.query("SELECT count(*) FROM llm_calls WHERE service_name = $s", {"s": JUDGE_SERVICE}).rows == [(1,)]


def test_a_clustering_run_replaces_its_agents_clusters_and_members(lake: Lake) -> None:
    def clusters(agent_: str, *ids: int) -> pl.DataFrame:
        return pl.DataFrame({
            "agent": [agent_] * len(ids), "cluster_id": list(ids), "size": [5] * len(ids), "share": [0.5] * len(ids),
            "first_seen": [T0] * len(ids), "last_seen": [T0] * len(ids),
            "example_trace_ids": [[tid(1)]] * len(ids), "top_terms": [["timeout"]] * len(ids),
            "description": ["times out"] * len(ids), "params": ["{}"] * len(ids), "run_at": [T0] * len(ids),
        })

    lake.replace("failure_clusters", clusters("a", 1, 2), {"agent": "a"})
    lake.replace("failure_clusters", clusters("b", 7), {"agent": "b"})
    lake.replace("cluster_members", pl.DataFrame({"trace_id": [tid(1), tid(2)], "cluster_id": [1, 2]}), {"agent": "a"})
    lake.replace("failure_clusters", clusters("a", 2), {"agent": "a"})
    with open_lake(lake.root) as gw:
        assert gw.query("SELECT agent, cluster_id, top_terms FROM failure_clusters ORDER BY ALL").rows == [
            ("a", 2, ["timeout"]), ("b", 7, ["timeout"])]
        assert gw.query("SELECT trace_id[-1:], agent, cluster_id FROM cluster_members ORDER BY 1").rows == [
            ("1", "a", 1), ("2", "a", 2)]
