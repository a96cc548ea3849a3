"""Pytest plugin: the embedded model, started once per test session.

Enabled from ``tests/conftest.py`` with ``pytest_plugins = ["tests.model_fixture"]``.
Tests that use ``llama_server`` skip only when llama.cpp's ``llama-server`` is not
installed; ``scripts/setup.sh`` builds it (CI runs setup), so there they always run.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otelbench.bench_runner.llama_server import LlamaServer, LlamaServerMissing, find_llama_server


def bench(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """``otelbench bench ARGS`` in a fresh process with a bare environment."""
    return subprocess.run([sys.executable, "-m", "otelbench", "bench", *args], capture_output=True, text=True,
                          timeout=timeout, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": "/tmp"})


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A running ``LlamaServer`` for the embedded SmolLM2-135M; its log lies in the session tmp dir."""
    try:
        find_llama_server()
    except LlamaServerMissing as exc:
        pytest.skip(str(exc))
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    with LlamaServer(log_path=log_path) as server:
        yield server


@pytest.fixture(scope="session")
def quick_bench(llama_server: LlamaServer,
                tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, list[Path], Path]:
    """One ``otelbench bench --quick`` of the embedded model, its spans exported to a real
    collector: (the process, its result files, the folder whose ``lake`` holds the spans).
    Minutes on a small CPU, so made once and shared (the CLI's tests, the web's)."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("bench")
    collector = Collector(collector_config(tmp)).start()
    try:
        proc = bench(llama_server.model_id, "--base-url", llama_server.base_url, "--quick", "--out", str(tmp / "out"),
                     "--otlp-endpoint", f"http://127.0.0.1:{collector.http_port}")
        collector.wait_flushed()
    finally:
        collector.stop()
    return proc, sorted((tmp / "out").glob("*.json")), tmp
