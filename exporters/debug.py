"""The ``debug`` exporter: logs how many items went through, every interval.

Counters, not per-item logs: one line per interval with the items seen per signal.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

from otelbench.exporters.config import DebugExporter as DebugConfig

log = logging.getLogger("otelbench.exporter.debug")


class DebugExporter:
    def __init__(self, config: DebugConfig, signals: frozenset[str]):
        self.signals = signals
        self.interval = config.interval_s
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="debug-exporter", daemon=True)
        self._thread.start()

    def offer(self, signal: str, payload: bytes) -> None:
        if signal in self.signals:
            with self._lock:
                self._counts[signal] += 1
                self._counts[signal + "_bytes"] += len(payload)

    def _report(self) -> None:
        with self._lock:
            counts, self._counts = self._counts, Counter()
        if counts:
            log.info(
                "debug: %s",
                ", ".join(f"{s}: {counts[s]} batches / {counts[s + '_bytes']} bytes" for s in sorted(self.signals) if counts[s]),
            )

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._report()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._report()
