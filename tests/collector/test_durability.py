"""Acknowledged means durable: kill -9 under load, restart, every acknowledged span exactly once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
import yaml

from otelbench.storage.duckdb import open_lake
from otelbench.testing.otlp import agent_request

PB = {"Content-Type": "application/x-protobuf"}


def _write_config(tmp_path: Path, **flush) -> Path:
    cfg = {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": str(tmp_path / "lake"), "flush": {"interval_s": 0.5, **flush}}},
        "service": {"wal": {"dir": str(tmp_path / "wal")},
                    "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
    }
    path = tmp_path / "otel-config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


class Server:
    def __init__(self, config: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "otelbench", "serve", "--config", str(config)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.proc.stdout:
            if "OTLP/HTTP listening on" in line:
                self.url = line.strip().rsplit(" ", 1)[-1]
                break
        else:
            raise RuntimeError("collector did not start")
        self._drain = threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True)
        self._drain.start()


def _span_ids(req) -> list[tuple[str, str]]:
    return [(s.trace_id.hex(), s.span_id.hex()) for s in req.resource_spans[0].scope_spans[0].spans]


class Load:
    """Clients sending agent traces as fast as ``url`` answers, until ``kill_when`` spans
    more are acknowledged; then the collector is killed with -9. What it acknowledged is
    in ``acked`` (span keys), what it did not answer or refused in ``unacked`` (requests,
    for the clients to retry, as OTLP SDKs do)."""

    def __init__(self) -> None:
        self.acked: list[tuple[str, str]] = []
        self.unacked: list = []
        self.lock = threading.Lock()

    def kill_under_load(self, server: Server, more: int, seeds: range, timeout: float = 10) -> bool:
        stop, loaded = threading.Event(), threading.Event()
        target = len(self.acked) + more

        def client(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client(timeout=timeout) as http:
                while not stop.is_set():
                    req = agent_request(rng, 100, agent=f"agent-{seed}")
                    try:
                        r = http.post(server.url + "/v1/traces", content=req.SerializeToString(), headers=PB)
                    except httpx.HTTPError:
                        with self.lock:
                            self.unacked.append(req)
                        return
                    with self.lock:
                        (self.acked.extend(_span_ids(req)) if r.status_code == 200 else self.unacked.append(req))
                        if len(self.acked) >= target:
                            loaded.set()

        threads = [threading.Thread(target=client, args=(seed,)) for seed in seeds]
        [t.start() for t in threads]
        reached = loaded.wait(300)  # a guard against a hang, not a bound on speed
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        stop.set()
        [t.join() for t in threads]
        return reached


@pytest.mark.slow
def test_kill9_under_load_then_restart_loses_and_duplicates_nothing(tmp_path):
    config = _write_config(tmp_path)
    load = Load()
    # 20,000 spans acknowledged: the flusher is mid-way, the WAL holds unflushed data
    loaded = load.kill_under_load(Server(config), 20_000, range(4))
    acked, unacked = load.acked, load.unacked
    assert loaded, f"only {len(acked)} spans acknowledged"
    before_restart = len(acked)

    server = Server(config)
    with httpx.Client(timeout=10) as http:  # the clients retry what was never acknowledged, as OTLP SDKs do
        for req in unacked:
            r = http.post(server.url + "/v1/traces", content=req.SerializeToString(), headers=PB)
            assert r.status_code == 200
            acked.extend(_span_ids(req))
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(120) == 0

    rows = open_lake(tmp_path / "lake").query(
        "SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans").rows
    expected = set(acked)
    assert before_restart >= 20_000
    assert rows == [(len(expected), len(expected))], (rows, len(expected))
    stored = set(open_lake(tmp_path / "lake").query("SELECT trace_id, span_id FROM spans", max_rows=None).rows)
    assert stored == expected


@pytest.mark.slow
def test_sigterm_flushes_and_retires_the_log(tmp_path):
    config = _write_config(tmp_path, max_rows=10_000_000)
    server = Server(config)
    rng = random.Random(0)
    sent = 0
    with httpx.Client(timeout=10) as http:
        for _ in range(20):
            r = http.post(server.url + "/v1/traces", content=agent_request(rng, 500).SerializeToString(), headers=PB)
            assert r.status_code == 200
            sent += 500
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(60) == 0
    assert open_lake(tmp_path / "lake").query("SELECT count(*) FROM spans").rows == [(sent,)]
    assert not list((tmp_path / "wal").glob("wal-*.log"))


def test_polars_allocator_reads_the_flusher_setting():
    """The variable's name is a detail of polars' build (its jemalloc's prefix): the
    allocator itself must report the worker's setting."""
    from otelbench.collector.flusher import ALLOCATOR_ENV

    env = {**os.environ, "_RJEM_MALLOC_CONF": ALLOCATOR_ENV["_RJEM_MALLOC_CONF"] + ",stats_print:true"}
    done = subprocess.run([sys.executable, "-c", "import polars as pl; pl.DataFrame({'a': range(1000)}).sum()"],
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    assert "opt.narenas: 1\n" in done.stderr


def test_flusher_workers_start_with_retaining_allocators_and_the_receiver_does_not(tmp_path, monkeypatch):
    """The allocator settings reach the worker processes only, a user's own value wins,
    the collector's only children are its workers (no multiprocessing resource tracker),
    and they run without the config's libraries."""
    import psutil

    from otelbench.storage.process import ARROW_ALLOCATOR_ENV
    from otelbench.collector.flusher import ALLOCATOR_ENV

    monkeypatch.setenv("MALLOC_TOP_PAD_", "4096")  # the user's choice
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    server = Server(_write_config(tmp_path))
    try:
        receiver = psutil.Process(server.proc.pid)
        children = receiver.children()
        assert [" ".join(p.cmdline()[-2:]) for p in children] == ["otelbench.storage.process otelbench-flusher-0"]
        env = children[0].environ()
        assert env["MALLOC_TOP_PAD_"] == "4096"
        assert env["MALLOC_TRIM_THRESHOLD_"] == ALLOCATOR_ENV["MALLOC_TRIM_THRESHOLD_"]
        # polars (imported by this test process) put its own options in _RJEM_MALLOC_CONF:
        # ours go first, and its options, later in the list, win only where both name one
        assert env["_RJEM_MALLOC_CONF"].split(",")[0] == ALLOCATOR_ENV["_RJEM_MALLOC_CONF"]
        assert env["ARROW_DEFAULT_MEMORY_POOL"] == ARROW_ALLOCATOR_ENV["ARROW_DEFAULT_MEMORY_POOL"]
        assert "MALLOC_TRIM_THRESHOLD_" not in receiver.environ()  # the receiver keeps the default allocator
        # the worker got plain settings (collector.flusher.WorkerSettings), not the config:
        # pydantic, which the receiver's config needs, is not loaded in it
        def libraries(p):
            return {Path(m.path).name for m in p.memory_maps() if m.path}
        assert any("pydantic_core" in name for name in libraries(receiver))
        assert not any("pydantic_core" in name for name in libraries(children[0]))
    finally:
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(60) == 0
