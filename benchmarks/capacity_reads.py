"""What a read costs per row: the figures of docs/performance.md's "Capacity model: reads".

    .venv/bin/python benchmarks/capacity_reads.py /tmp/cap10m --rows 10000000    # generates + compacts if empty
    .venv/bin/python benchmarks/capacity_reads.py /tmp/cap30m --rows 30000000
    .venv/bin/python benchmarks/capacity_reads.py --runs-root /tmp/caprun1m --runs 1000000 --index

On a compacted lake of benchmarks/query.py's agent traces (``--rows``: generated with its
generator and compacted as its ``--no-fresh`` does, when the lake is empty) it prints the
lake's shape (span files, row groups, their footers) and times, through the gateway, wall
and process CPU (DuckDB's threads included), median of the runs:

- a trace lookup, ``SELECT * FROM spans WHERE trace_id = ?`` over every file, for
  ``--traces`` never-asked traces (the gateway keeps footers once read), and the same
  straight from ``read_parquet`` with the footer cache off (every footer read each time);
- a never-seen run page's ``RUN_SPANS`` + ``RUN_TOOL_CALLS`` (the run's days);
- the leaderboards over the views: ``llm_calls GROUP BY agent`` and the ``agent_runs``
  aggregate (``--repeat`` and ``--repeat-runs`` runs after a warm-up);
- the web's ``LEADERBOARD`` over the lake's runs rollup, where the lake has one.

With ``--runs-root`` (with or without a lake), a runs rollup of ``--runs`` generated runs
(benchmarks/search.py's rows: 200 agents, 30 days, task and answer texts) is written there
unless present, and the web's ``LEADERBOARD`` (all time; last 24 h) is timed over it; with
``--index`` the tantivy index is built (timed) and search's query kinds answered
(p50 of ``--repeat-search``). Each line ends with the per-row cost: µs per span (or run)
the statement covers, and for a lookup ms per file and per row group of the lake. The load
average is printed with each figure: the machine may be shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import query as traces_gen  # noqa: E402  (benchmarks/query.py: the trace generator, compaction)
import search as runs_gen  # noqa: E402  (benchmarks/search.py: generated runs rollup, query kinds)
import trace_lookup  # noqa: E402  (benchmarks/trace_lookup.py: traces spread over the days)
from otelbench.storage import rollups, search_index  # noqa: E402
from otelbench.storage.compaction import MEMORY_MIB  # noqa: E402
from otelbench.storage.duckdb import Gateway, open_lake  # noqa: E402
from otelbench.storage.lake import Lake  # noqa: E402
from otelbench.storage.privacy import Privacy  # noqa: E402
from otelbench.storage.queries import bind, reports  # noqa: E402
from otelbench.storage.queries import web as q  # noqa: E402
from otelbench.storage.queries.tables import table_glob  # noqa: E402
from otelbench.storage.run_search import Query, Reader  # noqa: E402
from otelbench.testing import runs_rollup  # noqa: E402


class Clock:
    """Wall and process CPU ms of each timed call."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.load: list[float] = []

    def __call__(self, f: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        c0, t0 = time.process_time(), time.perf_counter()
        out = f(*args, **kw)
        self.wall.append((time.perf_counter() - t0) * 1e3)
        self.cpu.append((time.process_time() - c0) * 1e3)
        self.load.append(os.getloadavg()[0])
        return out

    def line(self, per: dict[str, int]) -> str:
        """Medians (range), load, and the median wall and CPU per unit of ``per``."""
        w, c = statistics.median(self.wall), statistics.median(self.cpu)
        costs = "; ".join(f"{_us(w * 1e3 / n)} / {_us(c * 1e3 / n)} per {unit}" for unit, n in per.items() if n)
        return (f"{w:,.1f} ms wall ({min(self.wall):,.1f}–{max(self.wall):,.1f}), {c:,.1f} ms CPU, "
                f"n={len(self.wall)}, load {min(self.load):.1f}–{max(self.load):.1f}"
                + (f" | wall / CPU {costs}" if costs else ""))


def _us(x: float) -> str:
    return f"{x:.3g} µs" if x < 1000 else f"{x / 1e3:.3g} ms"


def make_lake(root: Path, rows: int) -> None:
    lake = Lake(root)
    lake.init()
    with open_lake(root, memory_limit=None) as gw:
        have = gw.query(reports.COUNT_SPANS).rows[0][0]
    if have:
        return
    took = traces_gen.generate(lake, rows, 500_000, 14)
    print(f"generated {rows:,} spans in {took:.0f} s", flush=True)
    took = traces_gen.compact(lake, MEMORY_MIB)
    print(f"compacted in {took['spans']:.0f} + {took['logs']:.0f} s ({traces_gen._size(lake)})", flush=True)


def shape(root: Path) -> dict[str, int]:
    files = sorted((root / "spans").glob("date=*/*.parquet"))
    metas = [pq.ParquetFile(p).metadata for p in files]
    return {"files": len(files), "row groups": sum(m.num_row_groups for m in metas),
            "spans": sum(m.num_rows for m in metas), "bytes": sum(p.stat().st_size for p in files),
            "footer bytes": sum(m.serialized_size for m in metas)}


def lookups(root: Path, gw: Gateway, traces: list[dict], size: dict[str, int]) -> None:
    lake = Lake(root)
    per = {"file": size["files"], "row group": size["row groups"]}
    gw.query(reports.SPANS_OF_TRACE, {"trace_id": "0" * 32})  # binds the views once
    one, page = Clock(), Clock()
    for r in traces:
        assert one(gw.query, reports.SPANS_OF_TRACE, {"trace_id": r["trace_id"]}, max_rows=None).rows
    print(f"one trace, every file (SPANS_OF_TRACE, gateway):  {one.line(per)}", flush=True)
    for r in traces:
        margin = dt.timedelta(hours=1)
        since, until = r["start_time"] - margin, r["start_time"] + dt.timedelta(milliseconds=r["duration_ms"] or 0) + margin
        days = [(since.date() + dt.timedelta(days=i)).isoformat() for i in range((until.date() - since.date()).days + 1)]
        params = {"trace_id": r["trace_id"], "since": since, "until": until, "private_agents": [],
                  "private_owners": [], "span_files": lake.day_globs("spans", days),
                  "log_files": lake.day_globs("logs", days)}
        assert page(lambda: [gw.query(s, bind(s, params), max_rows=None).rows for s in (q.RUN_SPANS, q.RUN_TOOL_CALLS)][0])
    day = {"file of its days": max(1, size["files"] // 14), "row group of its days": max(1, size["row groups"] // 14)}
    print(f"a run page's RUN_SPANS + RUN_TOOL_CALLS:          {page.line(day)}", flush=True)
    con = duckdb.connect()
    con.execute(reports.FOOTER_CACHE, {"on": False})
    glob = table_glob(root, "spans")
    raw = Clock()
    for r in traces:
        raw(lambda: con.execute(reports.SPANS_OF_TRACE_IN_FILES, {"files": glob, "trace_id": r["trace_id"]}).fetchall())
    con.close()
    print(f"one trace, read_parquet, footer cache off:       {raw.line(per)}", flush=True)


def aggregates(gw: Gateway, size: dict[str, int], repeat: int, repeat_runs: int) -> None:
    for label, sql, n in (("llm_calls GROUP BY agent", reports.LLM_CALLS_BY_AGENT, repeat),
                          ("agent_runs GROUP BY agent", reports.AGENT_RUNS_BY_AGENT, repeat_runs)):
        if not n:
            continue
        clock = Clock()
        gw.query(sql, max_rows=None)  # warm-up
        for _ in range(n):
            clock(gw.query, sql, max_rows=None)
        print(f"{label + ' (views, every span):':<50}{clock.line({'span': size['spans']})}", flush=True)


def leaderboard(root: Path, repeat: int) -> int:
    """The web's LEADERBOARD over the rollup at ``root``: all time and the last 24 h."""
    snap = rollups.current(root)
    assert snap is not None
    runs = sum(pq.ParquetFile(f).metadata.num_rows for f in [*snap.base.values(), snap.delta])
    with open_lake(root) as gw:
        now = dt.datetime.now(dt.timezone.utc)
        for window, since in (("all", dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)),
                              ("24 h", now - dt.timedelta(hours=24))):
            params = {**snap.params, "since": since, "private_agents": [], "private_owners": []}
            clock = Clock()
            gw.query(q.LEADERBOARD, bind(q.LEADERBOARD, params), max_rows=None)
            for _ in range(repeat):
                clock(gw.query, q.LEADERBOARD, bind(q.LEADERBOARD, params), max_rows=None)
            print(f"{f'LEADERBOARD over the runs rollup, {window}:':<50}{clock.line({'run': runs})}", flush=True)
    return runs


def runs_rollup_of(root: Path, runs: int, with_texts: bool) -> None:
    """A rollup of ``runs`` generated runs at ``root``; without texts, empty task and answer
    previews (LEADERBOARD reads neither; drawing them costs ~0.1 ms a run)."""
    if rollups.current(root) is not None:
        return
    Lake(root).init()  # the gateway opens lakes only
    rng = np.random.default_rng(7)
    words = runs_gen.vocabulary(rng)
    now_us = int(time.time() * 1e6)
    t = time.perf_counter()
    texts = runs_gen.texts if with_texts else lambda rng, words, n, low, high, role: ["[]"] * n
    table = pa.concat_tables([runs_gen.rows(rng, words, min(200_000, runs - k), 200, k, now_us, texts)
                              for k in range(0, runs, 200_000)])
    runs_rollup.write(root, table, 1)
    print(f"rollup of {runs:,} generated runs written in {time.perf_counter() - t:.0f} s", flush=True)


def search(root: Path, runs: int, repeat: int) -> None:
    if search_index.pending(root, Privacy()):
        done = search_index.update(root, Privacy())
        size = sum(f.stat().st_size for f in search_index.folder(root).rglob("*") if f.is_file())
        print(f"tantivy index of {done.added:,} runs built in {done.seconds:.1f} s "
              f"({done.seconds * 1e6 / done.added:.0f} µs per run, {size / 2**20:.0f} MiB), "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    reader = Reader(root)
    reader.search(Query())
    words = runs_gen.vocabulary(np.random.default_rng(7))
    for name, make in runs_gen.kinds(words, dt.datetime.now(dt.timezone.utc)).items():
        clock = Clock()
        found = reader.search(Query(**make(0))).total
        for i in range(repeat):
            clock(reader.search, Query(**make(i)))
        print(f"{f'search: {name}:':<50}{clock.line({'run': runs, 'match': found})}; {found:,} matches", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lake", type=Path, nargs="?", help="a compacted lake (made with --rows when empty)")
    ap.add_argument("--rows", type=int, default=10_000_000, help="spans to generate into an empty lake")
    ap.add_argument("--traces", type=int, default=15, help="never-asked traces looked up")
    ap.add_argument("--repeat", type=int, default=5, help="runs of llm_calls GROUP BY agent and LEADERBOARD")
    ap.add_argument("--repeat-runs", type=int, default=3, help="runs of the agent_runs aggregate (0: skip)")
    ap.add_argument("--runs-root", type=Path, help="a folder for a generated runs rollup")
    ap.add_argument("--runs", type=int, default=1_000_000, help="runs in the generated rollup")
    ap.add_argument("--index", action="store_true", help="build the search index and time search")
    ap.add_argument("--repeat-search", type=int, default=20)
    ap.add_argument("--delete", action="store_true", help="delete the lake and the runs root at the end")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    try:
        if args.lake:
            make_lake(args.lake, args.rows)
            size = shape(args.lake)
            print(f"{size['spans']:,} spans: {size['files']} span files, {size['row groups']} row groups, "
                  f"{size['bytes'] / 1e6:,.0f} MB, footers {size['footer bytes'] / 1e6:.1f} MB", flush=True)
            traces = trace_lookup.pick_traces(args.lake, args.traces)
            with open_lake(args.lake, memory_limit=None) as gw:
                lookups(args.lake, gw, traces, size)
                aggregates(gw, size, args.repeat, args.repeat_runs)
            if rollups.current(args.lake) is not None:
                leaderboard(args.lake, args.repeat)
        if args.runs_root:
            runs_rollup_of(args.runs_root, args.runs, with_texts=args.index)
            runs = leaderboard(args.runs_root, args.repeat)
            if args.index:
                search(args.runs_root, runs, args.repeat_search)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of this process (DuckDB's footer cache and buffers included): {peak:,.0f} MiB")
    finally:
        if args.delete:
            for folder in (args.lake, args.runs_root):
                if folder:
                    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
