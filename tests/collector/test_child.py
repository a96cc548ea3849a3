"""The collector's child processes (collector.child): a real ``python -m collector.child``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from collector.child import ARROW_ALLOCATOR_ENV, Child


def report_pool(path: str) -> None:
    """A child's target: which pool Arrow allocates from, and with what jemalloc settings."""
    import pyarrow as pa

    Path(path).write_text(f"{pa.default_memory_pool().backend_name} {os.environ.get('JE_ARROW_MALLOC_CONF')}")


def _run(tmp_path: Path, env: dict[str, str] | None = None) -> str:
    out = tmp_path / "pool.txt"
    child = Child("tests.collector.test_child:report_pool", (str(out),), name="otelbench-test", env=env)
    child.env["PYTHONPATH"] += os.pathsep + str(Path(__file__).resolve().parents[2])
    child.start()
    child.join(60)
    assert child.exitcode == 0
    return out.read_text()


@pytest.mark.skipif(sys.platform != "linux", reason="the jemalloc pool is chosen on Linux only")
def test_a_child_allocates_from_arrows_jemalloc_pool(tmp_path, monkeypatch):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.delenv("JE_ARROW_MALLOC_CONF", raising=False)
    assert ARROW_ALLOCATOR_ENV == {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}
    assert _run(tmp_path) == "jemalloc None"
    conf = "dirty_decay_ms:100,muzzy_decay_ms:0"  # what the compactor adds (collector.compactor)
    assert _run(tmp_path, env={**os.environ, "JE_ARROW_MALLOC_CONF": conf}) == f"jemalloc {conf}"


def test_the_users_allocator_choice_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "system")
    monkeypatch.setenv("JE_ARROW_MALLOC_CONF", "dirty_decay_ms:5000")
    assert _run(tmp_path) == "system dirty_decay_ms:5000"
    assert _run(tmp_path, env={**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}).startswith("mimalloc ")


def test_defaults_fill_in_and_a_jemalloc_option_list_is_merged_option_by_option():
    from collector.child import with_defaults

    defaults = {"MALLOC_TOP_PAD_": "64", "_RJEM_MALLOC_CONF": "narenas:1"}
    assert with_defaults({}, defaults) == defaults
    assert with_defaults({"MALLOC_TOP_PAD_": "4096"}, defaults)["MALLOC_TOP_PAD_"] == "4096"  # the user's
    # what importing polars leaves in the environment: ours first, theirs after (a later option wins)
    env = with_defaults({"_RJEM_MALLOC_CONF": "dirty_decay_ms:500,muzzy_decay_ms:1000"}, defaults)
    assert env["_RJEM_MALLOC_CONF"] == "narenas:1,dirty_decay_ms:500,muzzy_decay_ms:1000"
    assert with_defaults({"_RJEM_MALLOC_CONF": "narenas:1"}, defaults)["_RJEM_MALLOC_CONF"] == "narenas:1"
