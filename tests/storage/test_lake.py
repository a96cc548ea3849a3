"""storage.lake on real Parquet in tmp_path, read back by DuckDB, polars and pyarrow."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from otelbench.storage.process import ARROW_ALLOCATOR_ENV
from otelbench.collector.compactor import ALLOCATOR_ENV as COMPACTOR_ALLOCATOR_ENV
from otelbench.storage import compaction as compaction_mod
from otelbench.storage import plan as plan_mod
from otelbench.storage.lake import Lake, LakeError
from otelbench.storage.schema import LOGS, SCHEMA_VERSION, SPANS, TABLES
from otelbench.testing.rows import DAY, agent, batch, columnar, llm, log, metric, span, tool


def bid(n: int) -> str:
    return f"{n:020d}"


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lk = Lake(tmp_path / "lake")
    lk.init()
    return lk


def parquet_names(lk: Lake, table: str) -> list[str]:
    return sorted(p.relative_to(lk.table_dir(table)).as_posix() for p in lk.table_dir(table).rglob("*") if p.is_file())


# ------------------------------------------------------------------ init
def test_init_creates_seed_per_table_and_manifest(lake: Lake) -> None:
    for name, t in TABLES.items():
        seed = lake.root / name / "date=1970-01-01" / "seed.parquet"
        assert pq.read_schema(seed).equals(t.stored_schema)
        assert pq.ParquetFile(seed).metadata.num_rows == 0
    manifest = json.loads((lake.root / "_lake.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert set(manifest["tables"]) == set(TABLES)


def test_init_is_idempotent(lake: Lake) -> None:
    before = {p: p.stat().st_mtime_ns for p in lake.root.rglob("*") if p.is_file()}
    lake.init()
    after = {p: p.stat().st_mtime_ns for p in lake.root.rglob("*") if p.is_file()}
    assert before == after


def test_init_refuses_a_newer_schema(lake: Lake) -> None:
    (lake.root / "_lake.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(LakeError, match="upgrade"):
        lake.init()


def test_empty_lake_opens_in_every_reader(lake: Lake) -> None:
    for name, t in TABLES.items():
        glob = f"{lake.root}/{name}/*/*.parquet"
        con = duckdb.connect()
        rel = con.sql(f"SELECT * FROM read_parquet('{glob}', hive_partitioning = true, union_by_name = true)")
        assert rel.fetchall() == []
        assert set(t.columns) <= set(rel.columns)
        frame = pl.scan_parquet(glob, hive_partitioning=True).collect()
        assert frame.height == 0 and set(t.columns) <= set(frame.columns)
        assert ds.dataset(lake.table_dir(name), format="parquet", partitioning="hive").to_table().num_rows == 0


# ------------------------------------------------------------------ write_batch
def test_write_batch_partitions_by_utc_date(lake: Lake) -> None:
    rows = [
        span(1, 1, at=0),
        span(1, 2, at=13 * 3600),  # DAY is 12:00 UTC: +13h is the next UTC day
        span(2, 3, start_time=None, end_time=None),
    ]
    paths = lake.write_batch(bid(7), batch(spans=rows))
    assert [p.relative_to(lake.table_dir("spans")).as_posix() for p in paths] == [
        "date=1970-01-01/part-00000000000000000007-0.parquet",
        "date=2025-03-14/part-00000000000000000007-1.parquet",
        "date=2025-03-15/part-00000000000000000007-2.parquet",
    ]
    for p in paths:
        assert pq.read_schema(p).equals(SPANS.stored_schema)  # exact types, no hive column inside
        # a fresh batch's file: LZ4, cheap on the flusher's core; compaction writes zstd
        assert pq.ParquetFile(p).metadata.row_group(0).column(0).compression == "LZ4"
    lake.write_batch(bid(8), batch(spans=[span(3, 4, at=0)]))
    assert lake.compact("spans", below_batch_id=bid(9), min_files=2) >= 2
    merged = [p for p in lake.files("spans") if p.name.startswith("compact-")]
    assert merged and all(pq.ParquetFile(p).metadata.row_group(0).column(0).compression == "ZSTD" for p in merged)


def test_day_globs_name_the_seed_and_the_days_that_have_files(lake: Lake) -> None:
    lake.write_batch(bid(1), batch(spans=[span(1, 1, at=0), span(1, 2, at=13 * 3600), span(2, 3, at=0)]))
    (lake.table_dir("spans") / "date=2025-03-16").mkdir()  # a folder whose first file is not there yet
    globs = lake.day_globs("spans", ["2025-03-14", "2025-03-16", "2025-03-20", "2025-03-14"])
    spans = lake.table_dir("spans")
    assert globs == [f"{spans}/date=1970-01-01/*.parquet", f"{spans}/date=2025-03-14/*.parquet"]
    # DuckDB reads them (a glob that matched nothing would be an error), the seed adds no row
    got = duckdb.connect().execute("SELECT count(*) FROM read_parquet($g, union_by_name = true)", {"g": globs}).fetchone()
    assert got == (2,)


def test_write_batch_round_trips_values(lake: Lake) -> None:
    row = llm(finish_reasons=["stop", "length"], input_messages='[{"role":"user"}]', cost_usd=0.25)
    lake.write_batch(bid(1), batch(spans=[row], logs=[log()], metrics=[metric(bucket_counts=[1, 2])]))
    got = pq.read_table(lake.files("spans")[0]).to_pylist()[0]
    assert got["finish_reasons"] == ["stop", "length"]
    assert got["start_time"] == DAY
    assert got["cost_usd"] == 0.25
    assert pq.read_table(lake.files("metrics")[0]).column("bucket_counts").to_pylist() == [[1, 2]]


def test_write_batch_accepts_arrow_and_plain_lists(lake: Lake) -> None:
    cols = columnar("logs", [log(at=1), log(at=2)])
    cols["time"] = pa.array(cols["time"], pa.int64())  # ints still become timestamps
    lake.write_batch(bid(1), {"logs": cols})
    assert pq.read_table(lake.files("logs")[0]).column("time").type == LOGS.schema.field("time").type


def test_fresh_batches_keep_arrival_order_and_compaction_sorts_by_span_type(lake: Lake) -> None:
    rows = [tool(span_id=3), llm(span_id=2), agent(span_id=1), span(1, 4, 1)]
    lake.write_batch(bid(1), batch(spans=rows))
    lake.write_batch(bid(2), batch(spans=[llm(trace=2, span_id=5)]))
    assert pq.read_table(lake.files("spans")[0]).column("span_type").to_pylist() == ["tool", "llm", "agent", "other"]
    assert lake.compact("spans", below_batch_id=bid(100), min_files=2) == 2
    assert pq.read_table(lake.files("spans")[0]).column("span_type").to_pylist() == ["agent", "llm", "llm", "other", "tool"]


def test_write_batch_rejects_wrong_columns_and_ids(lake: Lake) -> None:
    cols = columnar("spans", [span()])
    with pytest.raises(LakeError, match="missing columns \\['attributes'\\]"):
        lake.write_batch(bid(1), {"spans": {k: v for k, v in cols.items() if k != "attributes"}})
    with pytest.raises(LakeError, match="unknown columns \\['nope'\\]"):
        lake.write_batch(bid(1), {"spans": {**cols, "nope": [1]}})
    with pytest.raises(LakeError, match="unknown table"):
        lake.write_batch(bid(1), {"traces": cols})
    for bad in ("", "1-2", "../x", "a.b"):
        with pytest.raises(LakeError, match="batch id"):
            lake.write_batch(bad, {"spans": cols})


def test_write_batch_skips_empty_tables_and_leaves_no_temp_files(lake: Lake) -> None:
    assert lake.write_batch(bid(1), {"spans": columnar("spans", [])}) == []
    lake.write_batch(bid(2), batch(spans=[span()]))
    assert not [p for p in lake.root.rglob(".*")]


def test_polars_and_pyarrow_read_written_partitions(lake: Lake) -> None:
    lake.write_batch(bid(1), batch(spans=[span(1, 1), span(1, 2, at=13 * 3600)]))
    lake.write_batch(bid(2), batch(spans=[span(2, 3)]))
    frame = pl.scan_parquet(f"{lake.root}/spans/*/*.parquet", hive_partitioning=True).collect()
    assert frame.height == 3
    assert sorted(str(d) for d in frame["date"].unique().to_list()) == ["2025-03-14", "2025-03-15"]
    table = ds.dataset(lake.table_dir("spans"), format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 3


# ------------------------------------------------------------------ files, recent_keys, discard_after
def test_files_are_in_batch_order(lake: Lake) -> None:
    for n in (3, 1, 2):
        lake.write_batch(bid(n), batch(spans=[span(n, n)]))
    assert [p.name for p in lake.files("spans")] == [f"part-{bid(n)}-0.parquet" for n in (1, 2, 3)]


def test_recent_keys_come_from_the_newest_files(lake: Lake) -> None:
    lake.write_batch(bid(1), batch(spans=[span(1, 1), span(1, 2)]))
    lake.write_batch(bid(2), batch(spans=[span(2, 3), span(2, 4)]))
    keys = lake.recent_keys("spans", 3)
    assert len(keys) == 3
    assert set(keys[:2]) == {(f"{2:032x}", f"{3:016x}"), (f"{2:032x}", f"{4:016x}")}
    assert lake.recent_keys("logs", 10) == []  # logs have no key
    assert lake.recent_keys("spans", 0) == []


def test_discard_after_removes_uncheckpointed_parts_and_temp_files(lake: Lake) -> None:
    for n in (1, 2, 3):
        lake.write_batch(bid(n), batch(spans=[span(n, n)], logs=[log(n)]))
    stray = lake.table_dir("spans") / "date=2025-03-14" / f".part-{bid(4)}-0.parquet.tmp"
    stray.write_bytes(b"half a file")
    assert lake.discard_after(bid(2)) == 5  # batches 2 and 3 in two tables, one temp file
    assert [p.name for p in lake.files("spans")] == [f"part-{bid(1)}-0.parquet"]
    assert not stray.exists()
    assert lake.discard_after(bid(2)) == 0


def test_discard_after_with_a_worker_suffix_spares_other_workers(lake: Lake) -> None:
    lake.write_batch(bid(5) + "_0", batch(spans=[span(1, 1)]))
    lake.write_batch(bid(5) + "_1", batch(spans=[span(1, 2)]))
    assert lake.discard_after(bid(5) + "_0", suffix="_0") == 1
    assert [p.name for p in lake.files("spans")] == [f"part-{bid(5)}_1-0.parquet"]


# ------------------------------------------------------------------ compaction
def write_small_files(lake: Lake, n: int, *, dup_every: int = 0) -> None:
    """n one-batch files of two spans each; with dup_every, every k-th batch repeats batch 0's spans."""
    for i in range(n):
        trace = 0 if dup_every and i and i % dup_every == 0 else i
        rows = [llm(trace, 2, 1, cost_usd=float(i)), agent(trace, 1)]
        lake.write_batch(bid(i), batch(spans=rows, logs=[log(trace)]))


