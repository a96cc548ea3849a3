"""storage.fs: the lake's one filesystem seam, on a real folder."""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from otelbench.storage.fs import LakeFS, LakeLocationError
from otelbench.storage.location import open_fs


def test_local_paths_and_file_uris(tmp_path: Path) -> None:
    assert open_fs(tmp_path).root == str(tmp_path)
    assert open_fs(f"file://{tmp_path}").root == str(tmp_path)
    assert open_fs("relative/lake").root == str(Path("relative/lake").absolute())


@pytest.mark.parametrize("location", ["gs://b/l", "https://host/lake"])
def test_other_schemes_are_refused_with_a_reason(location: str) -> None:
    with pytest.raises(LakeLocationError, match="a local folder or s3://bucket/prefix"):
        open_fs(location)


@pytest.mark.parametrize("location", ["s3://", "s3:///x", "s3://b/p*", "s3://b/it's"])
def test_a_bad_bucket_location_is_refused_with_a_reason(location: str) -> None:
    with pytest.raises(LakeLocationError, match="lake location"):
        open_fs(location)


def test_listing_reading_writing(tmp_path: Path) -> None:
    fs = open_fs(tmp_path / "lake")
    assert fs.listdir(fs.path("nothing")) == []
    fs.makedirs(fs.path("t", "date=2025-01-01"))
    path = fs.path("t", "date=2025-01-01", "a.parquet")
    fs.write_parquet(pa.table({"x": [1, 2]}), path)
    fs.write_json(fs.path("_m.json"), {"k": 1}, indent=2)
    assert fs.listdir(fs.root) == [("_m.json", False), ("t", True)]
    assert fs.folders(fs.path("t")) == ["date=2025-01-01"] and fs.files(fs.path("t", "date=2025-01-01")) == ["a.parquet"]
    assert fs.read_parquet(path).column("x").to_pylist() == [1, 2] and fs.read_json(fs.path("_m.json")) == {"k": 1}
    assert fs.parquet_file(path).metadata.num_rows == 2 and fs.parquet_schema(path).names == ["x"]
    fs.delete(path)
    fs.delete(path, missing_ok=True)
    with pytest.raises(FileNotFoundError):
        fs.delete(path)


def test_a_staged_file_is_invisible_until_published(tmp_path: Path) -> None:
    fs = open_fs(tmp_path)
    path = fs.path("b.parquet")
    with fs.parquet_writer(path, pa.schema([("x", pa.int64())])) as w:
        w.write_table(pa.table({"x": [1]}))
    fs.seal(path)
    assert fs.files(fs.root) == [".b.parquet.tmp"] and fs.is_staging(".b.parquet.tmp") and not fs.exists(path)
    fs.publish(path)
    assert fs.files(fs.root) == ["b.parquet"]
    fs.discard(path)  # nothing staged: no error
    assert fs.files(fs.root) == ["b.parquet"]


def _hold(root: str, path: str, held: multiprocessing.Event, release: multiprocessing.Event) -> None:
    with LakeFS(root).lock(path):
        held.set()
        release.wait(30)


@contextlib.contextmanager
def _held_elsewhere(fs: LakeFS, path: str) -> Iterator[Any]:
    """``path``'s lock held by another process for the block; yields the event that
    releases it (set on leaving, then that process is joined)."""
    ctx = multiprocessing.get_context("spawn")
    held, release = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_hold, args=(fs.root, path, held, release))
    other.start()
    try:
        assert held.wait(30)
        yield release
    finally:
        release.set()
        other.join(30)


def test_the_lock_excludes_other_processes(tmp_path: Path) -> None:
    fs = open_fs(tmp_path)
    path = fs.path("_commit.lock")
    got = []
    with _held_elsewhere(fs, path) as release:

        def take() -> None:
            with fs.lock(path):
                got.append(release.is_set())

        import threading

        taker = threading.Thread(target=take)
        taker.start()
        taker.join(0.5)  # still waiting: the other process holds it
        assert got == [] and taker.is_alive()
    taker.join(30)
    assert got == [True]


def test_a_lock_not_waited_for_says_it_is_busy(tmp_path: Path) -> None:
    from otelbench.storage.fs import LakeBusy

    fs = open_fs(tmp_path)
    path = fs.path("_processors.lock")
    with _held_elsewhere(fs, path):
        with pytest.raises(LakeBusy, match="held by another process"):
            with fs.lock(path, wait=False):
                pass
    with fs.lock(path, wait=False):  # free again once the holder is gone
        pass
