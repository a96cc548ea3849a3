"""Derived tables (storage.derived): commits appended or replacing a result set, read
through the views by a real DuckDB on real Parquet, during replaces, crashes and
compaction."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from otelbench.storage import derived, schema
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake, LakeError
from otelbench.storage.queries import tables as table_sql
from otelbench.storage.schema import derived_table

REPO = Path(__file__).resolve().parents[2]

# The shapes of the processors' tables: judge scores (a re-judged run replaces its
# score), failure clusters per agent (each clustering run replaces that agent's set),
# and a table replaced as a whole.
TEST_TABLES = """
import pyarrow as pa
from otelbench.storage import schema
from otelbench.storage.schema import derived_table

TEST_TABLES = [
    derived_table("t_scores", [("trace_id", pa.string()), ("judge", pa.string()), ("score", pa.float64()),
                               ("reason", pa.string())], key=("trace_id", "judge")),
    derived_table("t_clusters", [("agent", pa.string()), ("cluster", pa.int64()), ("label", pa.string()),
                                 ("version", pa.int64())], replace_by=("agent",)),
    derived_table("t_snapshot", [("name", pa.string()), ("value", pa.float64())], replace_by=()),
    derived_table("t_notes", [("note", pa.string())]),
]
"""
_ns: dict = {}
exec(TEST_TABLES, _ns)


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lake:
    for t in _ns["TEST_TABLES"]:
        monkeypatch.setitem(schema.TABLES, t.name, t)
    lk = Lake(tmp_path / "lake")
    lk.init()
    return lk


def view(lake: Lake, sql: str) -> list[tuple]:
    with open_lake(lake.root) as gw:
        return gw.query(sql).rows


def scores(lake: Lake) -> list[tuple]:
    return view(lake, "SELECT trace_id, judge, score, reason FROM t_scores ORDER BY trace_id, judge")


def clusters(lake: Lake) -> list[tuple]:
    return view(lake, "SELECT agent, cluster, label, version FROM t_clusters ORDER BY agent, cluster")


def cluster_frame(n: int, version: int) -> pl.DataFrame:
    return pl.DataFrame({"cluster": list(range(n)), "label": [f"c{i}" for i in range(n)], "version": [version] * n})


# ------------------------------------------------------------------ registry
def test_the_registry_has_two_kinds_and_the_manifest_says_which(lake: Lake) -> None:
    kinds = {t.name: t.kind for t in schema.tables()}
    assert kinds["spans"] == kinds["logs"] == kinds["metrics"] == "signal"
    assert kinds["t_scores"] == kinds["t_clusters"] == "derived"
    manifest = lake.fs.read_json(lake.fs.path("_lake.json"))["tables"]
    assert manifest["t_clusters"]["kind"] == "derived" and manifest["t_clusters"]["replace_by"] == ["agent"]
    assert manifest["spans"]["kind"] == "signal" and "replace_by" not in manifest["spans"]
    assert [t.name for t in schema.tables("signal")] == ["spans", "logs", "metrics"]


def test_a_table_definition_is_checked() -> None:
    with pytest.raises(ValueError, match="not among its columns"):
        derived_table("bad", [("a", pa.string())], key=("b",))
    with pytest.raises(ValueError, match="only derived tables are replaced"):
        schema.Table("bad", pa.schema([("t", pa.timestamp("us", tz="UTC"))]), "t", replace_by=())


def test_an_empty_derived_table_reads_in_every_reader(lake: Lake) -> None:
    assert scores(lake) == []
    glob = f"{lake.root}/t_scores/*/*.parquet"
    assert pl.scan_parquet(glob, hive_partitioning=True).collect().height == 0
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{glob}')").fetchall() == [(0,)]


# ------------------------------------------------------------------ append, keys: latest wins
def test_a_rejudged_run_replaces_its_score(lake: Lake) -> None:
    lake.append("t_scores", pl.DataFrame({"trace_id": ["a", "b"], "judge": ["j1", "j1"], "score": [0.2, 0.9],
                                          "reason": ["wrong", "right"]}))
    lake.append("t_scores", pa.table({"trace_id": ["a", "a"], "judge": ["j1", "j2"], "score": [0.7, 0.5],
                                      "reason": ["better", "other judge"]}))
    assert scores(lake) == [("a", "j1", 0.7, "better"), ("a", "j2", 0.5, "other judge"), ("b", "j1", 0.9, "right")]


def test_within_one_commit_the_last_row_of_a_key_wins(lake: Lake) -> None:
    lake.append("t_scores", pl.DataFrame({"trace_id": ["a", "a"], "judge": ["j", "j"], "score": [0.1, 0.3],
                                          "reason": ["first", "second"]}))
    assert scores(lake) == [("a", "j", 0.3, "second")]


def test_an_append_only_table_without_key_keeps_every_row(lake: Lake) -> None:
    lake.append("t_notes", pl.DataFrame({"note": ["x", "x"]}))
    lake.append("t_notes", pl.DataFrame({"note": ["x"]}))
    assert view(lake, "SELECT note FROM t_notes") == [("x",)] * 3


def test_an_empty_append_commits_nothing(lake: Lake) -> None:
    assert lake.append("t_notes", pl.DataFrame({"note": []}, schema={"note": pl.String})) is None
    assert lake.files("t_notes") == []


# ------------------------------------------------------------------ replace: result sets
def test_a_replace_supersedes_its_result_set_only(lake: Lake) -> None:
    lake.replace("t_clusters", cluster_frame(3, 1), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(2, 1), {"agent": "b"})
    lake.replace("t_clusters", cluster_frame(1, 2), {"agent": "a"})
    assert clusters(lake) == [("a", 0, "c0", 2), ("b", 0, "c0", 1), ("b", 1, "c1", 1)]


def test_an_empty_replace_empties_its_set_and_a_later_one_fills_it_again(lake: Lake) -> None:
    lake.replace("t_clusters", cluster_frame(2, 1), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(1, 1), {"agent": "b"})
    lake.replace("t_clusters", cluster_frame(0, 2), {"agent": "a"})
    assert clusters(lake) == [("b", 0, "c0", 1)]
    lake.replace("t_clusters", cluster_frame(1, 3), {"agent": "a"})
    assert clusters(lake) == [("a", 0, "c0", 3), ("b", 0, "c0", 1)]


def test_a_whole_table_replace(lake: Lake) -> None:
    lake.replace("t_snapshot", pl.DataFrame({"name": ["x", "y"], "value": [1.0, 2.0]}), {})
    lake.replace("t_snapshot", pl.DataFrame({"name": ["z"], "value": [3.0]}), {})
    assert view(lake, "SELECT name, value FROM t_snapshot") == [("z", 3.0)]


def test_a_null_result_set_is_a_set_of_its_own(lake: Lake) -> None:
    lake.replace("t_clusters", cluster_frame(1, 1), {"agent": None})
    lake.replace("t_clusters", cluster_frame(2, 2), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(1, 3), {"agent": None})
    assert clusters(lake) == [("a", 0, "c0", 2), ("a", 1, "c1", 2), (None, 0, "c0", 3)]


def test_set_columns_given_in_the_data_must_match(lake: Lake) -> None:
    frame = cluster_frame(2, 1).with_columns(agent=pl.Series(["a", "b"]))
    with pytest.raises(LakeError, match="rows outside the result set agent = 'a'"):
        lake.replace("t_clusters", frame, {"agent": "a"})
    lake.replace("t_clusters", frame.with_columns(agent=pl.lit("a")), {"agent": "a"})
    assert [r[0] for r in clusters(lake)] == ["a", "a"]
    # an empty frame that carries the set's column empties the set (all([]) is no mismatch)
    lake.replace("t_clusters", frame.with_columns(agent=pl.lit("a")).clear(), {"agent": "a"})
    assert clusters(lake) == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda lk: lk.append("t_clusters", cluster_frame(1, 1)), "replaced by result set .agent.: use replace"),
        (lambda lk: lk.replace("t_scores", pl.DataFrame(), {}), "only appended to: use append"),
        (lambda lk: lk.replace("t_clusters", cluster_frame(1, 1), {"nope": 1}), r"named by \(agent\), got \(nope\)"),
        (lambda lk: lk.append("spans", pl.DataFrame()), "signal table: only the collector writes it"),
        (lambda lk: lk.write_batch("01", {"t_notes": {"note": ["x"]}}), "derived: write it with append or replace"),
        (lambda lk: lk.append("t_notes", pl.DataFrame({"note": ["x"], "extra": [1]})), r"unknown columns \['extra'\]"),
        (lambda lk: lk.append("t_scores", pl.DataFrame({"trace_id": ["a"]})), r"missing columns \['judge', 'reason', 'score'\]"),
        (lambda lk: lk.append("t_scores", pl.DataFrame({"trace_id": ["a"], "judge": ["j"], "score": ["high"],
                                                        "reason": ["r"]})), "column score"),
        (lambda lk: lk.append("nope", pl.DataFrame()), "unknown table 'nope'"),
    ],
)
def test_bad_writes_are_refused_with_a_reason_and_write_nothing(lake: Lake, call, message: str) -> None:
    with pytest.raises(LakeError, match=message):
        call(lake)
    assert not [p for p in lake.root.rglob("commit-*")]


# ------------------------------------------------------------------ commit order
def test_commits_are_ordered_even_when_the_clock_steps_back(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([5_000_000_000_000_000, 4_000_000_000_000_000, 4_000_000_000_000_000])
    monkeypatch.setattr(derived.time, "time_ns", lambda: next(clock))
    for version in (1, 2, 3):
        lake.replace("t_clusters", cluster_frame(1, version), {"agent": "a"})
    names = [p.name for p in lake.files("t_clusters")]
    assert names == sorted(names) and len(set(names)) == 3
    assert clusters(lake) == [("a", 0, "c0", 3)]  # the last commit wins, though its clock said earlier


# ------------------------------------------------------------------ atomicity
def test_a_reader_during_a_replace_sees_the_old_set_or_the_new_one(lake: Lake) -> None:
    """Readers between every step of a commit: before the file is visible they see the
    old result set, after it the new one — never part of each."""
    lake.replace("t_clusters", cluster_frame(3, 1), {"agent": "a"})
    seen: list[list[tuple]] = []
    fs = lake.fs
    with pytest.MonkeyPatch.context() as spies:
        for step in ("write_parquet", "seal", "publish", "sync_folder"):
            real = getattr(type(fs), step)

            def spy(self, *args, _real=real, **kwargs):
                seen.append(clusters(lake))
                out = _real(self, *args, **kwargs)
                seen.append(clusters(lake))
                return out

            spies.setattr(type(fs), step, spy)
        lake.replace("t_clusters", cluster_frame(5, 2), {"agent": "a"})
    old, new = [("a", i, f"c{i}", 1) for i in range(3)], [("a", i, f"c{i}", 2) for i in range(5)]
    assert len(seen) >= 6 and all(s in (old, new) for s in seen), seen
    assert seen[0] == old and seen[-1] == new and clusters(lake) == new


def test_readers_in_other_threads_never_see_a_mix(lake: Lake) -> None:
    """A writer replacing one set over and over (each version a different size), readers
    querying the view meanwhile through their own gateways."""
    lake.replace("t_clusters", cluster_frame(1, 0), {"agent": "a"})
    done = threading.Event()
    bad: list = []
    reads = 0

    def read() -> None:
        nonlocal reads
        while not done.is_set():
            rows = clusters(lake)
            versions = {r[3] for r in rows}
            if len(versions) != 1 or len(rows) != next(iter(versions)) % 7 + 1:
                bad.append(rows)
            reads += 1

    readers = [threading.Thread(target=read) for _ in range(2)]
    for r in readers:
        r.start()
    for version in range(1, 100):
        lake.replace("t_clusters", cluster_frame(version % 7 + 1, version), {"agent": "a"})
    done.set()
    for r in readers:
        r.join()
    assert reads > 0 and bad == []


_CRASHING_COMMIT = TEST_TABLES + """
import os, signal, sys
import polars as pl
from otelbench.storage.fs import LakeFS
for t in TEST_TABLES:
    schema.TABLES[t.name] = t
