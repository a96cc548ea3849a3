"""Acknowledged spans read back from the write-ahead log before the flusher writes them:
the web's live feed inside ``otelbench serve`` (web/live.py, docs/web.md "Live dashboard").

A reader in another process follows the log behind the committer. It reads only below
the durable position the receiver publishes in the shared state (``collector.state``):
a record there has been fsynced, so its sender has been told it is accepted. Each trace
record is decoded and normalized by the row path (``normalize.rows``, the flusher's
oracle), so a live span has the columns it will have in the lake. It never writes:
checkpoints and retiring segments stay the flusher's.

It starts at the head (what was logged before is not news), and being live beats being
complete: more than ``MAX_BEHIND_BYTES`` behind, it jumps to the head and counts what it
skipped; a segment the flusher retired under it reads as skipped too. It reads at most
``MAX_POLL_BYTES`` a poll, so one poll's rows stay small.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from otelbench.collector import wal

MAX_POLL_BYTES = 4 << 20
MAX_BEHIND_BYTES = 32 << 20  # ~ 100 k spans: more than a live view can show, so skip to now
POLL_INTERVAL_S = 0.05  # a read of one shared int when idle; the ack → live latency budget is 2 s


class WalSpans:
    """Span rows (``columns`` of ``storage.schema.SPANS``) of the trace records logged since
    ``start``; ``durable()`` is the receiver's durable position (``SharedState.durable_pos``)."""

    interval_s = POLL_INTERVAL_S

    def __init__(self, wal_dir: str | Path, durable: Callable[[], int], columns: Sequence[str]) -> None:
        self.dir = Path(wal_dir)
        self.durable = durable
        self.columns = tuple(columns)
        self.pos = 0
        self.skipped_bytes = 0  # jumped over while behind
        self.undecodable = 0

    def start(self) -> None:
        self.pos = self.durable()

    def due(self) -> bool:
        """Anything acknowledged since the last poll (one read of shared memory)."""
        return self.durable() != self.pos

    def poll(self) -> list[dict[str, Any]]:
        from otelbench.normalize.requests import REQUEST_TYPES  # pyarrow, loaded once there is something to show
        from otelbench.normalize.rows import normalize_traces

        until = self.durable()
        behind = self._behind(until)
        if behind > MAX_BEHIND_BYTES:
            self.skipped_bytes += behind
            self.pos = until
            return []
        rows: list[dict[str, Any]] = []
        start = self.pos
        for pos, rec in wal.read_records(self.dir, start, until, MAX_POLL_BYTES):
            self.pos = pos
            if rec is None or rec.signal != "traces":
                continue
            request = REQUEST_TYPES["traces"]()
            try:
                request.ParseFromString(rec.payload)
            except Exception:  # validated at ingest; a bad record must not stop the feed
                self.undecodable += 1
                continue
            cols = normalize_traces(request, rec.owner, rec.agent)
            picked = [cols[c] for c in self.columns]
            rows += [dict(zip(self.columns, values)) for values in zip(*picked)]
        if self.pos == start and until != start:
            # nothing readable between here and the durable position (e.g. the collector
            # started a new segment after a restart): follow the writer
            self.pos = until
        return rows

    def _behind(self, until: int) -> int:
        seq, offset = wal.split(self.pos)
        end_seq, end_offset = wal.split(until)
        if seq == end_seq:
            return max(0, end_offset - offset)
        behind = end_offset - offset
        for s in wal.list_segments(self.dir):
            if seq <= s < end_seq:
                try:
                    behind += wal.segment_path(self.dir, s).stat().st_size
                except FileNotFoundError:  # retired under us: nothing to read there
                    continue
        return max(0, behind)
