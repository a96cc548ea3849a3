"""The run search index: every run of the runs rollup (storage/rollups.py) in a tantivy
full-text index, its task and answer tokenized, its filters' columns as fast fields.

It is derived data: rebuilt from the rollup whenever it is missing, of another format, or
was made under other ``hide_io`` rules, and otherwise brought up to the rollup's version
incrementally (``update``; the web's refresher runs ``python -m
otelbench.storage.search_index LAKE PRIVACY`` right after folding the rollup, so a run is
searchable one refresh after it is folded in). An update re-indexes only what changed:
the agents whose base file the rollup rewrote (their documents deleted, their rows
added) and the delta rows whose digest changed (each deleted by trace id, then added),
so a run is never indexed twice. The tantivy commit is atomic; ``state.json``, which
names the index folder and what it holds, is written after it (write, then rename): a
crash in between repeats the same deletes and adds, which is harmless. A rebuild writes a
new folder and then the state that names it.

A ``hide_io`` run (by agent or owner) is indexed without its task and answer, so its
text can match nothing. Private runs are indexed; readers exclude them at query time
(storage/run_search.py), each under its own privacy.

Where: ``<lake>/_search/runs/`` for a lake on this machine; for a lake in a bucket, a
folder under the temporary directory (tantivy writes local files; the index is rebuilt
from the rollup wherever it is missing).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from otelbench.storage import rollups
from otelbench.storage.fs import LakeBusy, LakeFS
from otelbench.storage.location import open_fs
from otelbench.storage.message_text import message_text
from otelbench.storage.privacy import Privacy
from otelbench.storage.queries import search as sql

FORMAT = 1  # bump when the schema or what a document means changes: the index is rebuilt
STATE = "state.json"
LOCK = "_update.lock"
WRITER_HEAP = 128_000_000  # bytes tantivy buffers before it writes a segment
BATCH_ROWS = 8192
KEYWORDS = ("trace_id", "agent", "owner", "status")  # exact terms
NUMBERS = ("duration_ms", "cost_usd", "eval_score")  # floats, fast (ranges, sorting)


@dataclass(frozen=True)
class Updated:
    rollup_version: int
    rebuilt: bool
    added: int  # documents (re)added
    deleted_agents: int  # agents whose documents were replaced
    seconds: float


def folder(root: str | Path) -> Path:
    """Where the index of the lake at ``root`` lives."""
    fs = open_fs(root)
    if fs.is_local:
        return Path(fs.path("_search", "runs"))
    digest = hashlib.sha256(fs.location.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "otelbench-search" / digest


def schema() -> Any:
    import tantivy

    b = tantivy.SchemaBuilder()
    for name in KEYWORDS:
        b.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    b.add_text_field("models", stored=False, tokenizer_name="raw", index_option="basic")
    # the text of the task and the answer (storage.message_text), tantivy's default
    # tokenizer: runs of letters and digits, lowercased, words over 40 bytes dropped
    b.add_text_field("task", stored=True)
    b.add_text_field("answer", stored=True)
    b.add_integer_field("start_us", stored=True, indexed=True, fast=True)
    for name in NUMBERS:
        b.add_float_field(name, stored=True, indexed=True, fast=True)
    return b.build()


def state(root: str | Path) -> dict[str, Any] | None:
    """What the index holds now (``folder``, ``rollup_version``, …); None before the first
    update, or of another format."""
    try:
        found = json.loads((folder(root) / STATE).read_text())
    except FileNotFoundError:
        return None
    return found if found.get("format") == FORMAT else None


def hidden_digest(privacy: Privacy) -> str:
    """What the index's texts depend on: the ``hide_io`` rules."""
    body = json.dumps([sorted(privacy.hide_io_agents), sorted(privacy.hide_io_owners)])
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def pending(root: str | Path, privacy: Privacy) -> bool:
    """Whether ``update`` has anything to do (the state file and the rollup's manifest only)."""
    snap = rollups.current(root)
    if snap is None:
        return False
    found = state(root)
    return (found is None or found["rollup_version"] != snap.version
            or found["hidden"] != hidden_digest(privacy) or not (folder(root) / found["folder"]).is_dir())


def update(root: str | Path, privacy: Privacy) -> Updated | None:
    """Bring the index up to the rollup's current version. None when there is no rollup
    yet, or another process is updating it (it does the same)."""
    snap = rollups.current(root)
    if snap is None:
        return None
    home = LakeFS(folder(root))
    os.makedirs(home.root, exist_ok=True)
    try:
        with home.lock(home.path(LOCK), wait=False):
            return _update(root, home, snap, privacy)
    except LakeBusy:
        return None


