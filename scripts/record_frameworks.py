"""Record what real agent frameworks send over OTLP for one tool-using agent run.

    python scripts/record_frameworks.py [--only openllmetry,langchain] \\
        [--python openlit=/path/to/venv/bin/python] [--out tests/testdata/recorded]

Each stack runs the same agent, ``weather_agent``: asked "What is the weather in Paris?",
the model calls ``get_weather(city="Paris")``, the tool answers "sunny, 22 °C", the model
answers "It is sunny in Paris, 22 °C.". The model is the canned OpenAI-compatible stub
(``otelbench.testing.openai_stub``, script ``weather``: a tool call first, the answer once
a tool result is in the conversation; requested ``gpt-4o-mini``, answered by
``gpt-4o-mini-2024-07-18``). Telemetry goes over OTLP/HTTP protobuf to a capture server
(``otelbench.testing.otlp_capture``). Instrumentations patch globally, so every stack runs
in its own child process, with the interpreter ``--python`` names for it (a stack whose
packages cannot share a virtualenv with the others runs from its own).

Per stack, ``<out>/<stack>/`` gets each OTLP request body as OTLP/JSON
(``<signal>-<n>.json``) and ``expected.json``: what a person reading the run would say
about it (agent, input, output, each LLM call's models and tokens, the tool call, any
reported cost, TTFT of streamed calls), from what the stub served and what the agent
code saw. The README of ``<out>`` gets a section listing the stacks and versions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "testdata" / "recorded"
README_MARKER = "\n<!-- scripts/record_frameworks.py writes below this line -->\n"

AGENT_NAME = "weather_agent"
SERVICE_NAME = "weather-app"  # deliberately not the agent's name: a view that falls back to it shows
QUESTION = "What is the weather in Paris?"
INSTRUCTIONS = "You are a weather assistant. Use the get_weather tool to answer."
TOOL_RESULT = "sunny, 22 °C"
MODEL = "gpt-4o-mini"
API_KEY = "sk-local-stub"
STUB_TTFT_MS = 150  # first streamed token this long after the request: TTFT is visible



# -- what each stack is --------------------------------------------------------


class Stack:
    """A stack's run is a function of this script's child process, or, given ``command``, any
    program: ``command(endpoint, base_url, report)`` is its argv, and the program writes the
    report (``output``, ``tool_calls``, ``versions`` and its runtime's version) itself."""

    def __init__(self, name: str, title: str, packages: tuple[str, ...], agent_name_at: str,
                 run: Callable[[str, str], dict[str, Any]] | None,
                 command: Callable[[str, str, Path], list[str]] | None = None) -> None:  # fmt: skip
        self.name, self.title, self.packages, self.agent_name_at, self.run = name, title, packages, agent_name_at, run
        self.command = command


STACKS: dict[str, Stack] = {}


def stack(name: str, title: str, packages: tuple[str, ...], agent_name_at: str) -> Callable:
    def register(run: Callable[[str, str], dict[str, Any]]) -> Callable[[str, str], dict[str, Any]]:
        STACKS[name] = Stack(name, title, packages, agent_name_at, run)
        return run

    return register


# -- the child: one stack, one agent run --------------------------------------

TOOL_LOG: list[dict[str, Any]] = []


# The tool, shared by every stack (its docstring is the description the frameworks send):
# logs its call, returns the canned weather.
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    TOOL_LOG.append({"name": "get_weather", "arguments": {"city": city}, "result": TOOL_RESULT})
    return TOOL_RESULT


def otel_sdk(endpoint: str) -> None:
    """Plain OTel SDK providers exporting OTLP/HTTP protobuf, set as the globals."""
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

    resource = Resource.create({"service.name": SERVICE_NAME})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs")))
    _logs.set_logger_provider(logger_provider)
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"))
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))


