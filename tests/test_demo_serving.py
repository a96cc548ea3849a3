"""``otelbench demo`` without ``--quick`` keeps serving after its report, and Ctrl-C stops
everything it started — the web, the collector, their child processes, its ports — and
nothing else (a process of the user's beside it lives on); run again in the same folder, it
goes on with the lake it left. Without the model (``--no-model``), so it takes seconds; the
model's steps are tests/test_demo.py's."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from otelbench.testing.serve import free_port
from otelbench.storage.duckdb import open_lake

ROOT = Path(__file__).resolve().parents[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_ctrl_c_stops_everything_the_demo_started_and_nothing_else(tmp_path: Path) -> None:
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    web, http, grpc = free_port(), free_port(), free_port()
    demo = subprocess.Popen([sys.executable, "-m", "otelbench", "demo", "--no-model", "--runs", "6",
                             "--lake", str(tmp_path / "lake"), "--wal", str(tmp_path / "wal"), "--web-port", str(web),
                             "--http-port", str(http), "--grpc-port", str(grpc)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        printed = []
        deadline = time.monotonic() + 240
        while not any("serving —" in line for line in printed):
            line = demo.stdout.readline()  # type: ignore[union-attr]
            assert line and time.monotonic() < deadline, "".join(printed)
            printed.append(line)
        out = "".join(printed)
        assert "[3/6" in out and "skipped: no embedded model" in out
        assert f"http://127.0.0.1:{web}/agents/" in out
        started = psutil.Process(demo.pid).children(recursive=True)
        assert started, "the web UI runs in a child process"
        assert httpx.get(f"http://127.0.0.1:{web}/api/home", timeout=10).status_code == 200
        assert _listening(http) and _listening(grpc)
        demo.send_signal(signal.SIGINT)
        rest, _ = demo.communicate(timeout=90)
        assert demo.returncode == 0, out + rest
        assert "stopping" in rest and "Traceback" not in rest
        for child in started:
            assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, child
        assert not (_listening(web) or _listening(http) or _listening(grpc))
        assert bystander.poll() is None  # not the demo's: left alone
        with open_lake(tmp_path / "lake") as gw:  # what was acknowledged was flushed on the way out
            assert gw.query("SELECT count(*) FROM agent_runs WHERE agent LIKE 'sample-%'").rows[0][0] == 6
    finally:
        for proc in (demo, bystander):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_run_again_in_the_same_folder_it_goes_on_with_the_lake_it_left(tmp_path: Path) -> None:
    """As a user runs it: from their own folder, with the default ./data/lake and ./data/wal."""
    ports = [str(free_port()) for _ in range(3)]
    outs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "otelbench", "demo", "--quick", "--no-model", "--web-port",
                               ports[0], "--http-port", ports[1], "--grpc-port", ports[2]],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        outs.append(done.stdout)
    for out in outs:
        assert "did not answer" not in out and "[6/6" in out, out  # the web UI read this lake
    with open_lake(tmp_path / "data" / "lake") as gw:  # the second run's sample runs beside the first's
        runs, traces = gw.query("SELECT count(*), count(DISTINCT trace_id) FROM agent_runs "
                                "WHERE agent LIKE 'sample-%'").rows[0]
    first = int(re.search(r"sent (\d+) simulated sample runs", outs[0])[1])
    assert runs == traces == 2 * first
