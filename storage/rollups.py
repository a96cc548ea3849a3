"""Rollups: what the web reads instead of recomputing ``agent_runs`` per request.

``agent_runs`` groups every span of the lake by trace (~3 s at 20 M spans). The ``runs``
rollup keeps its answer, one row per run, under ``<lake>/_rollups/runs/``: a *base* file
per agent (its runs by start time: a statement about one agent reads only that file), a
*trace index* (trace id → agent of the base, sorted, small row groups, so a lookup reads
one) and a *delta* of the runs changed since. ``manifest.json`` names them and the data
files already folded in; it is replaced atomically, so a reader always sees one
consistent set (``current``). docs/schema.md, "Rollups", has the columns.

``refresh`` is incremental: it folds in the span files and evals commits it has not
seen, recomputing only the traces they touch (with the ``agent_runs`` view itself, over
those traces' spans in their partitions and the neighbouring days). A compaction's
output names its inputs in its footer (``storage.files.lineage``): when every input was
seen, the output holds nothing new and is not read. The recomputed rows of a refresh's
steps are staged in files (``_Staged``) and committed once: rewriting the base after
each step cost a first build of 1 M runs a fifth of its CPU time (docs/performance.md).
One refresh at a time per lake (a lock file); the other callers skip. The delta is
merged into the base once it holds more than a twentieth of it (and
``DELTA_MIN_ROWS``): only the touched agents' files and the
index are rewritten.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import posixpath
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from otelbench.storage import folding
from otelbench.storage.files import SEED_DATE, SEED_NAME, DataFile, conform_arrow, data_files, partition_dir
from otelbench.storage.fs import LakeFS
from otelbench.storage.location import open_fs
from otelbench.storage.queries import bind, lockdown
from otelbench.storage.queries.tables import view_sql
from otelbench.storage.queries import rollups as sql
from otelbench.storage.schema import CLUSTER_MEMBERS, EVALS, FAILURE_CLUSTERS, LOGS, SPANS, tables

# What the rollup's version follows: runs are recomputed from new spans and evals; new
# clusters only make a new version (readers that cache by version then read them anew).
WATCHED = (SPANS, EVALS, FAILURE_CLUSTERS, CLUSTER_MEMBERS)

FOLDER = ("_rollups", "runs")
# Bump when RUNS_SCHEMA or what a row means changes: a rollup of another format is rebuilt.
FORMAT = 3
EMPTY = "empty.parquet"
INDEX_SCHEMA = pa.schema([("trace_id", pa.string()), ("agent", pa.string())])
MANIFEST = folding.MANIFEST
DELTA_MIN_ROWS = 50_000
MERGE_ROWS = 50_000  # base rows rewritten together when the delta is merged
ROW_GROUP_ROWS = 16_384  # a trace lookup reads one group of the base
STEP_SPANS = 1_000_000  # new spans recomputed together (whole days)
MEMORY_LIMIT = "1GB"  # DuckDB's, per refresh (it spills to <lake>/_tmp beyond)
_TS = pa.timestamp("us", tz="UTC")

RUNS_SCHEMA = pa.schema([
    ("trace_id", pa.string()), ("agent", pa.string()), ("owner", pa.string()), ("status", pa.string()),
    ("start_time", _TS), ("duration_ms", pa.float64()), ("cost_usd", pa.float64()),
    ("cost_reported", pa.float64()), ("cost_computed", pa.float64()), ("calls_reported", pa.int64()),
    ("calls_computed", pa.int64()), ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()), ("llm_calls", pa.int64()), ("tool_calls", pa.int64()),
    ("eval_score", pa.float64()), ("input_preview", pa.string()), ("output_preview", pa.string()),
    ("date", pa.date32()), ("models", pa.list_(pa.string())),
])


@dataclass(frozen=True)
class Snapshot:
    """One consistent state of the rollup: the files a query reads (``params``, or
    ``params_of(agent)``: only that agent's base file, for statements about one agent)."""

    version: int
    base: dict[str, str]  # agent -> its base file
    empty: str  # a file with the schema and no rows (read_parquet needs one file at least)
    delta: str
    index: str  # (trace_id, agent) of the base, sorted by trace id
    built_at: str

    @property
    def params(self) -> dict[str, Any]:
        return {"base": [self.empty, *self.base.values()], "delta": self.delta}

    def params_of(self, agent: str) -> dict[str, Any]:
        return {"base": [self.empty, *([self.base[agent]] if agent in self.base else [])], "delta": self.delta}


@dataclass(frozen=True)
class Refreshed:
    version: int
    new_files: int  # data files folded in
    touched: int  # traces recomputed
    merged: bool  # the delta went into a new base
    seconds: float


def current(root: str | Path) -> Snapshot | None:
    """The rollup as the manifest names it now; None before the first ``refresh`` (or of
    another format: the next refresh rebuilds it)."""
    found = folding.manifest(root, FOLDER, FORMAT)
    return None if found is None else _snap(*found)


def stamp(root: str | Path) -> tuple[int, ...] | None:
    """What changes when the manifest is replaced (a cheap check before ``current``): its
    time, size and, on local disk, inode; None while there is none."""
    fs = open_fs(root)
    path = fs.path(*FOLDER, MANIFEST)
    if fs.is_local:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino
    found = [(size, mtime) for p, size, mtime in fs.walk(posixpath.dirname(path)) if p == path]
    return (found[0][1], found[0][0]) if found else None


def _snap(fs: LakeFS, folder: str, m: dict[str, Any]) -> Snapshot:
    def at(name: str) -> str:
        return fs.uri(posixpath.join(folder, name))  # as DuckDB reads it (a bucket: s3://...)

    return Snapshot(m["version"], {a: at(n) for a, n in m["base"].items()}, at(EMPTY), at(m["delta"]),
                    at(m["index"]), m["built_at"])


def pending(root: str | Path) -> bool:
    """Whether ``refresh`` has anything to fold in (storage.folding.pending)."""
    return folding.pending(root, FOLDER, FORMAT, WATCHED)


def refresh(root: str | Path) -> Refreshed | None:
    """Fold what the lake gained since the last refresh into the rollup. None when another
    process is refreshing it (it will fold the same files in)."""
    return folding.locked(root, FOLDER, _refresh)


def _refresh(fs: LakeFS, folder: str) -> Refreshed:
    started = time.perf_counter()
    path = posixpath.join(folder, MANIFEST)
    old = fs.read_json(path) if fs.exists(path) else None
    if old is None or old.get("format") != FORMAT:
        # an empty rollup (also in place of one of another format): every file is then new;
        # versions go on from the old one's, so no reader mistakes one for the other
        v = old["version"] + 1 if old else 0
        delta, index = f"delta-{v}.parquet", f"index-{v}.parquet"
        _write(fs, RUNS_SCHEMA.empty_table(), posixpath.join(folder, EMPTY))
        _write(fs, RUNS_SCHEMA.empty_table(), posixpath.join(folder, delta))
        fs.write_parquet(INDEX_SCHEMA.empty_table(), posixpath.join(folder, index))
        fs.sync_folder(folder)
        _save(fs, folder, {"version": v}, {}, delta, index, {}, bump=False)
        _sweep(fs, folder, keep={EMPTY, delta, index})
    m: dict[str, Any] = fs.read_json(path)
    seen = {t.name: set(m["seen"].get(t.name, ())) for t in WATCHED}
    present = {t.name: data_files(fs, t) for t in WATCHED}
    new = {t: folding.unseen(fs, files, seen[t]) for t, files in present.items()}
    now_seen = {t: sorted(folding.relative(fs, f) for f in files) for t, files in present.items()}
    if not any(new.values()):
        if now_seen != {t: sorted(s) for t, s in seen.items()}:  # files compacted away: forget them
            _save(fs, folder, m, m["base"], m["delta"], m["index"], now_seen, bump=False)
        return Refreshed(m["version"], 0, 0, False, time.perf_counter() - started)

    touched, merged = 0, False
    con = _connection(fs)
    try:
        con.execute(sql.TOUCHED_TABLE, {"ids": []})
        # new spans a few days at a time (a trace's spans: its days and the neighbouring
        # ones), each step's rows staged; then they are committed as one version (a first
        # build merges its runs into the base once, rather than once per step)
        if new[SPANS.name]:
            staged = _Staged(fs, folder, m["version"] + 1, con)
            for days, files in _steps(fs, new[SPANS.name]):
                ids = _trace_ids(con, fs, files)
                con.execute(sql.TOUCHED_TABLE, {"ids": ids})
                _restrict(con, fs, _around(days))
                staged.add(con.sql(sql.RUN_ROWS).to_arrow_table())
                touched += len(ids)
            merged |= _step(fs, folder, con, m, staged, {SPANS.name: new[SPANS.name]})
        if new[EVALS.name]:
            # the traces the span steps recomputed got their score there (``touched`` holds them)
            ids = [r[0] for r in con.execute(sql.UNTOUCHED_IDS,
                                             {"files": [fs.uri(f.path) for f in new[EVALS.name]]}).fetchall()]
            con.execute(sql.TOUCHED_TABLE, {"ids": ids})
            staged = _Staged(fs, folder, m["version"] + 1, con)
            staged.add(con.sql(sql.RESCORED, params=bind(sql.RESCORED, _snapshot(fs, folder, m))).to_arrow_table())
            merged |= _step(fs, folder, con, m, staged, {EVALS.name: new[EVALS.name]})
            touched += len(ids)
        clusters = {t.name: new[t.name] for t in (FAILURE_CLUSTERS, CLUSTER_MEMBERS) if new[t.name]}
        if clusters:  # no rows change: a new version, so cached answers are read anew
            con.execute(sql.TOUCHED_TABLE, {"ids": []})
            _step(fs, folder, con, m, _Staged(fs, folder, m["version"] + 1, con), clusters)
    finally:
        con.close()
    if now_seen != {t: sorted(s) for t, s in m["seen"].items()}:
        _save(fs, folder, m, m["base"], m["delta"], m["index"], now_seen, bump=False)
    return Refreshed(m["version"], sum(map(len, new.values())), touched, merged, time.perf_counter() - started)


class _Staged:
    """A refresh's recomputed rows, step by step, before they are committed: each step's
    rows in files of the rollup's folder (one per agent, which a merge reads for a few
    agents at a time; the sweep after the commit deletes them), and the traces each step
    touched (``touched`` when a step is added) in the connection's ``touch_steps``."""

    def __init__(self, fs: LakeFS, folder: str, version: int, con: Any) -> None:
        self.fs, self.folder, self.version, self.con = fs, folder, version, con
        self.steps = 0
        self.files: dict[str | None, list[str]] = {}  # agent -> its staged files
        con.execute(sql.TOUCH_STEPS_TABLE)
        # read_parquet needs a file: one with the schema (and the step) and no rows
        self.empty = self._write(_conform(RUNS_SCHEMA.empty_table()), "empty")

    def add(self, rows: pa.Table) -> None:
        """One step's rows (of the traces in ``touched``, which later steps may recompute)."""
        self.steps += 1
        self.con.execute(sql.TOUCH_STEP, {"step": self.steps})
        for agent, part in _by_agent(_conform(rows).sort_by([("agent", "ascending")])):
            key = hashlib.sha1(str(agent).encode()).hexdigest()[:16] if agent is not None else "none"
            self.files.setdefault(agent, []).append(self._write(part, f"{self.steps}-{key}"))

    def of(self, agents: list[str]) -> list[str]:
        return [self.empty, *(f for a in agents for f in self.files.get(a, ()))]

    def every(self) -> list[str]:
        return [self.empty, *(f for files in self.files.values() for f in files)]

    def _write(self, rows: pa.Table, name: str) -> str:
        rows = rows.append_column("step", pa.array([self.steps] * rows.num_rows, pa.int32()))
        path = posixpath.join(self.folder, f"staged-{self.version}-{name}.parquet")
        # read once, by the commit: a fast codec
        self.fs.write_parquet(rows, path, row_group_size=ROW_GROUP_ROWS, compression="lz4")
        return self.fs.uri(path)


def _step(fs: LakeFS, folder: str, con: Any, m: dict[str, Any], staged: _Staged,
          folded: dict[str, list[DataFile]]) -> bool:
    """Commit the ``staged`` rows (the recomputed runs of the touched traces) as a new
    version: a new delta, or — once the delta is big — new base files for the agents it
    touches and a new trace index. Touched traces that are no longer runs get a
    tombstone. Returns whether the delta was merged."""
    snap = _snapshot(fs, folder, m)
    con.execute(sql.ALL_TOUCHED)
    con.execute(sql.LAST_TOUCH)
    con.execute(sql.fresh_rows_sql(staged.every()))
    gone = [r[0] for r in con.execute(f"WITH {sql.RUNS_CTE} {sql.GONE}", bind(sql.RUNS_CTE, snap)).fetchall()]
    con.register("tombstones", pa.table({f.name: pa.array(gone, f.type) if f.name == "trace_id"
                                         else pa.nulls(len(gone), f.type) for f in RUNS_SCHEMA}))
    con.execute(sql.FRESH)
    con.execute(sql.merged_delta_sql(snap["delta"]))
    con.execute(sql.DELTA_KEYS)
    version = m["version"] + 1
    base, index, delta_name = dict(m["base"]), m["index"], f"delta-{version}.parquet"
    base_rows = fs.parquet_file(posixpath.join(folder, m["index"])).metadata.num_rows
    merged = con.execute(sql.DELTA_ROWS).fetchall()[0][0] > max(DELTA_MIN_ROWS, base_rows // 20)
    if merged:
        affected = sorted({r[0] for r in con.execute(sql.AFFECTED_AGENTS, {"index": snap["index"]}).fetchall()})
        sizes = dict(con.execute(sql.ROWS_PER_AGENT, {"index": snap["index"]}).fetchall())
        for group in _groups(affected, sizes, MERGE_ROWS):  # bounded memory: a few agents at a time
            files = [posixpath.join(folder, base[a]) for a in group if a in base]
            con.execute(sql.AGENTS_TABLE, {"agents": group})
            merged_rows = con.sql(sql.MERGED_WITH, params={
                "base": [snap["empty"], *files], "delta": snap["delta"], "staged": staged.of(group)}).to_arrow_table()
            for a in group:
                base.pop(a, None)
            for agent, part in _by_agent(merged_rows.sort_by(
                    [("agent", "ascending"), ("start_time", "ascending"), ("trace_id", "ascending")])):
                name = f"base-{version}-{hashlib.sha1(agent.encode()).hexdigest()[:16]}.parquet"
                _write(fs, part, posixpath.join(folder, name))
                base[agent] = name
        index = f"index-{version}.parquet"
        every = [posixpath.join(folder, EMPTY), *(posixpath.join(folder, n) for n in base.values())]
        fs.write_parquet(con.sql(sql.INDEX_ROWS, params={"base": every}).to_arrow_table().cast(INDEX_SCHEMA),
                         posixpath.join(folder, index), row_group_size=ROW_GROUP_ROWS, compression="zstd")
        delta = RUNS_SCHEMA.empty_table()
    else:
        delta = con.sql(sql.NEW_DELTA).to_arrow_table()
    _write(fs, delta, posixpath.join(folder, delta_name))
    con.unregister("tombstones")  # a registered table stays in memory
    fs.sync_folder(folder)
    seen = {t: sorted(set(m["seen"].get(t, ())) | {folding.relative(fs, f) for f in folded.get(t, ())})
            for t in (w.name for w in WATCHED)}
    old = {*m["base"].values(), m["delta"], m["index"]}
    _save(fs, folder, m, base, delta_name, index, seen, bump=True)
    _sweep(fs, folder, keep={EMPTY, *base.values(), delta_name, index, *old})
    return merged


def _steps(fs: LakeFS, files: list[DataFile]) -> list[tuple[set[str], list[DataFile]]]:
    """New span files by day, consecutive days together up to ``STEP_SPANS`` rows (a day
    alone may have more): fewer steps read each day's neighbours again; a step's
    ``agent_runs`` statement holds its traces' rows in DuckDB's memory."""
    by_day: dict[str, list[DataFile]] = {}
    for f in files:
        by_day.setdefault(_day(f), []).append(f)
    steps: list[tuple[set[str], list[DataFile]]] = []
    rows = 0
    for day, day_files in sorted(by_day.items()):
        n = sum(fs.parquet_file(f.path).metadata.num_rows for f in day_files)
        if not steps or rows + n > STEP_SPANS:
            steps.append((set(), []))
            rows = 0
        steps[-1][0].add(day)
        steps[-1][1].extend(day_files)
        rows += n
    return steps


def _groups(agents: list[str], sizes: dict[str, int], most: int) -> list[list[str]]:
    """``agents`` in consecutive groups of at most ``most`` base rows (one agent alone may
    have more)."""
    groups: list[list[str]] = [[]]
    rows = 0
    for a in agents:
        if groups[-1] and rows + sizes.get(a, 0) > most:
            groups.append([])
            rows = 0
        groups[-1].append(a)
        rows += sizes.get(a, 0)
    return [g for g in groups if g]


def _by_agent(rows: pa.Table) -> list[tuple[str, pa.Table]]:
    """``rows`` (sorted by agent) cut into one table per agent."""
    import numpy as np

    agents = np.array(rows["agent"].to_pylist(), dtype=object)
    if not len(agents):
        return []
    cuts = [0, *(np.flatnonzero(agents[1:] != agents[:-1]) + 1).tolist(), len(agents)]
    return [(agents[a], rows.slice(a, b - a)) for a, b in zip(cuts, cuts[1:])]


def _snapshot(fs: LakeFS, folder: str, m: dict[str, Any]) -> dict[str, Any]:
    snap = _snap(fs, folder, m)
    return {**snap.params, "empty": snap.empty, "index": snap.index}


def _trace_ids(con: Any, fs: LakeFS, files: list[DataFile]) -> list[str]:
    return [r[0] for r in con.execute(sql.TRACE_IDS, {"files": [fs.uri(f.path) for f in files]}).fetchall()]


def _connection(fs: LakeFS) -> Any:
    import duckdb

    con = duckdb.connect(":memory:", config={"memory_limit": MEMORY_LIMIT, "temp_directory": fs.spill_dir(),
                                             "preserve_insertion_order": False})
    fs.attach(con)
    con.execute(lockdown.SET_TIME_ZONE_UTC)
    # the lake tables' views only: the rollup's statements read spans, evals and
    # agent_runs (``_restrict`` points them at the touched traces); binding every view
    # over a big lake holds its files' metadata (~330 MB at 10 M spans)
    for t in tables():
        con.execute(view_sql(fs.location, t))
    return con


def _restrict(con: Any, fs: LakeFS, days: set[str]) -> None:
    """Point the connection's span and log views at the touched traces' rows in ``days``
    (a trace may cross midnight: the caller adds the neighbouring days), and its evals
    view at theirs."""
    files = {}
    for t in (SPANS, LOGS, EVALS):  # evals: every commit (they are not by the runs' days)
        files[t.name] = [fs.uri(f.path) for f in data_files(fs, t) if t is EVALS or _day(f) in days] + [
            # read_parquet needs a file: the seed has the schema and no rows
            fs.uri(posixpath.join(partition_dir(fs, t, SEED_DATE), SEED_NAME))]
    for stmt in sql.restricted_views_sql(fs.location, files[SPANS.name], files[LOGS.name], files[EVALS.name]):
        con.execute(stmt)


def _day(f: DataFile) -> str:
    return posixpath.basename(posixpath.dirname(f.path)).split("=", 1)[1]


def _around(days: set[str]) -> set[str]:
    out = set()
    for d in days:
        day = dt.date.fromisoformat(d)
        out |= {(day + dt.timedelta(days=k)).isoformat() for k in (-1, 0, 1)}
    return out


def _conform(table: pa.Table) -> pa.Table:
    batches = [conform_arrow(b, RUNS_SCHEMA) for b in table.to_batches()]
    return pa.Table.from_batches(batches, RUNS_SCHEMA)


def _write(fs: LakeFS, table: pa.Table, path: str) -> None:
    table = _conform(table)
    fs.write_parquet(table, path, row_group_size=ROW_GROUP_ROWS, compression="zstd")


def _save(fs: LakeFS, folder: str, m: dict[str, Any], base: dict[str, str], delta: str, index: str,
          seen: dict[str, list[str]], *, bump: bool) -> None:
    body = {"format": FORMAT, "version": m["version"] + (1 if bump else 0), "base": base, "delta": delta,
            "index": index,
            "built_at": dt.datetime.now(dt.timezone.utc).isoformat() if bump or "built_at" not in m
            else m["built_at"], "seen": seen}
    fs.write_json(posixpath.join(folder, MANIFEST), body)
    m.update(body)


def _sweep(fs: LakeFS, folder: str, keep: set[Any]) -> None:
    """Delete the files neither this version nor the previous one names (a reader that
    read the previous manifest may still be reading its files; the gateway retries a
    query whose file vanished)."""
    for name in fs.files(folder):
        if name.endswith(".parquet") and name not in keep:
            fs.delete(posixpath.join(folder, name), missing_ok=True)


__all__ = ["refresh", "pending", "current", "Snapshot", "Refreshed", "RUNS_SCHEMA", "FOLDER"]


if __name__ == "__main__":  # one refresh in a process of its own: python -m otelbench.storage.rollups LAKE
    import sys

    done = refresh(sys.argv[1])
    print("busy" if done is None else f"version {done.version}: {done.new_files} files, {done.touched} traces, "
          f"{done.seconds:.2f} s", flush=True)