def flush_globals() -> None:
    """Shut the global providers down: each flushes what it holds, in one request per signal."""
    from opentelemetry import _logs, metrics, trace

    for provider in (trace.get_tracer_provider(), _logs.get_logger_provider(), metrics.get_meter_provider()):
        shutdown = getattr(provider, "shutdown", None)
        if shutdown is not None:
            shutdown()


def openai_loop(client: Any, stream_answer: bool) -> str:
    """The hand-written agent loop: ask, run the tool the model calls, ask again.

    The second call streams when ``stream_answer`` (with usage, as a careful user asks).
    """
    from otelbench.testing.openai_stub import WEATHER_TOOL

    messages: list[dict[str, Any]] = [{"role": "system", "content": INSTRUCTIONS},
                                      {"role": "user", "content": QUESTION}]  # fmt: skip
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER_TOOL])
    message = first.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls or []:
        result = TOOLS[call.function.name](**json.loads(call.function.arguments))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    if not stream_answer:
        return client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER_TOOL]).choices[0].message.content
    stream = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER_TOOL], stream=True,
                                            stream_options={"include_usage": True})  # fmt: skip
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


TOOLS: dict[str, Callable[..., str]] = {"get_weather": get_weather}


@stack("openllmetry", "OpenLLMetry (traceloop-sdk): @workflow → @agent → @tool around an openai client loop",
       ("traceloop-sdk", "opentelemetry-instrumentation-openai", "opentelemetry-semantic-conventions-ai", "openai"),
       "traceloop.entity.name on the @agent span (traceloop.span.kind = agent), span name weather_agent.agent")
def run_openllmetry(endpoint: str, base_url: str) -> dict[str, Any]:
    from openai import OpenAI
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool, workflow

    Traceloop.init(app_name=SERVICE_NAME, telemetry_enabled=False,
                   exporter=OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"),
                   metrics_exporter=OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"),
                   logging_exporter=OTLPLogExporter(endpoint=f"{endpoint}/v1/logs"))  # fmt: skip
    TOOLS["get_weather"] = tool(name="get_weather")(get_weather)
    client = OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)

    @agent(name=AGENT_NAME)
    def weather_agent(question: str) -> str:
        return openai_loop(client, stream_answer=True)

    @workflow(name="weather_workflow")
    def weather_workflow(question: str) -> str:
        return weather_agent(question)

    output = weather_workflow(QUESTION)
    flush_globals()
    return {"output": output}


@stack("openlit", "OpenLIT: openlit.init() with the openai client; @openlit.trace on the agent and tool functions",
       ("openlit", "openai"),
       "nowhere as an agent: only the span name of the @openlit.trace function (weather_agent)")
def run_openlit(endpoint: str, base_url: str) -> dict[str, Any]:
    import openlit
    from openai import OpenAI

    openlit.init(otlp_endpoint=endpoint, application_name=SERVICE_NAME, environment="dev")
    TOOLS["get_weather"] = openlit.trace(get_weather)
    client = OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)

    @openlit.trace
    def weather_agent(question: str) -> str:
        return openai_loop(client, stream_answer=True)

    output = weather_agent(QUESTION)
    flush_globals()
    return {"output": output}


@stack("langchain", "LangChain 1.x create_agent (LangGraph) + ChatOpenAI (streaming), OpenInference instrumentation",
       ("langchain", "langchain-core", "langgraph", "langchain-openai", "openinference-instrumentation-langchain",
        "openinference-semantic-conventions", "openai"),
       "create_agent(name=...): the LangGraph graph's name, the root CHAIN span's name; "
       "metadata lc_agent_name on the spans inside it")
def run_langchain(endpoint: str, base_url: str) -> dict[str, Any]:
    otel_sdk(endpoint)
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument()

    llm = ChatOpenAI(model=MODEL, base_url=base_url, api_key=API_KEY, max_retries=0, streaming=True,
                     stream_usage=True)  # fmt: skip
    graph = create_agent(llm, tools=[tool(get_weather)], system_prompt=INSTRUCTIONS, name=AGENT_NAME)
    result = graph.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    flush_globals()
    return {"output": result["messages"][-1].content}


