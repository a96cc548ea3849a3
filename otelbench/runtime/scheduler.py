"""``Scheduler``: the processors on a schedule inside ``otelbench serve``, one run at a
time, each run a process of its own (``otelbench.runtime.processors_run.child_main``)."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

from otelbench.runtime.processors_run import SIGTERM_EXIT
from otelbench.storage.process import Child

log = logging.getLogger("otelbench.processors")


class Scheduler:
    """In ``otelbench serve``: a thread that starts one processors run every
    ``processors.interval_s`` (the first after one interval), one at a time."""

    def __init__(self, config: Any, telemetry_endpoint: str | None) -> None:
        self.config, self.telemetry_endpoint = config, telemetry_endpoint
        self.runs = self.failures = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._process: Any = None
        self._thread = threading.Thread(target=self._loop, name="processors", daemon=True)

    def start(self) -> Scheduler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        cfg = self.config
        lake = cfg.lake_path
        while not self._stop.wait(cfg.processors.interval_s):
            with self._lock:
                if self._stop.is_set():
                    return
                self._process = Child(
                    "otelbench.runtime.processors_run:child_main",
                    (cfg.processors, cfg.privacy, str(lake), self.telemetry_endpoint, os.getpid(),
                     cfg.service.telemetry.log_level),
                    name="otelbench-processors",
                )
                self._process.start()
            started = time.monotonic()
            self._process.join()
            self.runs += 1
            if self._process.exitcode not in (0, SIGTERM_EXIT, -signal.SIGTERM):
                self.failures += 1
                log.error("the processors run exited with code %s after %.0fs", self._process.exitcode,
                          time.monotonic() - started)

    def metrics(self) -> list[tuple[str, str, str, list[tuple[str, float]]]]:
        """(name, kind, help, samples) for the collector's /metrics: the runs that ended."""
        return [("processors_runs_total", "counter", "Scheduled processors runs that ended (one process each).",
                 [("", self.runs)]),
                ("processors_errors_total", "counter", "Scheduled processors runs that failed.",
                 [("", self.failures)])]

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            process = self._process
        if process is not None and process.is_alive():
            process.terminate()  # a run stopped half-way keeps what it committed
            process.join(30)
        self._thread.join(30)
