"""The collector's child processes (flusher workers, compactor runs; under ``otelbench serve``
also the web UI and the scheduled processors), started with ``subprocess``.

Not multiprocessing: its spawn start method launches a resource-tracker process along
with the first child — a bare interpreter, ~13 MiB RSS for the collector's whole life —
to clean up named semaphores and shared memory segments, which the collector does not
use (its shared state is a file mapping, ``collector.state``). ``Child`` runs
``module:function(*args)`` in ``python -m collector.child``, the call pickled over
stdin, and offers the few ``multiprocessing.Process`` methods the collector uses.
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
from typing import Any, Mapping

from storage.process import with_root_on_path

# Arrow's memory in every child comes from its jemalloc pool: Arrow's default, mimalloc,
# kept more of each batch's short-lived buffers (a flusher: 318 -> 300 MiB summed RSS of
# the ingest path, the same spans/s; the compactor: collector.compactor). Allocators read
# this once, at start-up, so it goes in the environment; a user's own value wins. Linux
# only: other platforms' pyarrow builds may lack jemalloc.
ARROW_ALLOCATOR_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"} if sys.platform == "linux" else {}


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
        self._proc = subprocess.Popen([sys.executable, "-m", "collector.child", self.name], stdin=subprocess.PIPE,
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


def _main() -> None:
    target, args = pickle.load(sys.stdin.buffer)
    module, function = target.split(":")
    getattr(importlib.import_module(module), function)(*args)


if __name__ == "__main__":
    _main()