def _pydantic_ai_agent(base_url: str) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key=API_KEY))
    agent = Agent(model, name=AGENT_NAME, instructions=INSTRUCTIONS)

    agent.tool_plain(get_weather)
    return agent


@stack("pydantic-ai", "pydantic-ai 2.x Agent.instrument_all() with the plain OTel SDK, OpenAIChatModel, run_sync",
       ("pydantic-ai-slim", "pydantic-graph", "genai-prices", "openai"),
       "gen_ai.agent.name on the agent run span (invoke_agent weather_agent)")
def run_pydantic_ai(endpoint: str, base_url: str) -> dict[str, Any]:
    otel_sdk(endpoint)
    from pydantic_ai import Agent

    Agent.instrument_all()
    output = _pydantic_ai_agent(base_url).run_sync(QUESTION).output
    flush_globals()
    return {"output": output}


@stack("logfire", "pydantic-ai 2.x through logfire (send_to_logfire=False, OTLP from OTEL_EXPORTER_OTLP_ENDPOINT), "
       "run_stream inside an outer logfire.span",
       ("logfire", "logfire-sdk", "pydantic-ai-slim", "pydantic-graph", "genai-prices", "openai"),
       "gen_ai.agent.name on the agent run span, under the outer logfire span")
def run_logfire(endpoint: str, base_url: str) -> dict[str, Any]:
    import asyncio

    import logfire

    # The exporters come from OTEL_EXPORTER_OTLP_ENDPOINT (set by the parent), as logfire documents.
    logfire.configure(send_to_logfire=False, service_name=SERVICE_NAME, console=False)
    logfire.instrument_pydantic_ai()
    agent = _pydantic_ai_agent(base_url)

    async def run() -> str:
        async with agent.run_stream(QUESTION) as result:
            return await result.get_output()

    with logfire.span("weather request for {city}", city="Paris"):
        output = asyncio.run(run())
    logfire.shutdown()
    return {"output": output}


@stack("openai-agents", "OpenAI Agents SDK: Agent + function_tool, OpenAIChatCompletionsModel, OpenInference "
       "instrumentation (the SDK's own trace export to OpenAI removed)",
       ("openai-agents", "openinference-instrumentation-openai-agents", "openinference-semantic-conventions",
        "openai"),
       "Agent(name=...): the AGENT span's name (OpenInference), graph.node.id")
def run_openai_agents(endpoint: str, base_url: str) -> dict[str, Any]:
    otel_sdk(endpoint)
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_trace_processors
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_trace_processors([])  # the default processor exports to OpenAI's platform: no network here
    OpenAIAgentsInstrumentor().instrument()
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=AsyncOpenAI(base_url=base_url, api_key=API_KEY,
                                                                              max_retries=0))  # fmt: skip
    agent = Agent(name=AGENT_NAME, instructions=INSTRUCTIONS, model=model, tools=[function_tool(get_weather)])
    output = Runner.run_sync(agent, QUESTION).final_output
    flush_globals()
    return {"output": output}


@stack("llamaindex", "LlamaIndex FunctionAgent (workflow, streams by default) + llama-index-llms-openai, "
       "OpenInference instrumentation",
       ("llama-index-core", "llama-index-llms-openai", "llama-index-workflows", "openinference-instrumentation-llama-index",
        "openinference-semantic-conventions", "openai"),
       "no attribute: only inside the Python repr of workflow events in input.value/output.value "
       "(current_agent_name='weather_agent')")
