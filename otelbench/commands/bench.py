"""``otelbench bench MODEL [MODEL…]`` (also ``python -m otelbench.bench_runner``): benchmark local models
behind any OpenAI-compatible server — speed, ability, agent fitness, plausibility."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from otelbench.collector import DEFAULT_URL

DEFAULT_BASE_URL = "http://localhost:1234/v1"  # LM Studio's default
DEFAULT_OUT = "~/benchmarks/"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmark local models behind an OpenAI-compatible server",
                       description=__doc__)
    configure(p)


def configure(p: argparse.ArgumentParser) -> None:
    env = os.environ  # read once, here
    p.add_argument("models", nargs="*", metavar="MODEL", help="model ids as the server names them")
    p.add_argument("--base-url", default=env.get("OPENAI_BASE_URL", DEFAULT_BASE_URL),
                   help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL, else %(default)s)")
    p.add_argument("--api-key", default=env.get("OPENAI_API_KEY", "local"), help="any string works locally")
    p.add_argument("--list", action="store_true", help="list the server's models with their GGUF status")
    p.add_argument("--check", action="store_true", help="preflight: server, models, GGUF, OTLP endpoint")
    p.add_argument("--quick", action="store_true", help="one timed run per case, a subset of tests")
    p.add_argument("--speed-only", action="store_true", help="skip the ability and agent-fitness suite")
    p.add_argument("--runs", type=int, default=5, help="timed runs per speed case (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="warm-up runs per case, not counted (default: %(default)s)")
    p.add_argument("--concurrency", default="", help="load levels, e.g. 1,2,4,8 (aggregate throughput, latency)")
    p.add_argument("--out", default=DEFAULT_OUT, help="folder for result JSON files (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the result JSON")
    p.add_argument("--local", action="store_true", help="benchmark the embedded SmolLM2 on our own llama.cpp server")
    # the model stores' own variables, read here once and passed down as search folders
    extra = [Path(env[v]).expanduser() for v in ("OLLAMA_MODELS", "LLAMA_CACHE", "HF_HOME") if env.get(v)]
    p.add_argument("--models-dir", action="append", default=extra, type=Path,
                   help="extra folder to search for GGUF files (also $OLLAMA_MODELS, $LLAMA_CACHE, $HF_HOME)")
    p.add_argument("--no-otel", action="store_true", help="do not export spans")
    p.add_argument("--otlp-endpoint", default=env.get("OTEL_EXPORTER_OTLP_ENDPOINT", DEFAULT_URL),
                   help="where spans go (default: $OTEL_EXPORTER_OTLP_ENDPOINT, else %(default)s)")
    p.add_argument("--compare", nargs="*", metavar="FILE", default=None,
                   help="one table across saved results (default: every JSON in --out)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The run itself: ``otelbench.bench_runner.bench_console``."""
    from otelbench.bench_runner.bench_console import BenchOptions, run as bench

    return bench(BenchOptions(
        base_url=args.base_url, api_key=args.api_key, out=Path(args.out).expanduser(), models=tuple(args.models),
        list_models=args.list, check=args.check,
        compare=None if args.compare is None else tuple(Path(f) for f in args.compare), local=args.local,
        quick=args.quick, speed_only=args.speed_only, runs=args.runs, warmup=args.warmup,
        concurrency=args.concurrency, print_json=args.json, models_dirs=tuple(args.models_dir),
        otlp_endpoint=None if args.no_otel else args.otlp_endpoint))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m otelbench.bench_runner", description=__doc__)
    configure(p)
    args = p.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
