"""When the flusher writes a batch (full, at the interval, or as soon as it catches up after a
backlog), and the compactor beside it."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import httpx
import psutil

from otelbench.collector.compactor import ALLOCATOR_ENV as COMPACTOR_ALLOCATOR_ENV
from otelbench.collector.compactor import COMPACTOR_NICENESS
from otelbench.testing.wait import wait_for

from otelbench.storage.duckdb import open_lake
from otelbench.testing.otlp import agent_request

PB = {"Content-Type": "application/x-protobuf"}


def _post(collector, n_spans: int, seed: int) -> None:
    body = agent_request(random.Random(seed), n_spans).SerializeToString()
    r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", content=body, headers=PB)
    assert r.status_code == 200, r.text


def _flushed(collector) -> int:
    return collector.state.get("flushed_spans", worker=0)  # one worker in these tests


def _polls(collector) -> int:
    return collector.state.get("polls", worker=0)


def test_a_trickle_waits_for_the_interval(make_collector, tmp_path):
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 2}})
    _post(c, 12, seed=1)
    # the pass under way may have read the log before the post was durable; later ones saw it
    seen_from = _polls(c) + 1
    wait_for(lambda: _polls(c) >= seen_from + 5, what="five passes of the flusher over the posted spans")
    assert _flushed(c) == 0  # not full, not behind: gathered until the interval
    wait_for(lambda: _flushed(c) == 12)  # then flushed by the interval alone (no more data, no stop)


def test_the_rest_of_a_backlog_is_flushed_when_caught_up_not_at_the_interval(make_collector, tmp_path):
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 3600, "max_batch_mib": 1}})
    _post(c, 1000, seed=2)  # ~1.2 MB of protobuf: a full batch, so the worker was behind
    _post(c, 12, seed=3)  # the rest: far below the batch size, and the interval is an hour away
    wait_for(lambda: _flushed(c) == 1012)
    assert open_lake(tmp_path / "lake").query("SELECT count(*) FROM spans").rows[0][0] == 1012


def test_a_failing_compaction_is_counted_and_flushing_goes_on(make_collector, tmp_path):
    (tmp_path / "lake").mkdir()
    (tmp_path / "lake" / "_tmp").write_text("not a folder")  # compaction's spill folder cannot be made
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 0.05},
                                "compaction": {"interval_s": 0.05, "min_files": 2}})
    for i in range(6):
        _post(c, 10, seed=10 + i)
        wait_for(lambda: _flushed(c) == 10 * (i + 1))
    wait_for(lambda: c.state.get("compaction_errors") > 0)
    assert all(p.is_alive() for p in c._flushers)
    _post(c, 10, seed=99)
    wait_for(lambda: _flushed(c) == 70)
    metrics = httpx.get(f"http://127.0.0.1:{c.http_port}/metrics").text
    errors = next(line for line in metrics.splitlines() if line.startswith("otelbench_compactor_errors_total "))
    assert float(errors.split()[-1]) > 0
    assert open_lake(tmp_path / "lake").query("SELECT count(*) FROM spans").rows[0][0] == 70


def test_the_compactor_merges_flushed_files_in_its_own_process(make_collector, tmp_path):
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 0.05},
                                "compaction": {"interval_s": 0.2, "min_files": 3}})
    for i in range(4):
        _post(c, 10, seed=20 + i)
        wait_for(lambda: _flushed(c) == 10 * (i + 1))
    niceness, allocators, libraries = set(), set(), set()

    def compactor_seen() -> bool:  # a background process: it yields the CPU to ingest
        for p in psutil.Process().children():
            try:
                if p.cmdline()[-1:] == ["otelbench-compactor"]:
                    niceness.add(p.nice())
                    allocators.add(p.environ().get("JE_ARROW_MALLOC_CONF"))
                    libraries.update(Path(m.path).name for m in p.memory_maps() if m.path)
            except psutil.Error:
                pass
        return os.nice(0) + COMPACTOR_NICENESS in niceness and c.state.get("compactions") >= 3

    wait_for(compactor_seen)  # a run is started every interval, worth merging or not
    assert allocators == {COMPACTOR_ALLOCATOR_ENV["JE_ARROW_MALLOC_CONF"]}  # its pool hands pages back soon
    # its merges were planned by a process of its own (storage.plan_process): DuckDB never loaded here
    assert any("arrow" in name for name in libraries) and not any("duckdb" in name for name in libraries)
    # and pyarrow streamed the rows without numpy, which it would have loaded (storage.process.without_numpy)
    assert not any("_multiarray_umath" in name or "openblas" in name for name in libraries), libraries
    assert c.state.get("compaction_errors") == 0 and c.state.get("compaction_runs") >= 1
    names = [p.name for p in (tmp_path / "lake" / "spans").rglob("*.parquet")]
    assert any(n.startswith("compact-") for n in names), names
    assert open_lake(tmp_path / "lake").query("SELECT count(*), count(DISTINCT span_id) FROM spans").rows[0] == (40, 40)


def test_a_failed_write_is_retried_in_order_and_nothing_is_lost_or_doubled(make_collector, tmp_path):
    """The writer stage retries a batch it could not write (here: the day's partition folder
    cannot be made) while the reading stage goes on acknowledging and normalizing; once the
    disk is fixed every span lands exactly once."""
    import datetime as dt

    today = dt.datetime.now(dt.timezone.utc).date()
    blocks = [tmp_path / "lake" / "spans" / f"date={today + dt.timedelta(days=d)}" for d in (-1, 0, 1)]
    c = make_collector(parquet={"workers": 1, "flush": {"interval_s": 0.05}})
    for b in blocks:
        b.parent.mkdir(parents=True, exist_ok=True)
        b.write_text("not a folder")
    _post(c, 40, seed=21)
    wait_for(lambda: c.state.get("flush_errors", worker=0) > 0)
    for i in range(3):  # acknowledged while the writer is stuck
        _post(c, 40, seed=22 + i)
    errors = c.state.get("flush_errors", worker=0)
    wait_for(lambda: c.state.get("flush_errors", worker=0) > errors, what="the writer retried since the last post")
    assert _flushed(c) == 0 and c.state.flushed_pos < c.state.durable_pos
    for b in blocks:
        b.unlink()
    wait_for(lambda: _flushed(c) == 160)
    rows = open_lake(tmp_path / "lake").query("SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans").rows
    assert rows == [(160, 160)]
    c.stop()
    assert c.state.flushed_pos == c.state.durable_pos


def test_a_writer_that_breaks_stops_the_worker_instead_of_hanging_it():
    """A bug in the writer stage (not an I/O error, which is retried) reaches the reading
    stage as an exception, which ends the worker process (the receiver then reports it)."""
    import pytest

    from otelbench.collector.flusher import _Job, _Writer

    class Broken:
        worker = 0
        checkpoint = handed = 0

        def _write(self, job):
            raise ValueError("a bug")

    writer = _Writer(Broken())
    writer.start()
    writer.put(_Job(0, 10, None, 0, 0.0))
    Broken.handed = 10
    with pytest.raises(RuntimeError, match="the writer failed") as info:
        writer.drain()
    assert isinstance(info.value.__cause__, ValueError)
    writer.close()


def test_at_most_two_batches_are_in_flight_and_they_land_in_order(tmp_path, monkeypatch):
    """The memory bound of a worker: while the writer is slow, the reading thread normalizes
    one batch ahead and then waits; files and checkpoints follow the log's order."""
    import threading

    from otelbench.collector import wal
    from otelbench.collector.flusher import Flusher, WorkerSettings
    from otelbench.collector.state import SharedState
    from otelbench.testing.collector import collector_config

    config = collector_config(tmp_path, parquet={"workers": 1, "flush": {"interval_s": 0.01, "max_batch_mib": 1}})
    writer = wal.WalWriter(tmp_path / "wal", 64 << 20)
    for seed in range(6):  # ~1.2 MB each: one batch per request
        body = agent_request(random.Random(seed), 1000).SerializeToString()
        writer.append(wal.encode_record("traces", None, body))
    writer.sync()
    state = SharedState(worker=0)
    state.set("workers", 1)
    state.set("durable_pos", writer.head)
    flusher = Flusher(WorkerSettings.of(config), state, 0, 1, wal.position(1, 0))
    flusher.recover({0: wal.position(1, 0)})

    taken, written, peak = [], [], 0
    lock = threading.Lock()
    take, write = flusher.sink.take, flusher.sink.write

    def slow_take():
        nonlocal peak
        batch = take()
        with lock:
            taken.append(batch)
            peak = max(peak, len(taken) - len(written))
        return batch

    def slow_write(batch_id, batch):
        time.sleep(0.2)  # a slow disk: the fake paces the writer, nothing waits on it
        write(batch_id, batch)
        with lock:
            written.append(batch_id)

    monkeypatch.setattr(flusher.sink, "take", slow_take)
    monkeypatch.setattr(flusher.sink, "write", slow_write)
    runner = threading.Thread(target=flusher.run)
    runner.start()
    wait_for(lambda: len(written) == 6)
    state.set("stop", 1)
    runner.join(30)
    assert not runner.is_alive()
    assert peak == 2  # one written, one normalized ahead, never a third
    assert written == sorted(written)
    assert state.get("flushed_spans", worker=0) == 6000 and flusher.checkpoint == writer.head
    assert open_lake(tmp_path / "lake").query("SELECT count(*) FROM spans").rows[0][0] == 6000