def run_llamaindex(endpoint: str, base_url: str) -> dict[str, Any]:
    import asyncio

    otel_sdk(endpoint)
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI as LlamaOpenAI
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument()
    llm = LlamaOpenAI(model=MODEL, api_base=base_url, api_key=API_KEY, max_retries=0)
    agent = FunctionAgent(name=AGENT_NAME, description="Answers weather questions.", system_prompt=INSTRUCTIONS,
                          tools=[FunctionTool.from_defaults(get_weather)], llm=llm)  # fmt: skip

    async def run() -> str:
        return str(await agent.run(QUESTION))

    output = asyncio.run(run())
    flush_globals()
    return {"output": output}


@stack("crewai", "CrewAI: one Agent (role weather_agent) and one Task in a Crew, OpenInference CrewAI + OpenAI "
       "instrumentations",
       ("crewai", "openinference-instrumentation-crewai", "openinference-instrumentation-openai",
        "openinference-semantic-conventions", "openai"),
       "Agent(role=...): graph.node.id and the span name '<role>._execute_core' of the AGENT span; "
       "role in its input.value JSON")
def run_crewai(endpoint: str, base_url: str) -> dict[str, Any]:
    otel_sdk(endpoint)
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    CrewAIInstrumentor().instrument()
    OpenAIInstrumentor().instrument()
    llm = LLM(model=f"openai/{MODEL}", base_url=base_url, api_key=API_KEY)
    agent = Agent(role=AGENT_NAME, goal="Answer weather questions with the get_weather tool.", backstory=INSTRUCTIONS,
                  tools=[tool("get_weather")(get_weather)], llm=llm, max_iter=3, verbose=False)  # fmt: skip
    task = Task(description=QUESTION, expected_output="One sentence about the weather.", agent=agent)
    output = Crew(agents=[agent], tasks=[task], name="weather_crew", verbose=False).kickoff().raw
    flush_globals()
    return {"output": output}


@stack("google-adk", "Google ADK LlmAgent with LiteLlm (openai/gpt-4o-mini at the stub), InMemoryRunner, ADK's "
       "own OTel spans",
       ("google-adk", "google-genai", "litellm", "openai"),
       "LlmAgent(name=...): gen_ai.agent.name on the invoke_agent span")
def run_google_adk(endpoint: str, base_url: str) -> dict[str, Any]:
    import asyncio

    otel_sdk(endpoint)
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    agent = LlmAgent(name=AGENT_NAME, model=LiteLlm(model=f"openai/{MODEL}", api_base=base_url, api_key=API_KEY),
                     instruction=INSTRUCTIONS, tools=[get_weather])  # fmt: skip
    runner = InMemoryRunner(agent=agent, app_name=SERVICE_NAME)

    async def run() -> str:
        session = await runner.session_service.create_session(app_name=SERVICE_NAME, user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=QUESTION)])
        answer = ""
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                answer = "".join(part.text or "" for part in event.content.parts)
        return answer

    output = asyncio.run(run())
    flush_globals()
    return {"output": output}


def child(name: str, endpoint: str, base_url: str, report: Path) -> None:
    run = STACKS[name].run
    assert run is not None, f"{name} runs as its own program"
    outcome = run(endpoint, base_url)
    versions = {}
    for package in STACKS[name].packages + ("opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    report.write_text(json.dumps({**outcome, "tool_calls": TOOL_LOG, "versions": versions,
                                  "python": platform.python_version()}))  # fmt: skip


# -- the parent ----------------------------------------------------------------


def _reported_costs(bodies: list[tuple[str, str, bytes]]) -> list[dict[str, Any]]:
    """Every span attribute whose key names a cost, as the stack sent it."""
    from otelbench.testing.otlp_capture import protobuf_to_otlp_json

    costs = []
    for _name, signal, body in bodies:
        if signal != "traces":
            continue
        for rs in protobuf_to_otlp_json(signal, body).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    for kv in span.get("attributes", []):
                        if "cost" in kv["key"].split(".")[-1] or kv["key"].endswith(".cost"):
                            value = next(iter(kv["value"].values()), None)
                            costs.append({"span": span["name"], "attribute": kv["key"], "value": value})
    return costs


