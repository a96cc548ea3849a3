"""Compaction: a partition's small files merged into big, sorted ones, exactly once.

``compact`` picks the oldest small files of each partition (up to one target's worth),
journals the plan (``_journal-<batch>.json``: inputs and outputs), has DuckDB find, on
the key columns alone, the rows to leave out (later copies of a key) and, for spans, the
``resolved_agent`` that ``storage.agents`` finds from their traces' spans, streams the
inputs' rows with pyarrow into ``storage.rowgroups``, renames the outputs into place and
then deletes the inputs. ``recover`` settles a journal a crash left: it finishes a
merge whose outputs all exist, else rolls it back (the inputs are all still there).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from otelbench.storage import plan as merge_plan
from otelbench.storage.files import (JOURNAL, ROW_GROUP_ROWS, DataFile, check_batch_id, conform_arrow, owner_of, partitions,
                           visible_files, with_lineage, write_options)
from otelbench.storage.fs import LakeFS
from otelbench.storage.rowgroups import RowGroupWriter
from otelbench.storage.schema import SPANS, Table

log = logging.getLogger("otelbench.compaction")

# What one merge may hold (``exporters.parquet.compaction.memory_mib``): half for DuckDB
# (dedupe and lookups on the key columns, spilling to <root>/_tmp beyond it), half for
# the rows ``storage.rowgroups`` buffers before writing a row group (sorting a bucket
# copies one column of it at a time).
MEMORY_MIB = 48
# A compacted file is done (never merged again) at this many rows or uncompressed bytes;
# one compaction run merges at most about that much per partition, so a run is bounded
# in time and in what it rewrites.
TARGET_ROWS = 2_000_000
TARGET_BYTES = 1 << 30
_READ_ROWS = 2048  # rows per batch a merge streams from its inputs (4096: +8 MiB of Arrow memory at its peak)

# Row order inside every compacted file. The views filter on these columns (span_type = 'llm',
# message_direction IN ...); a file sorted by them lets DuckDB skip whole row groups by
# their min/max statistics, so llm_calls reads only the llm row groups of a big file.
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "spans": ("span_type", "start_time"),
    "logs": ("message_direction", "time"),
    "metrics": ("metric_name", "time"),
}


def compact(
    fs: LakeFS,
    t: Table,
    *,
    below_batch_id: str,
    owner: str | None = None,
    min_files: int = 8,
    target_rows: int = TARGET_ROWS,
    target_bytes: int = TARGET_BYTES,
    memory_mib: int = MEMORY_MIB,
    plan_in_child: bool = False,
) -> int:
    """Merge each partition's small files older than ``below_batch_id``; returns files merged.

    Rows with an equal ``Table.key`` keep their first copy (oldest batch, then file order).
    A file counts as small below ``target_rows`` rows and ``target_bytes`` uncompressed;
    one run merges the oldest small files of a partition up to about one target's worth.
    Memory stays bounded: DuckDB reads only the key columns (it finds duplicates within
    half of ``memory_mib``, spilling to ``<root>/_tmp``), pyarrow streams the rows a few
    thousand at a time, and ``storage.rowgroups`` writes row groups of one ``SORT_KEYS[0]``
    value each, sorted by the other keys, from a buffer of the other half (a smaller
    budget: smaller row groups, the same layout). Spans get ``resolved_agent`` filled from
    their ancestors in the partition and the agent spans of the whole lake
    (``_agent_fills``, ``storage.agents``). A file written by an older schema version is
    merged whatever its size and however few files its partition has, so it is rewritten
    once with every column.

    ``owner``: the collector id whose files this run merges (``storage.files.owner_of``;
    None: the files of a lake's only writer). Several collectors share a lake by each
    merging only its own; a row whose key a collector of a lower id also stored (a span
    re-sent to another collector after a crash) is dropped here, so the lowest id keeps it
    and no merge can lose the last copy.

    ``plan_in_child``: make each merge's plan in a process of its own
    (``storage.plan.make_in_child``: this process then never loads DuckDB), as the
    collector's compactor does.
    """
    check_batch_id(below_batch_id)
    recover(fs, t, owner)
    merges = choose(fs, t, below_batch_id=below_batch_id, owner=owner, min_files=min_files,
                    target_rows=target_rows, target_bytes=target_bytes)
    for m in merges:
        _compact_partition(fs, t, m, target_rows, target_bytes, memory_mib, plan_in_child=plan_in_child)
    return sum(len(m.inputs) for m in merges)


@dataclass(frozen=True)
class Merge:
    """One merge a run chose: ``inputs`` of partition ``part`` (``rows`` rows, ``size``
    bytes uncompressed), without the keys that ``others`` (lower collector ids' files) hold."""

    part: str
    inputs: list[DataFile]
    rows: int
    size: int
    others: list[DataFile]


def choose(fs: LakeFS, t: Table, *, below_batch_id: str, owner: str | None, min_files: int, target_rows: int,
           target_bytes: int) -> list[Merge]:
    """The merges a run makes (``compact``): of each partition, its oldest small files."""
    merges = []
    for part in partitions(fs, t):
        small: list[tuple[DataFile, int, int, bool]] = []  # file, rows, bytes, older schema
        outdated = False
        # what a reader counts: another collector's merge in progress shows its inputs or
        # its outputs, not both (ours were settled by recover)
        listed = sorted(filter(None, (DataFile.parse(f"{part}/{name}") for name in visible_files(fs, part))))
        others = [f for f in listed if (owner_of(f.batch_id) or "") < (owner or "")]
        for f in listed:
            if f.batch_id >= below_batch_id or owner_of(f.batch_id) != owner:
                continue
            meta = fs.parquet_file(f.path).metadata
            old = not set(t.stored_columns) <= set(meta.schema.to_arrow_schema().names)
            size = _uncompressed_bytes(meta)
            if old or (meta.num_rows < target_rows and size < target_bytes):
                small.append((f, meta.num_rows, size, old))
                outdated |= old
        small = _tiers(small)
        # A file from an older schema version is rewritten whatever its size, once:
        # afterwards it carries every column, derived ones filled.
        if not small or not (outdated or len(small) >= max(min_files, 2)):
            continue
        inputs, rows, size = [], 0, 0
        for f, n, b, _ in small:  # the oldest, until they make one target's worth
            inputs.append(f)
            rows, size = rows + n, size + b
            if rows >= target_rows or size >= target_bytes:
                break
        if len(inputs) >= 2 or outdated:
            merges.append(Merge(part, inputs, rows, size, others if t.key else []))
    return merges


def plan_run(fs: LakeFS, t: Table, *, below_batch_id: str, owner: str | None = None, min_files: int = 8,
             target_rows: int = TARGET_ROWS, target_bytes: int = TARGET_BYTES,
             memory_mib: int = MEMORY_MIB) -> list[tuple[Merge, merge_plan.Plan]]:
    """The first half of ``compact`` in two processes, one after the other (the collector's
    compactor on a local lake): settle journals, choose the merges and make each one's
    plan (DuckDB); ``compact_planned`` then makes them, in a process that never loads
    DuckDB and never waits beside the one that did."""
    check_batch_id(below_batch_id)
    recover(fs, t, owner)
    planned = []
    for m in choose(fs, t, below_batch_id=below_batch_id, owner=owner, min_files=min_files,
                    target_rows=target_rows, target_bytes=target_bytes):
        with fs.local_copies([f.path for f in m.inputs]) as local:
            files = [local[f.path] for f in m.inputs]
            planned.append((m, _make_plan(fs, t, m, files, memory_mib, merge_plan.make)))
    return planned


def compact_planned(fs: LakeFS, t: Table, planned: list[tuple[Merge, merge_plan.Plan]], *,
                    target_rows: int = TARGET_ROWS, target_bytes: int = TARGET_BYTES,
                    memory_mib: int = MEMORY_MIB) -> int:
    """The second half (``plan_run``): the merges made by their plans; returns files merged."""
    for m, plan in planned:
        _compact_partition(fs, t, m, target_rows, target_bytes, memory_mib, plan=plan)
    return sum(len(m.inputs) for m, _ in planned)


def _tiers(small: list[tuple[DataFile, int, int, bool]]) -> list[tuple[DataFile, int, int, bool]]:
    """A compacted file is merged again only with at least as much newer data.

    Without this a growing compacted file would be rewritten by every run to absorb a few
    fresh ones (a trickle of spans would rewrite up to a target's worth every interval);
    with it each row is rewritten about log2(target / run) times. Part files are always
    merged (that is what compaction is for), and so is a file of an older schema.
    """
    while len(small) > 1 and small[0][0].kind_rank == 0 and not small[0][3] and small[0][2] > sum(e[2] for e in small[1:]):
        small = small[1:]
    return small


def _compact_partition(fs: LakeFS, t: Table, m: Merge, target_rows: int, target_bytes: int, memory_mib: int,
                       *, plan_in_child: bool = False, plan: merge_plan.Plan | None = None) -> None:
    """Make merge ``m``: its inputs into new files (by ``plan``, else one made now)."""
    outputs = max(1, -(-m.rows // target_rows), -(-m.size // target_bytes))
    replace_files(fs, m.part, m.inputs, outputs,
                  lambda paths: _merge(fs, t, m, paths, target_rows, target_bytes, memory_mib, plan_in_child, plan))


def replace_files(fs: LakeFS, part: str, inputs: list[DataFile], outputs: int,
                  merge: Callable[[list[str]], list[str]]) -> None:
    """Replace ``inputs`` by what ``merge`` writes, crash-safely: the journal names the plan
    before anything is written; ``merge(paths)`` writes (staged and sealed) some of the
    ``outputs`` planned paths and returns those it wrote; they are published, then the
    inputs deleted. ``recover`` settles a crash at any point."""
    top = max(f.batch_id for f in inputs)
    taken = set(fs.files(part))
    names: list[str] = []
    n = 0
    while len(names) < outputs:
        name = f"compact-{top}-{n}.parquet"
        if name not in taken:  # never reuse a name: it could be one of the inputs
            names.append(name)
        n += 1
    journal = f"{part}/_journal-{top}.json"
    plan = {"inputs": [f.name for f in inputs], "outputs": names}
    fs.write_json(journal, plan)

    try:
        written = merge([f"{part}/{name}" for name in names])
    except BaseException:
        # Nothing was published yet: drop the staged files and the journal, keep the inputs.
        for name in names:
            fs.discard(f"{part}/{name}")
        fs.delete(journal, missing_ok=True)
        raise
    if len(written) < len(names):  # duplicates dropped: fewer outputs than planned
        plan["outputs"] = [path.rsplit("/", 1)[1] for path in written]
        fs.write_json(journal, plan)
    for final in written:
        fs.publish(final)
    fs.sync_folder(part)
    _finish(fs, part, journal)


def _merge(fs: LakeFS, t: Table, m: Merge, outputs: list[str], target_rows: int, target_bytes: int,
           memory_mib: int, plan_in_child: bool = False, plan: merge_plan.Plan | None = None) -> list[str]:
    """Stream the inputs, without repeated keys, into the staged files of ``outputs``.

    Returns the outputs that received rows, each sealed (durable) under its staging name.
    """
    with fs.local_copies([f.path for f in m.inputs]) as local:
        files = [local[f.path] for f in m.inputs]
        schemas = _column_names(files)  # each footer read once, for the plan and the merge
        if plan is None:
            plan = _make_plan(fs, t, m, files, memory_mib,
                              merge_plan.make_in_child if plan_in_child else merge_plan.make, schemas)
        return _merge_files(fs, t, m.inputs, files, schemas, outputs, target_rows, target_bytes, memory_mib, plan)


def _column_names(files: list[str]) -> list[set[str]]:
    """Each Parquet file's column names (its footer's schema)."""
    return [set(pq.read_schema(f).names) for f in files]


def _make_plan(fs: LakeFS, t: Table, m: Merge, files: list[str], memory_mib: int,
               make: Callable[..., merge_plan.Plan], schemas: list[set[str]] | None = None) -> merge_plan.Plan:
    """Merge ``m``'s plan, ``files`` its inputs' local paths (``storage.plan``; ``schemas``:
    their column names, read here if not given). A table without a key, other than spans
    (logs, metrics), has nothing to plan: no process, no DuckDB."""
    if not t.key and t is not SPANS:
        return merge_plan.Plan(None, None)
    params: dict[str, Any] = {"files": files}
    if m.others:
        params["others"] = [fs.uri(f.path) for f in m.others]
    if t is SPANS and schemas is None:
        schemas = _column_names(files)
    has_resolved = t is SPANS and any("resolved_agent" in names for names in schemas)
    return make(fs, t, m.inputs, params, has_resolved, m.part, memory_mib)


def _merge_files(fs: LakeFS, t: Table, inputs: list[DataFile], files: list[str], schemas: list[set[str]],
                 outputs: list[str], target_rows: int, target_bytes: int, memory_mib: int,
                 plan: merge_plan.Plan) -> list[str]:
    """``_merge`` of the inputs' bytes in ``files`` (local paths: ``LakeFS.local_copies``;
    ``schemas``: their column names).

    DuckDB read only the key and agent columns, to plan which rows go and which spans get
    an agent (``plan``: ``storage.plan``); pyarrow streams the full rows, a few thousand
    at a time, into ``storage.rowgroups``."""
    present = set().union(*schemas)
    columns = [c for c in t.stored_columns if c in present]
    dropped = _by_file(plan.dropped) if plan.dropped is not None else {}
    fills = _by_file(plan.fills) if plan.fills is not None else {}
    out = RowGroupWriter(
        outputs,
        sort_keys=SORT_KEYS.get(t.name, ()),
        row_group_rows=ROW_GROUP_ROWS,
        target_rows=target_rows,
        target_bytes=target_bytes,
        buffer_bytes=(memory_mib << 20) // 2,
        open_file=lambda path, group_rows: fs.parquet_writer(path, with_lineage(t.stored_schema, inputs),
                                                             **write_options(t, group_rows=group_rows)),
        close_file=fs.seal,
    )
    try:
        for i, (path, names) in enumerate(zip(files, schemas), start=1):
            gone = _Rows(dropped.get(i))
            filled = _Rows(fills.get(i))
            agents_filled = fills[i].column("agent").chunk(0) if i in fills else None
            first = 0  # the batch's first row in the file: what the plan counts
            for batch in pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20).iter_batches(
                    _READ_ROWS, columns=[c for c in columns if c in names], use_threads=False):
                n = batch.num_rows
                batch = conform_arrow(batch, t.stored_schema)
                if t is SPANS:
                    at, lo = filled.within(first, n)
                    batch = _with_agents(batch, at, agents_filled.slice(lo, len(at)) if len(at) else None)
                at, _ = gone.within(first, n)
                if len(at):
                    batch = batch.filter(pc.invert(pc.is_in(_positions(n), value_set=at)))
                first += n
                out.write(batch)
    finally:
        out.close()
    return out.written


def _by_file(plan: pa.Table) -> dict[int, pa.Table]:
    """A merge's plan (rows sorted by ``_file``, ``_row``) → each file's part of it."""
    runs = pc.run_end_encode(plan.column("_file").combine_chunks())
    ends = runs.run_ends.to_pylist()
    return {f: plan.slice(a, b - a).combine_chunks()
            for f, a, b in zip(runs.values.to_pylist(), [0, *ends[:-1]], ends)}


class _Rows:
    """A file's part of a plan (``_by_file``; None: empty): its rows, ascending, taken a
    batch at a time as the file is streamed (pyarrow only: the compactor's process loads
    no numpy, ``collector.compactor``)."""

    def __init__(self, plan: pa.Table | None) -> None:
        self.rows = pa.array([], pa.int64()) if plan is None else plan.column("_row").combine_chunks()
        self.next = 0  # the first row not yet taken

    def within(self, first: int, n: int) -> tuple[pa.Array, int]:
        """The rows in ``[first, first + n)`` as positions in that batch, and the index of
        the first of them in the plan. Called for consecutive batches: a row below
        ``first`` was taken before, and at most ``n`` rows fall in a batch."""
        lo = self.next
        ahead = self.rows.slice(lo, n)
        count = pc.sum(pc.less(ahead, first + n)).as_py() or 0
        self.next = lo + count
        return pc.subtract(ahead.slice(0, count), first), lo


@functools.lru_cache(maxsize=4)
def _positions(n: int) -> pa.Array:
    """0, 1, …, n - 1 (a batch's row positions; Arrow arrays are immutable, so one per
    batch size serves every batch of the merge, spans' agents and dropped rows alike)."""
    return pa.array(range(n), pa.int64())


def _with_agents(batch: pa.RecordBatch, at: pa.Array, found: pa.Array | None) -> pa.RecordBatch:
    """``resolved_agent``: the row's own, else its ``agent_name``, else ``found`` (what
    ``_agent_fills`` found for the batch's rows ``at``, ascending)."""
    agent = pc.coalesce(batch.column("resolved_agent"), batch.column("agent_name"))
    if found is not None:
        mask = pc.is_in(_positions(batch.num_rows), value_set=at)
        agent = pc.replace_with_mask(agent, mask, found)
    i = batch.schema.get_field_index("resolved_agent")
    return pa.RecordBatch.from_arrays([*batch.columns[:i], agent, *batch.columns[i + 1:]], schema=batch.schema)


def recover(fs: LakeFS, t: Table, owner: str | None = None) -> None:
    """Settle journals left by a crash: finish a compaction whose outputs all exist, else
    undo it. Only ``owner``'s (``compact``): another collector's journal may be a merge
    that is running now."""
    for part in partitions(fs, t):
        for name in fs.files(part):
            found = JOURNAL.match(name)
            if not found or owner_of(found["batch"]) != owner:
                continue
            journal = f"{part}/{name}"
            outs = [f"{part}/{out}" for out in fs.read_json(journal)["outputs"]]
            if not all(fs.exists(p) for p in outs):
                # The inputs are all still there (they go only after every rename): roll back.
                for p in outs:
                    fs.delete(p, missing_ok=True)
                    fs.discard(p)
                fs.delete(journal)
                fs.sync_folder(part)
            else:
                _finish(fs, part, journal)


def _finish(fs: LakeFS, part: str, journal: str) -> None:
    for name in fs.read_json(journal)["inputs"]:
        fs.delete(f"{part}/{name}", missing_ok=True)
    fs.sync_folder(part)
    fs.delete(journal)
    fs.sync_folder(part)


def _uncompressed_bytes(meta: pq.FileMetaData) -> int:
    return sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
