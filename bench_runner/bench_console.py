"""``otelbench bench`` at a terminal: what the command asked for (``BenchOptions``), the
server probed (and what to do next when nothing answers), each model benchmarked in turn
under a progress bar with its result file saved, the report, the problems and the exit
code; also ``--compare`` (saved results as one table), ``--list``, ``--check`` and
``--local`` (the embedded model on our own llama.cpp server for the run).

The work itself is headless: ``runner.run_model`` benchmarks one model, ``report`` draws
results, ``results`` keeps their files, ``preflight`` lists and checks a server."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from otelbench.bench_runner.goodput import Plan

    from otelbench.bench_runner.servers import ServerInfo

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


@dataclass(frozen=True)
class BenchOptions:
    """One ``otelbench bench``: which server and models, what to do, how hard, where results go."""

    base_url: str
    api_key: str
    out: Path  # the folder for result files
    models: tuple[str, ...] = ()
    list_models: bool = False  # --list
    check: bool = False  # --check
    compare: tuple[Path, ...] | None = None  # --compare: these files; () every JSON in ``out``
    local: bool = False  # the embedded model, on a llama.cpp server started for the run
    quick: bool = False
    speed_only: bool = False
    runs: int = 5
    warmup: int = 1
    # the load levels as typed ("1,2,4,8"), read when the models run: --list, --check and a
    # server that is down answer whatever they hold
    concurrency: str = ""
    print_json: bool = False  # the result JSON on stdout (everything else then goes to stderr)
    models_dirs: tuple[Path, ...] = ()
    otlp_endpoint: str | None = None  # where spans go; None exports none
    goodput: Plan | None = None  # a goodput sweep instead of the bench (bench_runner/goodput_run.py)
    goodput_cases: tuple[str, ...] = ()  # the core suite's tests it sends; () every one


def levels(text: str) -> tuple[int, ...]:
    """``--concurrency 1,2,4`` as load levels."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SystemExit(f"otelbench bench: --concurrency wants numbers like 1,2,4 (got {text!r})")


def run(opts: BenchOptions) -> int:
    from rich.console import Console

    console = Console(stderr=opts.print_json)
    if opts.compare is not None:
        return compare(opts.compare, opts.out, console)
    if opts.local:
        from otelbench.bench_runner.llama_server import LlamaServer, find_embedded_model

        try:
            model_file = find_embedded_model()
        except Exception as exc:
            console.print(f"[red]--local: {exc}[/]")
            return 2
        with console.status("starting the embedded model (llama.cpp + SmolLM2-135M)…"), LlamaServer(model_file) as server:
            on_ours = dataclasses.replace(opts, base_url=server.base_url, models=(server.model_id,))
            return _bench(on_ours, console, started_by_us=True)
    return _bench(opts, console, started_by_us=False)


def _bench(opts: BenchOptions, console: Console, *, started_by_us: bool) -> int:
    from otelbench.bench_runner import preflight, servers

    try:
        info = servers.probe(opts.base_url, opts.api_key)
    except servers.ServerDown as exc:
        from rich.markup import escape

        console.print(f"[red]server down:[/] {escape(str(exc))}")
        if not started_by_us:
            console.print(NEXT_STEPS, highlight=False)
        return 1
    if opts.list_models:
        return preflight.print_models(info, opts.models_dirs, console)
    if opts.check:
        return preflight.check(info, opts.models, opts.models_dirs, opts.otlp_endpoint, console)
    if not opts.models:
        console.print("[red]name at least one MODEL (see --list)[/]")
        return 2
    if opts.goodput is not None:
        return run_goodput(info, opts, opts.goodput, console)
    return run_models(info, opts, console, started_by_us)