def test_compact_merges_small_files_and_keeps_the_first_copy(lake: Lake) -> None:
    write_small_files(lake, 10, dup_every=3)  # batches 3, 6, 9 repeat batch 0's two spans
    merged = lake.compact("spans", below_batch_id=bid(100), min_files=8)
    assert merged == 10
    files = lake.files("spans")
    assert [p.name for p in files] == [f"compact-{bid(9)}-0.parquet"]
    table = pq.read_table(files[0])
    assert table.schema.equals(SPANS.stored_schema)
    assert table.num_rows == 14  # 20 rows, 6 repeats dropped
    rows = table.to_pylist()
    firsts = [r for r in rows if r["trace_id"] == f"{0:032x}" and r["span_type"] == "llm"]
    assert [r["cost_usd"] for r in firsts] == [0.0]  # batch 0's copy, not batch 3's
    assert table.column("span_type").to_pylist() == ["agent"] * 7 + ["llm"] * 7  # sorted


def test_a_smaller_compaction_budget_writes_smaller_row_groups_of_the_same_rows(tmp_path: Path) -> None:
    """``memory_mib`` bounds the rows buffered before a row group is written: the same
    merge under 32 MiB writes more, smaller row groups than under 256 MiB, each still of one
    span type and sorted by start time, with the same rows (duplicates dropped in both)."""
    def merged(budget: int) -> pq.ParquetFile:
        lk = Lake(tmp_path / f"lake-{budget}")
        lk.init()
        for b in range(4):
            rows = [(llm if i % 2 else tool)(trace=b * 1000 + i, span_id=1, at=(300 - i) / 100,
                                             input_messages=f"{b}-{i} " * 6000)
                    for i in range(300)]
            lk.write_batch(bid(b), batch(spans=rows + ([rows[0]] if b else [])))  # a repeat of each batch's first
        assert lk.compact("spans", below_batch_id=bid(100), min_files=2, memory_mib=budget) == 4
        [path] = lk.files("spans")
        return pq.ParquetFile(path)

    small, big = merged(32), merged(256)
    assert small.metadata.num_rows == big.metadata.num_rows == 1200
    assert small.metadata.num_row_groups > big.metadata.num_row_groups == 2  # llm, tool
    key = ["span_type", "trace_id", "span_id", "input_messages"]
    assert small.read(columns=key).sort_by([(k, "ascending") for k in key]).equals(
        big.read(columns=key).sort_by([(k, "ascending") for k in key]))
    for i in range(small.metadata.num_row_groups):
        group = small.read_row_group(i, columns=["span_type", "start_time"])
        assert len(set(group.column("span_type").to_pylist())) == 1
        times = group.column("start_time").to_pylist()
        assert times == sorted(times)


