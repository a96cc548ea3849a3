"""Span and log files carry a bloom filter on ``trace_id`` in every row group
(storage.files.BLOOM_COLUMNS), flushed and compacted alike, and DuckDB reads it: a lookup
by trace id keeps only the row groups that may hold the trace."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from otelbench.storage.lake import Lake
from otelbench.storage.queries import reports
from otelbench.storage.duckdb import open_lake
from otelbench.testing.rows import agent, batch, llm, log, tid, tool

TRACES_PER_BATCH = 300


def write(lake: Lake, batches: int) -> None:
    for b in range(batches):
        spans, logs = [], []
        for i in range(TRACES_PER_BATCH):
            trace = b * 1000 + i
            text = f"{trace} " * 6000  # big rows: a small budget writes many row groups
            spans += [agent(trace, 1, at=i / 100), llm(trace, 2, 1, at=i / 100, input_messages=text),
                      tool(trace, 3, 1, at=i / 100, input_messages=text)]
            logs.append(log(trace, 2, at=i / 100))
        lake.write_batch(f"{b:020d}", batch(spans=spans, logs=logs))


def kept_groups(files: list[Path], trace: str) -> tuple[int, int, int]:
    """(row groups the filters keep for ``trace``, row groups that hold it, row groups in all)."""
    con = duckdb.connect()
    kept = holding = total = 0
    for f in files:
        groups = pq.ParquetFile(f)
        probe = con.execute("SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(?, 'trace_id', ?)",
                            [str(f), trace]).fetchall()
        assert len(probe) == groups.metadata.num_row_groups
        for group, excluded in probe:
            holds = trace in groups.read_row_group(group, columns=["trace_id"]).column(0).to_pylist()
            assert not (holds and excluded), "a bloom filter must never leave out a group that holds the trace"
            kept += not excluded
            holding += holds
            total += 1
    return kept, holding, total


def test_every_span_and_log_file_filters_its_row_groups_by_trace_id(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    lake.init()
    write(lake, 4)
    present = [tid(b * 1000 + i) for b in range(4) for i in (0, 77, 299)]
    absent = [tid(b * 1000 + 500) for b in range(4)]

    def check(table: str) -> None:
        files = lake.files(table)
        for trace in present:
            kept, holding, total = kept_groups(files, trace)
            assert holding >= 1 and kept <= holding + 1 and total > kept
        for trace in absent:
            assert kept_groups(files, trace)[0] <= 1

    check("spans")  # flushed: a file per batch, one row group each
    check("logs")
    assert lake.compact("spans", below_batch_id="9" * 20, min_files=2, memory_mib=32) == 4
    [merged] = lake.files("spans")
    assert pq.ParquetFile(merged).metadata.num_row_groups > 3  # of one span type each, several of a type
    check("spans")
    with open_lake(lake.root) as gw:  # the same rows through the views
        for trace in present:
            assert len(gw.query(reports.SPANS_OF_TRACE, {"trace_id": trace}).rows) == 3