def expected(stack_: Stack, report: dict[str, Any], served: list[dict[str, Any]],
             bodies: list[tuple[str, str, bytes]]) -> dict[str, Any]:  # fmt: skip
    from otelbench.testing.openai_stub import WEATHER_CALL_ID

    calls = [{
        "request_model": s["requested_model"], "response_model": s["response_model"],
        "input_tokens": s["usage"]["prompt_tokens"], "output_tokens": s["usage"]["completion_tokens"],
        "total_tokens": s["usage"]["total_tokens"],
        "finish_reason": "tool_calls" if s["reply"] == "tool_call" else "stop",
        "stream": s["stream"], "usage_sent_to_client": s["usage_sent"],
        "ttft_ms_server": None if s["ttft_ms"] is None else round(s["ttft_ms"], 1),
    } for s in served]  # fmt: skip
    return {
        "stack": stack_.name,
        "description": stack_.title,
        "agent_name": AGENT_NAME,
        "agent_name_at": stack_.agent_name_at,
        "service_name": SERVICE_NAME,
        "input": QUESTION,
        "output": report["output"],
        "llm_calls": calls,
        "tool_calls": [{**t, "call_id": WEATHER_CALL_ID} for t in report["tool_calls"]],
        "reported_costs": _reported_costs(bodies),
        "notes": [
            "input/output tokens are what the stub billed; usage_sent_to_client false means the client never"
            " saw them (a stream without stream_options.include_usage)",
            "ttft_ms_server is the stub's time from the request's arrival to its first token; the client's"
            " TTFT is that plus a few ms",
        ],
        "versions": report["versions"],
        **{runtime: report[runtime] for runtime in ("python", "node") if runtime in report},
        "recorded": dt.date.today().isoformat(),
    }


def _readme_section(out: Path) -> str:
    lines = [
        "## Agent frameworks (`scripts/record_frameworks.py`)",
        "",
        f"One agent run per stack: `{AGENT_NAME}` is asked \"{QUESTION}\", the model calls",
        f"`get_weather(city=\"Paris\")`, the tool returns \"{TOOL_RESULT}\", the model answers. The model is",
        "the canned stub (`otelbench.testing.openai_stub`, script `weather`; requested `gpt-4o-mini`,",
        "answered as `gpt-4o-mini-2024-07-18`, usage 61+17 then 94+12 tokens). Each folder holds the",
        "OTLP requests the stack sent and `expected.json`, what the run really was (agent, input, output,",
        "calls, tokens, tool call, reported cost, TTFT). What each stack sends and what the views make",
        "of it: docs/frameworks-recorded.md. The stacks in pyproject's `frameworks` extra were recorded",
        "from one virtualenv with it; openlit, llamaindex and crewai (openai < 3) each from their own.",
        "The JavaScript stacks (`scripts/record_js.py`, agents in tests/js/agents/) ran on Node with",
        "the packages of tests/js/package-lock.json; ai 7 and Mastra 1.71 declare Node >= 22 and ran on",
        "Node 20 with npm's engine warning only.",
        *_npm_packages(),
        "",
        "| folder | stack | versions | runtime, date |",
        "|---|---|---|---|",
    ]
    for path in sorted(out.glob("*/expected.json")):
        exp = json.loads(path.read_text())
        versions = ", ".join(f"{k} {v}" for k, v in exp["versions"].items() if v)
        runtime = f"Node {exp['node']}" if "node" in exp else f"Python {exp['python']}"
        lines.append(f"| `{path.parent.name}/` | {exp['description']} | {versions} | {runtime}, {exp['recorded']} |")
    return "\n".join(lines) + "\n"


