"""The lake in a bucket (storage.objectstore) on a real S3-compatible server (moto_server):
the same answers as a folder, the commit protocol without rename, several writers."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from otelbench.testing.rows import agent, batch, llm, span, tool
from otelbench.storage.duckdb import QueryError, open_lake
from otelbench.storage.files import data_files, owner_of
from otelbench.storage.fs import LakeLocationError
from otelbench.storage.location import open_fs
from otelbench.storage.lake import Lake, LakeError
from otelbench.storage.objectstore import ObjectLakeFS, S3Options
from otelbench.storage.schema import SPANS

QUERIES = [
    "SELECT count(*) FROM spans",
    "SELECT agent, count(*), sum(input_tokens) FROM llm_calls GROUP BY 1 ORDER BY 1",
    "SELECT tool_name, count(*) FROM tool_calls GROUP BY 1 ORDER BY 1",
    "SELECT agent, count(*) FROM agent_runs GROUP BY 1 ORDER BY 1",
    "SELECT date, count(*) FROM spans GROUP BY 1 ORDER BY 1",
]


def _fill(lake: Lake, batches: int = 12, owner: str | None = None) -> None:
    suffix = f"_0_{owner}" if owner else ""
    for n in range(1, batches + 1):
        rows = [agent(n, 1, name=f"agent-{n % 3}"), llm(n, 2, 1, input_tokens=n), tool(n, 3, 1),
                *(span(n, 10 + j, 1, at=86_400.0 * (j % 2)) for j in range(10))]
        lake.write_batch(f"{n:04d}{suffix}", batch(spans=rows))


def _count(location: str) -> int:
    with open_lake(location) as gw:
        return gw.query("SELECT count(*) FROM spans").rows[0][0]


def test_a_lake_in_a_bucket_answers_like_a_folder(s3_lake: str, tmp_path: Path) -> None:
    bucket, folder = Lake(s3_lake), Lake(tmp_path / "lake")
    for lk in (bucket, folder):
        lk.init()
        _fill(lk)
        # the first spans again in a later batch: a client's retry, dropped by compaction
        lk.write_batch("0013", batch(spans=[span(1, 10, 1), span(2, 10, 1)]))
    with open_lake(s3_lake) as gb, open_lake(folder.root) as gf:
        before = [gb.query(q).rows for q in QUERIES]
        assert before == [gf.query(q).rows for q in QUERIES]
        assert before[0] == [(12 * 13 + 2,)]
        for lk in (bucket, folder):
            assert lk.compact("spans", below_batch_id="0014", min_files=2) == 25  # 12 batches × 2 days + 1
        after = [gb.query(q).rows for q in QUERIES]
        assert after == [gf.query(q).rows for q in QUERIES]
        assert after[0] == [(12 * 13,)] and after[1:4] == before[1:4]
    names = sorted(f.name for f in bucket.files("spans"))
    assert names == sorted(f.name for f in folder.files("spans")) == ["compact-0012-0.parquet", "compact-0013-0.parquet"]
    # nothing but data, seeds, the manifest and no staging objects in the bucket
    fs = bucket.fs
    keys = [p[len(fs.root) + 1:] for p, _, _ in fs.walk(fs.root)]
    assert all(k.endswith(".parquet") or k == "_lake.json" for k in keys), keys
    assert not any("/." in k for k in keys)


def test_sql_on_a_bucket_is_confined_to_the_lake(s3_lake: str, tmp_path: Path) -> None:
    Lake(s3_lake).init()
    neighbour = Lake(s3_lake + "-neighbour")
    neighbour.init()
    _fill(neighbour, 2)
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    with open_lake(s3_lake) as gw:
        assert gw.query("SELECT count(*) FROM spans").rows == [(0,)]
        for sql in (f"SELECT * FROM read_parquet('{neighbour.location}/spans/*/*.parquet')",
                    f"SELECT * FROM read_csv('{secret}')",
                    f"SELECT * FROM read_parquet('{s3_lake.rsplit('/', 1)[0]}/*/*/*/*.parquet')"):
            with pytest.raises(QueryError, match="disabled by configuration|Permission"):
                gw.query(sql)


def test_the_command_line_reads_a_bucket(s3_lake: str) -> None:
    lk = Lake(s3_lake)
    lk.init()
    _fill(lk, 3)
    out = subprocess.run([sys.executable, "-m", "otelbench", "sql", "--lake", s3_lake, "--format", "json",
                          "SELECT agent, count(*) AS n FROM llm_calls GROUP BY 1 ORDER BY 1"],
                         capture_output=True, text=True, timeout=120, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [{"agent": "agent-0", "n": 1}, {"agent": "agent-1", "n": 1},
                                      {"agent": "agent-2", "n": 1}]


def test_no_lake_at_a_prefix_says_so(s3_lake: str) -> None:
    with pytest.raises(QueryError, match="no lake at s3://.*start the collector first"):
        open_lake(s3_lake)


def _journal_state(lk: Lake, complete: bool) -> int:
    """A partition caught mid-compaction: its journal, all inputs, and all (``complete``)
    or one of the two planned outputs. Returns the rows a reader must count."""
    fs = lk.fs
    part = fs.path("spans", "date=2025-03-14")
    inputs = sorted(n for n in fs.files(part) if n.startswith("part-"))
    merged = fs.read_parquet(f"{part}/{inputs[0]}")
    fs.write_json(f"{part}/_journal-0099.json", {"inputs": inputs, "outputs": ["compact-0099-0.parquet",
                                                                              "compact-0099-1.parquet"]})
    fs.write_parquet(merged, f"{part}/compact-0099-0.parquet")
    if complete:
        fs.write_parquet(merged.slice(0, 0), f"{part}/compact-0099-1.parquet")
    return merged.num_rows


@pytest.mark.parametrize("complete", [False, True])
def test_a_reader_counts_each_row_once_whatever_moment_of_a_compaction_it_lists(s3_lake: str, complete: bool) -> None:
    lk = Lake(s3_lake)
    lk.init()
    _fill(lk, 3)
    with open_lake(s3_lake) as gw:
        total = gw.query("SELECT count(*) FROM spans").rows[0][0]
        output_rows = _journal_state(lk, complete)
        rows_now = gw.query("SELECT count(*) FROM spans").rows[0][0]
    # an incomplete merge: inputs counted, its output not; a complete one: the output
    # (the first input's rows only, here) instead of all the inputs of that partition
    day_rows = 3 * 8  # per batch: agent, llm, tool and 5 spans on the 14th; 5 more on the 15th
    assert rows_now == (total if not complete else total - day_rows + output_rows)
    assert sum(lk.fs.parquet_file(f.path).metadata.num_rows for f in data_files(lk.fs, SPANS)) == rows_now


def test_a_reader_during_compactions_in_a_bucket_never_counts_twice(s3_lake: str) -> None:
    lk = Lake(s3_lake)
    lk.init()
    _fill(lk, 16)
    expected = _count(s3_lake)
    seen: list[int] = []
    errors: list[str] = []
    done = threading.Event()

    reading = threading.Event()

    def read() -> None:
        with open_lake(s3_lake) as gw:
            while not done.is_set():
                try:
                    seen.append(gw.query("SELECT count(*) FROM spans").rows[0][0])
                except QueryError as exc:
                    errors.append(str(exc))
                reading.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert reading.wait(120)  # its first count done: the rest run while the merges do
    merged = 0
    try:
        for below in range(3, 18):  # one or two more batches per run: small merges, often
            merged += lk.compact("spans", below_batch_id=f"{below:04d}", min_files=2)
    finally:
        done.set()
        reader.join()
    assert errors == [], errors
    assert merged > 32 and len(data_files(lk.fs, SPANS)) < 8
    assert seen and set(seen) == {expected}, (expected, sorted(set(seen)))


_COMPACT_FOREVER = """
import sys
from otelbench.storage.lake import Lake
lake = Lake(sys.argv[1], owner=sys.argv[2])
print("ready", flush=True)
lake.compact("spans", below_batch_id="9999", min_files=2, target_rows=40)
print("done", flush=True)
"""


@pytest.mark.slow
def test_kill_9_mid_compaction_in_a_bucket_then_recovery_keeps_every_row_once(s3_lake: str) -> None:
    rng = random.Random(7)
    mid_merge = 0
    for attempt in range(4):
        location = f"{s3_lake}-{attempt}"
        lk = Lake(location, owner="a")
        lk.init()
        _fill(lk, 14, owner="a")
        expected = _count(location)
        proc = subprocess.Popen([sys.executable, "-c", _COMPACT_FOREVER, location, "a"], stdout=subprocess.PIPE,
                                text=True, env=os.environ)
        assert proc.stdout.readline().strip() == "ready"
        # kill it at a random moment once its merge has begun (its journal is in the bucket):
        # a fixed delay caught nothing on a loaded machine, where the merge starts later
        deadline = time.monotonic() + 60
        while not any(n.startswith("_journal") for n in _names(lk)) and proc.poll() is None:
            assert time.monotonic() < deadline, "the compaction never began"
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _count(location) == expected  # readers apply the journal a crash left
        mid_merge += any(n.startswith("_journal") for n in _names(lk))
        Lake(location, owner="a").init()  # what a restarted collector does first
        assert not any(n.startswith("_journal") for n in _names(lk))
        lk.compact("spans", below_batch_id="9999", min_files=2, target_rows=40)
        with open_lake(location) as gw:
            assert gw.query("SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans").rows == [
                (expected, expected)]
    assert mid_merge >= 2  # most kills caught a merge half-done (its journal in the bucket)


def _names(lk: Lake) -> list[str]:
    return [p.rsplit("/", 1)[1] for p, _, _ in lk.fs.walk(lk.fs.path("spans"))]


def test_collectors_sharing_a_bucket_compact_their_own_files_and_drop_each_others_repeats(s3_lake: str) -> None:
    a, b = Lake(s3_lake, owner="a"), Lake(s3_lake, owner="b")
    a.init()
    _fill(a, 6, owner="a")
    _fill(b, 6, owner="b")  # the same traces and spans: every span re-sent to the other collector
    b.write_batch("0007_0_b", batch(spans=[span(99, 1)]))  # and one only b has
    assert _count(s3_lake) == 2 * 6 * 13 + 1
    assert b.compact("spans", below_batch_id="9999", min_files=2) == 13
    assert {owner_of(f.batch_id) for f in data_files(b.fs, SPANS)} == {"a", "b"}
    assert _count(s3_lake) == 6 * 13 + 1  # b dropped what a holds
    assert a.compact("spans", below_batch_id="9999", min_files=2) == 12
    assert _count(s3_lake) == 6 * 13 + 1  # a keeps everything it holds
    # a collector settles only its own journals: b's half-done merge is not a's to undo
    part = b.fs.path("spans", "date=2025-03-14")
    b.fs.write_json(f"{part}/_journal-0008_0_b.json", {"inputs": [], "outputs": ["compact-0008_0_b-0.parquet"]})
    a.init()
    assert "_journal-0008_0_b.json" in b.fs.files(part)
    b.init()
    assert "_journal-0008_0_b.json" not in b.fs.files(part)


def test_discard_after_a_crash_touches_only_the_collectors_own_files(s3_lake: str) -> None:
    a, b = Lake(s3_lake, owner="a"), Lake(s3_lake, owner="b")
    a.init()
    _fill(a, 3, owner="a")
    _fill(b, 3, owner="b")
    assert b.discard_after("0002_0_b", suffix="_0_b") == 4  # batches 2 and 3, two days each
    assert sorted({f.batch_id for f in data_files(a.fs, SPANS)}) == ["0001_0_a", "0001_0_b", "0002_0_a", "0003_0_a"]


def test_locations_and_options_are_checked_with_a_reason(monkeypatch) -> None:
    with pytest.raises(LakeError, match="collector id"):
        Lake("s3://lakes/x", owner="Bad-Id")
    with pytest.raises(LakeLocationError, match="no bucket"):
        open_fs("s3:///prefix")
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_DEFAULT_REGION": "eu-west-3",
           "AWS_S3_ADDRESSING_STYLE": "path"}
    assert S3Options.from_env(env) == S3Options("http://127.0.0.1:9", "eu-west-3", True)
    assert S3Options.from_env({**env, "AWS_ENDPOINT_URL_S3": "https://s3.example", "AWS_REGION": "us-west-2"}) == \
        S3Options("https://s3.example", "us-west-2", True)
    with pytest.raises(LakeLocationError, match="AWS_S3_ADDRESSING_STYLE"):
        S3Options.from_env({"AWS_S3_ADDRESSING_STYLE": "sideways"})
    with pytest.raises(LakeLocationError, match="S3 endpoint"):
        S3Options("ftp://host").filesystem()
    fs = ObjectLakeFS("s3://lakes/some/prefix/", S3Options.from_env(env))
    assert (fs.root, fs.location, fs.uri(fs.path("spans"))) == (
        "lakes/some/prefix", "s3://lakes/some/prefix", "s3://lakes/some/prefix/spans")


def test_an_unreachable_bucket_is_a_clear_error(monkeypatch) -> None:
    from otelbench.testing.serve import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(OSError):
        open_lake("s3://lakes/nowhere")
