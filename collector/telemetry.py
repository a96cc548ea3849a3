"""The collector's own metrics, served at ``/metrics`` in Prometheus text format.

Counters, not logs: every accepted, rejected, queued and flushed item is counted
here, and the log only shows lifecycle events and rare failures.
"""

from __future__ import annotations

import threading
from collections import Counter

from otelbench.collector.state import SharedState

_ITEM = {"traces": "spans", "logs": "log_records", "metrics": "data_points"}


class Telemetry:
    def __init__(self, state: SharedState):
        self.state = state
        self._lock = threading.Lock()
        self.received: Counter[str] = Counter()  # items accepted, by signal
        self.rejected: Counter[str] = Counter()  # items rejected in partial_success, by signal
        self.refused: Counter[str] = Counter()  # whole requests refused, by http status
        self.requests: Counter[str] = Counter()  # requests, by transport
        self.wal_bytes_written = 0
        self.wal_bytes_on_start = 0
        self.inflight = 0
        self.forward: Counter[str] = Counter()  # forwarded / dropped / failed batches

    def count(self, counter: Counter[str], key: str, n: int = 1) -> None:
        with self._lock:
            counter[key] += n

    def wal_bytes(self) -> int:
        """Bytes in the write-ahead log not yet retired by the flusher."""
        return self.wal_bytes_on_start + self.wal_bytes_written - self.state.snapshot()["retired_bytes"]

    def render(self, pending_bytes: int, extra: list[tuple[str, str, str, list[tuple[str, float]]]] = ()) -> str:
        """Prometheus text; ``extra``: more (name, kind, help, samples), e.g. usage per key."""
        s = self.state.snapshot()
        lines: list[str] = []

        def metric(name: str, kind: str, help_: str, samples: list[tuple[str, float]]) -> None:
            lines.append(f"# HELP otelbench_{name} {help_}")
            lines.append(f"# TYPE otelbench_{name} {kind}")
            for labels, value in samples:
                lines.append(f"otelbench_{name}{labels} {value}")

        with self._lock:
            metric("receiver_accepted_items_total", "counter", "Items acknowledged (durable), by signal.",
                   [(f'{{signal="{k}",item="{_ITEM[k]}"}}', self.received[k]) for k in _ITEM])
            metric("receiver_rejected_items_total", "counter", "Items rejected through partial_success.",
                   [(f'{{signal="{k}"}}', self.rejected[k]) for k in _ITEM])
            metric("receiver_refused_requests_total", "counter", "Requests refused whole, by status code.",
                   [(f'{{code="{k}"}}', v) for k, v in sorted(self.refused.items())])
            metric("receiver_requests_total", "counter", "Export requests, by transport.",
                   [(f'{{transport="{k}"}}', v) for k, v in sorted(self.requests.items())])
            metric("exporter_forward_batches_total", "counter", "OTLP forwarding, by outcome.",
                   [(f'{{outcome="{k}"}}', v) for k, v in sorted(self.forward.items())])
            inflight = self.inflight
        metric("receiver_inflight_requests", "gauge", "Requests being processed.", [("", inflight)])
        metric("wal_pending_bytes", "gauge", "Bytes queued for the next group commit.", [("", pending_bytes)])
        metric("wal_bytes", "gauge", "Bytes in the write-ahead log not yet in Parquet.", [("", self.wal_bytes())])
        metric("wal_written_bytes_total", "counter", "Bytes appended to the write-ahead log.",
               [("", self.wal_bytes_written)])
        metric("flusher_flushed_items_total", "counter", "Items written to Parquet, by signal.",
               [('{signal="traces"}', s["flushed_spans"]), ('{signal="logs"}', s["flushed_logs"]),
                ('{signal="metrics"}', s["flushed_points"])])
        metric("flusher_duplicates_dropped_total", "counter", "Spans dropped as already stored (same trace and span id).",
               [("", s["duplicates_dropped"])])
        metric("flusher_flushes_total", "counter", "Parquet flushes.", [("", s["flushes"])])
        metric("flusher_flush_seconds_total", "counter", "Time spent in flushes.", [("", s["flush_seconds_us"] / 1e6)])
        metric("flusher_last_flush_seconds", "gauge", "Duration of the last flush.", [("", s["last_flush_us"] / 1e6)])
        metric("flusher_errors_total", "counter", "Flushes that failed (retried).", [("", s["flush_errors"])])
        metric("compactor_runs_total", "counter", "Compaction runs (one process each).", [("", s["compaction_runs"])])
        metric("compactor_seconds_total", "counter", "Time spent in compaction runs.",
               [("", s["compaction_seconds_us"] / 1e6)])
        metric("compactor_merged_files_total", "counter", "Small files merged by compaction.", [("", s["compactions"])])
        metric("compactor_errors_total", "counter", "Compactions that failed (the files stay; retried at the next "
               "interval).", [("", s["compaction_errors"])])
        metric("flusher_up", "gauge", "1 while every flusher worker is running.", [("", s["ready"])])
        metric("flusher_workers", "gauge", "Flusher worker processes.", [("", s["workers"])])
        for name, kind, help_, samples in extra:
            metric(name, kind, help_, samples)
        return "\n".join(lines) + "\n"
