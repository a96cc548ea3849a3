"""Record OTLP fixtures from real GenAI instrumentations talking to the embedded model.

    .venv/bin/python scripts/record_fixtures.py [--out tests/testdata/recorded]

Starts the embedded llama.cpp server and a tiny OTLP/HTTP capture server, then runs
one child process per instrumentation (instrumentations patch the openai client
globally, so each gets a fresh interpreter). Every child does the same agent turn
under a parent ``invoke_agent`` span: a plain chat, a streamed chat and a chat with a
tool definition that names the function (plus an ``execute_tool`` span and a follow-up
chat with the tool result when the model calls it),
and exports with the real OTel SDK's OTLP/HTTP protobuf exporters. Each request body
the capture server receives is saved, untrimmed, as OTLP/JSON (hex ids, integer enums)
to ``<out>/<instrumentation>/<signal>-<n>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "testdata" / "recorded"
MAX_TOKENS = 32
AGENT_NAME = "weather_helper"
README_MARKER = "\n<!-- scripts/record_frameworks.py writes below this line -->\n"

# The environment each instrumentation runs under; the content-capture values are the
# ones the packages read (opentelemetry-util-genai: `true` on the v1.30 path, a
# ContentCapturingMode name once gen_ai_latest_experimental is opted into).
INSTRUMENTATIONS: dict[str, dict[str, str]] = {
    "openai-v2": {
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    },
    "openai-v2-latest": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT",
    },
    "openinference": {},
}

PACKAGES = (
    "opentelemetry-instrumentation-openai-v2",
    "opentelemetry-util-genai",
    "openinference-instrumentation-openai",
    "openinference-semantic-conventions",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-proto-http",
    "openai",
    "llama-cpp-python",
)



# -- the child: one instrumentation, one agent turn --------------------------


def _setup_otel(endpoint: str, service_name: str) -> tuple[Any, Any, Any]:
    from opentelemetry import _logs, metrics, trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": service_name})
    # Long batch delays: everything goes out in one request per signal at shutdown,
    # so re-recording gives the same file layout.
    delay = {"schedule_delay_millis": 600_000}
    tracer_provider = TracerProvider(resource=resource)
    span_exporter = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter, **delay))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = LoggerProvider(resource=resource)
    log_exporter = OTLPLogExporter(endpoint=f"{endpoint}/v1/logs")
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter, **delay))
    _logs.set_logger_provider(logger_provider)
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"), export_interval_millis=3_600_000
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    metrics.set_meter_provider(meter_provider)
    return tracer_provider, logger_provider, meter_provider


def _instrument(name: str) -> None:
    if name.startswith("openai-v2"):
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument()
    elif name == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        OIInstrumentor().instrument()
    else:
        raise SystemExit(f"unknown instrumentation {name}")


def _agent_turn(base_url: str, model: str) -> None:
    from openai import OpenAI
    from opentelemetry import trace

    from otelbench.testing.openai_stub import WEATHER_TOOL

    client = OpenAI(base_url=base_url, api_key="sk-local", max_retries=0)
    tracer = trace.get_tracer("otelbench.record_fixtures")
    common = {"model": model, "max_tokens": MAX_TOKENS, "temperature": 0, "seed": 42}
    system = {"role": "system", "content": "You are a concise assistant."}
    with tracer.start_as_current_span(
        f"invoke_agent {AGENT_NAME}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT_NAME},
    ):
        client.chat.completions.create(
            messages=[system, {"role": "user", "content": "Say hello in five words."}], **common
        )
        stream = client.chat.completions.create(
            messages=[system, {"role": "user", "content": "Count from one to five."}], stream=True, **common
        )
        for _ in stream:
            pass
        question = [system, {"role": "user", "content": "What is the weather in Paris?"}]
        # With tool_choice "auto" SmolLM2-135M answers in prose; naming the function makes
        # llama.cpp constrain the output to a call, so the fixtures hold a real tool call.
        completion = client.chat.completions.create(
            messages=question,
            tools=[WEATHER_TOOL],
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
            **common,
        )
        message = completion.choices[0].message
        print(f"tool chat: finish_reason={completion.choices[0].finish_reason} tool_calls={bool(message.tool_calls)}")
        for call in message.tool_calls or []:
            with tracer.start_as_current_span(
                f"execute_tool {call.function.name}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.function.name,
                    "gen_ai.tool.call.id": call.id,
                },
            ):
                result = json.dumps({"city": "Paris", "temperature_c": 18, "sky": "cloudy"})
            follow_up = [
                *question,
                # llama-cpp-python's chat template reads `content` even on a tool-call turn
                {"role": "assistant", "content": "", "tool_calls": [call.model_dump(exclude_none=True)]},
                {"role": "tool", "tool_call_id": call.id, "content": result},
            ]
            client.chat.completions.create(messages=follow_up, tools=[WEATHER_TOOL], **common)


def child(name: str, endpoint: str, base_url: str, model: str) -> None:
    providers = _setup_otel(endpoint, service_name=f"record-fixtures-{name}")
    _instrument(name)
    try:
        _agent_turn(base_url, model)
    finally:
        for provider in providers:  # shutdown flushes every batch
            provider.shutdown()


# -- the parent ----------------------------------------------------------------


def _child_env(name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(INSTRUMENTATIONS[name])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _versions() -> dict[str, str]:
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def _readme(model_id: str) -> str:
    lines = [
        "# Recorded OTLP fixtures",
        "",
        "Captured from real instrumentations by `scripts/record_fixtures.py`; do not edit by hand,",
        "re-record instead. Each file is one OTLP/HTTP request body as the SDK's protobuf exporter",
        "sent it, converted to OTLP/JSON (hex trace/span ids, integer enums, int64 as strings).",
        "",
        f"Recorded {dt.date.today().isoformat()} against the embedded model `{Path(model_id).name}`",
        f"(llama-cpp-python server, max_tokens={MAX_TOKENS}, temperature=0). Each run is one",
        f"`invoke_agent {AGENT_NAME}` span around a plain chat, a streamed chat and a chat with a",
        "`get_weather` tool definition and `tool_choice` naming it (so llama.cpp constrains the",
        "reply to a call), then an `execute_tool` span and a follow-up chat with the tool result.",
        "",
        "| folder | instrumentation and environment |",
        "|---|---|",
        "| `openai-v2/` | opentelemetry-instrumentation-openai-v2, default (v1.30) conventions, "
        "`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (messages as log events) |",
        "| `openai-v2-latest/` | the same with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`, "
        "`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT` |",
        "| `openinference/` | openinference-instrumentation-openai, defaults (content captured) |",
        "",
        "openai-v2 2.4b0 works only with opentelemetry-util-genai 0.4b0: from 1.2b0 on",
        "`opentelemetry.util.genai.instruments` is gone (ImportError), and in 1.0b0/1.1b0",
        "`is_experimental_mode()` always returns True, so the default (v1.30) path never runs.",
        "",
        "Package versions:",
        "",
    ]
    lines += [f"- {package} {version}" for package, version in _versions().items()]
    lines += ["", f"Python {sys.version.split()[0]}.", ""]
    return "\n".join(lines)


def record(out: Path) -> list[Path]:
    from otelbench.bench_runner.llama_server import LlamaServer
    from otelbench.testing.otlp_capture import CaptureServer, write_recordings

    written: list[Path] = []
    log_dir = tempfile.TemporaryDirectory(prefix="otelbench-record-")
    # a startup failure quotes the log's tail in its error, so the file can go
    with CaptureServer(frozenset(INSTRUMENTATIONS)) as capture, log_dir, LlamaServer(
        log_path=Path(log_dir.name) / "llama.log"
    ) as server:
        print(f"llama.cpp server ready in {server.startup_s:.1f}s at {server.base_url}")
        for name in INSTRUMENTATIONS:
            cmd = [
                sys.executable, __file__, "--child", name,
                "--endpoint", f"{capture.url}/{name}",
                "--base-url", server.base_url, "--model", server.model_id or "",
            ]  # fmt: skip
            print(f"recording {name} ...")
            subprocess.run(cmd, env=_child_env(name), check=True, timeout=300)
        bodies = capture.bodies()
    for name in INSTRUMENTATIONS:
        folder = out / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        written += write_recordings([b for b in bodies if b[0] == name], folder)
    readme = out / "README.md"
    # scripts/record_frameworks.py writes the part below the marker; keep it
    rest = readme.read_text().partition(README_MARKER)[2] if readme.exists() else ""
    readme.write_text(_readme(server.model_id or "") + (README_MARKER + rest if rest else ""))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--child", choices=list(INSTRUMENTATIONS), help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.endpoint, args.base_url, args.model)
        return 0
    sys.path.insert(0, str(REPO))
    for path in record(args.out):
        print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}  {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
