"""State shared by the receiver process and the flusher worker processes.

A fixed array of int64 slots in shared memory: positions in the write-ahead log
and the flushers' counters. Every slot has exactly one writer (one thread of one
process: each flusher worker has its own block, written by its writer thread but for
``polls``, which its reading thread counts), so no lock is needed; readers sum the blocks.
The memory is a mapping of an unlinked temporary file (in /dev/shm where there is
one) whose descriptor the child processes inherit (``SharedState(fd=...)``).
"""

from __future__ import annotations

import mmap
import os
import tempfile

MAX_WORKERS = 8

_GLOBAL = (
    "durable_pos",  # receiver: everything before this WAL position is fsynced
    "stop",  # receiver → flushers: flush up to durable_pos, then exit
    "workers",  # how many flusher workers run
    "recovered",  # flusher worker 0 → the others: the lake is settled, go ahead
    # the compactor process (one at a time), and its scheduler thread once it has exited
    "compactions",  # small files merged
    "compaction_errors",
    "compaction_runs",
    "compaction_seconds_us",
)
_PER_WORKER = (
    "flushed_pos",  # this worker's checkpoint: its share of the log before it is in Parquet
    "retired_bytes",  # WAL bytes this worker deleted
    "flushed_spans",
    "flushed_logs",
    "flushed_points",
    "duplicates_dropped",
    "flushes",
    "flush_seconds_us",  # total time spent flushing, microseconds
    "last_flush_us",
    "flush_errors",
    "ready",
    # the reading thread: passes of its loop, each reading the log up to the durable position
    # and deciding whether to flush; tests wait on it ("looked N times, still held the batch")
    "polls",
)
_SIZE = len(_GLOBAL) + MAX_WORKERS * len(_PER_WORKER)


class SharedState:
    def __init__(self, fd: int | None = None, worker: int | None = None):
        """A new state (the receiver), or, given ``fd``, the one a parent process made."""
        if fd is None:
            self._file = tempfile.TemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
            self._file.truncate(_SIZE * 8)
            fd = self._file.fileno()
        self.fd = fd
        self._map = mmap.mmap(fd, _SIZE * 8)
        self._a = memoryview(self._map).cast("q")
        self.worker = worker  # set inside a flusher worker: which block it writes

    def _index(self, name: str, worker: int | None = None) -> int:
        if name in _GLOBAL:
            return _GLOBAL.index(name)
        w = self.worker if worker is None else worker
        if w is None:
            raise ValueError(f"{name} is a per-worker slot: name the worker")
        return len(_GLOBAL) + w * len(_PER_WORKER) + _PER_WORKER.index(name)

    def get(self, name: str, worker: int | None = None) -> int:
        return self._a[self._index(name, worker)]

    def set(self, name: str, value: int, worker: int | None = None) -> None:
        self._a[self._index(name, worker)] = value

    def add(self, name: str, value: int) -> None:
        i = self._index(name)
        self._a[i] += value

    @property
    def durable_pos(self) -> int:
        return self._a[0]

    @property
    def flushed_pos(self) -> int:
        """Everything before this position is in Parquet (the slowest worker's checkpoint)."""
        n = self.get("workers")
        return min((self.get("flushed_pos", w) for w in range(n)), default=0)

    @property
    def all_ready(self) -> bool:
        n = self.get("workers")
        return n > 0 and all(self.get("ready", w) for w in range(n))

    def snapshot(self) -> dict[str, int]:
        """Global slots, plus each per-worker counter summed over the workers."""
        out = {name: self._a[i] for i, name in enumerate(_GLOBAL)}
        n = self.get("workers")
        for name in _PER_WORKER:
            out[name] = sum(self.get(name, w) for w in range(n))
        out["flushed_pos"] = self.flushed_pos
        out["ready"] = int(self.all_ready)
        out["last_flush_us"] = max((self.get("last_flush_us", w) for w in range(n)), default=0)
        return out
