"""What every rollup shares: which data files it has not folded in yet, whether it has
anything to fold, and one refresh at a time per rollup folder.

A rollup (storage.rollups, storage.conventions) keeps a ``manifest.json`` naming its
format and the files it has seen, by their path relative to the lake. A compaction's
output names its inputs in its footer (``storage.files.lineage``): when every input was
seen, the output holds nothing new and is not folded in again.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from otelbench.storage.files import DataFile, data_files, lineage
from otelbench.storage.fs import LakeBusy, LakeFS
from otelbench.storage.location import open_fs
from otelbench.storage.schema import Table

MANIFEST = "manifest.json"
T = TypeVar("T")


def manifest(root: str | Path, folder: tuple[str, ...], fmt: int) -> tuple[LakeFS, str, dict[str, Any]] | None:
    """The rollup's filesystem, folder path and manifest; None before its first refresh,
    or when it is of another format (the next refresh rebuilds it)."""
    fs = open_fs(root)
    path = fs.path(*folder)
    try:
        m = fs.read_json(posixpath.join(path, MANIFEST))
    except FileNotFoundError:
        return None
    return (fs, path, m) if m.get("format") == fmt else None


def relative(fs: LakeFS, f: DataFile) -> str:
    """A data file as a manifest names it."""
    return posixpath.relpath(f.path, fs.root)


def unseen(fs: LakeFS, files: list[DataFile], seen: set[str]) -> list[DataFile]:
    """The files not folded in yet — but not a compaction's output whose inputs all were."""
    known = set(seen)
    out = []
    # parts and commits first: a compaction of this very refresh's new parts is then known
    for f in sorted((f for f in files if relative(fs, f) not in seen), key=lambda f: (-f.kind_rank, f)):
        if f.kind_rank == 0:
            inputs = lineage(fs, f.path)
            folder = posixpath.dirname(relative(fs, f))
            if inputs is not None and all(posixpath.join(folder, n) in known for n in inputs):
                known.add(relative(fs, f))
                continue
        out.append(f)
        known.add(relative(fs, f))
    return out


def pending(root: str | Path, folder: tuple[str, ...], fmt: int, tables: Iterable[Table]) -> bool:
    """Whether the rollup in ``folder`` has anything to fold in (no DuckDB: a listing, the
    manifest and, for a new compaction output, its footer) — what a caller checks before
    paying for a refresh in a process of its own (web/site.py). A rollup of another format
    is rebuilt, so it is pending too."""
    fs = open_fs(root)
    path = fs.path(*folder, MANIFEST)
    if not fs.exists(path):
        return True
    m = fs.read_json(path)
    if m.get("format") != fmt:
        return True
    seen = m["seen"]
    return any(unseen(fs, data_files(fs, t), set(seen.get(t.name, ()))) for t in tables)


def locked(root: str | Path, folder: tuple[str, ...], fold: Callable[[LakeFS, str], T]) -> T | None:
    """``fold(fs, folder path)`` under the rollup's lock; None when another process holds
    it (it folds the same files in)."""
    fs = open_fs(root)
    path = fs.path(*folder)
    fs.makedirs(path)
    try:
        with fs.lock(posixpath.join(path, "_refresh.lock"), wait=False):
            return fold(fs, path)
    except LakeBusy:
        return None
