"""storage.tail on a real lake: a follower reads the rows of files that appear after it
started — flushed batches and processors' commits — and never those that were there
already, nor compaction's merges of rows it has seen."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from otelbench.testing.rows import agent, batch, llm
from otelbench.storage.lake import Lake
from otelbench.storage.tail import NewRows

COLUMNS = ("trace_id", "span_id", "agent_name", "resolved_agent")


def bid(n: int) -> str:
    return f"{n:020d}"  # a flusher's batch id


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    made = Lake(tmp_path)
    made.init()
    return made


def test_only_files_that_appear_after_the_start(lake: Lake) -> None:
    lake.write_batch(bid(1), batch(spans=[agent(trace=1)]))
    follower = NewRows(lake.root, "spans", COLUMNS)
    follower.start()
    assert follower.poll() == []
    lake.write_batch(bid(2), batch(spans=[agent(trace=2, name="calc"), llm(trace=2)]))
    rows = follower.poll()
    assert [(r["trace_id"][-1], r["span_id"][-1]) for r in rows] == [("2", "1"), ("2", "2")]
    assert {r["resolved_agent"] for r in rows} == {"calc"}  # the lake resolved them as it wrote
    assert follower.poll() == []


def test_a_new_day_folder_and_compaction(lake: Lake) -> None:
    follower = NewRows(lake.root, "spans", COLUMNS)
    follower.start()
    for n in range(1, 9):
        lake.write_batch(bid(n), batch(spans=[agent(trace=n)]))
    assert len(follower.poll()) == 8  # a partition folder that did not exist at the start
    assert lake.compact("spans", below_batch_id=bid(100), min_files=8) == 8
    assert follower.poll() == []  # the merge holds rows already seen
    lake.write_batch(bid(9), batch(spans=[agent(trace=9, at=24 * 3600)]))  # the next day's folder
    assert [r["trace_id"][-1] for r in follower.poll()] == ["9"]


def test_a_derived_tables_commits(lake: Lake) -> None:
    follower = NewRows(lake.root, "evals", ("trace_id", "agent", "score", "_tombstone"))
    follower.start()
    at = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
    lake.append("evals", pa.table({
        "trace_id": ["t1"], "agent": ["calc"], "score": [0.75], "reasoning": ["fine"], "judge_model": ["j"],
        "judge_version": ["v"], "method": ["json"], "error": [None], "raw_answer": [None], "attempts": [1],
        "input_truncated": [False], "judged_at": [at]}))
    assert follower.poll() == [{"trace_id": "t1", "agent": "calc", "score": 0.75, "_tombstone": False}]


def test_a_follower_of_a_lake_in_a_bucket_sees_new_files_and_not_merges(s3_lake: str) -> None:
    """No folder times in a bucket: the listing's fingerprint says what changed."""
    lake = Lake(s3_lake)
    lake.init()
    lake.write_batch(bid(1), batch(spans=[agent(trace=1)]))
    follower = NewRows(s3_lake, "spans", COLUMNS)
    follower.start()
    assert follower.poll() == []
    lake.write_batch(bid(2), batch(spans=[agent(trace=2, name="calc"), llm(trace=2)]))
    assert [(r["trace_id"][-1], r["span_id"][-1]) for r in follower.poll()] == [("2", "1"), ("2", "2")]
    assert lake.compact("spans", below_batch_id=bid(3), min_files=2) == 2
    assert follower.poll() == []  # the merge holds nothing new