from otelbench.storage.lake import Lake

def die(*args, **kwargs):  # the file is written and sealed, not yet renamed into place
    os.kill(os.getpid(), signal.SIGKILL)

LakeFS.publish = die
Lake(sys.argv[1]).replace("t_clusters", pl.DataFrame({"cluster": [7, 8], "label": ["new", "new"], "version": [2, 2]}),
                          {"agent": "a"})
"""


def test_a_crash_during_a_replace_leaves_the_old_set(lake: Lake) -> None:
    lake.replace("t_clusters", cluster_frame(3, 1), {"agent": "a"})
    before = clusters(lake)
    child = subprocess.run([sys.executable, "-c", _CRASHING_COMMIT, str(lake.root)], cwd=REPO,
                           env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    assert child.returncode == -9, child.stderr
    staged = [p for p in lake.root.rglob(".commit-*.tmp")]
    assert len(staged) == 1  # what the crash left: a complete file no reader sees
    assert clusters(lake) == before
    # the lock died with the process; the next commit sweeps the leftover and lands
    lake.replace("t_clusters", cluster_frame(1, 3), {"agent": "a"})
    assert not [p for p in lake.root.rglob(".commit-*.tmp")]
    assert clusters(lake) == [("a", 0, "c0", 3)]


def test_init_sweeps_what_a_crashed_commit_left(lake: Lake) -> None:
    part = lake.table_dir("t_notes") / "date=2026-01-02"
    part.mkdir(parents=True)
    (part / ".commit-0000000000000001-0.parquet.tmp").write_bytes(b"half")
    Lake(lake.root).init()
    assert list(part.iterdir()) == []


def test_the_flusher_sweep_leaves_derived_tables_alone(lake: Lake) -> None:
    lake.append("t_notes", pl.DataFrame({"note": ["kept"]}))
    part = lake.table_dir("t_notes") / "date=2026-01-02"
    part.mkdir(parents=True)
    staged = part / ".commit-0000000000000001-0.parquet.tmp"  # a processor's commit in progress
    staged.write_bytes(b"half")
    lake.discard_after("0" * 20)
    assert staged.exists() and view(lake, "SELECT note FROM t_notes") == [("kept",)]


# ------------------------------------------------------------------ compaction
def _at(day: int):
    return lambda: int(dt.datetime(2026, 1, day, tzinfo=dt.timezone.utc).timestamp() * 1e9) + next(_tick)


_tick = iter(range(1_000, 10**9, 1_000))


def test_compaction_drops_what_the_views_hide_and_changes_no_answer(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    # day 1: agents a and b, three scores; day 2: a replaced then emptied, b replaced, a score re-judged
    monkeypatch.setattr(derived.time, "time_ns", _at(1))
    lake.replace("t_clusters", cluster_frame(3, 1), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(2, 1), {"agent": "b"})
    for i in range(3):
        lake.append("t_scores", pl.DataFrame({"trace_id": [f"t{i}"], "judge": ["j"], "score": [i / 10], "reason": ["r"]}))
    monkeypatch.setattr(derived.time, "time_ns", _at(2))
    lake.replace("t_clusters", cluster_frame(2, 2), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(0, 3), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(1, 4), {"agent": "b"})
    lake.append("t_scores", pl.DataFrame({"trace_id": ["t0"], "judge": ["j"], "score": [0.9], "reason": ["again"]}))
    lake.append("t_scores", pl.DataFrame({"trace_id": ["t9"], "judge": ["j"], "score": [0.5], "reason": ["r"]}))
    before = (clusters(lake), scores(lake))
    assert before[0] == [("b", 0, "c0", 4)]
    day1, day2 = (lake.table_dir("t_clusters") / f"date=2026-01-0{d}" for d in (1, 2))

    # day 2 alone (3 files, day 1 has 2): its tombstone must keep hiding day 1's rows of a
    assert lake.compact("t_clusters", below_batch_id="0", min_files=3) == 3
    assert (clusters(lake), scores(lake)) == before
    assert [p.name.split("-")[0] for p in lake.files("t_clusters")] == ["commit", "commit", "compact"]
    assert pq.read_table(lake.files("t_clusters")[2]).column("_tombstone").to_pylist() == [True, False]
    # then day 1: everything in it is superseded, so it merges into nothing
    assert lake.compact("t_clusters", below_batch_id="0", min_files=2) == 2
    assert (clusters(lake), scores(lake)) == before
    assert [p.parent for p in lake.files("t_clusters")] == [day2] and not list(day1.glob("commit-*"))
    assert lake.compact("t_scores", below_batch_id="0", min_files=2) == 5
    assert (clusters(lake), scores(lake)) == before
    assert sum(pq.read_table(p).num_rows for p in lake.files("t_scores")) == 4  # t0's first score dropped


def test_a_reader_during_compaction_sees_each_row_once(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    from otelbench.storage import compaction

    for i in range(4):
        lake.append("t_notes", pl.DataFrame({"note": [f"n{i}"]}))
    lake.replace("t_clusters", cluster_frame(2, 1), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(2, 2), {"agent": "a"})
    expected = (view(lake, "SELECT note FROM t_notes ORDER BY note"), clusters(lake))
    seen = []
    real = compaction._finish

    def between(fs, part, journal):  # outputs published, inputs not yet deleted: both visible
        seen.append((view(lake, "SELECT note FROM t_notes ORDER BY note"), clusters(lake)))
        real(fs, part, journal)

    monkeypatch.setattr(compaction, "_finish", between)
    assert lake.compact("t_notes", below_batch_id="0", min_files=2) == 4
    assert lake.compact("t_clusters", below_batch_id="0", min_files=2) == 2
    assert seen == [expected, expected] and (view(lake, "SELECT note FROM t_notes ORDER BY note"),
                                             clusters(lake)) == expected


def test_compaction_sorts_by_set_and_key_in_small_row_groups(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    # commits land in an order unlike the key's: compaction sorts, so a reader narrowed to
    # one agent's set or one run's key reads a few row groups of a big file
    monkeypatch.setattr(derived, "ROW_GROUP_ROWS", 4)
    for agent in ("c", "a", "b"):
        lake.replace("t_clusters", cluster_frame(3, 1), {"agent": agent})
    for i in (5, 1, 9, 3, 7, 2):
        lake.append("t_scores", pl.DataFrame({"trace_id": [f"t{i}"], "judge": ["j"], "score": [i / 10], "reason": ["r"]}))
    before = (clusters(lake), scores(lake))
    assert lake.compact("t_clusters", below_batch_id="0", min_files=2) == 3
    assert lake.compact("t_scores", below_batch_id="0", min_files=2) == 6
    assert (clusters(lake), scores(lake)) == before
    (c_file,), (s_file,) = lake.files("t_clusters"), lake.files("t_scores")
    assert pq.read_table(c_file).column("agent").to_pylist() == ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    assert pq.read_table(s_file).column("trace_id").to_pylist() == [f"t{i}" for i in (1, 2, 3, 5, 7, 9)]
    assert [pq.ParquetFile(f).metadata.num_row_groups for f in (c_file, s_file)] == [3, 2]


def test_a_read_narrowed_to_one_set_or_key_answers_as_the_view(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    t_scores, t_clusters = _ns["TEST_TABLES"][:2]
    monkeypatch.setattr(derived.time, "time_ns", _at(1))
    lake.replace("t_clusters", cluster_frame(3, 1), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(2, 1), {"agent": "b"})
    lake.append("t_scores", pl.DataFrame({"trace_id": ["t1", "t2"], "judge": ["j", "j"], "score": [0.1, 0.2],
                                          "reason": ["r", "r"]}))
    monkeypatch.setattr(derived.time, "time_ns", _at(2))
    lake.replace("t_clusters", cluster_frame(1, 2), {"agent": "a"})  # a's older set: gone
    lake.append("t_scores", pl.DataFrame({"trace_id": ["t1"], "judge": ["j"], "score": [0.9], "reason": ["again"]}))

    def narrowed(t, by: str, value: str, columns: str) -> list[tuple]:
        sql = table_sql.derived_select_sql(t, table_sql.narrowed_source_sql(t, "files", by, "value"))
        with open_lake(lake.root) as gw:
            return gw.query(f"SELECT {columns} FROM ({sql}) ORDER BY ALL",
                            {"files": table_sql.table_glob(lake.root, t.name), "value": value}).rows

    for agent in ("a", "b", "nobody"):
        assert narrowed(t_clusters, "agent", agent, "agent, cluster, label, version") == [
            r for r in clusters(lake) if r[0] == agent]
    for trace in ("t1", "t2"):
        assert narrowed(t_scores, "trace_id", trace, "trace_id, judge, score, reason") == [
            r for r in scores(lake) if r[0] == trace]
    # a filter that splits a result set would let an old commit's rows look latest: refused
    with pytest.raises(ValueError, match="narrowed by 'cluster'"):
        table_sql.narrowed_source_sql(t_clusters, "files", "cluster", "value")
    with pytest.raises(ValueError, match="narrowed by 'score'"):
        table_sql.narrowed_source_sql(t_scores, "files", "score", "value")


# ------------------------------------------------------------------ SQL
def test_derived_view_sql_applies_the_rule_by_table_shape() -> None:
    t = _ns["TEST_TABLES"]
    keyed, sets, whole, plain = (table_sql.derived_view_sql("/l", x) for x in t)
    assert 'PARTITION BY "trace_id", "judge" ORDER BY committed_at DESC' in keyed and "latest" not in keyed
    assert 'committed_at = max(committed_at) OVER (PARTITION BY "agent")' in sets and "FROM latest" in sets
    assert "committed_at = max(committed_at) OVER ()" in whole
    assert "PARTITION BY committed_at, _row" in plain and "latest" not in plain
    for sql in (keyed, sets, whole, plain):
        assert "WHERE NOT _tombstone" in sql and sql.count("read_parquet('/l/") == 1 and "MATERIALIZED" in sql
        assert "_row" not in sql.split("\nSELECT ")[1].split("FROM")[0]  # bookkeeping columns are not shown


def test_the_views_script_reads_derived_tables_in_a_plain_duckdb(lake: Lake) -> None:
    """What `otelbench sql --print-views` gives the duckdb CLI and other DuckDB clients."""
    from otelbench.storage.queries import views

    lake.replace("t_clusters", cluster_frame(2, 1), {"agent": "a"})
    lake.replace("t_clusters", cluster_frame(1, 2), {"agent": "a"})
    con = duckdb.connect()
    con.execute(views.print_views(lake.root))
    assert con.sql("SELECT agent, version FROM t_clusters").fetchall() == [("a", 2)]
    assert "t_clusters" in views.view_names()
