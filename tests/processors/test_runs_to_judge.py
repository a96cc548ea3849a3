"""processors.pipeline.runs_to_judge: the runs a judge has not scored, read part by part.

A statement over the whole lake holds every candidate run's texts at once (it ran out of
the gateway's memory on a soak's lake), so the runs are read in parts of the trace ids.
Whatever the number of parts, the answer is the one statement's: each run once, with the
same input and output, newest first.
"""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelbench.processors import pipeline
from otelbench.storage.duckdb import QueryError, open_lake
from otelbench.storage.lake import Lake
from otelbench.testing.rows import agent, batch, llm, log

PARAMS = {"since": dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), "agent": None, "judge_model": "j",
          "judge_version": "v1", "max_attempts": 2}


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


# how a run carries its task and answer: on its root, on its chat call, or as log events
SHAPES = ("root", "call", "events", "none")


def _run(trace: int, shape: str, at: float) -> tuple[list[dict], list[dict]]:
    task, answer = _messages("user", f"task {trace}"), _messages("assistant", f"answer {trace}")
    root = dict(input_messages=task, output_messages=answer) if shape == "root" else {}
    call = dict(input_messages=task, output_messages=answer) if shape == "call" else {}
    spans = [agent(trace, 1, name=f"agent-{trace % 3}", at=at, **root), llm(trace, 2, 1, at=at + 0.1, **call)]
    logs = [] if shape != "events" else [
        log(trace, 2, at=at + 0.1, message_direction="input", messages=task),
        log(trace, 2, at=at + 0.2, message_direction="output", messages=answer)]
    return spans, logs


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """Forty runs of every shape, over two batches (so two files of each table)."""
    root = tmp_path_factory.mktemp("lake")
    lake = Lake(root)
    lake.init()
    for part in (range(0, 20), range(20, 40)):
        spans, logs = [], []
        for trace in part:
            s, g = _run(trace + 1, SHAPES[trace % len(SHAPES)], at=trace * 10.0)
            spans += s
            logs += g
        lake.write_batch(f"{part.start:02d}", batch(spans=spans, logs=logs))
    return root


def _one_statement(gateway):
    return pipeline.runs_to_judge(gateway, PARAMS)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spans_per_part=st.integers(min_value=10, max_value=200))
def test_any_number_of_parts_gives_the_one_statements_runs(lake, spans_per_part, monkeypatch):
    with open_lake(lake) as gateway:
        monkeypatch.setattr(pipeline, "JUDGE_PART_SPANS", 1 << 40)
        whole = _one_statement(gateway)
        monkeypatch.setattr(pipeline, "JUDGE_PART_SPANS", spans_per_part)
        parts = pipeline.runs_to_judge(gateway, PARAMS)
        # the agent_runs view's own answer, over the whole lake
        view = gateway.polars("SELECT trace_id, input, output FROM agent_runs WHERE input IS NOT NULL "
                              "OR output IS NOT NULL ORDER BY start_time DESC, trace_id", max_rows=None)
    assert whole.select("trace_id", "input", "output").equals(view)
    # 30 runs have a task and an answer ("none" has neither), each read once, newest first
    assert whole.height == 30 and whole["trace_id"].n_unique() == 30
    assert whole["start_time"].is_sorted(descending=True)
    assert sorted(json.loads(i)[0]["parts"][0]["content"] for i in whole["input"]) == sorted(
        f"task {t + 1}" for t in range(40) if SHAPES[t % 4] != "none")
    assert parts.equals(whole)


class _RunsOutOfMemory:
    """The real gateway, except that a statement over more than a ``fits`` share of the
    traces runs out of memory: the neighbour's failure, on demand."""

    def __init__(self, gateway, fits: int, kind: str = "memory") -> None:
        self.gateway, self.fits, self.kind, self.tried = gateway, fits, kind, []
        self.root = gateway.root

    def query(self, *args, **kwargs):
        return self.gateway.query(*args, **kwargs)

    def polars(self, sql, params, **kwargs):
        self.tried.append(params["parts"])
        if params["parts"] < self.fits:
            raise QueryError("Out of Memory Error: failed to allocate data of size 16.0 MiB", self.kind)
        return self.gateway.polars(sql, params, **kwargs)


def test_a_part_out_of_memory_is_read_again_in_twice_as_many_parts(lake, monkeypatch):
    monkeypatch.setattr(pipeline, "JUDGE_PART_SPANS", 1 << 40)
    with open_lake(lake) as gateway:
        whole = _one_statement(gateway)
        tight = _RunsOutOfMemory(gateway, fits=5)
        assert pipeline.runs_to_judge(tight, PARAMS).equals(whole)
        assert sorted(set(tight.tried)) == [1, 2, 4, 8]

        monkeypatch.setattr(pipeline, "JUDGE_MAX_PARTS", 4)  # never enough: the error is the gateway's
        with pytest.raises(QueryError, match="Out of Memory"):
            pipeline.runs_to_judge(_RunsOutOfMemory(gateway, fits=5), PARAMS)
        other = _RunsOutOfMemory(gateway, fits=5, kind="invalid")  # not memory: not tried again
        with pytest.raises(QueryError):
            pipeline.runs_to_judge(other, PARAMS)
        assert other.tried == [1]


def test_the_gateway_tells_running_out_of_memory_from_other_errors(lake):
    with open_lake(lake, memory_limit="8MB") as gateway:
        with pytest.raises(QueryError) as caught:  # an aggregate state that cannot spill
            gateway.query("SELECT length(string_agg(range::VARCHAR, ',')) FROM range(20000000)", max_rows=None)
        assert caught.value.kind == "memory" and "Out of Memory" in str(caught.value)
        with pytest.raises(QueryError) as caught:
            gateway.query("SELECT no_such_column FROM spans", max_rows=None)
        assert caught.value.kind == "invalid"
    assert issubclass(duckdb.OutOfMemoryException, duckdb.Error)