def _npm_packages() -> list[str]:
    """The JavaScript stacks' direct npm dependencies at the lock's versions, as README lines."""
    lock = REPO / "tests" / "js" / "package-lock.json"
    if not lock.exists():
        return []
    packages = json.loads(lock.read_text())["packages"]
    wanted = sorted(packages[""]["dependencies"])
    return ["", "npm packages: " + ", ".join(f"{n} {packages[f'node_modules/{n}']['version']}" for n in wanted) + "."]


def _write_readme(out: Path) -> None:
    readme = out / "README.md"
    head = readme.read_text().partition(README_MARKER)[0] if readme.exists() else "# Recorded OTLP fixtures\n"
    readme.write_text(head.rstrip("\n") + "\n" + README_MARKER + "\n" + _readme_section(out))


def record(out: Path, names: list[str], pythons: dict[str, str]) -> int:
    from otelbench.testing.frameworks import child_env
    from otelbench.testing.openai_stub import StubServer
    from otelbench.testing.otlp_capture import CaptureServer, write_recordings

    failed = []
    with StubServer() as stub, CaptureServer(frozenset(names)) as capture, tempfile.TemporaryDirectory() as tmp:
        base_url = stub.base_url("weather", ttft_ms=STUB_TTFT_MS)
        for name in names:
            print(f"recording {name} ...", flush=True)
            report_path = Path(tmp) / f"{name}.json"
            endpoint = f"{capture.url}/{name}"
            first = len(stub.served)
            command = STACKS[name].command
            cmd = command(endpoint, base_url, report_path) if command else [
                pythons.get(name, sys.executable), __file__, "--child", name, "--endpoint", endpoint,
                "--base-url", base_url, "--report", str(report_path)]  # fmt: skip
            proc = subprocess.run(cmd, env=child_env(endpoint, REPO), stdin=subprocess.DEVNULL, timeout=600)
            if proc.returncode != 0 or not report_path.exists():
                print(f"  {name}: the child failed (exit {proc.returncode}); nothing written", file=sys.stderr)
                failed.append(name)
                continue
            report = json.loads(report_path.read_text())
            bodies = capture.bodies(name)
            folder = out / name
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            written = write_recordings(bodies, folder)
            exp = expected(STACKS[name], report, stub.served[first:], bodies)
            (folder / "expected.json").write_text(json.dumps(exp, indent=1, ensure_ascii=False) + "\n")
            problems = []
            if exp["output"] != "It is sunny in Paris, 22 °C.":
                problems.append(f"output {exp['output']!r}")
            if [t["arguments"] for t in exp["tool_calls"]] != [{"city": "Paris"}]:
                problems.append(f"tool calls {exp['tool_calls']}")
            if [c["finish_reason"] for c in exp["llm_calls"]] != ["tool_calls", "stop"]:
                problems.append(f"llm calls {[c['finish_reason'] for c in exp['llm_calls']]}")
            print(f"  {len(written)} requests: {', '.join(p.name for p in written)}"
                  + (f"; NOT the scripted run: {'; '.join(problems)}" if problems else ""))  # fmt: skip
            if problems:
                failed.append(name)
        if capture.refused:
            print(f"requests the capture server refused: {capture.refused}", file=sys.stderr)
    _write_readme(out)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", help="comma-separated stacks (default: all): " + ", ".join(STACKS))
    parser.add_argument("--python", action="append", default=[], metavar="STACK=PATH",
                        help="the interpreter to run a stack's child with (default: this one)")  # fmt: skip
    parser.add_argument("--child", choices=list(STACKS), help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.endpoint, args.base_url, args.report)
        return 0
    names = args.only.split(",") if args.only else list(STACKS)
    unknown = [n for n in names if n not in STACKS]
    if unknown:
        parser.error(f"unknown stack(s) {unknown}; known: {', '.join(STACKS)}")
    pythons = dict(p.split("=", 1) for p in args.python)
    sys.path.insert(0, str(REPO))
    return record(args.out, names, pythons)


if __name__ == "__main__":
    sys.exit(main())
