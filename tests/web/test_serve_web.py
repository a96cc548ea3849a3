"""``otelbench serve`` with a ``web:`` section serves the UI too, in a process of its own,
over the lake it writes; SIGTERM stops both."""

from __future__ import annotations

import httpx
import yaml

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.serve import free_port, serve
from otelbench.testing.wait import wait_for


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=2)
    except httpx.HTTPError:
        return None


def test_serve_serves_the_web_ui_over_the_lake_it_writes(tmp_path):
    port = free_port()
    cfg = tmp_path / "otel-config.yaml"
    cfg.write_text(yaml.safe_dump({
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": str(tmp_path / "lake"), "flush": {"interval_s": 0.2}}},
        "service": {"wal": {"dir": str(tmp_path / "wal")},
                    "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
        "web": {"endpoint": f"127.0.0.1:{port}"},
    }))
    with serve(cfg) as served:
        send_runs(served.url, [Run("calc", "What is 2 + 2?", "4")] * 3)
        web = f"http://127.0.0.1:{port}"
        wait_for(lambda: (r := _get(f"{web}/api/agents/calc")) is not None and r.status_code == 200
                 and r.json()["agent"]["runs"] == 3, timeout_s=30, what="the web UI showing the runs")
        assert _get(f"{web}/leaderboard").headers["x-content-type-options"] == "nosniff"
        # the home page tells SDKs the port the receiver was bound to (the config says 0)
        assert [s["url"] for s in _get(f"{web}/api/home").json()["setup"]] == [served.url]
    assert served.proc.returncode == 0, served.err
    assert f"web UI on http://127.0.0.1:{port}" in served.out
    # what it says fits an 80-column terminal — but a path or a URL, kept whole on its line so
    # that it can be copied — and no third-party log line (gRPC's, uvicorn's) is there
    assert f"writing the lake to {tmp_path / 'lake'}" in served.out
    assert all(len(line) <= 80 or line.rsplit(" ", 1)[-1].startswith(("/", "http://"))
               for line in served.out.splitlines()), served.out
    assert all(" otelbench." in line for line in served.err.splitlines() if line.strip()), served.err
    assert _get(f"{web}/healthz") is None  # gone with serve


def test_relative_paths_name_the_lake_in_the_folder_it_runs_in(tmp_path):
    """``otelbench demo`` and a config like ``path: data/lake`` run from the user's folder: the
    web's rollups — folded by a process of its own, started in the package's folder — must be
    those of that lake (a relative path once folded another lake, and the web never answered)."""
    port = free_port()
    (tmp_path / "otel-config.yaml").write_text(yaml.safe_dump({
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": "data/lake", "flush": {"interval_s": 0.2}}},
        "service": {"wal": {"dir": "data/wal"},
                    "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
        "web": {"endpoint": f"127.0.0.1:{port}"},
    }))
    with serve(tmp_path / "otel-config.yaml", cwd=tmp_path) as served:
        send_runs(served.url, [Run("relative", "What is 2 + 2?", "4")] * 2)
        web = f"http://127.0.0.1:{port}"
        wait_for(lambda: (r := _get(f"{web}/api/agents/relative")) is not None and r.status_code == 200
                 and r.json()["agent"]["runs"] == 2, timeout_s=30, what="the web UI showing the runs")
    assert (tmp_path / "data" / "lake").is_dir()
