"""The compactor: merges the lake's small files in a process of its own, now and then.

Every ``compaction.interval_s`` the receiver process starts a short-lived process that
compacts each table, on files every flusher worker has checkpointed past, and exits (on
a local lake the signal tables' merges are planned first by a process of its own:
``run``). Its own process because a run holds a few hundred MB (DuckDB, a row-group
buffer) that an exiting process gives back at once, and because the flusher workers go
on flushing meanwhile (compacting inside worker 0 stalled half of the log for the run).

Crash safety is the lake's: a run journals its plan, and whatever a killed run left is
settled by the next start (``Lake._recover``). A failed run is counted
(``compaction_errors``), logged, and tried again at the next interval.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from otelbench.collector.state import SharedState
from otelbench.storage import is_remote, process
from otelbench.storage.process import Child

if TYPE_CHECKING:
    from otelbench.exporters.config import Compaction

log = logging.getLogger("otelbench.compactor")

COMPACTOR_NICENESS = 10
# A merge streams a few MB a batch through Arrow's jemalloc pool (storage.process): handing
# its freed pages back after 100 ms lowers the compactor's peak. Not for the flusher, where
# the pages would be faulted in again every batch (docs/performance.md, "Why the defaults
# are what they are"). A user's own value wins.
ALLOCATOR_ENV = {"JE_ARROW_MALLOC_CONF": "dirty_decay_ms:100,muzzy_decay_ms:0"}


def run(lake_path: str, below_batch_id: str, min_files: int, memory_mib: int, state: SharedState,
        owner: str | None = None) -> None:
    """One compaction run over every table of the registry (signal and derived), in the
    calling process; of a shared lake, only the files of collector ``owner``
    (``exporters.parquet.compaction``: ``min_files``, ``memory_mib``).

    On a local lake the signal tables' run has two halves, one process after the other:
    ``python -m otelbench.storage.plan_process`` settles journals, chooses the merges and plans them (DuckDB
    on the key columns), then exits; this process, which has loaded nothing heavy until
    then, makes the merges by those plans (pyarrow streaming the rows). Neither waits
    beside the other holding its libraries, and DuckDB's never sits in the merging
    process. In a bucket each merge is planned in a process of its own just before it is
    made (``plan_in_child``): the plan reads the inputs the merge downloaded."""
    planned = None
    if not is_remote(lake_path):
        try:
            planned = process.call("otelbench.storage.plan_process",
                                   ("run", lake_path, owner, below_batch_id, min_files, memory_mib),
                                   "the plan's process of a compaction run")
        except Exception as exc:  # noqa: BLE001 — small files stay readable; retried next interval
            state.add("compaction_errors", 1)
            log.error("planning the signal tables' merges failed, will retry at the next interval: %s", exc)
            planned = {}
    from otelbench.storage import compaction  # heavy imports stay out of the receiver process (and out of the plan's)
    from otelbench.storage.lake import Lake
    from otelbench.storage.schema import SIGNAL, tables

    lake = Lake(lake_path, owner)
    for table in tables():
        try:
            if planned is not None and table.kind == SIGNAL:
                merged = compaction.compact_planned(lake.fs, table, planned.get(table.name, []),
                                                    memory_mib=memory_mib)
            else:
                merged = lake.compact(table.name, below_batch_id=below_batch_id, min_files=min_files,
                                      memory_mib=memory_mib, plan_in_child=True)
            state.add("compactions", merged)
        except Exception as exc:  # noqa: BLE001 — small files stay readable; retried next interval
            state.add("compaction_errors", 1)
            log.error("compacting %s failed, will retry at the next interval: %s", table.name, exc)


def main(lake_path: str, below_batch_id: str, min_files: int, memory_mib: int, state_fd: int, parent_pid: int,
         log_level: str, owner: str | None = None) -> None:
    """Entry point of a compactor process (``storage.process``). Its settings come as plain
    values: unpickling the config would import pydantic and the collector's config models
    (~11 MiB of the process's peak) for two numbers."""
    process.die_with_parent(parent_pid)
    process.without_numpy()  # the merge streams rows with pyarrow alone (storage.compaction)
    # Background work: the receiver and the flusher come first for the CPU, compaction
    # takes what they leave (it can wait; an acknowledged span waiting for Parquet cannot).
    os.nice(COMPACTOR_NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the receiver decides when we stop
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    run(lake_path, below_batch_id, min_files, memory_mib, SharedState(fd=state_fd), owner)


class Scheduler:
    """In the receiver process: a thread that starts one compactor process per interval."""

    def __init__(self, config: "Compaction", lake_path: str, state: SharedState, log_level: str,
                 owner: str | None = None) -> None:
        self.config, self.lake_path, self.state, self.log_level = config, lake_path, state, log_level
        self.owner = owner
        self._stop = threading.Event()
        self._lock = threading.Lock()  # stop() never misses a process being started
        self._process: Any = None
        self._thread = threading.Thread(target=self._loop, name="compaction", daemon=True)

    def start(self) -> "Scheduler":
        self._thread.start()
        return self

    def _loop(self) -> None:
        from otelbench.collector.flusher import batch_id  # not at the top: the compactor's process never needs it

        while not self._stop.wait(self.config.interval_s):
            below = batch_id(self.state.flushed_pos)  # files every worker has checkpointed past
            with self._lock:
                if self._stop.is_set():
                    return
                self._process = Child(
                    "otelbench.collector.compactor:main",
                    (self.lake_path, below, self.config.min_files, self.config.memory_mib, self.state.fd,
                     os.getpid(), self.log_level, self.owner),
                    name="otelbench-compactor",
                    pass_fds=(self.state.fd,),
                    defaults=ALLOCATOR_ENV,
                )
                started = time.monotonic()
                self._process.start()
            self._process.join()
            self.state.add("compaction_runs", 1)
            self.state.add("compaction_seconds_us", int((time.monotonic() - started) * 1e6))
            if self._process.exitcode not in (0, -signal.SIGTERM):
                self.state.add("compaction_errors", 1)
                log.error("the compactor exited with code %s", self._process.exitcode)

    def stop(self) -> None:
        """A run in progress is stopped: its journal lets the next start settle it."""
        with self._lock:
            self._stop.set()
            process = self._process
        if process is not None and process.is_alive():
            process.terminate()
            process.join(30)
        self._thread.join(30)