def test_compact_keeps_every_log_row_and_respects_the_limits(lake: Lake) -> None:
    write_small_files(lake, 10, dup_every=3)
    assert lake.compact("logs", below_batch_id=bid(5), min_files=8) == 0  # only 5 files below
    assert lake.compact("logs", below_batch_id=bid(8), min_files=8) == 8
    names = [p.name for p in lake.files("logs")]
    assert names == [f"compact-{bid(7)}-0.parquet", f"part-{bid(8)}-0.parquet", f"part-{bid(9)}-0.parquet"]
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in lake.files("logs")) == 10  # no key: no dedupe


def test_compact_merges_one_target_per_run_and_splits_outputs_at_it(lake: Lake) -> None:
    write_small_files(lake, 9)  # 2 spans each
    runs = []
    while merged := lake.compact("spans", below_batch_id=bid(100), min_files=2, target_rows=5):
        runs.append(merged)
    assert runs == [3, 3, 3, 2]  # the oldest files until they make 5 rows; a remainder goes again
    counts = [pq.ParquetFile(p).metadata.num_rows for p in lake.files("spans")]
    assert counts == [5, 5, 5, 3]
    assert [p.name for p in lake.files("spans")][:2] == [f"compact-{bid(2)}-0.parquet", f"compact-{bid(4)}-0.parquet"]


