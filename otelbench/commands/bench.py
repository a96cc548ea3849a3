"""``otelbench bench MODEL [MODEL…]`` (also ``python -m otelbench.bench_runner``): benchmark local models
behind any OpenAI-compatible server — speed, ability, agent fitness, plausibility."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from otelbench.bench_runner import goodput
from otelbench.collector import DEFAULT_URL

DEFAULT_BASE_URL = "http://localhost:1234/v1"  # LM Studio's default
DEFAULT_OUT = "~/benchmarks/"
DEFAULT_SLO = "ttft_p95<=1s,e2e_p95<=10s"


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
    g = p.add_argument_group("goodput sweep", "instead of the bench: checked requests under rising load; "
                             "goodput = requests/s both within the SLO and passing their check (docs/bench.md)")
    g.add_argument("--goodput-rates", type=_typed(goodput.parse_rates), default=(), metavar="RATES",
                   help="Poisson arrival rates, requests/s, e.g. 0.5,1,2,4")
    g.add_argument("--goodput-concurrency", type=_typed(goodput.parse_concurrencies), default=(), metavar="N",
                   help="closed-loop client counts, e.g. 1,2,4")
    length = g.add_mutually_exclusive_group()
    length.add_argument("--goodput-requests", type=_typed(_positive_int), default=goodput.DEFAULT_REQUESTS, metavar="N",
                   help="requests per step (default: %(default)s)")
    length.add_argument("--goodput-duration", type=_typed(_positive_float), default=None, metavar="S",
                   help="seconds per step instead of a number of requests")
    g.add_argument("--goodput-cases", default="", metavar="TESTS",
                   help="core suite tests to send, e.g. count_stars,json_book (default: every test)")
    g.add_argument("--goodput-seed", type=int, default=goodput.DEFAULT_SEED, help="arrivals' seed (default: %(default)s)")
    g.add_argument("--slo", type=_typed(goodput.parse_slo), default=goodput.parse_slo(DEFAULT_SLO),
                   help=f"latency bounds, e.g. \"{DEFAULT_SLO}\" (metrics ttft, e2e, itl; ms or s)")
    g.add_argument("--min-pass", type=_typed(_share), default=0.9, metavar="SHARE",
                   help="least pass share for a step to hold, 0-1 (default: %(default)s)")
    p.set_defaults(func=run)


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` as an argparse type: its ValueError becomes argparse's usage error (exit 2)."""

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return typed


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError(f"want a whole number >= 1 (got {text!r})")
    return int(text)


def _positive_float(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise ValueError(f"want a number of seconds > 0 (got {text!r})")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError(f"want a share between 0 and 1 (got {text!r})")
    return value


def run(args: argparse.Namespace) -> int:
    """The run itself: ``otelbench.bench_runner.bench_console``."""
    from otelbench.bench_runner.bench_console import BenchOptions, run as bench

    return bench(BenchOptions(
        base_url=args.base_url, api_key=args.api_key, out=Path(args.out).expanduser(), models=tuple(args.models),
        list_models=args.list, check=args.check,
        compare=None if args.compare is None else tuple(Path(f) for f in args.compare), local=args.local,
        quick=args.quick, speed_only=args.speed_only, runs=args.runs, warmup=args.warmup,
        concurrency=args.concurrency, print_json=args.json, models_dirs=tuple(args.models_dir),
        otlp_endpoint=None if args.no_otel else args.otlp_endpoint, goodput=_plan(args),
        goodput_cases=tuple(c.strip() for c in args.goodput_cases.split(",") if c.strip())))


def _plan(args: argparse.Namespace) -> goodput.Plan | None:
    """The goodput sweep asked for, or None (no rate and no concurrency given)."""
    if not (args.goodput_rates or args.goodput_concurrency):
        return None
    return goodput.Plan(slo=args.slo, min_pass=args.min_pass, rates=args.goodput_rates,
                        concurrencies=args.goodput_concurrency, seed=args.goodput_seed,
                        requests=None if args.goodput_duration else args.goodput_requests,
                        duration_s=args.goodput_duration)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m otelbench.bench_runner", description=__doc__)
    configure(p)
    args = p.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
