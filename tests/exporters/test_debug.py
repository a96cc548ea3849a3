"""exporters.debug: one summary line per interval, never a line per item."""

from __future__ import annotations

import logging

import pytest

from exporters.config import DebugExporter as DebugConfig
from exporters.debug import DebugExporter


def test_counts_batches_and_bytes_per_signal(caplog: pytest.LogCaptureFixture) -> None:
    exporter = DebugExporter(DebugConfig(interval_s=3600), frozenset({"traces", "logs"}))
    for signal, payload in (("traces", b"abc"), ("traces", b"de"), ("logs", b"f"), ("metrics", b"ignored")):
        exporter.offer(signal, payload)
    with caplog.at_level(logging.INFO, logger="otelbench.exporter.debug"):
        exporter.stop()  # reports what is left
    assert [r.getMessage() for r in caplog.records] == ["debug: logs: 1 batches / 1 bytes, traces: 2 batches / 5 bytes"]
