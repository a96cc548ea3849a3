"""``otelbench init`` on JavaScript projects: the plan per stack and version (the AI SDK 7's
``@ai-sdk/otel``, the AI SDK 6's ``experimental_telemetry``, Mastra's observability config),
and ``--check`` through the project's own packages — on tests/js (the recorded agents'
packages) and, slow, on fresh AI SDK and Mastra projects that ``--install`` sets up, against
a real collector and a real ``otelbench web``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.init import javascript as js_setup
from otelbench.init.project import detect, plan
from otelbench.testing.roundtrip import spans_in_view
from otelbench.testing.serve import ROOT, serve_web
from tests.test_init import init, tree, write

RECORDED = ROOT / "tests" / "js"  # the recorded agents' project: package.json, node_modules from npm ci
PINNED = json.loads((RECORDED / "package.json").read_text())["dependencies"]
needs_node = pytest.mark.skipif(shutil.which("node") is None or not (RECORDED / "node_modules").is_dir(),
                                reason="node, and tests/js's node_modules (scripts/setup.sh runs npm ci)")
NPM_ENV = {"npm_config_prefer_offline": "true", "npm_config_audit": "false", "npm_config_fund": "false",
           "npm_config_update_notifier": "false"}


def sent_by_node(web: str, lake: str, out: str) -> bool:
    """Whether the run the check printed came from the OTel SDK for Node (its resource says so)."""
    trace_id = out.split("(trace ", 1)[1].split(")", 1)[0]
    ids = [s["span_id"] for s in httpx.get(f"{web}/api/runs/{trace_id}").json()["spans"]]
    return [rec["resource"].get("telemetry.sdk.language") for _, rec in spans_in_view(lake, ids)] == ["nodejs"]


def package_json(folder: Path, deps: dict[str, str], name: str = "bot") -> Path:
    return write(folder, {"package.json": json.dumps({"name": name, "private": True, "type": "module",
                                                      "dependencies": deps})})


def js_plan(folder: Path, **kw):
    (found,) = [p for p in plan(detect(folder), endpoint="http://h:4318", key="k-1", agent="weather_agent", **kw)
                if p.language == "javascript"]
    return found


def test_ai_sdk_7_gets_its_otel_integration_and_the_telemetry_option(tmp_path: Path) -> None:
    p = js_plan(package_json(tmp_path, {"ai": PINNED["ai"], "@ai-sdk/openai-compatible": "3.0.97"}))
    assert p.packages == ["@opentelemetry/sdk-node", "@opentelemetry/exporter-trace-otlp-proto", "@ai-sdk/otel"]
    assert p.install == ["npm", "install", *p.packages] and p.present == []
    # the lines tests/js/agents/ai-sdk.mjs runs
    for line in ("import { OpenTelemetry } from '@ai-sdk/otel';", "import { registerTelemetry } from 'ai';",
                 "registerTelemetry(new OpenTelemetry({ agentSpanName: 'functionId' }));",
                 "telemetry: { functionId: 'weather_agent' }"):
        assert line in p.snippet, line
    assert "experimental_telemetry" not in p.snippet and "Mastra" not in p.snippet
    assert p.imports["ai"] == ["registerTelemetry"] and p.imports["@ai-sdk/otel"] == ["OpenTelemetry"]
    assert any(n.startswith("Vercel AI SDK 7 (ai 7.0.185)") for n in p.notes)


def test_ai_sdk_6_and_older_get_experimental_telemetry(tmp_path: Path) -> None:
    for spec in ("^6.0.0", "npm:ai@6.0.333", "~5.0.1", "4.3.2"):
        p = js_plan(package_json(tmp_path, {"ai": spec}))
        assert p.packages == list(js_setup.JS_BASE), spec
        assert "experimental_telemetry: { isEnabled: true, functionId: 'weather_agent' }" in p.snippet
        assert "@ai-sdk/otel" not in p.snippet and "registerTelemetry" not in p.snippet and "ai" not in p.imports


def test_the_installed_version_decides_over_the_range(tmp_path: Path) -> None:
    project = package_json(tmp_path, {"ai": "^7.0.0"})
    write(project, {"node_modules/ai/package.json": json.dumps({"name": "ai", "version": "6.0.333"})})
    p = js_plan(project)
    assert "experimental_telemetry" in p.snippet and "Vercel AI SDK 6 (ai 6.0.333 installed)" in p.notes[0]
    # a range npm would take the latest for: the AI SDK 7's switch
    assert "registerTelemetry" in js_plan(package_json(tmp_path / "latest", {"ai": "latest"})).snippet


def test_mastra_gets_the_observability_config_with_the_otel_exporter(tmp_path: Path) -> None:
    p = js_plan(package_json(tmp_path, {"@mastra/core": PINNED["@mastra/core"], "zod": PINNED["zod"]}))
    assert p.packages == ["@opentelemetry/sdk-node", "@opentelemetry/exporter-trace-otlp-proto",
                          "@mastra/observability", "@mastra/otel-exporter"]
    # on @mastra/core's major line: npm's newest-for-this-node pick would not fit @mastra/core 1
    assert p.install[-2:] == ["@mastra/observability@1", "@mastra/otel-exporter@1"]
    # the config tests/js/agents/mastra.mjs runs, with the key and the agent's name as headers
    for line in ("import { Observability } from '@mastra/observability';",
                 "import { OtelExporter } from '@mastra/otel-exporter';", "observability: new Observability({",
                 "exporters: [new OtelExporter({ provider: { custom: {",
                 "endpoint: 'http://h:4318', protocol: 'http/protobuf',",
                 "headers: { 'x-bench-key': 'k-1', 'x-bench-agent': 'weather_agent' },"):
        assert line in p.snippet, line
    assert "NodeSDK" not in p.snippet and p.run == "node your-agent.mjs"
    assert not any("upgrade @mastra/core" in n for n in p.notes)
    old = js_plan(package_json(tmp_path / "old", {"@mastra/core": "^0.20.0"}))
    assert any("upgrade @mastra/core first" in n for n in old.notes) and old.install[-1] == "@mastra/otel-exporter"


def test_what_the_project_lists_already_is_not_installed_again(tmp_path: Path) -> None:
    project = package_json(tmp_path, {"ai": "^7", "@ai-sdk/otel": "^1", "@opentelemetry/sdk-node": "^0.223.0"})
    p = js_plan(project)
    assert p.install == ["npm", "install", "@opentelemetry/exporter-trace-otlp-proto"]
    assert p.present == ["@opentelemetry/sdk-node", "@ai-sdk/otel"] and "@ai-sdk/otel" in p.imports
    done = init(project)
    assert "1. install: @opentelemetry/exporter-trace-otlp-proto\n" in done.stdout
    assert "(the project lists @opentelemetry/sdk-node, @ai-sdk/otel already)" in done.stdout
    full = js_plan(write(tmp_path / "full", {"package.json": (RECORDED / "package.json").read_text()}))
    assert full.install is None and "1. install: nothing to add" in init(tmp_path / "full").stdout


@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 400), st.sampled_from(["", "^", "~", ">=", "="]))
def test_a_ranges_version_is_its_major_and_minor(major: int, minor: int, patch: int, op: str) -> None:
    spec = f"{op}{major}.{minor}.{patch}"
    assert js_setup.version(Path("/nonexistent"), "ai", spec) == (spec, (major, minor))
    assert js_setup.version(Path("/nonexistent"), "ai", f"npm:ai@{spec}")[1] == (major, minor)
    assert js_setup.version(Path("/nonexistent"), "ai", f"^{major}.0.0 || {spec}")[1] == max((major, 0), (major, minor))


@needs_node
def test_check_goes_through_the_projects_own_packages(collector) -> None:
    """tests/js lists every package the plans name: nothing to install, and the span goes
    through its node_modules (read only: init writes nothing there)."""
    endpoint, lake = f"http://127.0.0.1:{collector.http_port}", collector.config.exporters.parquet.path
    before = tree(RECORDED / "agents")
    with serve_web(Path(lake)) as web:
        done = init(RECORDED, "--check", "--endpoint", endpoint, "--web", web, "--agent", "js-checked")
        assert done.returncode == 0, done.stderr
        assert "1. install: nothing to add" in done.stdout
        assert f"check: ok — {web}/agents/js-checked" in done.stdout
        assert httpx.get(f"{web}/api/agents/js-checked").json()["agent"]["runs"] == 1  # one span: not Python's too
        assert sent_by_node(web, lake, done.stdout)
    assert tree(RECORDED / "agents") == before


@needs_node
def test_check_without_the_packages_says_what_to_install(tmp_path: Path) -> None:
    project = package_json(tmp_path, {"ai": "7.0.185"})
    before = tree(project)
    done = init(project, "--check", "--endpoint", "http://127.0.0.1:9", "--web", "http://127.0.0.1:9")
    assert done.returncode == 1
    assert ("cannot import @opentelemetry/sdk-node, @opentelemetry/exporter-trace-otlp-proto, @ai-sdk/otel, ai: "
            "run npm install @opentelemetry/sdk-node @opentelemetry/exporter-trace-otlp-proto @ai-sdk/otel") \
        in done.stderr
    assert tree(project) == before


def fresh_install_and_check(folder: Path, deps: list[str], collector, agent: str) -> subprocess.CompletedProcess:
    """A new project on the recorded versions of ``deps``, ``npm install``ed, then the real
    ``otelbench init --install --check`` against the collector and a web on its lake."""
    project = package_json(folder, {d: PINNED[d] for d in deps}, name=agent)
    env = {**os.environ, **NPM_ENV}
    installed = subprocess.run(["npm", "install"], cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]
    endpoint, lake = f"http://127.0.0.1:{collector.http_port}", collector.config.exporters.parquet.path
    with serve_web(Path(lake)) as web:
        done = init(project, "--install", "--check", "--endpoint", endpoint, "--web", web, env=NPM_ENV)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"check: ok — {web}/agents/{agent}" in done.stdout
        assert httpx.get(f"{web}/api/agents/{agent}").json()["agent"]["runs"] == 1
        assert sent_by_node(web, lake, done.stdout)
    return done


@needs_node
@pytest.mark.slow
def test_a_fresh_ai_sdk_project_installs_and_checks(tmp_path: Path, collector) -> None:
    done = fresh_install_and_check(tmp_path, ["ai", "@ai-sdk/openai-compatible"], collector, "fresh-ai-sdk")
    assert "running: npm install @opentelemetry/sdk-node @opentelemetry/exporter-trace-otlp-proto @ai-sdk/otel" \
        in done.stdout
    listed = json.loads((tmp_path / "package.json").read_text())["dependencies"]
    assert {"@ai-sdk/otel", "@opentelemetry/sdk-node", "@opentelemetry/exporter-trace-otlp-proto"} <= set(listed)
    assert listed["ai"] == PINNED["ai"]  # the project's own not touched


@needs_node
@pytest.mark.slow
def test_a_fresh_mastra_project_installs_and_checks(tmp_path: Path, collector) -> None:
    done = fresh_install_and_check(tmp_path, ["@mastra/core", "zod"], collector, "fresh-mastra")
    assert "@mastra/observability@1 @mastra/otel-exporter@1" in done.stdout
    listed = json.loads((tmp_path / "package.json").read_text())["dependencies"]
    assert {"@mastra/observability", "@mastra/otel-exporter"} <= set(listed)
    assert listed["@mastra/core"] == PINNED["@mastra/core"]


# -- the printed code, run: an agent of the recorded kind (tests/js/agents/weather.mjs's words,
# tool and canned model) written around the snippet as printed, in a folder whose
# node_modules are tests/js's
WEATHER = (RECORDED / "agents" / "weather.mjs").as_uri()
AGENT_HEAD = {
    "ai": f"""import {{ createOpenAICompatible }} from '@ai-sdk/openai-compatible';
