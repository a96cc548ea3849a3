"""The Parquet exporter: OTLP payloads → normalized rows → one lake batch.

Runs inside the flusher process. It decodes each logged request, normalizes it
(``normalize.rows``), drops spans it has already stored (same trace id and
span id: a client that retried after a crash or timeout), and hands whole
batches to ``storage.lake``, the only module that writes Parquet.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from otelbench.normalize import rows
from otelbench.normalize.columnar import normalize_traces_arrow
from otelbench.normalize.requests import REQUEST_TYPES
from otelbench.storage.lake import Lake
from otelbench.storage.schema import SPANS, TABLE_FOR_SIGNAL

_NORMALIZERS: dict[str, Callable] = {
    "traces": rows.normalize_traces,
    "logs": rows.normalize_logs,
    "metrics": rows.normalize_metrics,
}


@dataclass
class Batch:
    """One flush's normalized rows, by table, and its item counts by signal."""

    tables: dict[str, Any]
    counts: dict[str, int]


class RecentKeys:
    """A bounded memory of recently stored span keys (``span_keys``), oldest forgotten first.

    Held as a few sorted ``uint64`` arrays and looked up by binary search: 8 bytes a key
    (a Python set of ints took ~60, ~30 MiB at the default window). New keys join the
    newest array until it holds a quarter of the capacity (a linear merge of two sorted
    runs), so there are at most ~5 arrays to search; the oldest array is forgotten once the
    others hold ``capacity`` keys. At least the last ``capacity`` keys are remembered.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._arrays: deque[np.ndarray] = deque()
        self._size = 0
        self._array_cap = max(1, capacity // 4)

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: int) -> bool:
        return bool(self._seen(np.array([key], np.uint64))[0])

    def _seen(self, keys: np.ndarray) -> np.ndarray:
        seen = np.zeros(len(keys), bool)
        for arr in self._arrays:
            i = np.searchsorted(arr, keys)
            np.minimum(i, len(arr) - 1, out=i)
            seen |= arr[i] == keys
        return seen

    def _remember(self, keys: np.ndarray) -> None:
        """Add keys that are unique and not yet remembered."""
        if not len(keys):
            return
        keys = np.sort(keys)
        if self._arrays and len(self._arrays[-1]) + len(keys) <= self._array_cap:
            last = self._arrays.pop()
            self._size -= len(last)
            keys = np.concatenate([last, keys])
            keys.sort(kind="stable")  # two sorted runs: a linear merge
        self._arrays.append(keys)
        self._size += len(keys)
        while len(self._arrays) > 1 and self._size - len(self._arrays[0]) >= self.capacity:
            self._size -= len(self._arrays.popleft())

    def keep_new(self, keys: Sequence[int] | np.ndarray) -> list[int] | None:
        """Remember ``keys``; the positions of those not seen before (each once), or
        None when all are new (the usual case)."""
        if self.capacity <= 0:
            return None
        keys = np.asarray(keys, np.uint64)
        _, first = np.unique(keys, return_index=True)
        fresh = ~self._seen(keys)
        if len(first) == len(keys) and fresh.all():
            self._remember(keys)
            return None
        is_first = np.zeros(len(keys), bool)
        is_first[first] = True
        keep = np.flatnonzero(fresh & is_first)
        self._remember(keys[keep])
        return keep.tolist()


def span_keys(trace_ids: Any, span_ids: Any) -> np.ndarray:
    """64-bit hashes of (trace id, span id) pairs, the dedupe set's keys (polars' row hash:
    the same in every process of one polars version, and the set is rebuilt at start)."""
    return pl.DataFrame({"t": trace_ids, "s": span_ids}, schema={"t": pl.String, "s": pl.String}).hash_rows().to_numpy()


class ParquetSink:
    def __init__(self, lake: Lake, signals: frozenset[str], *, dedupe_window: int):
        self.lake = lake
        self.signals = signals
        self.recent = RecentKeys(dedupe_window)
        self._columns: dict[str, dict[str, list]] = {}
        # traces are normalized a whole batch at a time (normalize.columnar)
        self._trace_payloads: list[bytes] = []
        self._trace_owners: list[str | None] = []
        self._trace_agents: list[str | None] = []
        self.rows = 0
        self.payload_bytes = 0
        self.counts = {"traces": 0, "logs": 0, "metrics": 0}
        self.duplicates = 0
        self.undecodable = 0

    @property
    def pending(self) -> bool:
        return bool(self.rows or self._trace_payloads)

    def remember_stored(self, keys: list[tuple]) -> None:
        if keys and self.recent.capacity:
            trace_ids, span_ids = zip(*keys)
            self.recent.keep_new(span_keys(list(trace_ids), list(span_ids)))

    def add(self, signal: str, owner: str | None, payload: bytes, agent: str | None = None) -> None:
        """One logged request: its signal, its sender (owner, the agent it names) and bytes."""
        if signal not in self.signals:
            return
        if signal == "traces":
            self._trace_payloads.append(payload)
            self._trace_owners.append(owner)
            self._trace_agents.append(agent)
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
            table = normalize_traces_arrow(self._trace_payloads, self._trace_owners, self._trace_agents)
        except ValueError:  # a payload the columnar decoder refuses: the reference, request by request
            parts = []
            for payload, owner, agent in zip(self._trace_payloads, self._trace_owners, self._trace_agents):
                request = REQUEST_TYPES["traces"]()
                try:
                    request.ParseFromString(payload)
                except Exception:
                    self.undecodable += 1
                    continue
                parts.append(pa.Table.from_pydict(rows.normalize_traces(request, owner, agent), schema=SPANS.schema))
            table = pa.concat_tables(parts) if parts else SPANS.schema.empty_table()
        keep = self.recent.keep_new(span_keys(table.column("trace_id"), table.column("span_id")))
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
        self._trace_payloads, self._trace_owners, self._trace_agents = [], [], []
        self.rows = self.payload_bytes = 0
        self.counts = {"traces": 0, "logs": 0, "metrics": 0}
        return batch

    def write(self, batch_id: str, batch: Batch) -> None:
        """Write a batch ``take`` returned as one lake batch (releases the GIL while encoding)."""
        if batch.tables:
            self.lake.write_batch(batch_id, batch.tables)
