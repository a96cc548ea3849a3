"""Our own processes, the one launcher: how one is started so that it finds our packages
and ends with its parent, a call into ``python -m MODULE`` that returns its result, and
``Child``, a long-lived ``module:function(*args)`` in a process of its own.

A compaction run is split over short-lived processes (``storage.plan``: DuckDB plans the
merges in one process, pyarrow streams the rows in another); the collector's flusher
workers and compactor runs, and under ``otelbench serve`` the web UI and the scheduled
processors, are ``Child`` processes; the bench runner starts a model server. Each needs
the same few things, here once. Light on purpose — the standard library only — so that
the collector's compactor can call its plan process before it loads pyarrow.

Not multiprocessing: its spawn start method launches a resource-tracker process along
with the first child — a bare interpreter, ~13 MiB RSS for the collector's whole life —
to clean up named semaphores and shared memory segments, which the collector does not
use (its shared state is a file mapping, ``collector.state``). ``Child`` runs
``module:function(*args)`` in ``python -m otelbench.storage.process``, the call pickled over
stdin, and offers the few ``multiprocessing.Process`` methods the collector uses.
"""

from __future__ import annotations

import importlib
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

# the folder the ``otelbench`` package is found in: a checkout's root (``storage/`` beside
# ``otelbench/``) or site-packages (``otelbench/storage/``)
ROOT = str(next(p for p in Path(__file__).resolve().parents[1:3] if (p / "otelbench" / "__init__.py").is_file()))
_PR_SET_PDEATHSIG = 1

# Arrow's memory in every child comes from its jemalloc pool: Arrow's default, mimalloc,
# kept more of each batch's short-lived buffers (docs/performance.md). Allocators read
# this once, at start-up, so it goes in the environment; a user's own value wins. Linux
# only: other platforms' pyarrow builds may lack jemalloc.
ARROW_ALLOCATOR_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"} if sys.platform == "linux" else {}


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


def with_defaults(env: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str]:
    """``env`` with ``defaults`` where it lacks them. A jemalloc option list (``*MALLOC_CONF``)
    that both set is merged option by option, ``env``'s last, so that they win where both
    name an option: importing polars puts its own decay options in ``_RJEM_MALLOC_CONF``,
    and a receiver (or a test) that had imported it would otherwise hand its children
    polars' options instead of the flusher's."""
    merged = {**defaults, **env}
    for name, ours in defaults.items():
        theirs = env.get(name)
        if theirs and theirs != ours and name.endswith("MALLOC_CONF"):
            merged[name] = f"{ours},{theirs}"  # jemalloc reads the list in order: a later option wins
    return merged


class Child:
    """``module:function(*args)`` in a process of its own (``python -m otelbench.storage.process NAME``)."""

    def __init__(self, target: str, args: tuple[Any, ...], *, name: str, pass_fds: tuple[int, ...] = (),
                 env: Mapping[str, str] | None = None, defaults: Mapping[str, str] | None = None) -> None:
        """``env``: its environment (None: ours); ``defaults``: variables it gets where ``env``
        lacks them (a role's allocator settings), over ``ARROW_ALLOCATOR_ENV`` (see
        ``with_defaults``)."""
        self.target, self.args, self.name = target, args, name
        self.pass_fds = pass_fds
        self.env = with_root_on_path(with_defaults(os.environ if env is None else env,
                                                   {**ARROW_ALLOCATOR_ENV, **(defaults or {})}))
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-m", "otelbench.storage.process", self.name], stdin=subprocess.PIPE,
                                      pass_fds=self.pass_fds, env=self.env)
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(pickle.dumps((self.target, self.args)))
            self._proc.stdin.close()
        except BrokenPipeError:  # it died at once: exitcode tells
            pass

    @property
    def exitcode(self) -> int | None:
        """None while it runs; negative: the signal that ended it (as multiprocessing)."""
        return self._proc.poll() if self._proc else None

    def is_alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def join(self, timeout: float | None = None) -> None:
        if self._proc is None:
            return
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def terminate(self) -> None:
        if self.is_alive():
            self._proc.terminate()  # type: ignore[union-attr]

    def kill(self) -> None:
        if self.is_alive():
            self._proc.kill()  # type: ignore[union-attr]


def _run_child() -> None:
    """The started side of ``Child``: run the pickled call."""
    target, args = pickle.load(sys.stdin.buffer)
    module, function = target.split(":")
    getattr(importlib.import_module(module), function)(*args)


if __name__ == "__main__":
    _run_child()
