"""The runs rollup (storage/rollups.py) against the view it stands for: after a first
build, new spans, compaction, new scores and delta merges, its rows equal ``agent_runs``'
on a lake the real collector wrote from real OTel SDK spans."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.wait import wait_for
from otelbench.storage import rollups
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.storage.queries.rollups import PREVIEW_CHARS, RUNS_CTE

COLUMNS = ("trace_id, agent, owner, status, start_time, duration_ms, cost_usd, input_tokens, output_tokens, "
           "llm_calls, tool_calls, eval_score")


def _view(lake: Path) -> list[tuple]:
    with open_lake(lake) as gw:
        return sorted(gw.query(f"SELECT {COLUMNS}, left(input, {PREVIEW_CHARS}), left(output, {PREVIEW_CHARS}) "
                               "FROM agent_runs", max_rows=None).rows)


def _rollup(lake: Path) -> list[tuple]:
    snap = rollups.current(lake)
    assert snap is not None
    with open_lake(lake) as gw:
        return sorted(gw.query(f"WITH {RUNS_CTE} SELECT {COLUMNS}, input_preview, output_preview FROM runs",
                               snap.params, max_rows=None).rows)


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    c = Collector(collector_config(tmp_path_factory.mktemp("rollups"))).start()
    yield c
    c.stop()


def _send(collector, runs: list[Run]) -> list[str]:
    lake = Path(collector.config.exporters.parquet.path)
    before = len(_view(lake)) if (lake / "spans").exists() else 0
    ids = send_runs(f"http://127.0.0.1:{collector.http_port}", runs)
    wait_for(lambda: len(_view(lake)) == before + len(runs), what="runs in the lake")
    return ids


def test_the_rollup_follows_the_view_through_writes_compaction_and_scores(collector, monkeypatch) -> None:
    lake = Path(collector.config.exporters.parquet.path)
    first = _send(collector, [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(5)]
                  + [Run("calc", "Divide by zero", None, error="ZeroDivisionError")])
    built = rollups.refresh(lake)
    assert built is not None and built.touched == 6 and _rollup(lake) == _view(lake)

    # nothing new: nothing recomputed, same version
    again = rollups.refresh(lake)
    assert again is not None and (again.version, again.new_files, again.touched) == (built.version, 0, 0)

    # new runs: only their traces are recomputed, into the delta
    _send(collector, [Run("search", "weather in Paris", "sunny", tool="web_search", tool_error="timeout")] * 3)
    step = rollups.refresh(lake)
    assert step is not None and step.touched == 3 and not step.merged
    assert _rollup(lake) == _view(lake)

    # compaction: its outputs name their inputs, which were all seen — nothing is read again
    Lake(lake).compact("spans", below_batch_id="z" * 40, min_files=2)
    after = rollups.refresh(lake)
    assert after is not None and after.touched == 0 and _rollup(lake) == _view(lake)

    # a score committed by the judge reaches its run
    now = dt.datetime.now(dt.timezone.utc)
    Lake(lake).append("evals", pa.table({
        "trace_id": [first[0]], "agent": ["calc"], "score": [0.25], "reasoning": ["ok"], "judge_model": ["m"],
        "judge_version": ["v"], "method": ["json"], "error": [None], "raw_answer": [None], "attempts": [1],
        "input_truncated": [False], "judged_at": [now]}))
    scored = rollups.refresh(lake)
    assert scored is not None and scored.touched == 1
    assert _rollup(lake) == _view(lake)
    assert [r for r in _rollup(lake) if r[0] == first[0]][0][11] == 0.25

    # a delta past its limit goes into a new base, and old files are swept
    monkeypatch.setattr(rollups, "DELTA_MIN_ROWS", 0)
    _send(collector, [Run("calc", "What is 9 + 9?", "18")])
    previous = rollups.current(lake)
    merged = rollups.refresh(lake)
    assert merged is not None and merged.merged and _rollup(lake) == _view(lake)
    now = rollups.current(lake)
    assert set(now.base) == {"calc", "search"}  # one base file per agent
    files = {p.name for p in (lake / "_rollups" / "runs").glob("*.parquet")}
    assert files == {Path(f).name for snap in (now, previous)
                     for f in [*snap.params["base"], snap.delta, snap.index]}  # the others are swept


def test_one_refresh_at_a_time(tmp_path: Path) -> None:
    Lake(tmp_path).init()
    folder = tmp_path / "_rollups" / "runs"
    folder.mkdir(parents=True)
    from otelbench.storage.location import open_fs

    fs = open_fs(tmp_path)
    with fs.lock(str(folder / "_refresh.lock")):
        import subprocess
        import sys

        out = subprocess.run([sys.executable, "-c", "import sys; from storage import rollups; "
                              f"print(rollups.refresh({str(tmp_path)!r}))"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parents[2], check=True)
    assert out.stdout.strip() == "None"
    assert rollups.refresh(tmp_path) is not None and rollups.current(tmp_path) is not None


def test_a_rollup_of_another_format_is_rebuilt(collector, monkeypatch) -> None:
    lake = Path(collector.config.exporters.parquet.path)
    _send(collector, [Run("calc", "What is 1 + 1?", "2")])
    assert rollups.refresh(lake) is not None
    before = rollups.current(lake)
    monkeypatch.setattr(rollups, "FORMAT", rollups.FORMAT + 1)
    assert rollups.current(lake) is None and rollups.pending(lake)
    rebuilt = rollups.refresh(lake)
    assert rebuilt is not None and rebuilt.version > before.version and _rollup(lake) == _view(lake)
    def names(snap: rollups.Snapshot) -> set[str]:
        return {Path(f).name for f in [*snap.params["base"], snap.delta, snap.index]} - {rollups.EMPTY}

    files = {p.name for p in (lake / "_rollups" / "runs").glob("*.parquet")}
    assert names(rollups.current(lake)) <= files  # and the previous version's
    assert not files & names(before)  # nothing of the old format


@pytest.mark.parametrize("merge", [False, True])
def test_a_build_of_several_steps_keeps_the_last_row_of_a_trace_two_steps_touch(collector, monkeypatch,
                                                                                merge: bool) -> None:
    # a run of a whole day has spans in yesterday's partition and today's: with a step per
    # day, both steps recompute it (each reads the days either side) and one row is kept,
    # in the delta or merged into the base
    lake = Path(collector.config.exporters.parquet.path)
    _send(collector, [Run("calc", "What is 2 + 2?", "4", seconds=86_400),
                      Run("search", "weather in Oslo", "rain", tool="web_search", seconds=86_400),
                      Run("calc", "What is 3 + 3?", "6")])
    monkeypatch.setattr(rollups, "STEP_SPANS", 1)
    monkeypatch.setattr(rollups, "DELTA_MIN_ROWS", 0 if merge else 10**9)
    shutil.rmtree(lake / "_rollups" / "runs", ignore_errors=True)  # a first build of every file
    built = rollups.refresh(lake)
    assert built is not None and built.merged == merge
    assert built.touched > len(_view(lake))  # a day-long run with spans on both days, touched twice
    assert _rollup(lake) == _view(lake)
    assert not list((lake / "_rollups" / "runs").glob("staged-*"))  # the staged steps are swept