import {{ generateText as generate, isStepCount, tool }} from 'ai';
import {{ API_KEY, INSTRUCTIONS, MODEL, QUESTION, WEATHER_TOOL, baseURL }} from '{WEATHER}';
const provider = createOpenAICompatible({{ name: 'openai', baseURL, apiKey: API_KEY, includeUsage: true }});
const model = provider.chatModel(MODEL);
const prompt = QUESTION;
const generateText = (options) => generate({{ system: INSTRUCTIONS, tools: {{ get_weather: tool(WEATHER_TOOL) }},
  stopWhen: isStepCount(3), maxRetries: 0, ...options }});
""",
    "ai-v6": f"""import {{ createOpenAICompatible }} from 'openai-compatible-v2';
import {{ generateText as generate, stepCountIs, tool }} from 'ai-v6';
import {{ API_KEY, INSTRUCTIONS, MODEL, QUESTION, WEATHER_TOOL, baseURL }} from '{WEATHER}';
const provider = createOpenAICompatible({{ name: 'openai', baseURL, apiKey: API_KEY, includeUsage: true }});
const model = provider.chatModel(MODEL);
const prompt = QUESTION;
const generateText = (options) => generate({{ system: INSTRUCTIONS, tools: {{ get_weather: tool(WEATHER_TOOL) }},
  stopWhen: stepCountIs(3), maxRetries: 0, ...options }});
