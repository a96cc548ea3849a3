"""Shared fixtures: a real collector on free ports writing a real lake in tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from otelbench.testing.collector import collector_config

pytest_plugins = ["tests.model_fixture"]


@pytest.fixture
def make_collector(tmp_path: Path) -> Iterator:
    """Start collectors with config overrides; all are stopped (gracefully) at teardown."""
    from collector.runtime import Collector

    started: list[Collector] = []

    def make(**overrides) -> Collector:
        c = Collector(collector_config(tmp_path, **overrides)).start()
        started.append(c)
        return c

    yield make
    for c in started:
        if not c.ingest.stopping:
            c.stop()


@pytest.fixture
def collector(make_collector):
    return make_collector()
