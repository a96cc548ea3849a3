"""New lake files as rows, for a reader that follows the lake while it is written: the web's
live feed when it runs without the collector (``otelbench web``), and the judge's scores
in either case (docs/web.md "Live dashboard").

``NewRows(root, table, columns)`` notes the table's files at ``start`` and, on each
``poll``, reads only the files that appeared since: a signal table's ``part-`` files (the
flusher's batches) or a derived table's ``commit-`` files (the processors' commits).
``compact-`` files merge rows already seen and are skipped, and so is a file compaction
took away before it was read. A partition folder is listed again only when its
modification time moved, or moved less than ``RECENT_S`` ago (two files landing within
the clock's granularity leave one mtime), so an idle lake costs one listing of the
table's folder per poll.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from otelbench.storage.files import DataFile, table
from otelbench.storage.location import open_fs

RECENT_S = 2.0
MAX_FILE_ROWS = 20_000  # a live view shows a file's newest rows; a bigger batch is cut
POLL_INTERVAL_S = 0.5


class NewRows:
    """Rows (``columns`` of ``table``) of the files that appear after ``start``."""

    def __init__(self, root: str | Path, table_name: str, columns: Sequence[str],
                 interval_s: float = POLL_INTERVAL_S) -> None:
        self.interval_s = interval_s  # how often the reader should poll
        self.fs = open_fs(root)
        self.table = table(table_name)
        self.columns = tuple(columns)
        self.top = self.fs.path(self.table.name)
        self._mtimes: dict[str, int] = {}
        self._seen: dict[str, set[str]] = {}  # partition folder → file names it held
        self.files_read = 0
        self.rows_cut = 0

    def start(self) -> None:
        self._mtimes, self._seen = {}, {}
        self._scan(report=False)

    def due(self) -> bool:
        return True  # a listing is the only way to know: poll() is that listing

    def poll(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for path in self._scan():
            rows += self._read(path)
        return rows

    def _scan(self, report: bool = True) -> list[str]:
        """Files that appeared since the last scan (a folder new since ``start``: all of its)."""
        new: list[str] = []
        recent = time.time_ns() - int(RECENT_S * 1e9)
        for folder, mtime in self.fs.folder_mtimes(self.top).items():
            if self._mtimes.get(folder) == mtime and mtime < recent:
                continue
            self._mtimes[folder] = mtime
            names = set(self.fs.files(posixpath.join(self.top, folder)))
            if report:
                added = names - self._seen.get(folder, set())
                found = (DataFile.parse(posixpath.join(self.top, folder, n)) for n in added)
                new += [f.path for f in sorted(f for f in found if f is not None and f.kind_rank == 1)]
            self._seen[folder] = names
        return new

    def _read(self, path: str) -> list[dict[str, Any]]:
        try:
            names = set(self.fs.parquet_schema(path).names)
            data = self.fs.read_parquet(path, columns=[c for c in self.columns if c in names])
        except OSError:  # compaction merged it away before it was read: skipped, not shown late
            return []
        self.files_read += 1
        if data.num_rows > MAX_FILE_ROWS:
            self.rows_cut += data.num_rows - MAX_FILE_ROWS
            data = data.slice(data.num_rows - MAX_FILE_ROWS)
        return data.to_pylist()
