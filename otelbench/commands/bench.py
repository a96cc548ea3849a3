"""``otelbench bench MODEL [MODEL…]`` (also ``python -m otelbench.bench_runner``): benchmark local models
behind any OpenAI-compatible server — speed, ability, agent fitness, plausibility."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
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


def _levels(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SystemExit(f"otelbench bench: --concurrency wants numbers like 1,2,4 (got {text!r})")


# What a user with nothing listening can do next (printed under "server down").
NEXT_STEPS = """[bold]To benchmark something:[/]
  1. the embedded model (SmolLM2-135M, nothing to download):
       otelbench bench --local --quick
  2. or serve it and keep it running, then name the URL and model it prints:
       otelbench model serve --port 8080
       otelbench bench --base-url http://127.0.0.1:8080/v1 MODEL
  3. or your own OpenAI-compatible server: --base-url URL (or OPENAI_BASE_URL)
       LM Studio  http://localhost:1234/v1   (start its local server)
       Ollama     http://localhost:11434/v1
       vLLM       http://localhost:8000/v1
       llama.cpp  http://localhost:8080/v1   (llama-server)"""


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console(stderr=args.json)
    if args.compare is not None:
        return _compare(args, console)
    if args.local:
        from otelbench.bench_runner.llama_server import LlamaServer, find_embedded_model

        try:
            model_file = find_embedded_model()
        except Exception as exc:
            console.print(f"[red]--local: {exc}[/]")
            return 2
        with console.status("starting the embedded model (llama.cpp + SmolLM2-135M)…"), LlamaServer(model_file) as server:
            pass_args = argparse.Namespace(**{**vars(args), "base_url": server.base_url, "models": [server.model_id]})
            return _bench(pass_args, console, started_by_us=True)
    return _bench(args, console, started_by_us=False)


def _bench(args: argparse.Namespace, console, *, started_by_us: bool) -> int:
    from otelbench.bench_runner import servers

    try:
        info = servers.probe(args.base_url, args.api_key)
    except servers.ServerDown as exc:
        from rich.markup import escape

        console.print(f"[red]server down:[/] {escape(str(exc))}")
        if not started_by_us:
            console.print(NEXT_STEPS, highlight=False)
        return 1
    if args.list:
        return _list(info, args, console)
    if args.check:
        return _check(info, args, console)
    if not args.models:
        console.print("[red]name at least one MODEL (see --list)[/]")
        return 2
    return _run_models(info, args, console, started_by_us)


def _list(info, args, console) -> int:
    from rich.table import Table

    from otelbench.bench_runner.model_files import default_roots, locate_gguf

    table = Table(title=f"{info.base_url} ({info.kind})", title_justify="left")
    for col in ("model", "gguf", "size", "quant", "arch", "path / reason"):
        table.add_column(col, overflow="fold")
    for m in info.models:
        lk = locate_gguf(m.id, server_paths=info.paths_for(m.id), roots=default_roots(models_dirs=tuple(args.models_dir)))
        i = lk.info
        table.add_row(m.id, lk.status.value, f"{i.size_bytes / 2**20:.0f} MiB" if i else "—",
                      (i.quantization if i else m.quantization) or "—", (i.architecture if i else m.architecture) or "—",
                      str(i.path) if i else lk.reason)
    console.print(table)
    return 0


def _check(info, args, console) -> int:
    import httpx

    from otelbench.bench_runner.model_files import Status, default_roots, locate_gguf

    ok = True

    def line(good: bool, what: str, detail: str) -> None:
        nonlocal ok
        ok &= good
        console.print(f"{'[green]OK  [/]' if good else '[red]FAIL[/]'} {what}: {detail}")

    line(True, "server", f"{info.base_url} answers ({info.kind}, {len(info.models)} models)")
    offered = {m.id for m in info.models}
    for model in args.models:
        line(model in offered, f"model {model}", "offered" if model in offered else f"not offered by the server (try --list)")
        lk = locate_gguf(model, server_paths=info.paths_for(model), roots=default_roots(models_dirs=tuple(args.models_dir)))
        line(lk.status == Status.READY, f"gguf {model}", str(lk.info.path) if lk.info else lk.reason)
    if not args.no_otel:
        url = args.otlp_endpoint.rstrip("/") + "/v1/traces"
        try:
            r = httpx.post(url, content=b"", headers={"Content-Type": "application/x-protobuf"}, timeout=5)
            line(r.status_code == 200, "otlp endpoint", f"{url} answered {r.status_code}")
        except httpx.HTTPError as exc:
            line(False, "otlp endpoint", f"{url} unreachable ({type(exc).__name__}); start `otelbench serve` or pass --no-otel")
    return 0 if ok else 1


