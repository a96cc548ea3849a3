"""Pytest plugin: the embedded model, started once per test session.

Enabled from ``tests/conftest.py`` with ``pytest_plugins = ["tests.model_fixture"]``.
Tests that use ``llama_server`` skip only when llama-cpp-python is not installed;
CI installs it (``pip install -e '.[model,dev]'``), so there they always run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from bench_runner.llama_server import LlamaServer


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A running ``LlamaServer`` for the embedded SmolLM2-135M; its log lies in the session tmp dir."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: pip install 'llama-cpp-python[server]' (or '.[model]')")
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    with LlamaServer(log_path=log_path) as server:
        yield server
