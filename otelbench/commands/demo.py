"""``otelbench demo``: the main job on the embedded default, end to end.

Starts the collector (OTLP/HTTP + gRPC → write-ahead log → Parquet lake),
sends sample agent runs through the real OTel SDK exporters in three attribute
conventions, runs a real agent against the embedded SmolLM2 model (llama.cpp
server, instrumented by opentelemetry-instrumentation-openai-v2), stops the
collector gracefully and prints a SQL summary of the lake.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from collector import DEFAULT_WAL_DIR
from storage import DEFAULT_LAKE


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="collector + sample and real agent runs + a SQL summary of the lake")
    p.add_argument("--lake", default=DEFAULT_LAKE, help="lake folder (default: %(default)s)")
    p.add_argument("--wal", default=DEFAULT_WAL_DIR, help="write-ahead log folder (default: %(default)s)")
    p.add_argument("--runs", type=int, default=60, help="simulated agent runs (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="short, non-interactive run (CI): few runs, one real call")
    p.add_argument("--no-model", action="store_true", help="skip the real run against the embedded model")
    p.set_defaults(func=run)


def _config(args: argparse.Namespace):
    from collector.config import parse_config

    return parse_config({
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": "127.0.0.1:0"}, "http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": args.lake, "flush": {"interval_s": 0.5}}},
        "service": {
            "wal": {"dir": args.wal},
            "telemetry": {"log_level": "warning"},
            "pipelines": {s: {"receivers": ["otlp"], "exporters": ["parquet"]} for s in ("traces", "logs", "metrics")},
        },
    }, where="demo")


def _providers(endpoint: str, service: str):
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": service})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs")))
    return tracer_provider, logger_provider


def _real_agent(endpoint: str, tasks: list[str], console) -> int:
    """Run the real agent against SmolLM2; returns the number of runs (0 if not installed)."""
    from bench_runner.llama_server import LlamaServer, find_embedded_model

    try:
        model = find_embedded_model()
        import llama_cpp  # noqa: F401
    except Exception as exc:  # not installed: say so, don't pretend
        console.print(f"[yellow]skipping the real agent: {exc}[/yellow]")
        return 0
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    from otelbench.demo_agents import run_real_agent

    tracer_provider, logger_provider = _providers(endpoint, "local-agent")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        with console.status("starting the embedded model (llama.cpp + SmolLM2-135M)…"), LlamaServer(model) as server:
            results = run_real_agent(tracer_provider.get_tracer("otelbench.demo"), server.base_url, server.model_id, tasks)
    finally:
        instrumentor.uninstrument()
        tracer_provider.force_flush(30_000)
        logger_provider.force_flush(30_000)
        tracer_provider.shutdown()
        logger_provider.shutdown()
    for r in results:
        console.print(f"  [bold]{r['task']}[/bold] → {r['answer'][:100]!r}")
    return len(results)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from collector.runtime import Collector
    from otelbench.demo_agents import TASKS, simulate
    from otelbench.summary import print_summary

    console = Console()
    runs = 12 if args.quick else args.runs
    Path(args.lake).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    collector = Collector(_config(args)).start()
    endpoint = f"http://127.0.0.1:{collector.http_port}"
    console.print(f"collector: OTLP/HTTP {endpoint}  OTLP/gRPC 127.0.0.1:{collector.grpc_port}  lake {args.lake}")
    try:
        tracer_provider, logger_provider = _providers(endpoint, "demo-agents")
        simulate(tracer_provider.get_tracer("otelbench.demo"), runs)
        if not (tracer_provider.force_flush(30_000) and logger_provider.force_flush(30_000)):
            console.print("[red]the SDK could not deliver the sample spans[/red]")
            return 1
        tracer_provider.shutdown()
        logger_provider.shutdown()
        console.print(f"sent {runs} simulated agent runs (current GenAI, deprecated GenAI and OpenInference attributes)")
        real = 0 if args.no_model else _real_agent(endpoint, TASKS[:1] if args.quick else TASKS[:3], console)
        if real:
            console.print(f"ran {real} real agent run(s) against SmolLM2 (openai-v2 instrumentation)")
        collector.wait_flushed(60)
    finally:
        collector.stop()
    console.print(f"collector stopped cleanly after {time.perf_counter() - started:.1f}s; everything acknowledged is in Parquet\n")
    print_summary(args.lake, console)
    console.print(f"\nAsk your own questions:  otelbench sql --lake {args.lake} \"SELECT agent, count(*) FROM agent_runs GROUP BY 1\"")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(argparse.Namespace(lake=DEFAULT_LAKE, wal=DEFAULT_WAL_DIR, runs=60, quick=True, no_model=False)))
