"""``otelbench demo``: every part of otelbench working together on the embedded default.

1. **serve** — the collector (OTLP/HTTP + gRPC → write-ahead log → Parquet lake) and the
   web UI, as ``otelbench serve`` runs them;
2. **model** — the embedded SmolLM2-135M on llama.cpp (``--two-models``: Qwen2.5-Coder-0.5B
   too, from ``otelbench model fetch``);
3. **bench** — ``otelbench bench --quick`` of it; its results arrive as spans;
4. **agents** — sample runs (simulated, agents named ``sample-*``), the ``ops-helper``
   tool-using agent on ~30 tasks against the model (the official OpenAI instrumentation plus
   ``invoke_agent`` / ``execute_tool`` spans; some fail for real reasons), and the
   ``grounded-research-v1`` suite run with the research agent;
5. **judge + clusters** — ``otelbench process`` once, the running model judging;
6. **report** — the leaderboard, the pages to open, an SQL query; then it keeps serving
   (the processors on their schedule) until Ctrl-C, which stops everything it started.

``--quick`` (CI) does a small version of every step and exits. Running it again reuses the
lake (what was judged is not judged again).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from otelbench.demo.progress import Progress
from otelbench.processors.config import EMBEDDED_JUDGE_CONCURRENCY

SUITE = "grounded-research"
SERVE_INTERVAL_S = 300.0  # the processors' schedule while the demo keeps serving
AGENT_CONCURRENCY = 2  # the tool agent's tasks and the suite's cases at once: 4 with both, a request per slot
# the suite's repeats in the full demo (the suite declares 3): 40 trials keep the whole demo
# within 5 minutes on 2 cores, where 60 took ~55 s more (docs/demo.md)
SUITE_REPEATS = 2
# --quick's ops-helper tasks: each tool, and each way a run fails for real (otelbench/demo/tool_agent.py)
QUICK_TASKS = {"calc-product", "conv-distance", "owner-inventory", "status-search", "calc-grouped-sum",
               "file-secrets", "file-windows-log", "status-gateway"}


def _port(preferred: int) -> int:
    """``preferred`` when it is free on 127.0.0.1, else one the OS picks."""
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise OSError("no free port")


def _config(args: argparse.Namespace, ports: dict[str, int], judge: dict[str, Any] | None):
    from otelbench.collector.config import parse_config

    return parse_config({
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"127.0.0.1:{ports['grpc']}"},
                                             "http": {"endpoint": f"127.0.0.1:{ports['http']}"}}}},
        "exporters": {"parquet": {"path": args.lake, "flush": {"interval_s": 0.5}}},
        # the demo runs the processors itself (step 5); the schedule starts when it serves on
        "processors": {"interval_s": 0, "judge": judge or {"enabled": False},
                       # demo-sized: a few failures per agent make a cluster (default: 5)
                       "clusters": {"min_cluster_size": 3, "describe": judge is not None}},
        "web": {"endpoint": f"127.0.0.1:{ports['web']}"},
        "service": {
            "wal": {"dir": args.wal},
            "telemetry": {"log_level": "warning"},
            "pipelines": {s: {"receivers": ["otlp"], "exporters": ["parquet"]} for s in ("traces", "logs", "metrics")},
        },
    }, where="demo")


def _wait_web(url: str, timeout_s: float = 60.0) -> bool:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/home", timeout=5).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    return False


def run(args: argparse.Namespace) -> int:
    """The demo ``otelbench demo`` asked for (its arguments: ``otelbench.commands.demo``)."""
    from rich.console import Console

    from otelbench.runtime.services import Services

    from otelbench.storage import is_remote

    if is_remote(args.lake):
        print("otelbench demo: --lake is a local folder here; a lake in a bucket is the collector's "
              "exporters.parquet.path (docs/object-storage.md)", file=sys.stderr)
        return 2
    console = Console()
    progress = Progress(console)
    Path(args.lake).mkdir(parents=True, exist_ok=True)
    out = Path(args.lake).resolve().parent / "demo-results"
    ports = {"http": _port(args.http_port), "grpc": _port(args.grpc_port), "web": _port(args.web_port)}
    otlp, web = f"http://127.0.0.1:{ports['http']}", f"http://127.0.0.1:{ports['web']}"
    with ExitStack() as stack:
        with progress.step("serve", "collector and web UI, as `otelbench serve` runs them"):
            services = Services(_config(args, ports, None)).start(say=progress.say)
            stack.callback(services.stop)
            web_up = _wait_web(web)
            if not web_up:
                progress.say("[yellow]the web UI did not answer within 60 s; the rest goes on[/yellow]")
        server = None
        if args.no_model:
            progress.skip("model", "--no-model")
        else:
            with progress.step("model", "the embedded SmolLM2-135M on llama.cpp (seconds: a 100 MB model on CPU)"):
                server = _model_server(args, stack, progress)
        # the processors (step 5, then the schedule) judge with the running model, as they judge
        # on the embedded server of their own
        judge = {"endpoint": server.base_url, "model": server.model_id, "concurrency": EMBEDDED_JUDGE_CONCURRENCY} \
            if server else None
        config = _config(args, ports, judge)
        if server is None:
            progress.skip("bench", "no embedded model")
        else:
            with progress.step("bench", "otelbench bench --quick: speed cases and the core tests "
                                        "(about a minute: CPU decoding, one request at a time so the speed "
                                        "figures are the model's alone)"):
                _bench(server, otlp, out, progress)
        with progress.step("agents", "sample runs, the ops-helper tool agent and the grounded-research suite "
                                     "at once, two requests each on the model's slots"):
            _sample_runs(otlp, 12 if args.quick else args.runs, progress)
            if server is not None:
                suite = _start_suite(server, otlp, out, args.quick)
                _tool_agent(server, otlp, args.quick, progress)
                _finish_suite(suite, progress)
            services.collector.wait_flushed(60)
        with progress.step("judge + clusters", "every new run judged by the running model, then the "
                                               "failures clustered") as status:
            _process(config, otlp, progress, status)
        with progress.step("report", "what every part made of it"):
            _report(config, console, web, otlp)
        if args.quick:
            console.print(f"\n--quick: stopping everything it started ({progress.elapsed()} in all)")
            # a CI job's main run: pages that never answered are a failed run, not a report
            return 0 if web_up else 1
        _serve_on(config, otlp, console, stack)
    return 0


def _model_server(args: argparse.Namespace, stack: ExitStack, progress: Progress):
    """The embedded model (and Qwen with --two-models) on one llama.cpp server; None (said)
    when it is not installed."""
    from rich.markup import escape

    from otelbench.bench_runner.llama_server import LlamaServer, find_embedded_model, find_llama_server

    try:
        find_llama_server()
        models: list[Path | str] = [find_embedded_model()]
    except Exception as exc:  # noqa: BLE001 — not installed: say so, don't pretend
        progress.say(f"[yellow]no embedded model ({escape(str(exc))}): the steps that need it are skipped[/yellow]")
        return None
    if args.two_models:
        from otelbench.bench_runner import model_fetch

        try:
            models.append(model_fetch.fetch(log=progress.say))
        except Exception as exc:  # noqa: BLE001 — offline or a bad file: one model it is
            progress.say(f"[yellow]Qwen2.5-Coder-0.5B not available ({escape(str(exc))}); benchmarking SmolLM2 alone[/yellow]")
    server = stack.enter_context(LlamaServer(models))
    progress.say(f"serving {', '.join(server.model_ids)} at {server.base_url} ({server.parallel} slots)")
    return server


def _bench(server: Any, otlp: str, out: Path, progress: Progress) -> None:
    log = out / "bench.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as f:
        done = subprocess.run([sys.executable, "-m", "otelbench", "bench", *server.model_ids, "--base-url",
                               server.base_url, "--quick", "--otlp-endpoint", otlp, "--out", str(out / "bench")],
                              stdout=f, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "120"})
    progress.say(f"{'benchmarked' if done.returncode == 0 else '[red]bench failed[/red]'} "
                 f"{len(server.model_ids)} model(s); report in {log}")


def _sample_runs(otlp: str, runs: int, progress: Progress) -> None:
    from otelbench.demo.agents import exporting, simulate

    with exporting(otlp, "demo-agents") as (tracer_provider, _):
        simulate(tracer_provider.get_tracer("otelbench.demo"), runs)
    progress.say(f"sent {runs} simulated sample runs (agents sample-*: current GenAI, deprecated GenAI "
                 "and OpenInference attributes)")


def _tool_agent(server: Any, otlp: str, quick: bool, progress: Progress) -> None:
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from rich.markup import escape

    from otelbench.demo import tool_agent
    from otelbench.demo.agents import exporting

    from otelbench.terminal import shorten

    tasks = [t for t in tool_agent.TASKS if not quick or t.id in QUICK_TASKS]
    counts: dict[str, int] = {}
    id_width = max(len(t.id) for t in tasks)

    def done(outcome: Any) -> None:
        key = "ok" if outcome.status == "ok" else outcome.error_type or "error"
        counts[key] = counts.get(key, 0) + 1
        line = f"{outcome.task_id:<{id_width}} {key:<17} {outcome.seconds:4.1f}s  "
        progress.say(escape(line + shorten(repr(outcome.message or outcome.answer), progress.width - len(line))))

    with exporting(otlp, "ops-helper") as (tracer_provider, logger_provider):
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        try:
            tool_agent.run_tasks(tracer_provider.get_tracer("otelbench.demo"), server.base_url, server.model_id,
                                 tasks, on_done=done, concurrency=AGENT_CONCURRENCY)
        finally:
            instrumentor.uninstrument()
    progress.say(f"ops-helper ran {len(tasks)} tasks: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def _start_suite(server: Any, otlp: str, out: Path, quick: bool) -> tuple[subprocess.Popen[bytes], Path]:
    """The suite run in a process of its own, beside the tool agent; its report in a log."""
    from otelbench.bench_runner import agent_suite

    suite = agent_suite.find(SUITE)
    extra: list[str] = ["--concurrency", str(AGENT_CONCURRENCY)]
    if quick:  # one case of each checker, once
        kinds: dict[str, str] = {}
        for case in suite.spec.cases:
            kinds.setdefault(case.check.kind, case.id)
        extra += ["--repeats", "1", "--cases", ",".join(kinds.values())]
    else:
        extra += ["--repeats", str(SUITE_REPEATS)]
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "local",
           "OTELBENCH_MODEL": server.model_id, "OTEL_EXPORTER_OTLP_ENDPOINT": otlp, "COLUMNS": "120"}
    log = out / "suite.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "otelbench", "suite", "run", SUITE, "--agent",
                                 f"{sys.executable} -m otelbench.demo.research_agent", "--judge", server.base_url,
                                 "--otlp-endpoint", otlp, "--out", str(out / "suites"), *extra],
                                env=env, stdout=f, stderr=subprocess.STDOUT)
    return proc, log


def _finish_suite(started: tuple[subprocess.Popen[bytes], Path], progress: Progress) -> None:
    proc, log = started
    code = proc.wait()
    if code != 0:
        progress.say(f"[red]the suite run failed (exit {code}); its report is in {log}[/red]")
        return
    progress.say(f"ran the {SUITE} suite; its report is in {log}")


def _process(config: Any, otlp: str, progress: Progress, status: Any) -> None:
    from rich.markup import escape

    from otelbench.runtime.processors_run import endpoint
    from otelbench.processors import pipeline

    try:
        with endpoint(config.processors, None) as llm:
            report = pipeline.run(config.processors, config.privacy, config.lake_path, llm=llm,
                                  telemetry_endpoint=otlp, progress=progress.counter(status))
    except pipeline.ProcessorError as exc:
        progress.say(f"[red]processors: {escape(str(exc))}[/red]")
        return
    clusters = sum(report.clusters.values())
    progress.say(f"judged {report.judged} runs ({report.judge_errors} judge errors); {report.failures} failed or "
                 f"low-scored runs → {clusters} clusters")


def _report(config: Any, console: Any, web: str, otlp: str) -> None:
    from otelbench.demo.report import print_report

    print_report(str(config.lake_path), console, web, otlp)


def _serve_on(config: Any, otlp: str, console: Any, stack: ExitStack) -> None:
    """Keep serving, the processors on their schedule, until Ctrl-C or SIGTERM."""
    from otelbench.runtime.scheduler import Scheduler

    scheduled = config.model_copy(update={"processors": config.processors.model_copy(
        update={"interval_s": SERVE_INTERVAL_S})})
    scheduler = Scheduler(scheduled, otlp).start()
    stack.callback(scheduler.stop)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    console.print(f"\nserving — new runs are judged and clustered every {SERVE_INTERVAL_S:g} s. "
                  "Ctrl-C stops everything the demo started.")
    stop.wait()
    console.print("stopping: web, processors, collector (flushing what was acknowledged), model server")
