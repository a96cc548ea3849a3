"""What ``otelbench doctor`` costs at scale: prints the figures in docs/performance.md.

    .venv/bin/python benchmarks/doctor.py                       # 1,000,000 spans in a temp lake
    .venv/bin/python benchmarks/doctor.py --rows 10000000 --lake /tmp/lake --keep

The lake is benchmarks/query.py's (agent traces through ``Lake.write_batch``), with each
span's attributes replaced by those of a span of the recorded stacks
(tests/testdata/recorded: their real key sets, 5 to 60 keys a span, values cut to 40
characters), so the key aggregate has real keys to count. Then times the report read from
the views (a full scan: a lake without the rollup), each of its statements, the conventions
rollup's first build (and the runs rollup's, which the run shares read), the report read
from the rollups, and one incremental refresh after a batch of 10,000 more spans. Wall times (median of --repeat) and the rollup's size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import query  # noqa: E402

from otelbench.storage import conventions, rollups  # noqa: E402
from otelbench.storage.duckdb import open_lake  # noqa: E402
from otelbench.storage.lake import Lake  # noqa: E402
from otelbench.web import doctor_report as doctor  # noqa: E402

RECORDED = Path(__file__).resolve().parent.parent / "tests" / "testdata" / "recorded"


def attribute_pool() -> list[str]:
    """The attribute objects of every recorded span, values cut to 40 characters."""
    pool = []
    for f in sorted(RECORDED.glob("*/traces-*.json")):
        for rs in json.loads(f.read_text())["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: str(next(iter(a["value"].values()), ""))[:40] for a in span.get("attributes", [])}
                    if attrs:
                        pool.append(json.dumps(attrs))
    return pool


def _with_recorded_attributes(pool: list[str]) -> Any:
    original = query.make_chunk

    def make_chunk(rng: np.random.Generator, *args: Any) -> tuple[dict, dict, Any]:
        spans, logs, is_root = original(rng, *args)
        n = len(spans["attributes"])
        spans["attributes"] = pa.array([pool[i] for i in rng.integers(0, len(pool), n)], pa.string())
        return spans, logs, is_root
    return make_chunk


def timed(fn: Any, repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=500_000)
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lake", type=Path)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    root = args.lake or Path(tempfile.mkdtemp()) / "lake"
    pool = attribute_pool()
    query.make_chunk = _with_recorded_attributes(pool)
    try:
        if root.exists():
            shutil.rmtree(root)
        lake = Lake(root)
        lake.init()
        wrote = query.generate(lake, args.rows, args.chunk, args.days)
        print(f"{args.rows:,} spans written in {wrote:.1f} s ({len(pool)} recorded attribute sets)")
        with open_lake(root) as gw:
            rows = doctor.gateway_rows(gw)
            plain, report = timed(lambda: doctor.read(root, rows, "all", use_rollups=False), args.repeat)
            print(f"report from the views (full scan):     {plain:6.2f} s")
            every = {"since": doctor.since_date("all"), "service": None, "agent": None}
            for name, stmt in (("conventions", doctor.sql.SCOPES_VIEW_READ), ("conventions_keys", doctor.sql.KEYS_VIEW_READ),
                               ("agent_runs (run shares)", doctor.sql.RUNS_VIEW_READ)):
                took, _ = timed(lambda: rows(stmt, **every), args.repeat)
                print(f"  of which {name}: {took:6.2f} s")
            t0 = time.perf_counter()
            conventions.refresh(root)
            print(f"conventions rollup, first build:       {time.perf_counter() - t0:6.2f} s")
            t0 = time.perf_counter()
            rollups.refresh(root)
            print(f"runs rollup, first build:              {time.perf_counter() - t0:6.2f} s")
            rolled, again = timed(lambda: doctor.read(root, rows, "all"), args.repeat)
            print(f"report from the rollups:               {rolled:6.3f} s")
            assert {k: v for k, v in report.items() if k != "source"} == {k: v for k, v in again.items() if k != "source"}
        rng = np.random.default_rng(11)
        spans, logs, _ = query.make_chunk(rng, 0, 1_000, 1_000, 1, query._messages(rng, 20))
        Lake(root).write_batch(f"{10**12:024d}", {"spans": query._columns(pa.table(spans)), "logs": logs})
        t0 = time.perf_counter()
        conventions.refresh(root)
        print(f"conventions rollup, refresh after 10,000 spans: {time.perf_counter() - t0:6.2f} s")
        folder = root.joinpath(*conventions.FOLDER)
        size = sum(p.stat().st_size for p in folder.glob("*.parquet"))
        print(f"rollup size: {size / 1e6:.2f} MB in {len(list(folder.glob('*.parquet')))} files")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
