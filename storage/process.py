"""Our own processes: how one is started so that it finds our packages and ends with its
parent, and a call into ``python -m MODULE`` that returns its result.

A compaction run is split over short-lived processes (``storage.plan``: DuckDB plans the
merges in one process, pyarrow streams the rows in another), and the collector starts
long-lived ones (``collector.child``); the bench runner starts a model server. Each needs
the same few things, here once. Light on purpose — the standard library only — so that
the collector's compactor can call its plan process before it loads pyarrow.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

ROOT = str(Path(__file__).resolve().parents[1])  # where our packages live
_PR_SET_PDEATHSIG = 1


def with_root_on_path(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with our packages' folder first on ``PYTHONPATH``: a ``python -m`` child
    finds them from any working directory, installed or not."""
    path = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": ROOT + (os.pathsep + path if path else "")}


def parent_death_signal(sig: int = signal.SIGKILL) -> None:
    """Linux: ``sig`` is sent to this process when the thread that started it ends, even
    by SIGKILL, so a killed collector or bench run leaves nothing behind. Elsewhere,
    nothing. Safe in a ``preexec_fn`` (no allocation but ctypes' own)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)
    except (OSError, AttributeError):
        pass


def die_with_parent(parent_pid: int) -> None:
    """In a child: SIGKILL when ``parent_pid`` dies, and exit now if it already has (it
    died before the signal was asked for: we were handed to another parent)."""
    parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)


def without_numpy() -> None:
    """In a process of ours that needs no numpy (a compaction run's two halves): keep it
    from loading. pyarrow imports numpy whenever it can (~11 MiB of a process's RSS, 6 of
    them its own memory), and works without it; a later ``import numpy`` raises
    ImportError. Must run before pyarrow is imported."""
    if "pyarrow" in sys.modules:
        raise RuntimeError("without_numpy() must run before pyarrow is imported")
    sys.modules.setdefault("numpy", None)  # type: ignore[arg-type]


def call(module: str, request: Any, what: str) -> Any:
    """``python -m module`` with ``request`` (pickled, over its stdin); what it answered
    (``answer`` in that process, over its stdout). Its stderr is ours; it dies with us.
    Raises ``RuntimeError`` when it fails: "``what`` failed (exit code N)"."""
    done = subprocess.run([sys.executable, "-m", module], env=with_root_on_path(os.environ), stdout=subprocess.PIPE,
                          input=pickle.dumps((os.getpid(), request)))
    if done.returncode:
        raise RuntimeError(f"{what} failed (exit code {done.returncode})")
    return pickle.loads(done.stdout)


def answer(handle: Callable[[Any], Any]) -> None:
    """The called side of ``call`` (a module's ``__main__``): read the request, end with
    the caller, write what ``handle(request)`` returns. ``handle``'s values must be made
    by an importable module, not ``__main__``, or the caller cannot unpickle them."""
    parent_pid, request = pickle.load(sys.stdin.buffer)
    die_with_parent(parent_pid)
    sys.stdout.buffer.write(pickle.dumps(handle(request)))
