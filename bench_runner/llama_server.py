"""The embedded model: SmolLM2-135M served by llama.cpp's own ``llama-server``.

``LlamaServer`` runs the binary (found by ``llama_files``) in its own process group on a
free port, waits until the model is loaded, and on exit stops that group and nothing else.

The server decodes ``parallel`` requests at once (continuous batching) in one KV cache of
``n_ctx`` tokens that the slots share (``--kv-unified``), so one long prompt may use the
whole context. Each model's id is its file name without ``.gguf`` (``--alias``); the
server's ``/props`` says which file it loaded, where the bench runner reads the GGUF header.

Given several GGUF files, it starts ``llama-server`` in router mode with a preset per
model and ``--models-max 1``: the server lists every model, keeps one loaded (the first,
at startup) and swaps it for another when a request names that one — the way to
benchmark several models one after another with one model in memory at a time.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import httpx

from otelbench.bench_runner.llama_files import (
    EMBEDDED_MODEL_FILE,
    EmbeddedModelMissing,
    LlamaServerError,
    LlamaServerMissing,
    default_threads,
    find_embedded_model,
    find_llama_bench,
    find_llama_server,
    model_name,
)
from otelbench.storage.process import parent_death_signal

DEFAULT_HOST = "127.0.0.1"
# The KV cache shared by the slots, in tokens: a 2,000-token judge prompt on each of four
# slots at once. SmolLM2-135M holds ~23 KB a token (30 layers, K and V of 3 x 64 at f16):
# ~180 MiB, the server ~320 MiB in all (docs/performance.md).
DEFAULT_N_CTX = 8192
DEFAULT_PARALLEL = 4  # requests decoded at once: the judge's, the suite's and the demo's
OMP_SPIN_COUNT = 1000  # see server_env
# llama-server moves an idle slot's prompt state into a RAM cache of this size when a new
# request comes, and so frees its cells of the shared KV cache; without the cache (0) an
# idle slot keeps them, and after one 6,400-token prompt four 1,600-token requests at once
# failed with "Context size has been exceeded". Its default, 8 GiB, would let the server
# grow far past the model's size: 64 MiB kept SmolLM2's server at ~340 MiB (docs/performance.md).
DEFAULT_CACHE_RAM_MIB = 32
DEFAULT_START_TIMEOUT_S = 120.0
DEFAULT_STOP_GRACE_S = 5.0
_POLL_INTERVAL_S = 0.1
_LOG_TAIL_BYTES = 4000
_WILDCARD_HOSTS = {"0.0.0.0", "::", ""}


def _die_with_parent() -> None:
    """In the child, before exec: Linux delivers SIGTERM to the server when we die, even
    by SIGKILL, so a crashed bench run never leaves a model server behind."""
    parent_death_signal(signal.SIGTERM)


def server_env() -> dict[str, str]:
    """The server's environment: ours, with OpenMP's spin before a thread sleeps at a barrier
    cut from 300,000 to 1,000 iterations unless you set your own. The decode of a small model
    passes hundreds of barriers a token; with another busy process on two cores, threads
    spinning for a descheduled one took SmolLM2 from ~115 to 2-8 tok/s, 1,000 spins to ~20,
    at no cost on an idle machine (docs/performance.md)."""
    env = dict(os.environ)
    if "OMP_WAIT_POLICY" not in env:
        env.setdefault("GOMP_SPINCOUNT", str(OMP_SPIN_COUNT))
    return env


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port the OS reports free right now (the server binds it a moment later)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _log_tail(path: Path, limit: int = _LOG_TAIL_BYTES) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _model_files(model: Path | str | Sequence[Path | str] | None) -> tuple[Path, ...]:
    if model is None:
        return (find_embedded_model(),)
    paths = (Path(model),) if isinstance(model, (str, os.PathLike)) else tuple(Path(m) for m in model)
    if not paths:
        raise ValueError("LlamaServer needs at least one model file")
    for path in paths:
        if not path.is_file():
            raise EmbeddedModelMissing(f"model file not found: {path}")
    if len({str(p) for p in paths}) != len(paths):
        raise ValueError(f"the same model file is given twice: {[str(p) for p in paths]}")
    names = [model_name(p) for p in paths]
    if len(set(names)) != len(names):
        raise ValueError(f"two model files share a name, which the server uses as their id: {[str(p) for p in paths]}")
    return paths


class LlamaServer:
    """``llama-server`` for one GGUF file, or several, as a context manager.

    >>> with LlamaServer() as server:  # doctest: +SKIP
    ...     OpenAI(base_url=server.base_url, api_key="none")
    >>> with LlamaServer([small, large]) as server:  # doctest: +SKIP
    ...     server.model_ids  # both files' names; `small` is loaded, `large` on first use
    """

    def __init__(
        self,
        model: Path | str | Sequence[Path | str] | None = None,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        n_ctx: int = DEFAULT_N_CTX,
        parallel: int = DEFAULT_PARALLEL,
        n_threads: int | None = None,
        cache_ram_mib: int = DEFAULT_CACHE_RAM_MIB,
        log_path: Path | str | None = None,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        stop_grace_s: float = DEFAULT_STOP_GRACE_S,
        extra_args: tuple[str, ...] = (),
        binary: Path | str | None = None,
    ) -> None:
        self.model_paths = _model_files(model)
        self.model_path = self.model_paths[0]  # the one loaded at startup
        self.host = host
        self.port = port or free_port(DEFAULT_HOST if host in _WILDCARD_HOSTS else host)
        if parallel < 1 or n_ctx < 1:
            raise ValueError("parallel and n_ctx must be at least 1")
        self.n_ctx = n_ctx
        self.parallel = parallel
        self.n_threads = n_threads or default_threads()
        self.cache_ram_mib = cache_ram_mib  # see DEFAULT_CACHE_RAM_MIB
        self.log_path = Path(log_path) if log_path is not None else None
        self.start_timeout_s = start_timeout_s
        self.stop_grace_s = stop_grace_s
        self.extra_args = tuple(extra_args)
        self.binary = Path(binary) if binary is not None else None
        self.model_id: str | None = None  # the model loaded at startup
        self.model_ids: tuple[str, ...] = ()  # every model the server offers, in the given order
        self.preset_path: Path | None = None  # the --models-preset, with several models
        self.startup_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # -- addresses ---------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8123/v1``."""
        host = DEFAULT_HOST if self.host in _WILDCARD_HOSTS else self.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return self.base_url[: -len("/v1")]

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and not self._exited()

    @property
    def router(self) -> bool:
        """Several models: one router process, a child server for the loaded model."""
        return len(self.model_paths) > 1

    def _settings(self) -> list[tuple[str, str | None]]:
        """The per-model settings, as (option, value) pairs (value None: a flag)."""
        return [
            ("ctx-size", str(self.n_ctx)),
            ("parallel", str(self.parallel)),
            ("kv-unified", None),
            ("threads", str(self.n_threads)),
            ("threads-batch", str(self.n_threads)),
            ("cache-ram", str(self.cache_ram_mib)),
            ("metrics", None),
            ("no-webui", None),
        ]

    def preset(self) -> str:
        """The router's ``--models-preset`` INI: one section per model, named by its id."""
        lines = ["version = 1", "", "[*]"]
        for key, value in self._settings():
            lines.append(f"{key} = {'true' if value is None else value}")
        for i, path in enumerate(self.model_paths):
            lines += ["", f"[{model_name(path)}]", f"model = {path}", f"load-on-startup = {'true' if i == 0 else 'false'}"]
        return "\n".join(lines) + "\n"

    def command(self) -> list[str]:
        binary = str(self.binary or find_llama_server())
        common = ["--host", self.host, "--port", str(self.port)]
        if self.router:
            if self.preset_path is None:
                raise LlamaServerError("the preset of a multi-model server is written by start()")
            return [binary, "--models-preset", str(self.preset_path), "--models-max", "1", *common, *self.extra_args]
        settings = [part for key, value in self._settings() for part in (f"--{key}", value) if part is not None]
        return [binary, "--model", str(self.model_path), "--alias", model_name(self.model_path), *common,
                *settings, *self.extra_args]

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> LlamaServer:
        """Start the server and block until ``/v1/models`` answers."""
        if self._proc is not None:
            raise LlamaServerError("this LlamaServer was already started")
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="otelbench-llama-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = [str(self.binary or find_llama_server())]  # fails here, before any file is written
        if self.router:
            fd, name = tempfile.mkstemp(prefix="otelbench-llama-", suffix=".ini")
            with os.fdopen(fd, "w") as fh:
                fh.write(self.preset())
            self.preset_path = Path(name)
        command = [*command, *self.command()[1:]]
        began = time.perf_counter()
        with self.log_path.open("wb") as log:
            # A new session makes the server the leader of its own process group, so
            # stop() can signal the group without touching the caller's processes, and a
            # Ctrl-C in the caller's terminal reaches the caller, which then stops it.
            try:
                self._proc = subprocess.Popen(
                    command,
                    env=server_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
            except BaseException:
                self.stop()  # removes the preset file; there is no process yet
                raise
        try:
            self.model_ids = self._wait_ready(began + self.start_timeout_s)
            self.model_id = self.model_ids[0]
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.perf_counter() - began
        return self

    def _ready(self, client: httpx.Client, first: str) -> bool:
        """A single server: ``/health`` answers 200 once its model is loaded (503 before).
        A router: ``/v1/models`` lists every model, the first ``loaded`` once it is."""
        if not self.router:
            return client.get(f"{self.root_url}/health").status_code == 200
        response = client.get(f"{self.base_url}/models")
        if response.status_code != 200:
            return False
        for entry in response.json().get("data") or []:
            if entry.get("id") == first:
                status = entry.get("status") or {}
                if status.get("failed"):
                    raise LlamaServerError(f"llama.cpp server could not load {first} (exit code "
                                           f"{status.get('exit_code')}); log {self.log_path}:\n{_log_tail(self.log_path)}")
                return status.get("value") == "loaded"
        return False

    def _wait_ready(self, deadline: float) -> tuple[str, ...]:
        """Poll until the model to load at startup is loaded; the ids of every model."""
        url = f"{self.base_url}/models"
        first = model_name(self.model_path)
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                if self._exited():
                    raise LlamaServerError(
                        f"llama.cpp server exited during startup ({self._exit_status()}); "
                        f"log {self.log_path}:\n{_log_tail(self.log_path)}"
                    )
                try:
                    if self._ready(client, first):
                        return tuple(model_name(p) for p in self.model_paths)
                except httpx.TransportError:
                    pass
                if time.perf_counter() >= deadline:
                    raise LlamaServerError(
                        f"llama.cpp server did not answer {url} within {self.start_timeout_s:.0f}s; "
                        f"log {self.log_path}:\n{_log_tail(self.log_path)}"
                    )
                time.sleep(_POLL_INTERVAL_S)

    def _exited(self) -> bool:
        """True once the server has exited, without reaping it.

        The unreaped (zombie) leader keeps its pid and process-group id reserved, so
        signalling the group in stop() can never reach a process that reused the id.
        """
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def _exit_status(self) -> str:
        proc = self._proc
        if proc is not None and proc.returncode is not None:
            return f"code {proc.returncode}"
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) if proc else None
        except ChildProcessError:
            info = None
        if info is None:
            return "status unknown"
        if info.si_code == os.CLD_EXITED:
            return f"code {info.si_status}"
        return f"signal {info.si_status}"

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL it after the grace period, reap."""
        if self.preset_path is not None:
            self.preset_path.unlink(missing_ok=True)
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        pgid = proc.pid  # start_new_session: the server leads its own group
        if not self._exited():
            self._signal_group(pgid, signal.SIGTERM)
            deadline = time.perf_counter() + self.stop_grace_s
            while not self._exited() and time.perf_counter() < deadline:
                time.sleep(_POLL_INTERVAL_S)
        # Still unreaped, so the group id is still ours: kill anything left in it
        # (the server itself if it ignored SIGTERM, or workers it spawned).
        self._signal_group(pgid, signal.SIGKILL)
        proc.wait()

    @staticmethod
    def _signal_group(pgid: int, sig: signal.Signals) -> None:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass

    def log_tail(self) -> str:
        return _log_tail(self.log_path) if self.log_path is not None else ""

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        names = ", ".join(repr(p.name) for p in self.model_paths)
        return f"LlamaServer({names}, {self.base_url}, pid={self.pid}, {state})"


__all__ = [
    "EMBEDDED_MODEL_FILE", "EmbeddedModelMissing", "LlamaServer", "LlamaServerError", "LlamaServerMissing",
    "default_threads", "find_embedded_model", "find_llama_bench", "find_llama_server", "free_port", "model_name",
]
