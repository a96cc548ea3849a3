"""storage.rowgroups: compaction's writer, on real Parquet files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from otelbench.storage.rowgroups import RowGroupWriter

SCHEMA = pa.schema([("kind", pa.string()), ("t", pa.int64()), ("text", pa.string())])


def writer(tmp_path: Path, n_outputs: int = 1, **kw) -> RowGroupWriter:
    options = {"row_group_rows": 1000, "target_rows": 10**9, "target_bytes": 1 << 40, "buffer_bytes": 1 << 40, **kw}
    return RowGroupWriter(
        [tmp_path / f"out-{i}.parquet" for i in range(n_outputs)],
        sort_keys=("kind", "t"),
        open_file=lambda path, group_rows: pq.ParquetWriter(path, SCHEMA),
        close_file=lambda path: None,
        **options,
    )


def rows(kinds: list[str | None], start: int = 0, text: str = "") -> pa.Table:
    n = len(kinds)
    return pa.table({"kind": kinds, "t": list(range(start + n, start, -1)), "text": [text] * n}, schema=SCHEMA)


def groups(path: Path) -> list[list[dict]]:
    f = pq.ParquetFile(path)
    return [f.read_row_group(i).to_pylist() for i in range(f.num_row_groups)]


def test_row_groups_hold_one_kind_each_sorted_by_time(tmp_path: Path) -> None:
    w = writer(tmp_path)
    w.write(rows(["tool", "llm", None, "llm", "agent"]))
    w.write(rows(["llm", "tool"], start=100))
    w.close()
    got = [[(r["kind"], r["t"]) for r in g] for g in groups(w.written[0])]
    assert sorted(got, key=str) == sorted([
        [("agent", 1)], [("llm", 2), ("llm", 4), ("llm", 102)], [("tool", 5), ("tool", 101)], [(None, 3)]], key=str)


def test_a_full_bucket_is_written_as_it_fills_and_the_byte_bound_writes_the_biggest(tmp_path: Path) -> None:
    w = writer(tmp_path, row_group_rows=4, buffer_bytes=20_000)
    w.write(rows(["llm"] * 6 + ["tool"]))  # four llm rows make a group: written now
    assert w._bucket_rows == {"llm": 2, "tool": 1}
    w.write(rows(["tool"] * 2, text="x" * 10_000))  # past the byte bound: the biggest bucket (tool) goes
    assert w._bucket_rows == {"llm": 2}
    w.close()
    sizes = [(g[0]["kind"], len(g)) for g in groups(w.written[0])]
    assert sizes == [("llm", 4), ("tool", 3), ("llm", 2)]


def test_outputs_fill_in_turn_at_target_rows_and_the_last_takes_the_rest(tmp_path: Path) -> None:
    w = writer(tmp_path, n_outputs=2, row_group_rows=3, target_rows=4)
    w.write(rows(["llm"] * 11))
    w.close()
    assert [pq.ParquetFile(p).metadata.num_rows for p in w.written] == [4, 7]


def test_many_distinct_values_share_one_bucket_sorted_by_every_key(tmp_path: Path) -> None:
    w = writer(tmp_path)
    names = [f"metric.{i % 100:03d}" for i in range(300)]
    w.write(rows(names))
    w.close()
    (only,) = groups(w.written[0])
    assert [(r["kind"], r["t"]) for r in only] == sorted((r["kind"], r["t"]) for r in only)
    assert len(only) == 300


def test_a_bucket_is_sorted_one_column_at_a_time() -> None:
    """The sort before a row group is written holds the bucket and one column twice, not
    the bucket twice (compaction's peak memory): 8 columns of 8 MB, each in 16 chunks as a
    bucket gathered from a merge's batches is, sorted, take Arrow's pool at most two and a
    half columns above the bucket (the sort order, one sorted column, slack). A whole-table
    ``take`` took eight; a take from the chunks three (it concatenates them first, and the
    chunks were still held). In a process of its own, for a clean pool peak."""
    import subprocess
    import sys
    import textwrap

    root = Path(__file__).resolve().parents[2]
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(root)!r})
        import numpy as np, pyarrow as pa, pyarrow.compute as pc
        from otelbench.storage.rowgroups import RowGroupWriter
        n = 1_000_000
        rng = np.random.default_rng(5)
        def column():  # allocated in Arrow's pool, as a merge's buffered rows are
            return pa.chunked_array([pc.multiply(pa.array(part), 1)
                                     for part in np.array_split(rng.integers(0, 1 << 40, n), 16)])
        bucket = [pa.table({{f"c{{i}}": column() for i in range(8)}})]
        pool = pa.default_memory_pool()
        before = pool.bytes_allocated()
        out = RowGroupWriter._sorted(bucket.pop(), ["c0"])  # its only reference, as _drain passes it
        t = out.column("c0").to_numpy()
        assert (t[1:] >= t[:-1]).all() and out.column_names == [f"c{{i}}" for i in range(8)]
        print(before, pool.max_memory() - before)
    """)
    before, above = map(int, subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                            check=True).stdout.split())
    column = 8 * 1_000_000
    assert before >= 8 * column
    assert above <= 2.5 * column, f"the sort took {above / column:.1f} columns above the bucket"