def test_a_compacted_file_is_merged_only_with_as_much_newer_data(lake: Lake) -> None:
    """Tiers: a trickle of small files does not rewrite the big compacted file at every run."""
    def add(i: int) -> None:  # ~44 KB of text a batch: data outweighs the ~11 KB of a file's own overhead
        text = f"message {i} " * 2000
        lake.write_batch(bid(i), batch(spans=[llm(i, 2, 1, input_messages=text), agent(i, 1, output_messages=text)]))

    for i in range(8):
        add(i)
    assert lake.compact("spans", below_batch_id=bid(100), min_files=2) == 8
    big = lake.files("spans")[0]
    for i in range(8, 11):  # 3 batches against 8
        add(i)
    assert lake.compact("spans", below_batch_id=bid(100), min_files=2) == 3  # only the new ones
    assert [p.name for p in lake.files("spans")] == [big.name, f"compact-{bid(10)}-0.parquet"]
    for i in range(11, 40):  # now much more newer data than the big file holds: it joins
        add(i)
    assert lake.compact("spans", below_batch_id=bid(100), min_files=2) == 31
    assert [p.name for p in lake.files("spans")] == [f"compact-{bid(39)}-0.parquet"]
    assert pq.ParquetFile(lake.files("spans")[0]).metadata.num_rows == 80


def test_compact_splits_outputs_at_target_bytes(lake: Lake) -> None:
    write_small_files(lake, 4)
    sizes = [pq.ParquetFile(p).metadata.row_group(0).total_byte_size for p in lake.files("spans")]
    assert lake.compact("spans", below_batch_id=bid(100), min_files=2, target_bytes=sum(sizes[:2])) == 2
    assert [p.name for p in lake.files("spans")] == [
        f"compact-{bid(1)}-0.parquet", f"part-{bid(2)}-0.parquet", f"part-{bid(3)}-0.parquet"]


def test_compact_fills_columns_missing_from_older_files(lake: Lake) -> None:
    write_small_files(lake, 2)
    old = columnar("spans", [span(7, 7)])
    del old["tool_name"]  # a file from before the column existed
    schema = pa.schema([f for f in SPANS.schema if f.name != "tool_name"])
    pq.write_table(pa.Table.from_pydict(old, schema=schema), lake.table_dir("spans") / "date=2025-03-14" / f"part-{bid(0)}_9-0.parquet")
    assert lake.compact("spans", below_batch_id=bid(100), min_files=3) == 3
    table = pq.read_table(lake.files("spans")[0])
    assert table.schema.equals(SPANS.stored_schema) and table.num_rows == 5


def test_compacted_lake_reads_the_same(lake: Lake) -> None:
    write_small_files(lake, 8)
    query = "SELECT count(*), sum(cost_usd), count(DISTINCT trace_id) FROM read_parquet($g, hive_partitioning = true)"
    glob = f"{lake.root}/spans/*/*.parquet"
    before = duckdb.execute(query, {"g": glob}).fetchall()
    lake.compact("spans", below_batch_id=bid(100))
    assert duckdb.execute(query, {"g": glob}).fetchall() == before


