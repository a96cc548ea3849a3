"""``otelbench model serve``: run the embedded model behind an OpenAI-compatible API."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "model",
        help="run the embedded model (SmolLM2-135M on llama.cpp)",
        description="Run the embedded model, SmolLM2-135M-Instruct Q4_1, "
        "with llama-cpp-python's OpenAI-compatible server.",
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
    serve.add_argument("--model", type=Path, default=None, help="a GGUF file to serve instead of the embedded model")
    serve.set_defaults(func=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    from bench_runner.llama_server import EmbeddedModelMissing, LlamaServer, LlamaServerError

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
        print(f"starting {server.model_path.name} on port {server.port} ...", file=sys.stderr, flush=True)
        with server:
            print(f"base_url: {server.base_url}")
            print(f"model:    {server.model_id}", flush=True)
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
    except (EmbeddedModelMissing, LlamaServerError) as exc:
        print(f"otelbench model serve: {exc}", file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
