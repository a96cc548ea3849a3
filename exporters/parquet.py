"""The Parquet exporter: OTLP payloads → normalized rows → one lake batch.

Runs inside the flusher process. It decodes each logged request, normalizes it
(``collector.normalize``), drops spans it has already stored (same trace id and
span id: a client that retried after a crash or timeout), and hands whole
batches to ``storage.lake``, the only module that writes Parquet.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from collector import normalize
from collector.encoding import REQUEST_TYPES
from collector.normalize_arrow import normalize_traces_arrow
from storage.lake import Lake
from storage.schema import SPANS, TABLE_FOR_SIGNAL

_NORMALIZERS: dict[str, Callable] = {
    "traces": normalize.normalize_traces,
    "logs": normalize.normalize_logs,
    "metrics": normalize.normalize_metrics,
}


class RecentKeys:
    """A bounded set of recently stored span keys (oldest forgotten first)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._set: set[int] = set()
        self._order: deque[int] = deque()

    def __len__(self) -> int:
        return len(self._set)

    def __contains__(self, key: int) -> bool:
        return key in self._set

    def add(self, key: int) -> None:
        if self.capacity <= 0 or key in self._set:
            return
        self._set.add(key)
        self._order.append(key)
        if len(self._order) > self.capacity:
            self._set.discard(self._order.popleft())

    def keep_new(self, keys: list[int]) -> list[int] | None:
        """Remember ``keys``; the positions of those not seen before (each once), or
        None when all are new — the usual case, checked with set operations in C."""
        if self.capacity <= 0:
            return None
        if self._set.isdisjoint(keys) and len(set(keys)) == len(keys):
            self._set.update(keys)
            self._order.extend(keys)
            while len(self._order) > self.capacity:
                self._set.discard(self._order.popleft())
            return None
        keep = []
        for i, key in enumerate(keys):
            if key not in self._set:
                self.add(key)
                keep.append(i)
        return keep


@dataclass
class Batch:
    """One flush's normalized rows, by table, and its item counts by signal."""

    tables: dict[str, Any]
    counts: dict[str, int]


def span_key(trace_id: str, span_id: str) -> int:
    return hash(trace_id + span_id)


class ParquetSink:
    def __init__(self, lake: Lake, signals: frozenset[str], *, dedupe_window: int):
        self.lake = lake
        self.signals = signals
        self.recent = RecentKeys(dedupe_window)
        self._columns: dict[str, dict[str, list]] = {}
        # traces are normalized a whole batch at a time (collector.normalize_arrow)
        self._trace_payloads: list[bytes] = []
        self._trace_owners: list[str | None] = []
        self.rows = 0
        self.payload_bytes = 0
        self.counts = {"traces": 0, "logs": 0, "metrics": 0}
        self.duplicates = 0
        self.undecodable = 0

    @property
    def pending(self) -> bool:
        return bool(self.rows or self._trace_payloads)

    def remember_stored(self, keys: list[tuple]) -> None:
        for trace_id, span_id in keys:
            self.recent.add(span_key(trace_id, span_id))

    def add(self, signal: str, owner: str | None, payload: bytes) -> None:
        if signal not in self.signals:
            return
        if signal == "traces":
            self._trace_payloads.append(payload)
            self._trace_owners.append(owner)
            self.payload_bytes += len(payload)
            return
        request = REQUEST_TYPES[signal]()
        try:
            request.ParseFromString(payload)
        except Exception:  # validated at ingest; a bad record must not stop the flusher
            self.undecodable += 1
            return
        cols = _NORMALIZERS[signal](request, owner)
        n = len(next(iter(cols.values()))) if cols else 0
        if not n:
            return
        table = TABLE_FOR_SIGNAL[signal].name
        buf = self._columns.get(table)
        if buf is None:
            self._columns[table] = {k: list(v) for k, v in cols.items()}
        else:
            for k, v in cols.items():
                buf[k].extend(v)
        self.rows += n
        self.payload_bytes += len(payload)
        self.counts[signal] += n

    def _spans(self) -> pa.Table | None:
        """The buffered trace requests as one spans table, spans already stored dropped."""
        if not self._trace_payloads:
            return None
        try:
            table = normalize_traces_arrow(self._trace_payloads, self._trace_owners)
        except ValueError:  # a payload the columnar decoder refuses: the reference, request by request
            parts = []
            for payload, owner in zip(self._trace_payloads, self._trace_owners):
                request = REQUEST_TYPES["traces"]()
                try:
                    request.ParseFromString(payload)
                except Exception:
                    self.undecodable += 1
                    continue
                parts.append(pa.Table.from_pydict(normalize.normalize_traces(request, owner), schema=SPANS.schema))
            table = pa.concat_tables(parts) if parts else SPANS.schema.empty_table()
        keys = list(map(span_key, table.column("trace_id").to_pylist(), table.column("span_id").to_pylist()))
        keep = self.recent.keep_new(keys)
        if keep is not None and len(keep) < table.num_rows:
            self.duplicates += table.num_rows - len(keep)
            table = table.take(pa.array(keep, pa.int64()))
        return table

    def take(self) -> Batch:
        """Everything buffered, normalized into one batch; the buffers start afresh."""
        spans = self._spans()
        tables: dict[str, Any] = dict(self._columns)
        if spans is not None and spans.num_rows:
            tables["spans"] = {name: spans.column(name) for name in spans.column_names}
            self.counts["traces"] += spans.num_rows
        batch = Batch(tables, self.counts)
        self._columns = {}
        self._trace_payloads, self._trace_owners = [], []
        self.rows = self.payload_bytes = 0
        self.counts = {"traces": 0, "logs": 0, "metrics": 0}
        return batch

    def write(self, batch_id: str, batch: Batch) -> None:
        """Write a batch ``take`` returned as one lake batch (releases the GIL while encoding)."""
        if batch.tables:
            self.lake.write_batch(batch_id, batch.tables)

    def flush(self, batch_id: str) -> dict[str, int]:
        """Write everything buffered as one batch; returns the item counts written."""
        batch = self.take()
        self.write(batch_id, batch)
        return batch.counts