def test_a_crash_after_the_rename_is_finished_on_init(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    write_small_files(lake, 8)
    part = lake.table_dir("spans") / "date=2025-03-14"

    def crash(fs: object, part: str, journal: str) -> None:  # dies after the rename, before deleting inputs
        raise KeyboardInterrupt

    monkeypatch.setattr(compaction_mod, "_finish", crash)
    with pytest.raises(KeyboardInterrupt):
        lake.compact("spans", below_batch_id=bid(100))
    monkeypatch.undo()
    assert len(list(part.glob("part-*"))) == 8 and len(list(part.glob("_journal-*"))) == 1
    Lake(lake.root).init()
    assert sorted(p.name for p in part.iterdir()) == [f"compact-{bid(7)}-0.parquet"]
    assert pq.ParquetFile(part / f"compact-{bid(7)}-0.parquet").metadata.num_rows == 16


def test_a_crash_before_the_rename_is_rolled_back(lake: Lake) -> None:
    write_small_files(lake, 8)
    part = lake.table_dir("spans") / "date=2025-03-14"
    inputs = sorted(p.name for p in part.glob("part-*.parquet"))
    tmp = part / f".compact-{bid(7)}-0.parquet.tmp"
    tmp.write_bytes(b"half a file")
    (part / f"_journal-{bid(7)}.json").write_text(
        json.dumps({"inputs": inputs, "outputs": [f"compact-{bid(7)}-0.parquet"]})
    )
    assert lake.compact("spans", below_batch_id=bid(0)) == 0  # recovery runs first, merges nothing
    assert sorted(p.name for p in part.iterdir()) == inputs
    assert lake.compact("spans", below_batch_id=bid(100)) == 8


def test_a_failed_merge_leaves_the_inputs(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    write_small_files(lake, 8)
    before = sorted(p.name for p in lake.table_dir("spans").rglob("*"))

    def boom(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(compaction_mod, "conform_arrow", boom)
    with pytest.raises(OSError, match="disk full"):
        lake.compact("spans", below_batch_id=bid(100))
    assert sorted(p.name for p in lake.table_dir("spans").rglob("*")) == before


def _unresolved_spans(lake: Lake, n: int, files: int = 2) -> None:
    """``files`` batches of ``n`` llm spans, one trace each, every parent missing: the
    merge's agent lookup holds all their trace ids at once."""
    for b in range(files):
        cols = {c: pa.nulls(n, SPANS.schema.field(c).type) for c in SPANS.columns}
        cols["trace_id"] = pa.array([f"{b:016x}{i:016x}" for i in range(n)])
        cols["span_id"] = pa.array([f"{i + 1:016x}" for i in range(n)])
        cols["parent_span_id"] = pa.array([f"{i + n + 1:016x}" for i in range(n)])
        cols["start_time"] = pa.array([1_741_953_600_000_000 + i for i in range(n)], pa.int64())
        cols["span_type"] = pa.array(["llm"] * n)
        lake.write_batch(bid(b), {"spans": cols})


def test_a_plan_that_outgrows_its_budget_is_made_again_with_more(tmp_path: Path, caplog, monkeypatch) -> None:
    """200 k spans looking for 200 k missing parents do not fit the agent lookup in the
    16 MiB that ``memory_mib: 32`` gives DuckDB: the plan is made again with twice as much
    (logged) instead of failing at every interval; past ``PLAN_MAX_MIB`` the error stands
    and the inputs stay as they were."""
    lake = Lake(tmp_path / "lake")
    lake.init()
    _unresolved_spans(lake, 100_000)
    monkeypatch.setattr(plan_mod, "PLAN_MAX_MIB", 16)
    with pytest.raises(duckdb.OutOfMemoryException):
        lake.compact("spans", below_batch_id=bid(100), min_files=2, memory_mib=32)
    assert len(lake.files("spans")) == 2 and not list((tmp_path / "lake").rglob("_journal-*"))
    monkeypatch.setattr(plan_mod, "PLAN_MAX_MIB", 1024)
    with caplog.at_level("WARNING", logger="otelbench.compaction"):
        assert lake.compact("spans", below_batch_id=bid(100), min_files=2, memory_mib=32) == 2
    assert "needed more than 16 MiB, trying 32 MiB" in caplog.text
    [path] = lake.files("spans")
    assert pq.ParquetFile(path).metadata.num_rows == 200_000


def test_work_that_outgrows_its_budget_runs_again_with_more(tmp_path: Path, caplog, monkeypatch) -> None:
    """``with_growing_memory`` (a merge's plan, a derived table's rows): a real DuckDB
    query that cannot spill (one list of 2 M numbers) fails in 16 MiB, runs in 64, the
    doublings logged; past ``PLAN_MAX_MIB`` the error stands."""
    from otelbench.storage.fs import LakeFS

    fs = LakeFS(str(tmp_path / "lake"))
    budgets: list[int] = []

    def run(budget: int) -> int:
        budgets.append(budget)
        with plan_mod.merge_connection(fs, budget) as con:
            return con.sql("SELECT len(list(i)) FROM range(2000000) t(i)").fetchall()[0][0]

    monkeypatch.setattr(plan_mod, "PLAN_MAX_MIB", 16)
    with pytest.raises(duckdb.OutOfMemoryException):
        plan_mod.with_growing_memory(run, 32, "a test")
    assert budgets == [32]
    budgets.clear()
    monkeypatch.setattr(plan_mod, "PLAN_MAX_MIB", 1024)
    with caplog.at_level("WARNING", logger="otelbench.compaction"):
        assert plan_mod.with_growing_memory(run, 32, "a test") == 2_000_000
    assert budgets[0] == 32 and len(budgets) > 1 and budgets == [32 << k for k in range(len(budgets))]
    assert "a test needed more than 16 MiB, trying 32 MiB" in caplog.text


@pytest.mark.slow
def test_compaction_memory_is_bounded(tmp_path: Path) -> None:
    """400k spans shaped like real ones (≈2 KB of distinct attribute and message text each,
    800 MB once decoded), each looking for its parent, compact in one run, as the
    compactor process runs it (the default ``compaction.memory_mib``, the allocators
    ``storage.process`` sets), in a process that peaks under 600 MB: measured 355 MB
    (380–410 MB with Arrow's pool chosen in the process, mimalloc underneath it; 520–630 MB
    when DuckDB streamed the whole rows, whose sort could not spill such rows at all). Row
    groups come out one span type each."""
    import subprocess
    import sys
    import textwrap

    root = Path(__file__).resolve().parents[2]
    prelude = f"import sys; sys.path.insert(0, {str(root)!r})\nfrom storage.lake import Lake\n"
    write = textwrap.dedent(
        f"""
        import pyarrow as pa
        from otelbench.storage.schema import SPANS
        lake = Lake({str(tmp_path / 'lake')!r}); lake.init()
        n = 50_000
        for b in range(8):
            cols = {{c: pa.nulls(n, SPANS.schema.field(c).type) for c in SPANS.columns}}
            cols["trace_id"] = pa.array([f"{{b:016x}}{{i:016x}}" for i in range(n)])
            cols["span_id"] = pa.array([f"{{i:016x}}" for i in range(n)])
            # every span's parent is missing: compaction looks up 400k parents, in vain
            cols["parent_span_id"] = pa.array([f"{{i + n:016x}}" for i in range(n)])
            cols["start_time"] = pa.array([1_741_953_600_000_000 + i for i in range(n)], pa.int64())
            cols["span_type"] = pa.array([("llm", "tool", "agent")[i % 3] for i in range(n)])
            cols["attributes"] = pa.array([f'{{{{"k":"{{b:04d}}{{i:08d}}' + "attr " * 120 + '"}}}}' for i in range(n)])
            cols["input_messages"] = pa.array([f"{{i:08d}}" * 100 for i in range(n)])
            cols["output_messages"] = pa.array([f"{{b * n + i:08d}}" * 40 for i in range(n)])
            lake.write_batch(f"{{b:020d}}", {{"spans": cols}})
        """
    )
    compact = textwrap.dedent(
        f"""
        lake = Lake({str(tmp_path / 'lake')!r})
        assert lake.compact("spans", below_batch_id="9" * 20, min_files=8, target_bytes=4 << 30) == 8
        # VmHWM: this process's own peak. Not ru_maxrss, which Linux raises at exec to the
        # peak of the process it replaced: a child spawned by pytest would report the
        # whole test session's peak
        print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
        """
    )
    subprocess.run([sys.executable, "-c", prelude + write], check=True)
    # the compactor's allocator (storage.process starts it with this environment)
    env = {**os.environ, **ARROW_ALLOCATOR_ENV, **COMPACTOR_ALLOCATOR_ENV}
    out = subprocess.run([sys.executable, "-c", prelude + compact], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    peak_kib = int(out.stdout.split()[-1])
    assert peak_kib < 600_000, f"compaction peaked at {peak_kib / 1e6:.2f} GB"
    print(f"compaction peak {peak_kib / 1e3:.0f} MB")
    files = Lake(tmp_path / "lake").files("spans")
    assert [p.name for p in files] == [f"compact-{7:020d}-0.parquet"]
    meta = pq.ParquetFile(files[0]).metadata
    assert meta.num_rows == 400_000
    types = [meta.row_group(i).column(SPANS.stored_schema.get_field_index("span_type")).statistics
             for i in range(meta.num_row_groups)]
    assert all(st.min == st.max for st in types)  # one span type per row group: the others are skipped


# ------------------------------------------------------------------ resolved_agent
def resolved(lake: Lake) -> dict[tuple[int, int], str | None]:
    """(trace, span) → resolved_agent, over every span file."""
    out = {}
    for f in lake.files("spans"):
        for r in pq.read_table(f, columns=["trace_id", "span_id", "resolved_agent"]).to_pylist():
            out[int(r["trace_id"], 16), int(r["span_id"], 16)] = r["resolved_agent"]
    return out


def test_write_batch_resolves_what_the_batch_alone_decides(lake: Lake) -> None:
    lake.write_batch(bid(1), batch(spans=[
        agent(1, 1, name="triage"),
        llm(1, 2, 1),  # parent in the batch, naming an agent
        span(1, 3, 1, name="step"),  # parent in the batch: so is this one
        llm(1, 4, 3),  # under "step", under the agent: the nearest agent above, at any depth
        llm(1, 5, 9),  # parent not in the batch: left to compaction
        llm(1, 6, 9, agent_name="self-named"),
        span(2, 1, service_name="root-svc"),  # a root without an agent: its service
        llm(2, 2, 1, service_name="root-svc"),
        llm(3, 2, 1),  # span 1 of trace 3 does not exist: span ids repeat across traces
    ]))
    assert resolved(lake) == {
        (1, 1): "triage", (1, 2): "triage", (1, 3): "triage", (1, 4): "triage", (1, 5): None,
        (1, 6): "self-named", (2, 1): "root-svc", (2, 2): "root-svc", (3, 2): None,
    }


def test_write_batch_takes_columns_without_or_with_resolved_agent(lake: Lake) -> None:
    cols = columnar("spans", [llm(1, 2, 9), llm(1, 3, 9)])
    assert "resolved_agent" not in cols  # what normalize.rows emits
    lake.write_batch(bid(1), {"spans": cols})
    lake.write_batch(bid(2), {"spans": {**columnar("spans", [llm(2, 2, 9), llm(2, 3, 9)]), "resolved_agent": ["given", None]}})
    assert resolved(lake) == {(1, 2): None, (1, 3): None, (2, 2): "given", (2, 3): None}
    assert pq.read_schema(lake.files("spans")[0]).equals(SPANS.stored_schema)


def compact_spans(lake: Lake, how: str) -> int:
    """``lake.compact`` of spans below batch 10, its plans made here, each in a child, or
    all first (``plan_run``, in a real process as the compactor makes them) and then merged
    (``compact_planned``)."""
    if how != "two-halves":
        return lake.compact("spans", below_batch_id=bid(10), min_files=2, plan_in_child=how == "plan-in-child")
    from otelbench.storage import process

    planned = process.call("otelbench.storage.plan_process", ("run", str(lake.root), None, bid(10), 2, 64), "the plan")
    assert set(planned) == {"spans", "logs", "metrics"}
    return compaction_mod.compact_planned(lake.fs, SPANS, planned["spans"])


@pytest.mark.parametrize("how", ["plan-here", "plan-in-child", "two-halves"])
def test_compaction_resolves_from_parents_anywhere_in_the_lake(lake: Lake, how: str) -> None:
    next_day = 24 * 3600
    # day 1: the agent spans, in a file compaction will not touch (a newer batch)
    lake.write_batch(bid(50), batch(spans=[agent(1, 1, name="triage"), agent(2, 1, name="billing")]))
    # day 2: calls whose parents are on day 1 (a run across midnight), or in their own
    # partition without an agent, or nowhere
    lake.write_batch(bid(1), batch(spans=[llm(1, 2, 1, at=next_day), llm(2, 2, 1, at=next_day)]))
    lake.write_batch(bid(2), batch(spans=[llm(1, 3, 7, at=next_day), llm(1, 4, 8, at=next_day)]))
    lake.write_batch(bid(3), batch(spans=[span(1, 7, 1, at=next_day, service_name="step-svc")]))
    assert resolved(lake)[1, 2] is None and resolved(lake)[1, 3] is None
    assert compact_spans(lake, how) == 3
    assert resolved(lake) == {
        (1, 1): "triage", (2, 1): "billing",
        (1, 2): "triage", (2, 2): "billing", (1, 7): "triage",  # parents in the other partition
        (1, 3): "triage",  # parent 7 names no agent: its own parent's, two levels up
        (1, 4): None,  # parent 8 is nowhere yet: still unresolved
    }
    # a later compaction resolves what arrived since, once the compacted file is merged
    # again: when at least as much newer data has come (tiers)
    lake.write_batch(bid(4), batch(spans=[span(1, 8, 1, at=next_day)]))
    lake.write_batch(bid(5), batch(spans=[span(3, 3, at=next_day)]))
    compact_spans(lake, how)
    assert resolved(lake)[1, 4] is None  # the new files were merged among themselves
    lake.write_batch(bid(6), batch(spans=[span(4, 3, at=next_day)]))
    lake.write_batch(bid(7), batch(spans=[span(5, 3, at=next_day)]))
    compact_spans(lake, how)
    assert resolved(lake)[1, 4] == "triage"


@pytest.mark.parametrize("how", ["plan-here", "plan-in-child", "two-halves"])
def test_compaction_keeps_resolved_values_and_resolves_each_copy_once(lake: Lake, how: str) -> None:
    lake.write_batch(bid(1), batch(spans=[agent(1, 1, name="triage"), llm(1, 2, 1)]))
    lake.write_batch(bid(2), batch(spans=[llm(1, 2, 1), llm(1, 3, 1)]))  # 2 again, 3 unresolved
    assert compact_spans(lake, how) == 2
    table = pq.read_table(lake.files("spans")[0])
    assert table.num_rows == 3
    assert resolved(lake) == {(1, 1): "triage", (1, 2): "triage", (1, 3): "triage"}


def test_a_plan_made_in_a_child_leaves_duckdb_out_of_the_merging_process(tmp_path: Path, monkeypatch) -> None:
    """``plan_in_child`` (the compactor's way): the process that merges never imports
    DuckDB, and a plan whose process fails fails the merge, the inputs left as they were."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write_batch(bid(1), batch(spans=[agent(1, 1, name="triage"), llm(1, 2, 1)]))
    lake.write_batch(bid(2), batch(spans=[llm(1, 2, 1), llm(1, 3, 1)]))
    before = sorted(p.name for p in lake.files("spans"))
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(RuntimeError, match="the plan's process failed"):
        lake.compact("spans", below_batch_id=bid(10), min_files=2, plan_in_child=True)
    assert sorted(p.name for p in lake.files("spans")) == before
    assert not list((tmp_path / "lake").rglob("_journal-*"))
    monkeypatch.undo()  # sys.executable again
    script = (f"import sys; sys.path.insert(0, {str(root)!r})\n"
              "from storage.lake import Lake\n"
              f"assert Lake({str(tmp_path / 'lake')!r}).compact('spans', below_batch_id={bid(10)!r}, min_files=2,"
              " plan_in_child=True) == 2\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'duckdb'))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["[]"]
    assert resolved(lake) == {(1, 1): "triage", (1, 2): "triage", (1, 3): "triage"}


def test_a_table_without_a_key_is_merged_without_a_plan_process(lake: Lake, monkeypatch) -> None:
    """Logs have no key to dedupe by and no agent to resolve: their merge makes no plan, so
    no process is started for one (a failing interpreter would fail the merge)."""
    import sys

    for n in (1, 2, 3):
        lake.write_batch(bid(n), batch(logs=[log(n)]))
    monkeypatch.setattr(sys, "executable", "/bin/false")
    assert lake.compact("logs", below_batch_id=bid(10), min_files=2, plan_in_child=True) == 3
    assert [p.name for p in lake.files("logs")] == [f"compact-{bid(3)}-0.parquet"]
    assert pq.read_table(lake.files("logs")[0]).num_rows == 3


def write_v1_file(lake: Lake, rows: list[dict], name: str = f"part-{bid(0)}-0.parquet") -> Path:
    """A spans file as otelbench wrote it before resolved_agent existed (schema version 1)."""
    path = lake.table_dir("spans") / "date=2025-03-14" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pydict(columnar("spans", rows), schema=SPANS.schema), path)
    return path


def test_a_version_1_lake_is_upgraded_and_its_files_rewritten_once(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    old = Lake(root)
    old.init()
    (root / "_lake.json").write_text(json.dumps({"schema_version": 1}))
    seed = root / "spans" / "date=1970-01-01" / "seed.parquet"
    pq.write_table(SPANS.schema.empty_table(), seed)
    write_v1_file(old, [agent(1, 1), llm(1, 2, 1)])
    lake = Lake(root)
    lake.init()
    assert json.loads((root / "_lake.json").read_text())["schema_version"] == SCHEMA_VERSION
    assert pq.read_schema(seed).equals(SPANS.stored_schema)
    # one old file is rewritten even below min_files, with resolved_agent filled
    assert lake.compact("spans", below_batch_id=bid(10), min_files=8) == 1
    assert resolved(lake) == {(1, 1): "triage", (1, 2): "triage"}
    assert lake.compact("spans", below_batch_id=bid(10), min_files=8) == 0
