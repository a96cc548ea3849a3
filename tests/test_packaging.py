"""The two distributions as a user installs them: ``python -m build`` makes the server's
wheel (the repository root) and the agent SDK's (sdk/python), and each goes into a fresh
virtualenv with pip from the package index, outside the repository.

- the server's wheel installs one top-level name, ``otelbench``; its CLI sets the model
  up (``otelbench model setup``: the llama.cpp build comes from ``~/.cache/otelbench``
  when this machine built it before) and runs ``otelbench demo --quick``;
- the SDK's wheel pulls in none of the server's heavy dependencies, and an agent that
  uses it, run by that virtualenv's Python, lands runs in a real collector's lake.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from otelbench.storage.duckdb import open_lake
from otelbench.testing.serve import ROOT, free_port
from otelbench.testing.wait import wait_for

pytestmark = pytest.mark.slow

SERVER_ONLY = ("duckdb", "polars", "pyarrow", "grpcio", "onnxruntime")


def _run(*command: str | Path, cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)
    assert done.returncode == 0, f"{command}: {done.stdout[-4000:]}{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, then the wheel built from it (so the sdist is checked to be complete)."""
    out = tmp_path_factory.mktemp("dist")
    for source in (ROOT, ROOT / "sdk" / "python"):
        _run(sys.executable, "-m", "build", "--outdir", out, source, cwd=out, timeout=900)
    (server,) = out.glob("otelbench-*.whl")
    (sdk,) = out.glob("otelbench_sdk-*.whl")
    return {"server": server, "sdk": sdk}


def _venv(where: Path, wheel: Path) -> Path:
    """A fresh virtualenv (no system site-packages) with ``wheel`` pip-installed (pip upgraded
    first, as scripts/setup.sh does); its bin."""
    _run(sys.executable, "-m", "venv", where, cwd=where.parent, timeout=120)
    _run(where / "bin" / "python", "-m", "pip", "install", "-q", "--upgrade", "pip", cwd=where.parent, timeout=300)
    _run(where / "bin" / "python", "-m", "pip", "install", "-q", wheel, cwd=where.parent, timeout=1800)
    return where / "bin"


def _top_level(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as whl:
        return {name.split("/")[0] for name in whl.namelist() if ".dist-info/" not in name}


def test_the_server_wheel_installs_only_otelbench_and_runs_the_demo(wheels, tmp_path: Path) -> None:
    assert _top_level(wheels["server"]) == {"otelbench"}
    with zipfile.ZipFile(wheels["server"]) as whl:
        names = set(whl.namelist())
    for data in ("otelbench/web/templates/base.html", "otelbench/web/static/live.js", "otelbench/init/js_check.mjs",
                 "otelbench/bench_runner/suites/core_v1.json", "otelbench/bench_runner/build_llama_server.sh",
                 "otelbench/normalize/prices.json", "otelbench/processors/clustering/tokenizer/tokenizer.json",
                 "otelbench/sdk/__init__.py"):
        assert data in names, data
    assert any(n.startswith("otelbench/normalize/_wire.") and n.endswith(".so") for n in names)

    bin_dir = _venv(tmp_path / "server", wheels["server"])
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "HOME": str(home), "COLUMNS": "80",
           "XDG_CACHE_HOME": str(Path.home() / ".cache")}  # llama.cpp's build, when this machine made it
    _run(bin_dir / "otelbench", "model", "setup", cwd=tmp_path, timeout=1800, env=env)
    assert (bin_dir / "llama-server").is_file() and (bin_dir / "llama-bench").is_file()
    check = "import otelbench.normalize.wire as w, otelbench.sdk, sys; print(w.COMPILED, 'storage' in sys.modules)"
    assert _run(bin_dir / "python", "-c", check, cwd=tmp_path, timeout=60, env=env).split() == ["True", "False"]

    ports = [str(free_port()) for _ in range(3)]
    out = _run(bin_dir / "otelbench", "demo", "--quick", "--lake", tmp_path / "lake", "--wal", tmp_path / "wal",
               "--web-port", ports[0], "--http-port", ports[1], "--grpc-port", ports[2],
               cwd=tmp_path, timeout=1200, env=env)
    assert "--quick: stopping everything it started" in out and "Traceback" not in out
    with open_lake(tmp_path / "lake") as gw:
        assert gw.query("SELECT count(*) FROM agent_runs").rows[0][0] > 0


AGENT = """
import otelbench_sdk
agent = otelbench_sdk.observe(agent="packaged")  # OTEL_EXPORTER_OTLP_ENDPOINT from the environment
with agent.task("answer", input="2+2?") as task:
    task.cost(0.002)
    task.set_output("4")
assert agent.flush()
"""


def test_the_sdk_wheel_is_light_and_its_agent_lands_runs(wheels, tmp_path: Path, collector) -> None:
    assert _top_level(wheels["sdk"]) == {"otelbench_sdk"}
    bin_dir = _venv(tmp_path / "sdk", wheels["sdk"])
    listed = json.loads(_run(bin_dir / "python", "-m", "pip", "list", "--format", "json", cwd=tmp_path, timeout=120))
    installed = {p["name"].lower().replace("_", "-") for p in listed}
    assert "otelbench-sdk" in installed and "opentelemetry-sdk" in installed
    assert not installed & set(SERVER_ONLY), installed & set(SERVER_ONLY)
    assert "otelbench" not in installed

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.http_port}", "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    _run(bin_dir / "python", "-c", AGENT, cwd=tmp_path, timeout=60, env=env)
    lake = Path(collector.config.exporters.parquet.path)

    def runs() -> list[tuple]:
        with open_lake(lake) as gw:
            return gw.query("SELECT agent, status, cost_usd FROM agent_runs", max_rows=None).rows

    wait_for(lambda: len(runs()) == 1, what="the SDK wheel's run in the lake")
    assert runs() == [("packaged", "ok", pytest.approx(0.002))]