""",
    "mastra": f"""import {{ Agent }} from '@mastra/core/agent';
import {{ createTool }} from '@mastra/core/tools';
import {{ API_KEY, INSTRUCTIONS, MODEL, QUESTION, WEATHER_TOOL, baseURL }} from '{WEATHER}';
const agent = new Agent({{ id: 'printed', name: 'printed', instructions: INSTRUCTIONS,
  model: {{ id: `openai/${{MODEL}}`, url: baseURL, apiKey: API_KEY, api: 'chat' }},
  tools: {{ get_weather: createTool({{ id: 'get_weather', ...WEATHER_TOOL }}) }} }});
""",
}


@needs_node
@pytest.mark.parametrize("stack,deps", [("ai", {"ai": "7.0.185"}), ("ai-v6", {"ai": "6.0.333"}),
                                        ("mastra", {"@mastra/core": "1.71.0"})])
def test_the_printed_code_sends_the_agents_run(tmp_path: Path, collector, stack: str, deps: dict[str, str]) -> None:
    from otelbench.testing.openai_stub import StubServer
    from otelbench.testing.wait import wait_for

    endpoint, lake = f"http://127.0.0.1:{collector.http_port}", collector.config.exporters.parquet.path
    p = [p for p in plan(detect(package_json(tmp_path / "plan", deps)), endpoint=endpoint, key=None, agent="printed")
         if p.language == "javascript"][0]
    folder = package_json(tmp_path / "run", {})
    (folder / "node_modules").symlink_to(RECORDED / "node_modules")
    if stack == "mastra":
        agent = AGENT_HEAD[stack] + p.snippet.replace("/* yours */", "printed: agent") + (
            "\nawait mastra.getAgent('printed').generate(QUESTION, { maxSteps: 3 });\nawait mastra.shutdown();\n")
        command = ["node", "agent.mjs"]
    else:
        otel, call = p.snippet.split("\n\n// your agent", 1)
        write(folder, {"otel.mjs": otel})
        agent = AGENT_HEAD[stack] + call.split("\n", 1)[1] + "\n"
        command = ["node", "--import", "./otel.mjs", "agent.mjs"]
    write(folder, {"agent.mjs": agent})
    assert p.run.split()[:-1] == command[:-1]
    with StubServer() as stub, serve_web(Path(lake)) as web:
        done = subprocess.run([*command, endpoint, stub.base_url("weather"), str(tmp_path / "report.json")],
                              cwd=folder, env={**os.environ, **p.env}, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        profile = wait_for(lambda: (r := httpx.get(f"{web}/api/agents/printed")).status_code == 200 and r.json(),
                           what="the printed agent's profile")
        # one run, named as the snippet names it, with its model calls' tokens (priced)
        assert profile["agent"]["runs"] == 1 and profile["agent"]["cost_total"] > 0, profile
