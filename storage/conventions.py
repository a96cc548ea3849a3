"""The conventions rollup: what ``otelbench doctor`` and the web's /doctor read instead of
aggregating every span's attribute keys per request.

The ``conventions``, ``conventions_keys`` and ``conventions_events`` views
(storage/queries/conventions.py) are sums over span and log rows, so the rollup keeps
them as *parts*: each refresh aggregates only the data files it has not seen (a
compaction's output whose inputs were all seen holds nothing new:
``storage.folding``) into one new part per aggregate, and a reader sums the parts over its window.
Once there are more than ``MAX_PARTS`` parts they are summed into one. Folder
``<lake>/_rollups/conventions/``; ``manifest.json`` names the parts and the files folded
in, replaced atomically. Counts are of rows as written: a span stored twice in two files
(before compaction removed the repeat) counts twice.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otelbench.storage import folding
from otelbench.storage.files import SEED_DATE, SEED_NAME, DataFile, data_files, partition_dir
from otelbench.storage.fs import LakeFS
from otelbench.storage.queries import conventions as sql
from otelbench.storage.queries import lockdown
from otelbench.storage.schema import LOGS, SPANS

FOLDER = ("_rollups", "conventions")
MANIFEST = folding.MANIFEST
FORMAT = 2  # bump when a part's columns or meaning change: the rollup is rebuilt
MAX_PARTS = 16
FILES_PER_STEP = 200  # new data files aggregated in one statement
MEMORY_LIMIT = "1GB"
KINDS = {"scopes": (SPANS, sql.SCOPE_ROWS, sql.MERGED_SCOPES), "keys": (SPANS, sql.KEY_ROWS, sql.MERGED_KEYS),
         "events": (LOGS, sql.EVENT_ROWS, sql.MERGED_EVENTS)}


@dataclass(frozen=True)
class Snapshot:
    version: int
    parts: dict[str, list[str]]  # kind -> its part files, as DuckDB reads them

    @property
    def params(self) -> dict[str, Any]:
        return {f"{kind[:-1]}_parts": files for kind, files in self.parts.items()}


def current(root: str | Path) -> Snapshot | None:
    """The rollup now; None before the first ``refresh`` (or of another format)."""
    found = folding.manifest(root, FOLDER, FORMAT)
    if found is None:
        return None
    fs, folder, m = found
    return Snapshot(m["version"], {k: [fs.uri(posixpath.join(folder, n)) for n in m["parts"][k]] for k in KINDS})


def pending(root: str | Path) -> bool:
    """Whether ``refresh`` has anything to fold in (storage.folding.pending)."""
    return folding.pending(root, FOLDER, FORMAT, (SPANS, LOGS))


def refresh(root: str | Path) -> int | None:
    """Fold the lake's new span and log files in; the new version (None: another process
    is refreshing)."""
    return folding.locked(root, FOLDER, _refresh)


def _refresh(fs: LakeFS, folder: str) -> int:
    path = posixpath.join(folder, MANIFEST)
    m = fs.read_json(path) if fs.exists(path) else None
    con = _connection(fs)
    try:
        if m is None or m.get("format") != FORMAT:
            # empty parts (the columns, no rows): a reader always has one file per kind
            v = m["version"] + 1 if m else 0
            parts = {}
            for kind, (table, rows, _) in KINDS.items():
                name = f"{kind}-{v}-empty.parquet"
                fs.write_parquet(con.sql(rows, params={"files": [_seed(fs, table)]}).to_arrow_table(),
                                 posixpath.join(folder, name))
                parts[kind] = [name]
            m = {"format": FORMAT, "version": v, "parts": parts, "seen": {}}
            _save(fs, folder, m)
        seen = {t.name: set(m["seen"].get(t.name, ())) for t in (SPANS, LOGS)}
        present = {t.name: data_files(fs, t) for t in (SPANS, LOGS)}
        new = {t: folding.unseen(fs, files, seen[t]) for t, files in present.items()}
        for table_name, files in new.items():
            for i in range(0, len(files), FILES_PER_STEP):
                step = files[i:i + FILES_PER_STEP]
                _fold(fs, folder, con, m, table_name, step)
        now_seen = {t: sorted(folding.relative(fs, f) for f in files) for t, files in present.items()}
        if now_seen != {t: sorted(s) for t, s in m["seen"].items()}:  # files compacted away: forget them
            m["seen"] = now_seen
            _save(fs, folder, m)
    finally:
        con.close()
    return int(m["version"])


def _fold(fs: LakeFS, folder: str, con: Any, m: dict[str, Any], table_name: str, files: list[DataFile]) -> None:
    """One new version: a part per aggregate of ``table_name`` over ``files``; the parts
    summed into one when there are too many."""
    v = m["version"] + 1
    parts = {k: list(names) for k, names in m["parts"].items()}
    uris = [fs.uri(f.path) for f in files] + [_seed(fs, SPANS if table_name == SPANS.name else LOGS)]
    written = []
    for kind, (table, rows, merged) in KINDS.items():
        if table.name != table_name:
            continue
        name = f"{kind}-{v}.parquet"
        fs.write_parquet(con.sql(rows, params={"files": uris}).to_arrow_table(), posixpath.join(folder, name),
                         compression="zstd")
        parts[kind].append(name)
        if len(parts[kind]) > MAX_PARTS:
            whole = f"{kind}-{v}-merged.parquet"
            every = [fs.uri(posixpath.join(folder, n)) for n in parts[kind]]
            fs.write_parquet(con.sql(merged, params={"parts": every}).to_arrow_table(),
                             posixpath.join(folder, whole), compression="zstd")
            parts[kind] = [whole]
        written.append(kind)
    fs.sync_folder(folder)
    old = {n for names in m["parts"].values() for n in names}
    seen = dict(m["seen"])
    seen[table_name] = sorted(set(seen.get(table_name, ())) | {folding.relative(fs, f) for f in files})
    m.update({"version": v, "parts": parts, "seen": seen})
    _save(fs, folder, m)
    keep = old | {n for names in parts.values() for n in names}
    for name in fs.files(folder):  # what neither this version nor the previous names
        if name.endswith(".parquet") and name not in keep:
            fs.delete(posixpath.join(folder, name), missing_ok=True)


def _seed(fs: LakeFS, table: Any) -> str:
    # read_parquet with union_by_name takes its columns from every file: the seed has the schema
    return fs.uri(posixpath.join(partition_dir(fs, table, SEED_DATE), SEED_NAME))


def _connection(fs: LakeFS) -> Any:
    import duckdb

    con = duckdb.connect(":memory:", config={"memory_limit": MEMORY_LIMIT, "temp_directory": fs.spill_dir(),
                                             "preserve_insertion_order": False})
    fs.attach(con)
    con.execute(lockdown.SET_TIME_ZONE_UTC)
    return con


def _save(fs: LakeFS, folder: str, m: dict[str, Any]) -> None:
    m["built_at"] = dt.datetime.now(dt.timezone.utc).isoformat()
    fs.write_json(posixpath.join(folder, MANIFEST), m)


__all__ = ["refresh", "pending", "current", "Snapshot", "FOLDER"]


if __name__ == "__main__":  # one refresh in a process of its own: python -m otelbench.storage.conventions LAKE
    import sys

    started = time.perf_counter()
    version = refresh(sys.argv[1])
    print("busy" if version is None else f"version {version}: {time.perf_counter() - started:.2f} s", flush=True)
