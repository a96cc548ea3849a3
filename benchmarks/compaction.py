"""Compaction under a trickle: how often each row is rewritten, with and without tiers.

A collector receiving a few spans a second flushes a small file every second and
compacts every 30 s. Without tiers, every run merged the day's growing compacted file
with the few new ones, rewriting up to a target's worth (2 M rows) to absorb a few
thousand. This writes ``--files`` part files of ``--rows`` spans each (~2 KB of distinct
text per span, like real GenAI spans), runs ``Lake.compact`` after every ``--every``
files, and prints rows rewritten per row ingested (write amplification), the CPU time
of compaction and the files left, once with the tiered selection
(``storage.compaction._tiers``) and once without it, in one process.

    .venv/bin/python benchmarks/compaction.py [--files 600] [--rows 100] [--every 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402

from otelbench.storage import compaction  # noqa: E402
from otelbench.storage.lake import Lake  # noqa: E402
from otelbench.storage.schema import SPANS  # noqa: E402


def part(i: int, rows: int) -> dict[str, pa.Array]:
    cols = {c: pa.nulls(rows, SPANS.schema.field(c).type) for c in SPANS.columns}
    cols["trace_id"] = pa.array([f"{i:016x}{j:016x}" for j in range(rows)])
    cols["span_id"] = pa.array([f"{j + 1:016x}" for j in range(rows)])
    cols["start_time"] = pa.array([1_741_953_600_000_000 + i * 1_000_000 + j for j in range(rows)], pa.int64())
    cols["span_type"] = pa.array([("llm", "tool", "agent")[j % 3] for j in range(rows)])
    cols["input_messages"] = pa.array([f"{i:08d}{j:06d} " * 130 for j in range(rows)])
    return cols


def run(files: int, rows: int, every: int, tiers: bool) -> tuple[float, float, int]:
    rewritten = 0
    original = compaction._compact_partition

    def counting(root, t, part_dir, inputs, total, *args):  # type: ignore[no-untyped-def]
        nonlocal rewritten
        rewritten += total
        return original(root, t, part_dir, inputs, total, *args)

    compaction._compact_partition = counting
    saved = compaction._tiers
    if not tiers:
        compaction._tiers = lambda small: small
    cpu = 0.0
    try:
        with tempfile.TemporaryDirectory(prefix="otelbench-compaction-") as tmp:
            lake = Lake(tmp)
            lake.init()
            for i in range(files):
                lake.write_batch(f"{i:020d}", {"spans": part(i, rows)})
                if (i + 1) % every == 0:
                    started = time.process_time()
                    lake.compact("spans", below_batch_id=f"{i + 1:020d}")
                    cpu += time.process_time() - started
            left = len(lake.files("spans"))
    finally:
        compaction._compact_partition = original
        compaction._tiers = saved
    return rewritten / (files * rows), cpu, left


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--every", type=int, default=30)
    args = ap.parse_args()
    print(f"{args.files} flushes of {args.rows} spans, compaction every {args.every} flushes")
    for tiers in (True, False):
        amp, cpu, left = run(args.files, args.rows, args.every, tiers)
        print(f"{'tiers   ' if tiers else 'no tiers'}  rows rewritten per row ingested {amp:5.1f}   "
              f"compaction CPU {cpu:6.1f} s   files left {left}")


if __name__ == "__main__":
    main()
