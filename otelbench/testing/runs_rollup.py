"""A runs rollup written straight from rows (storage/rollups.py's files and manifest, as a
fold leaves them), for tests and benchmarks of what reads it (the run search index) that
need many runs or runs of any shape, without sending their spans."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from otelbench.storage import rollups


def write(root: Path, table: pa.Table, version: int) -> None:
    """``table`` (``rollups.RUNS_SCHEMA``) as the rollup's version ``version``: one base
    file per agent, an empty delta, the trace index, the manifest."""
    folder = root.joinpath(*rollups.FOLDER)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(rollups.RUNS_SCHEMA.empty_table(), folder / rollups.EMPTY)
    pq.write_table(rollups.RUNS_SCHEMA.empty_table(), folder / f"delta-{version}.parquet")
    table = table.cast(rollups.RUNS_SCHEMA).sort_by([("agent", "ascending"), ("start_time", "ascending")])
    base = {}
    for i, agent in enumerate(sorted(set(table["agent"].to_pylist()))):
        name = f"base-{version}-{i:04d}.parquet"
        pq.write_table(table.filter(pc.equal(table["agent"], agent)), folder / name,
                       row_group_size=rollups.ROW_GROUP_ROWS, compression="zstd")
        base[agent] = name
    pq.write_table(table.select(["trace_id", "agent"]).sort_by("trace_id"), folder / f"index-{version}.parquet")
    manifest(root, version, base, f"delta-{version}.parquet", f"index-{version}.parquet")


def merge(root: Path, table: pa.Table, version: int, agents: set[str]) -> None:
    """A merge as a fold makes it once the delta is big: new base files for ``agents`` only
    (their rows of ``table``, every run now), the other agents' files kept, an empty delta."""
    snap = rollups.current(root)
    assert snap is not None
    folder = root.joinpath(*rollups.FOLDER)
    table = table.cast(rollups.RUNS_SCHEMA).sort_by([("agent", "ascending"), ("start_time", "ascending")])
    base = {a: os.path.basename(p) for a, p in snap.base.items() if a not in agents}
    for i, agent in enumerate(sorted(agents)):
        part = table.filter(pc.equal(table["agent"], agent))
        if part.num_rows:
            name = f"base-{version}-{i:04d}.parquet"
            pq.write_table(part, folder / name, row_group_size=rollups.ROW_GROUP_ROWS, compression="zstd")
            base[agent] = name
    pq.write_table(rollups.RUNS_SCHEMA.empty_table(), folder / f"delta-{version}.parquet")
    pq.write_table(table.select(["trace_id", "agent"]).sort_by("trace_id"), folder / f"index-{version}.parquet")
    manifest(root, version, base, f"delta-{version}.parquet", f"index-{version}.parquet")


def write_delta(root: Path, table: pa.Table, version: int) -> None:
    """``table`` as the delta of version ``version`` over the current base (a fold that did
    not merge); a row with a NULL agent is a tombstone."""
    snap = rollups.current(root)
    assert snap is not None
    pq.write_table(table.cast(rollups.RUNS_SCHEMA), root.joinpath(*rollups.FOLDER, f"delta-{version}.parquet"))
    manifest(root, version, {a: os.path.basename(p) for a, p in snap.base.items()}, f"delta-{version}.parquet",
             os.path.basename(snap.index))


def manifest(root: Path, version: int, base: dict[str, str], delta: str, index: str) -> None:
    folder = root.joinpath(*rollups.FOLDER)
    body = {"format": rollups.FORMAT, "version": version, "base": base, "delta": delta, "index": index,
            "built_at": dt.datetime.now(dt.timezone.utc).isoformat(), "seen": {}}
    tmp = folder / "manifest.json.tmp"
    tmp.write_text(json.dumps(body))
    os.replace(tmp, folder / "manifest.json")


def tombstones(trace_ids: list[str]) -> pa.Table:
    """Delta rows saying these traces are no longer runs."""
    return pa.table({f.name: pa.array(trace_ids, f.type) if f.name == "trace_id" else pa.nulls(len(trace_ids), f.type)
                     for f in rollups.RUNS_SCHEMA})