def run_goodput(info: ServerInfo, opts: BenchOptions, plan: Plan, console: Console) -> int:
    """The goodput sweep of each model in turn: a table per model, the result files, the
    spans; exit 1 when a request failed or a model is not offered (a step that misses its
    SLO is a measurement, not a failure)."""
    from rich.markup import escape

    from otelbench.bench_runner import goodput_report, goodput_run, load, results, runner
    from otelbench.bench_runner.spans import BenchSpans

    try:
        cases = load.suite_cases(opts.goodput_cases)
    except KeyError as exc:
        console.print(f"[red]--goodput-cases: {escape(str(exc.args[0]))}[/]")
        return 2
    problems = [why for m in opts.models if (why := runner.not_offered(info, m))]
    spans = BenchSpans(opts.otlp_endpoint)
    opts.out.mkdir(parents=True, exist_ok=True)
    finished = []
    for model in (m for m in opts.models if not runner.not_offered(info, m)):
        with console.status(f"{model}: goodput sweep…") as status:
            result = goodput_run.run_sweep(
                model, info, spans, plan, cases, api_key=opts.api_key,
                on_step=lambda s, status=status, model=model: status.update(
                    f"{model}: goodput sweep, {s.mode} {s.load:g} done ({s.goodput:.2f} good/s)"))
        results.save(result, f"{model}-goodput", opts.out)
        finished.append(result)
        problems += [f"{model}: {s['mode']} {s['load']:g}: {n} × {kind}"
                     for s in result["steps"] for kind, n in s["failures"].items()]
    exported = spans.shutdown()
    if opts.print_json:
        print(json.dumps(finished[0] if len(finished) == 1 else finished, indent=1, default=str))
    goodput_report.print_sweeps(finished, console)
    if opts.otlp_endpoint is not None:
        console.print(f"spans: {exported['exported']} exported to {opts.otlp_endpoint}"
                      + (f", [red]{exported['failures']} export failures[/]" if exported["failures"] else ""))
    for p in problems:
        console.print(f"[red]problem:[/] {escape(p)}", highlight=False)
    return 1 if problems else 0


def run_models(info: ServerInfo, opts: BenchOptions, console: Console, started_by_us: bool) -> int:
    """Each model in turn; one model's failure (even a crash) never costs the others' results."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from otelbench.bench_runner import report, results, runner, servers
    from otelbench.bench_runner.hardware import probe_hardware
    from otelbench.bench_runner.spans import BenchSpans

    run_opts = runner.Options(runs=opts.runs, warmup=opts.warmup, quick=opts.quick, speed_only=opts.speed_only,
                              concurrency=levels(opts.concurrency), api_key=opts.api_key,
                              models_dirs=tuple(opts.models_dirs))
    skipped = {m: why for m in opts.models if (why := runner.not_offered(info, m))}
    problems = list(skipped.values())
    for p in problems:
        console.print(f"[red]skipped:[/] {escape(p)}")
    models = [m for m in opts.models if m not in skipped]
    if not models:
        return 1
    with console.status("probing hardware (memory bandwidth)…"):
        hardware = probe_hardware()
    spans = BenchSpans(opts.otlp_endpoint)
    opts.out.mkdir(parents=True, exist_ok=True)
    finished = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as bar:
        for i, model in enumerate(models):
            label = results.file_label(model)
            task = bar.add_task(label, total=runner.planned_requests(run_opts))
            progress = runner.Progress(
                on_request=lambda _, task=task: bar.advance(task),
                on_phase=lambda phase, task=task, label=label: bar.update(task, description=f"{label}: {phase}"),
            )
            loaded = servers.load(info, model)
            if loaded is not None:
                bar.console.print(escape(f"{model}: {loaded}"))
            try:
                mr = runner.run_model(model, info, hardware, spans, run_opts, progress)
            except Exception as exc:  # one model's crash must not lose the others' results
                problems.append(f"{model}: crashed: {type(exc).__name__}: {exc}")
            else:
                results.save(mr.result, model, opts.out)
                finished.append(mr.result)
                problems += [f"{model}: {p}" for p in mr.problems]
            if i + 1 < len(models) and not started_by_us:
                bar.console.print(escape(f"{model}: {servers.unload(info, model)}"))
    exported = spans.shutdown()
    if opts.print_json:
        print(json.dumps(finished[0] if len(finished) == 1 else finished, indent=1, default=str))
    if finished:
        report.print_results(finished, console)
    if opts.otlp_endpoint is not None:
        console.print(f"spans: {exported['exported']} exported to {opts.otlp_endpoint}"
                      + (f", [red]{exported['failures']} export failures[/]" if exported["failures"] else ""))
    for p in problems:  # evidence is raw server output: "[...]" in it is not rich markup
        console.print(f"[red]problem:[/] {escape(p)}", highlight=False)
    return 1 if problems else 0


def compare(files: tuple[Path, ...], out: Path, console: Console) -> int:
    """Saved results as one table: ``files``, or every result file in ``out``."""
    from otelbench.bench_runner import report, results

    from otelbench.bench_runner.goodput_run import is_goodput

    try:
        saved = [r for r in results.load(list(files) or results.saved_files(out)) if not is_goodput(r)]
    except results.ResultFileError as exc:
        console.print(f"[red]{exc}[/]")
        return 1
    if not saved:
        console.print("no results to compare")
        return 1
    report.print_compare(saved, console)
    return 0
