"""Forward every acknowledged batch to an upstream OTLP/HTTP endpoint.

A bounded queue and one sender thread: when the upstream is slow or down, the
queue fills and the oldest batches are dropped (counted), never the collector's
memory. Retryable answers (429, 502, 503, 504, connection errors) are retried
with exponential backoff, honouring Retry-After, up to ``max_elapsed_s``;
anything else is a permanent failure for that batch. On stop, what is queued gets
``DRAIN_ON_STOP_S`` more: a wait to retry that would end later is cut short there, and
the rest of the queue is dropped (counted).

Outcomes are counted, not logged per batch: the collector passes in a ``Count`` and
serves the counts at ``/metrics`` (``otelbench_exporter_forward_batches_total``).
"""

from __future__ import annotations

import gzip
import logging
import threading
import time
from collections import deque
from typing import Protocol

import httpx

from otelbench.exporters.config import OtlpExporter

log = logging.getLogger("otelbench.exporter.otlp")

RETRYABLE = frozenset((429, 502, 503, 504))
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0
DRAIN_ON_STOP_S = 5.0


class Count(Protocol):
    """Counts ``n`` batches with an outcome: sent, failed_permanent,
    failed_retries_exhausted, dropped_queue_full, dropped_on_stop."""

    def __call__(self, outcome: str, n: int = 1) -> None: ...


class OtlpForwarder:
    def __init__(self, config: OtlpExporter, count: Count, signals: frozenset[str]):
        self.config = config
        self.count = count
        self.signals = signals
        self._queue: deque[tuple[str, bytes]] = deque()
        self._cv = threading.Condition()
        self._stopping = False
        self._drain_deadline = float("inf")
        headers = {"Content-Type": "application/x-protobuf", **dict(config.headers)}
        if config.compression == "gzip":
            headers["Content-Encoding"] = "gzip"
        self._client = httpx.Client(timeout=config.timeout_s, headers=headers)
        self._thread = threading.Thread(target=self._run, name="otlp-forwarder", daemon=True)
        self._thread.start()

    def offer(self, signal: str, payload: bytes) -> None:
        if signal not in self.signals:
            return
        with self._cv:
            if len(self._queue) >= self.config.queue_size:
                self._queue.popleft()
                self.count("dropped_queue_full")
            self._queue.append((signal, payload))
            self._cv.notify()

    def _send(self, signal: str, payload: bytes) -> str:
        body = gzip.compress(payload, 1) if self.config.compression == "gzip" else payload
        url = f"{self.config.endpoint}/v1/{signal}"
        deadline = time.monotonic() + self.config.max_elapsed_s
        backoff = BACKOFF_START_S
        while True:
            try:
                response = self._client.post(url, content=body)
                if response.status_code < 300:
                    return "sent"
                if response.status_code not in RETRYABLE:
                    log.warning("upstream %s refused a %s batch: %s", url, signal, response.status_code)
                    return "failed_permanent"
                delay = float(response.headers.get("retry-after", backoff)) if response.headers.get(
                    "retry-after", ""
                ).isdigit() else backoff
            except httpx.HTTPError:
                delay = backoff
            if not self._wait_to_retry(time.monotonic() + delay, deadline):
                return "failed_retries_exhausted"
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    def _wait_to_retry(self, retry_at: float, deadline: float) -> bool:
        """Wait until ``retry_at``; False (give up) if that is past the batch's deadline or,
        once ``stop`` has woken this wait, past the drain deadline: a stop never waits out
        a long backoff or Retry-After."""
        with self._cv:
            while retry_at <= min(deadline, self._drain_deadline):
                left = retry_at - time.monotonic()
                if left <= 0:
                    return True
                self._cv.wait(left)  # woken early by offer (harmless) and by stop
            return False

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._stopping:
                    self._cv.wait()
                if not self._queue:
                    return
                if self._stopping and time.monotonic() > self._drain_deadline:
                    self.count("dropped_on_stop", len(self._queue))
                    self._queue.clear()
                    return
                signal, payload = self._queue.popleft()
            self.count(self._send(signal, payload))

    def stop(self) -> None:
        with self._cv:
            self._stopping = True
            self._drain_deadline = time.monotonic() + DRAIN_ON_STOP_S
            self._cv.notify()
        self._thread.join(DRAIN_ON_STOP_S + self.config.timeout_s)
        self._client.close()
