"""Shared fixtures: a real collector on free ports writing a real lake in tmp_path."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from otelbench.testing.collector import collector_config

pytest_plugins = ["tests.model_fixture"]


@pytest.fixture
def make_collector(tmp_path: Path) -> Iterator:
    """Start collectors with config overrides (``clock``: what the keys' quota windows read
    as the time); all are stopped (gracefully) at teardown."""
    from otelbench.collector.wiring import Collector

    started: list[Collector] = []

    def make(*, clock: Callable[[], float] = time.time, **overrides) -> Collector:
        c = Collector(collector_config(tmp_path, **overrides), clock=clock).start()
        started.append(c)
        return c

    yield make
    for c in started:
        if not c.ingest.stopping:
            c.stop()


@pytest.fixture
def collector(make_collector):
    return make_collector()


@pytest.fixture(scope="session")
def s3_server() -> Iterator:
    """A real S3-compatible server (moto's, a process of its own) for the session."""
    from otelbench.testing.s3 import s3_server as start

    with start() as server:
        yield server


@pytest.fixture
def s3_lake(s3_server, monkeypatch, request) -> str:
    """``s3://<a new bucket>/lake``, with the AWS variables that find it set for this test
    (and the processes it starts). A bucket per test: moto lists a prefix by scanning its
    bucket's every key, so a shared bucket made later tests' listings slow."""
    import re
    import uuid

    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    return s3_server.make_bucket(f"{name}-{uuid.uuid4().hex[:8]}") + "/lake"
