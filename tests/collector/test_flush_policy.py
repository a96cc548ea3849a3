"""When the flusher writes a batch (full, at the interval, or as soon as it catches up after a
backlog), and the compactor beside it."""

from __future__ import annotations

import random
import time

import httpx

from storage.duckdb import open_lake
from tests.otlp_payloads import agent_request

PB = {"Content-Type": "application/x-protobuf"}


def _post(collector, n_spans: int, seed: int) -> None:
    body = agent_request(random.Random(seed), n_spans).SerializeToString()
    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", content=body, headers=PB)
    assert r.status_code == 200, r.text


def _flushed(collector) -> int:
    return collector.state.get("flushed_spans", worker=0)  # one worker in these tests


def _wait_for(predicate, timeout_s: float) -> float:
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout_s, "timed out"
        time.sleep(0.01)
    return time.monotonic() - started


def test_a_trickle_waits_for_the_interval(make_collector, tmp_path):
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 1.5}})
    _post(c, 12, seed=1)
    time.sleep(0.5)
    assert _flushed(c) == 0  # not full, not behind: gathered until the interval
    assert _wait_for(lambda: _flushed(c) == 12, 10) < 5


def test_the_rest_of_a_backlog_is_flushed_when_caught_up_not_at_the_interval(make_collector, tmp_path):
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 60, "max_batch_mib": 1}})
    _post(c, 1000, seed=2)  # ~1.2 MB of protobuf: a full batch, so the worker was behind
    _post(c, 12, seed=3)  # the rest: far below the batch size, and the interval is a minute away
    took = _wait_for(lambda: _flushed(c) == 1012, 30)
    assert took < 20
    assert open_lake(tmp_path / "lake").query("SELECT count(*) FROM spans").rows[0][0] == 1012


def test_a_failing_compaction_is_counted_and_flushing_goes_on(make_collector, tmp_path):
    (tmp_path / "lake").mkdir()
    (tmp_path / "lake" / "_tmp").write_text("not a folder")  # compaction's spill folder cannot be made
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 0.05},
                                "compaction": {"interval_s": 0.05, "min_files": 2}})
    for i in range(6):
        _post(c, 10, seed=10 + i)
        _wait_for(lambda: _flushed(c) == 10 * (i + 1), 10)
    _wait_for(lambda: c.state.get("compaction_errors") > 0, 30)
    assert all(p.is_alive() for p in c._flushers)
    _post(c, 10, seed=99)
    _wait_for(lambda: _flushed(c) == 70, 10)
    metrics = httpx.get(f"http://127.0.0.1:{c.http_port}/metrics").text
    errors = next(line for line in metrics.splitlines() if line.startswith("otelbench_compactor_errors_total "))
    assert float(errors.split()[-1]) > 0
    assert open_lake(tmp_path / "lake").query("SELECT count(*) FROM spans").rows[0][0] == 70


def test_the_compactor_merges_flushed_files_in_its_own_process(make_collector, tmp_path):
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 0.05},
                                "compaction": {"interval_s": 0.2, "min_files": 3}})
    for i in range(4):
        _post(c, 10, seed=20 + i)
        _wait_for(lambda: _flushed(c) == 10 * (i + 1), 10)
    _wait_for(lambda: c.state.get("compactions") >= 3, 60)
    assert c.state.get("compaction_errors") == 0 and c.state.get("compaction_runs") >= 1
    names = [p.name for p in (tmp_path / "lake" / "spans").rglob("*.parquet")]
    assert any(n.startswith("compact-") for n in names), names
    assert open_lake(tmp_path / "lake").query("SELECT count(*), count(DISTINCT span_id) FROM spans").rows[0] == (40, 40)
