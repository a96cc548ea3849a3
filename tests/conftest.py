"""Shared fixtures: a real collector on free ports writing a real lake in tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from collector.config import Config, parse_config

pytest_plugins = ["tests.model_fixture"]


def collector_config(tmp_path: Path, **overrides) -> Config:
    """A config on ephemeral ports with the lake and WAL under tmp_path."""
    receivers = overrides.pop("receivers", None) or {
        "otlp": {
            "protocols": {"grpc": {"endpoint": "127.0.0.1:0"}, "http": {"endpoint": "127.0.0.1:0"}},
            **({"auth": overrides.pop("auth")} if "auth" in overrides else {}),
        }
    }
    parquet = {"path": str(tmp_path / "lake"), "flush": {"interval_s": 0.2}}
    parquet.update(overrides.pop("parquet", {}))
    data = {
        "receivers": receivers,
        "exporters": {"parquet": parquet, **overrides.pop("exporters", {})},
        "service": {
            "wal": {"dir": str(tmp_path / "wal")},
            "pipelines": {
                s: {"receivers": ["otlp"], "exporters": ["parquet"]} for s in ("traces", "logs", "metrics")
            },
            **overrides.pop("service", {}),
        },
    }
    assert not overrides, overrides
    return parse_config(data, where="test")


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
