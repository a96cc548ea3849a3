"""Finding one trace's spans: the span files' layouts compared, each figure printed.

    .venv/bin/python benchmarks/query.py --rows 2000000 --lake /tmp/qlake2m --keep --no-fresh
    .venv/bin/python benchmarks/trace_lookup.py /tmp/qlake2m

Copies the lake (hard links) once per layout under ``--out``, rewriting only its span
files, and times on each, through the gateway, for ``--traces`` never-asked trace ids:

- ``SELECT * FROM spans WHERE trace_id = ?`` (every partition: what SQL and a run the
  rollup does not know yet read);
- a run page's spans and tool calls (``RUN_SPANS``, ``RUN_TOOL_CALLS``: the run's days and
  hours), what a never-seen run page costs beyond the rollup lookup, and their planning
  alone (``EXPLAIN``);
- a run's row when the rollup does not know it yet (``RUN_IN_LAKE``: every file);
- ``llm_calls GROUP BY agent`` (the aggregate the span_type bucketing serves).

Layouts: ``as-is`` (the lake's files as they are: compaction writes a bloom filter on
``trace_id`` per row group, storage.files.BLOOM_COLUMNS), ``no-bloom`` (the same row
groups without it), ``bloom`` (the same row groups with one sized by ``--ndv`` and
``--fpp``), ``sorted-in-group`` (each row group sorted by trace id: its min/max still span
the whole id range), ``clustered-file`` (each file sorted by span type, then trace id,
across the file: what the streaming compaction cannot do within its memory budget), and
``fresh`` / ``fresh-no-bloom`` (each file cut into flushed-batch files of ``--fresh-rows``
rows, one row group each, LZ4, as the flusher writes them, with and without the filter).
``--layouts`` picks.
Each trace is asked once per layout (a first view; the OS cache holds the files).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from otelbench.storage.duckdb import open_lake  # noqa: E402
from otelbench.storage.files import write_options  # noqa: E402
from otelbench.storage.lake import Lake  # noqa: E402
from otelbench.storage.queries import bind, reports  # noqa: E402
from otelbench.storage.queries import web as q  # noqa: E402
from otelbench.storage.queries.tables import table_glob  # noqa: E402
from otelbench.storage.schema import SPANS  # noqa: E402

LAYOUTS = ("as-is", "no-bloom", "bloom", "sorted-in-group", "clustered-file", "fresh", "fresh-no-bloom")


def _rewrite(src: Path, dst: Path, layout: str, ndv: int, fpp: float, group_rows: int, fresh_rows: int) -> None:
    f = pq.ParquetFile(src)
    schema = f.schema_arrow
    if layout.startswith("fresh"):
        table = f.read()
        for n, start in enumerate(range(0, table.num_rows, fresh_rows)):
            part = table.slice(start, fresh_rows)
            options = write_options(SPANS, fresh=True, group_rows=None if layout == "fresh-no-bloom" else part.num_rows)
            pq.write_table(part, dst.parent / f"part-{dst.stem.split('-')[1]}-{n}.parquet", **options)
        return
    options = write_options(SPANS)  # no bloom filter
    if layout == "bloom":
        options["bloom_filter_options"] = {"trace_id": {"ndv": ndv, "fpp": fpp}}
    tmp = dst.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema, **options) as w:
        if layout == "clustered-file":
            table = f.read().sort_by([("span_type", "ascending"), ("trace_id", "ascending")])
            for kind in pc.unique(table.column("span_type")).to_pylist():  # one span type per group
                part = table.filter(pc.equal(table.column("span_type"), kind))
                w.write_table(part, row_group_size=group_rows)
        else:
            for i in range(f.num_row_groups):
                group = f.read_row_group(i)
                if layout == "sorted-in-group":
                    group = group.sort_by([("trace_id", "ascending")])
                w.write_table(group, row_group_size=group.num_rows)
    tmp.rename(dst)


def make_layout(base: Path, out: Path, layout: str, ndv: int, fpp: float, group_rows: int, fresh_rows: int) -> Path:
    root = out / layout
    if layout == "as-is":
        return base
    if root.exists():
        return root
    subprocess.run(["cp", "-al", str(base), str(root)], check=True)
    for path in sorted((root / "spans").glob("date=*/compact-*.parquet")):
        path.unlink()  # the hard link: the base keeps its file
        _rewrite(base / path.relative_to(root), path, layout, ndv, fpp, group_rows, fresh_rows)
    return root


def pick_traces(base: Path, n: int) -> list[dict]:
    """``n`` runs spread over the days: trace id and the root's start and duration."""
    found = []
    files = sorted((base / "spans").glob("date=*/*.parquet"))
    files = [p for p in files if not p.parent.name.endswith("1970-01-01")]
    per = max(1, n // max(1, len(files)) + 1)
    for path in files:
        t = pq.read_table(path, columns=["trace_id", "parent_span_id", "start_time", "duration_ms", "span_type"],
                          filters=[("span_type", "=", "agent")])
        roots = t.filter(pc.is_null(t.column("parent_span_id")))
        step = max(1, roots.num_rows // per)
        for i in range(0, roots.num_rows, step)[:per]:
            r = roots.slice(i, 1).to_pylist()[0]
            found.append(r)
    return found[:n]


class Clock:
    """Wall and process CPU time (DuckDB's threads included) of each timed call: on a shared
    machine the CPU time is the steadier figure."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __call__(self, f, *args, **kw):
        c0, t0 = time.process_time(), time.perf_counter()
        out = f(*args, **kw)
        self.wall.append((time.perf_counter() - t0) * 1e3)
        self.cpu.append((time.process_time() - c0) * 1e3)
        return out

    def __str__(self) -> str:
        xs = sorted(self.wall)
        p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
        return (f"median {statistics.median(xs):6.1f}  p95 {p95:6.1f} ms wall; "
                f"median {statistics.median(self.cpu):6.1f} ms CPU")


def measure(root: Path, traces: list[dict], repeat: int) -> dict[str, str]:
    lake = Lake(root)
    out = {}
    files = list((root / "spans").glob("date=*/*.parquet"))
    out["span files"] = f"{len(files)}, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB"
    with open_lake(root, memory_limit=None) as gw:
        gw.query(reports.SPANS_OF_TRACE, {"trace_id": "0" * 32})  # binds the views once
        lookup, page, plan, fallback, agg = Clock(), Clock(), Clock(), Clock(), Clock()
        for r in traces:
            rows = lookup(gw.query, reports.SPANS_OF_TRACE, {"trace_id": r["trace_id"]}, max_rows=None).rows
            assert rows, r["trace_id"]
        for r in traces:
            margin = dt.timedelta(hours=1)
            since = r["start_time"] - margin
            until = r["start_time"] + dt.timedelta(milliseconds=r["duration_ms"] or 0) + margin
            days = [(since.date() + dt.timedelta(days=i)).isoformat() for i in range((until.date() - since.date()).days + 1)]
            params = {"trace_id": r["trace_id"], "since": since, "until": until, "private_agents": [],
                      "private_owners": [], "span_files": lake.day_globs("spans", days),
                      "log_files": lake.day_globs("logs", days)}
            spans = page(lambda: [gw.query(s, bind(s, params), max_rows=None).rows
                                  for s in (q.RUN_SPANS, q.RUN_TOOL_CALLS)][0])
            assert spans, r["trace_id"]
            plan(lambda: [gw.query(f"EXPLAIN {s}", bind(s, params), max_rows=None) for s in (q.RUN_SPANS, q.RUN_TOOL_CALLS)])
        for r in traces:
            params = {"trace_id": r["trace_id"], "private_agents": [], "private_owners": [],
                      "span_files": table_glob(root, "spans"), "log_files": table_glob(root, "logs"),
                      "evals_files": table_glob(root, "evals")}
            found = fallback(gw.query, q.RUN_IN_LAKE, bind(q.RUN_IN_LAKE, params), max_rows=None).rows
            assert found, r["trace_id"]
        out["SELECT * FROM spans WHERE trace_id = ?"] = str(lookup)
        out["RUN_IN_LAKE (a run the rollup lacks)"] = str(fallback)
        out["RUN_SPANS + RUN_TOOL_CALLS (the run's days)"] = str(page)
        out["... their planning alone (EXPLAIN)"] = str(plan)
        gw.query(reports.LLM_CALLS_BY_AGENT, max_rows=None)
        for _ in range(repeat):
            agg(gw.query, reports.LLM_CALLS_BY_AGENT, max_rows=None)
        out["llm_calls GROUP BY agent"] = str(agg)
    for on in (False, True):  # the footers read per query, or kept by DuckDB
        con = duckdb.connect()
        con.execute(reports.FOOTER_CACHE, {"on": on})
        glob = table_glob(root, "spans")
        con.execute(reports.SPANS_OF_TRACE_IN_FILES, {"files": glob, "trace_id": "0" * 32}).fetchall()
        raw = Clock()
        for r in traces:
            raw(lambda: con.execute(reports.SPANS_OF_TRACE_IN_FILES, {"files": glob, "trace_id": r["trace_id"]}).fetchall())
        out[f"read_parquet(every file), footer cache {'on' if on else 'off'}"] = str(raw)
        con.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lake", type=Path, help="a compacted lake (benchmarks/query.py --keep --no-fresh)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/trace-layouts"), help="where the layouts' copies go")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--traces", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5, help="runs of the aggregate")
    ap.add_argument("--ndv", type=int, default=16_384, help="bloom: distinct values a row group's filter is sized for")
    ap.add_argument("--fpp", type=float, default=0.01, help="bloom: its false-positive rate at --ndv")
    ap.add_argument("--group-rows", type=int, default=16_384, help="clustered-file: rows per row group")
    ap.add_argument("--fresh-rows", type=int, default=10_000, help="fresh: spans per flushed file")
    ap.add_argument("--alternate", type=int, default=15, help="passes of the aggregate over the layouts in turn")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the layouts' copies")
    args = ap.parse_args(argv)
    if args.rebuild:
        shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    traces = pick_traces(args.lake, args.traces)
    print(f"{len(traces)} traces; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    roots = {}
    for layout in args.layouts.split(","):
        t0 = time.perf_counter()
        roots[layout] = root = make_layout(args.lake, args.out, layout, args.ndv, args.fpp, args.group_rows,
                                           args.fresh_rows)
        made = time.perf_counter() - t0
        print(f"== {layout} ({root}{f', written in {made:.1f} s' if made > 0.5 else ''})")
        for k, v in measure(root, traces, args.repeat).items():
            print(f"   {k:<46} {v}")
    alternate(roots, args.alternate)
    return 0


def alternate(roots: dict[str, Path], times: int) -> None:
    """``llm_calls GROUP BY agent`` on each layout in turn, ``times`` passes: the aggregate's
    figure where the machine's load moves between layouts."""
    gateways = {layout: open_lake(root, memory_limit=None) for layout, root in roots.items()}
    clocks = {layout: Clock() for layout in roots}
    try:
        for gw in gateways.values():
            gw.query(reports.LLM_CALLS_BY_AGENT, max_rows=None)
        for _ in range(times):
            for layout, gw in gateways.items():
                clocks[layout](gw.query, reports.LLM_CALLS_BY_AGENT, max_rows=None)
    finally:
        for gw in gateways.values():
            gw.close()
    print(f"== llm_calls GROUP BY agent, the layouts in turn, {times} passes")
    for layout, clock in clocks.items():
        print(f"   {layout:<46} {clock}")


if __name__ == "__main__":
    sys.exit(main())
