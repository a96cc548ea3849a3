"""``otelbench serve`` with a ``web:`` section serves the UI too, in a process of its own,
over the lake it writes; SIGTERM stops both."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import yaml

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=2)
    except httpx.HTTPError:
        return None


def test_serve_serves_the_web_ui_over_the_lake_it_writes(tmp_path):
    port = _free_port()
    cfg = tmp_path / "otel-config.yaml"
    cfg.write_text(yaml.safe_dump({
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": str(tmp_path / "lake"), "flush": {"interval_s": 0.2}}},
        "service": {"wal": {"dir": str(tmp_path / "wal")},
                    "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
        "web": {"endpoint": f"127.0.0.1:{port}"},
    }))
    serve = subprocess.Popen([sys.executable, "-m", "otelbench", "serve", "--config", str(cfg)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while "OTLP/HTTP listening on " not in line:
            line = serve.stdout.readline()
            assert line, serve.stderr.read()
        send_runs(line.rsplit(" ", 1)[1].strip(), [Run("calc", "What is 2 + 2?", "4")] * 3)
        web = f"http://127.0.0.1:{port}"
        wait_for(lambda: (r := _get(f"{web}/api/agents/calc")) is not None and r.status_code == 200
                 and r.json()["agent"]["runs"] == 3, timeout_s=30, what="the web UI showing the runs")
        assert _get(f"{web}/leaderboard").headers["x-content-type-options"] == "nosniff"
    finally:
        serve.send_signal(signal.SIGTERM)
        out, err = serve.communicate(timeout=60)
    assert serve.returncode == 0, err
    assert f"web UI on http://127.0.0.1:{port}" in out
    assert _get(f"{web}/healthz") is None  # gone with serve
