"""Our own processes (storage.process): a real ``python -m`` child, answered and failed,
one whose caller is killed, and a ``Child`` (the collector's flusher and compactor) with
its allocator settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from otelbench.storage import process

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def modules(tmp_path: Path, monkeypatch) -> Path:
    """A folder of small modules on the children's PYTHONPATH (after ours)."""
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    (tmp_path / "echo_answer.py").write_text(textwrap.dedent("""
        import os
        from otelbench.storage import process
        if __name__ == "__main__":
            process.answer(lambda request: {"request": request, "parent": os.getppid(), "pid": os.getpid()})
    """))
    (tmp_path / "failing_answer.py").write_text("raise SystemExit(3)\n")
    (tmp_path / "slow_answer.py").write_text(textwrap.dedent("""
        import os, sys, time
        from otelbench.storage import process
        def handle(path):
            open(path, "w").write(str(os.getpid()))
            time.sleep(60)
        if __name__ == "__main__":
            process.answer(handle)
    """))
    return tmp_path


def test_a_call_returns_what_the_child_answered(modules: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # our packages are found from any working directory
    got = process.call("echo_answer", ("run", [1, 2], {"a": None}), "echoing")
    assert got["request"] == ("run", [1, 2], {"a": None})
    assert got["parent"] == os.getpid() and got["pid"] != os.getpid()


def test_a_failed_child_raises_with_what_it_was_and_its_exit_code(modules: Path) -> None:
    with pytest.raises(RuntimeError, match=r"^the test's process failed \(exit code 3\)$"):
        process.call("failing_answer", None, "the test's process")


def test_a_called_process_ends_with_its_caller(modules: Path, tmp_path: Path) -> None:
    """The caller killed with SIGKILL (a compactor, say) takes its plan process with it."""
    marker = tmp_path / "child.pid"
    caller = subprocess.Popen([sys.executable, "-c",
                               f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                               "from storage import process\n"
                               f"process.call('slow_answer', {str(marker)!r}, 'sleeping')"],
                              env={**os.environ, "PYTHONPATH": str(modules)})
    try:
        deadline = time.monotonic() + 30
        while not (marker.exists() and marker.read_text()):
            assert time.monotonic() < deadline, "the called process never started"
            time.sleep(0.05)
        child = int(marker.read_text())
        os.kill(caller.pid, signal.SIGKILL)
        caller.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child):
            assert time.monotonic() < deadline, "the called process outlived its caller"
            time.sleep(0.05)
    finally:
        caller.kill()


def _alive(pid: int) -> bool:
    """Running (a zombie is not: it waits only for the reaper that adopted it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_with_root_on_path_puts_ours_first_and_keeps_the_users() -> None:
    env = process.with_root_on_path({"PYTHONPATH": "/somewhere", "X": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/somewhere"] and env["X"] == "1"
    assert process.with_root_on_path({})["PYTHONPATH"] == str(ROOT)


def report_pool(path: str) -> None:
    """A child's target: which pool Arrow allocates from, and with what jemalloc settings."""
    import pyarrow as pa

    Path(path).write_text(f"{pa.default_memory_pool().backend_name} {os.environ.get('JE_ARROW_MALLOC_CONF')}")


def _run(tmp_path: Path, env: dict[str, str] | None = None) -> str:
    out = tmp_path / "pool.txt"
    child = process.Child("tests.storage.test_process:report_pool", (str(out),), name="otelbench-test", env=env)
    child.env["PYTHONPATH"] += os.pathsep + str(Path(__file__).resolve().parents[2])
    child.start()
    child.join(60)
    assert child.exitcode == 0
    return out.read_text()


@pytest.mark.skipif(sys.platform != "linux", reason="the jemalloc pool is chosen on Linux only")
def test_a_child_allocates_from_arrows_jemalloc_pool(tmp_path, monkeypatch):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.delenv("JE_ARROW_MALLOC_CONF", raising=False)
    assert process.ARROW_ALLOCATOR_ENV == {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}
    assert _run(tmp_path) == "jemalloc None"
    conf = "dirty_decay_ms:100,muzzy_decay_ms:0"  # what the compactor adds (collector.compactor)
    assert _run(tmp_path, env={**os.environ, "JE_ARROW_MALLOC_CONF": conf}) == f"jemalloc {conf}"


def test_the_users_allocator_choice_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "system")
    monkeypatch.setenv("JE_ARROW_MALLOC_CONF", "dirty_decay_ms:5000")
    assert _run(tmp_path) == "system dirty_decay_ms:5000"
    assert _run(tmp_path, env={**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}).startswith("mimalloc ")


def test_defaults_fill_in_and_a_jemalloc_option_list_is_merged_option_by_option():
    with_defaults = process.with_defaults
    defaults = {"MALLOC_TOP_PAD_": "64", "_RJEM_MALLOC_CONF": "narenas:1"}
    assert with_defaults({}, defaults) == defaults
    assert with_defaults({"MALLOC_TOP_PAD_": "4096"}, defaults)["MALLOC_TOP_PAD_"] == "4096"  # the user's
    # what importing polars leaves in the environment: ours first, theirs after (a later option wins)
    env = with_defaults({"_RJEM_MALLOC_CONF": "dirty_decay_ms:500,muzzy_decay_ms:1000"}, defaults)
    assert env["_RJEM_MALLOC_CONF"] == "narenas:1,dirty_decay_ms:500,muzzy_decay_ms:1000"
    assert with_defaults({"_RJEM_MALLOC_CONF": "narenas:1"}, defaults)["_RJEM_MALLOC_CONF"] == "narenas:1"