def _safe(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model).name if "/" in model else model).strip("_")[:80] or "model"


def _run_models(info, args, console, started_by_us: bool) -> int:
    """Each model in turn; one model's failure (even a crash) never costs the others' results."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from otelbench.bench_runner import runner, servers
    from otelbench.bench_runner import report
    from otelbench.bench_runner.hardware import probe_hardware
    from otelbench.bench_runner.spans import BenchSpans

    opts = runner.Options(runs=args.runs, warmup=args.warmup, quick=args.quick, speed_only=args.speed_only,
                          concurrency=_levels(args.concurrency), api_key=args.api_key,
                          models_dirs=tuple(args.models_dir))
    skipped = {m: why for m in args.models if (why := runner.not_offered(info, m))}
    problems = list(skipped.values())
    for p in problems:
        console.print(f"[red]skipped:[/] {escape(p)}")
    models = [m for m in args.models if m not in skipped]
    if not models:
        return 1
    with console.status("probing hardware (memory bandwidth)…"):
        hardware = probe_hardware()
    spans = BenchSpans(None if args.no_otel else args.otlp_endpoint)
    out_dir = Path(args.out).expanduser()
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as bar:
        for i, model in enumerate(models):
            task = bar.add_task(f"{_safe(model)}", total=runner.planned_requests(opts))
            progress = runner.Progress(
                on_request=lambda label, task=task: bar.advance(task),
                on_phase=lambda phase, task=task, model=model: bar.update(task, description=f"{_safe(model)}: {phase}"),
            )
            loaded = servers.load(info, model)
            if loaded is not None:
                bar.console.print(escape(f"{model}: {loaded}"))
            try:
                mr = runner.run_model(model, info, hardware, spans, opts, progress)
            except Exception as exc:  # one model's crash must not lose the others' results
                problems.append(f"{model}: crashed: {type(exc).__name__}: {exc}")
            else:
                path = out_dir / f"{_safe(model)}-{time.strftime('%Y%m%dT%H%M%S')}.json"
                path.write_text(json.dumps(mr.result, indent=1, default=str))
                mr.result["_file"] = str(path)
                results.append(mr.result)
                problems += [f"{model}: {p}" for p in mr.problems]
            if i + 1 < len(models) and not started_by_us:
                bar.console.print(escape(f"{model}: {servers.unload(info, model)}"))
    exported = spans.shutdown()
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=1, default=str))
    if results:
        report.print_results(results, console)
    if not args.no_otel:
        console.print(f"spans: {exported['exported']} exported to {args.otlp_endpoint}"
                      + (f", [red]{exported['failures']} export failures[/]" if exported["failures"] else ""))
    for p in problems:  # evidence is raw server output: "[...]" in it is not rich markup
        console.print(f"[red]problem:[/] {escape(p)}", highlight=False)
    return 1 if problems else 0


def _compare(args, console) -> int:
    from otelbench.bench_runner import report

    files = [Path(f) for f in args.compare] or sorted(Path(args.out).expanduser().glob("*.json"))
    results = []
    for f in files:
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError) as exc:
            console.print(f"[red]{f}: {exc}[/]")
            return 1
        results.extend(data if isinstance(data, list) else [data])
    if not results:
        console.print("no results to compare")
        return 1
    report.print_compare(results, console)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m otelbench.bench_runner", description=__doc__)
    configure(p)
    args = p.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