def _update(root: str | Path, home: LakeFS, snap: Any, privacy: Privacy) -> Updated:
    import tantivy

    started = time.perf_counter()
    old = state(root)
    digest = hidden_digest(privacy)
    rebuild = old is None or old["hidden"] != digest or not os.path.isdir(home.path(old["folder"]))
    base = {a: os.path.basename(p) for a, p in snap.base.items()}
    if not rebuild and old["rollup_version"] == snap.version:
        return Updated(snap.version, False, 0, 0, time.perf_counter() - started)
    if rebuild:
        name = f"ix-{int(old['folder'].split('-')[1]) + 1 if old else 0}"
        shutil.rmtree(home.path(name), ignore_errors=True)
        os.makedirs(home.path(name))
        index = tantivy.Index(schema(), path=home.path(name))
        changed, digests = set(base), {}
    else:
        name = old["folder"]
        index = tantivy.Index.open(home.path(name))
        changed = {a for a in base.keys() | old["base"].keys() if base.get(a) != old["base"].get(a)}
        digests = dict(old["digests"])
    writer = index.writer(heap_size=WRITER_HEAP, num_threads=1)
    added = 0
    con = _connection(root)
    try:
        for agent in sorted(changed) if not rebuild else ():
            writer.delete_documents_by_term("agent", agent)
        files = [snap.empty, *(snap.base[a] for a in sorted(changed) if a in snap.base)]
        for row in _rows(con, sql.BASE_ROWS, {"files": files, "delta": snap.delta}):
            writer.add_document(_document(row, privacy))
            added += 1
        fresh = {}
        for row in _rows(con, sql.DELTA_ROWS, {"delta": snap.delta}):
            tid, was = row["trace_id"], digests.get(row["trace_id"])
            fresh[tid] = row["digest"]
            if was == row["digest"] and row["agent"] not in changed:
                continue  # indexed as it is
            if not rebuild:
                writer.delete_documents_by_term("trace_id", tid)
            if row["agent"] is not None:  # else a tombstone: the run is gone
                writer.add_document(_document(row, privacy))
                added += 1
    finally:
        con.close()
    writer.commit()
    writer.wait_merging_threads()
    home.write_json(home.path(STATE), {
        "format": FORMAT, "folder": name, "rollup_version": snap.version, "hidden": digest, "base": base,
        "digests": fresh, "updated_at": dt.datetime.now(dt.timezone.utc).isoformat()})
    if rebuild:  # the old folders: a reader that opened one keeps its open files
        for entry in os.listdir(home.root):
            if entry.startswith("ix-") and entry != name:
                shutil.rmtree(home.path(entry), ignore_errors=True)
    return Updated(snap.version, rebuild, added, 0 if rebuild else len(changed), time.perf_counter() - started)


def _document(row: dict[str, Any], privacy: Privacy) -> Any:
    import tantivy

    doc = tantivy.Document()
    for name in KEYWORDS:
        doc.add_text(name, row[name] or "")
    for model in row["models"]:
        doc.add_text("models", model)
    if row["start_us"] is not None:
        doc.add_integer("start_us", row["start_us"])
    for name in NUMBERS:
        if row[name] is not None:
            doc.add_float(name, float(row[name]))
    hidden = row["agent"] in privacy.hide_io_agents or row["owner"] in privacy.hide_io_owners
    if not hidden:  # a hide_io run's text is never indexed, so it can match nothing
        for name in ("task", "answer"):
            if row[name]:  # the words a page shows: the messages' text parts
                doc.add_text(name, str(message_text(row[name])))
    return doc


def _rows(con: Any, statement: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    reader = con.sql(statement, params=params).to_arrow_reader(BATCH_ROWS)
    for batch in reader:
        yield from batch.to_pylist()


def _connection(root: str | Path) -> Any:
    import duckdb

    fs = open_fs(root)
    con = duckdb.connect(":memory:", config={"memory_limit": "512MB", "temp_directory": fs.spill_dir()})
    fs.attach(con)
    return con


__all__ = ["update", "pending", "state", "folder", "schema", "Updated", "FORMAT"]


if __name__ == "__main__":  # one update in a process of its own: python -m otelbench.storage.search_index LAKE PRIVACY
    import sys

    done = update(sys.argv[1], Privacy.model_validate_json(sys.argv[2]) if len(sys.argv) > 2 else Privacy())
    print("nothing to index" if done is None else f"version {done.rollup_version}: {done.added} runs indexed "
          f"({'rebuilt' if done.rebuilt else f'{done.deleted_agents} agents replaced'}), {done.seconds:.2f} s",
          flush=True)
