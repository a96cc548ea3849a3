"""A merge's plan, from DuckDB on the key columns alone: which rows compaction leaves out
(later copies of a key) and, for spans, the agent ``storage.agents`` resolves for the
merged spans that have none (``storage.compaction`` streams the rows by it).

``make`` plans in the calling process. The collector's compactor plans elsewhere, so
that the process streaming the rows never loads DuckDB — a library stays resident once
loaded, and DuckDB's was ~38 MiB of the compactor's peak (``/proc/PID/smaps`` at the
peak of ``benchmarks/ingest.py --compaction-interval 2``): on a local lake a whole run's
merges are planned in ``python -m otelbench.storage.plan_process`` before the compactor loads
pyarrow (``collector.compactor.run``), so neither process waits beside the other; in a
bucket ``make_in_child`` plans each merge just before it is made, on the inputs the
merge downloaded.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, NamedTuple, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from otelbench.storage import agents, process
from otelbench.storage.files import DataFile
from otelbench.storage.fs import LakeFS
from otelbench.storage.queries import compaction as compaction_sql
from otelbench.storage.queries.tables import table_glob
from otelbench.storage.schema import SPANS, Table

log = logging.getLogger("otelbench.compaction")

PLAN_MAX_MIB = 1024  # what a plan may grow to when its share of memory_mib is too small
T = TypeVar("T")


class Plan(NamedTuple):
    """Both sorted by ``_file`` (1-based, in the merge's file order), then ``_row``."""

    dropped: pa.Table | None  # _file, _row: the rows to leave out (None: a table without a key)
    fills: pa.Table | None  # _file, _row, agent: the agents found (None: none needed)


def make(fs: LakeFS, t: Table, inputs: list[DataFile], params: dict[str, Any], has_resolved: bool, part: str,
         memory_mib: int) -> Plan:
    """The plan of merging ``inputs`` (``params``: ``files``, their local paths, and
    ``others``, the files of lower collector ids) in partition ``part``.

    The agent lookup holds every unresolved trace id of the merge in a hash table, which
    DuckDB did not spill: 400 k spans whose parents were all missing ran out of 24 MiB.
    Rather than fail at every interval, a plan that runs out of its half of
    ``memory_mib`` is made again with twice as much (``with_growing_memory``)."""

    def plan(budget: int) -> Plan:
        with merge_connection(fs, budget) as con:
            dropped = con.sql(compaction_sql.dropped_rows_sql(t.key, "others" in params),
                              params=params).to_arrow_table() if t.key else None
            fills = _agent_fills(con, fs, inputs, params["files"], has_resolved, part) if t is SPANS else None
        return Plan(dropped, fills)

    return with_growing_memory(plan, memory_mib, f"compacting {part}: the plan of {len(inputs)} files")


def make_in_child(fs: LakeFS, t: Table, inputs: list[DataFile], params: dict[str, Any], has_resolved: bool,
                  part: str, memory_mib: int) -> Plan:
    """``make``, in a process of its own (its warnings on our stderr; its failure raised here)."""
    return process.call("otelbench.storage.plan_process", ("merge", fs.location, t.name, inputs, params, has_resolved,
                                                 part, memory_mib), f"compacting {part}: the plan's process")


def with_growing_memory(run: Callable[[int], T], memory_mib: int, what: str) -> T:
    """``run(memory_mib)``, and while DuckDB runs out of its half of it, ``run`` again with
    twice as much, up to ``PLAN_MAX_MIB`` (each retry logged; past it the error stands).
    For work that writes nothing before it returns (a merge's plan, a derived table's rows)."""
    import duckdb  # lazy: only compaction needs it, not the collector's hot path

    budget = memory_mib
    while True:
        try:
            return run(budget)
        except duckdb.OutOfMemoryException:
            if budget // 2 >= PLAN_MAX_MIB:
                raise
            log.warning("%s needed more than %d MiB, trying %d MiB", what, budget // 2, budget)
            budget *= 2


def _agent_fills(con: Any, fs: LakeFS, inputs: list[DataFile], files: list[str], has_resolved: bool,
                 part: str) -> pa.Table | None:
    """The agents ``storage.agents`` resolves for the merged spans that need one (no
    resolved agent, no agent name of their own), from their traces' spans in this
    partition and the agent spans of the whole lake: each merged file's (1-based, in
    ``files`` order) ``_row`` → ``agent``. A span it cannot resolve stays NULL: the views'
    join resolves it at query time, a later compaction for good."""
    traces = con.sql(compaction_sql.unresolved_traces_sql(has_resolved), params={"files": files}).to_arrow_table()
    if not traces.num_rows:
        return None
    con.register("unresolved_traces", traces)
    names = set().union(*(fs.parquet_schema(f"{part}/{name}").names for name in fs.files(part)
                          if name.endswith(".parquet")))
    rows = con.sql(compaction_sql.agent_lookup_sql("resolved_agent" in names, "request_agent" in names), params={
        "partition": fs.uri(part) + "/*.parquet", "lake": table_glob(fs.uri(fs.root), SPANS.name),
        "merged": [f.name for f in inputs],
    }).to_arrow_table()
    agent = agents.resolve_columns(rows)
    need = pc.and_(pc.and_(pc.is_valid(rows.column("_file")), pc.is_null(rows.column("agent_name"))),
                   pc.and_(pc.is_null(rows.column("resolved_agent")), pc.is_valid(agent)))
    found = pa.table({"_file": rows.column("_file"), "_row": rows.column("_row"),
                      "agent": agent.cast(pa.string())}).filter(need)
    return found.sort_by([("_file", "ascending"), ("_row", "ascending")])


def merge_connection(fs: LakeFS, memory_mib: int) -> Any:
    """A DuckDB connection for one merge: one thread (the compactor runs beside the
    receiver and the flusher), half of ``memory_mib``, spilling to ``<root>/_tmp``.

    Its allocator's background thread hands back what the plan used once the connection
    is closed: without it DuckDB's allocator, which purges only when asked to allocate
    again, can keep the plan's memory through the streaming half of the merge
    (docs/performance.md)."""
    import duckdb  # lazy: only compaction needs it, not the collector's hot path

    tmp_dir = fs.spill_dir()
    os.makedirs(tmp_dir, exist_ok=True)
    con = duckdb.connect(":memory:", config={"memory_limit": f"{max(memory_mib // 2, 16)}MiB",
                                             "temp_directory": tmp_dir, "threads": 1,
                                             "allocator_background_threads": True})
    fs.attach(con)
    con.execute(compaction_sql.DISABLE_PROGRESS_BAR)  # it would draw on the collector's stdout
    return con
