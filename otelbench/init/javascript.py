"""What ``otelbench init`` proposes for a JavaScript project: the packages, the code and the
notes per LLM stack, chosen by the version the project has (its ``package.json`` range, or
what ``node_modules`` holds). Pure functions over the project's files; docs/init.md.

The snippets are the ones the recorded agents run (tests/js/agents): the AI SDK 7 sends its
spans through ``@ai-sdk/otel`` (``registerTelemetry``), AI SDK 6 and older through
``experimental_telemetry``, both into the global tracer provider a ``NodeSDK`` registers;
Mastra exports its own spans with ``@mastra/otel-exporter`` (no NodeSDK involved).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# dependency -> library
JS_LIBRARIES = {"openai": "openai", "@anthropic-ai/sdk": "anthropic", "ai": "vercel-ai", "@mastra/core": "mastra"}
JS_BASE = ("@opentelemetry/sdk-node", "@opentelemetry/exporter-trace-otlp-proto")  # NodeSDK, OTLP/HTTP protobuf
AI_SDK_OTEL = 7  # the AI SDK's major from which telemetry is @ai-sdk/otel's registerTelemetry
MASTRA_OBSERVABILITY = (1, 16)  # @mastra/observability 1.x asks @mastra/core >= 1.16
# Installed on @mastra/core's major line: for a bare name npm takes the newest version whose
# engines the running node meets, and on Node 20 that is @mastra/observability 0.0.5 (every
# 1.x asks Node 22.13), which does not fit @mastra/core 1 (npm fails with ERESOLVE).
MASTRA_LINE = ("@mastra/observability", "@mastra/otel-exporter")
# package -> the names the snippet imports from it: the check imports each, so a package
# that is missing, or a version without the name, fails there rather than in the agent
EXPORTS = {
    "@opentelemetry/sdk-node": ("NodeSDK",),
    "@opentelemetry/exporter-trace-otlp-proto": ("OTLPTraceExporter",),
    "@arizeai/openinference-instrumentation-openai": ("OpenAIInstrumentation",),
    "@traceloop/instrumentation-anthropic": ("AnthropicInstrumentation",),
    "@ai-sdk/otel": ("OpenTelemetry",),
    "@mastra/observability": ("Observability",),
    "@mastra/otel-exporter": ("OtelExporter",),
}
_NUMBER = re.compile(r"(\d+)(?:\.(\d+))?")


def dependencies(folder: Path) -> dict[str, str]:
    """Every package ``package.json`` asks for (``dependencies``, ``devDependencies``) -> its range."""
    try:
        data = json.loads((folder / "package.json").read_text())
    except (OSError, ValueError):
        return {}
    deps: dict[str, str] = {}
    for section in ("dependencies", "devDependencies"):
        found = data.get(section) if isinstance(data, dict) else None
        if isinstance(found, dict):
            deps.update({k: str(v) for k, v in found.items()})
    return deps


def version(folder: Path, package: str, spec: str | None) -> tuple[str, tuple[int, int] | None]:
    """The version of ``package`` the project runs, as (what to show, (major, minor)): the
    installed one when ``node_modules`` has it, else the one ``spec`` names (``^6.0.0`` -> 6.0;
    ``npm:ai@6.0.3`` -> 6.0; of ``a || b`` the higher); ``None`` when not known (``latest``, ``*``)."""
    try:
        installed = json.loads((folder / "node_modules" / package / "package.json").read_text()).get("version")
    except (OSError, ValueError, AttributeError):
        installed = None
    if isinstance(installed, str) and (m := _NUMBER.match(installed)):
        return f"{installed} installed", (int(m.group(1)), int(m.group(2) or 0))
    if not spec:
        return "not in package.json", None
    alternatives = [s.strip().rsplit("@", 1)[-1] if s.strip().startswith("npm:") else s for s in spec.split("||")]
    found = [(int(m.group(1)), int(m.group(2) or 0)) for s in alternatives
             if not s.strip().startswith(("<", "workspace:", "file:", "link:", "git", "http"))
             and (m := _NUMBER.search(s))]
    return spec, max(found) if found else None


def packages(libraries: set[str], ai: tuple[int, int] | None) -> list[str]:
    """What sends the telemetry of these libraries (``ai``: the AI SDK's version, None: the latest)."""
    per = {"openai": ["@arizeai/openinference-instrumentation-openai"],
           "anthropic": ["@traceloop/instrumentation-anthropic"],
           "vercel-ai": ["@ai-sdk/otel"] if _ai_sdk_otel(ai) else [],
           "mastra": ["@mastra/observability", "@mastra/otel-exporter"]}
    return list(dict.fromkeys([*JS_BASE, *(pkg for lib in sorted(libraries) for pkg in per[lib])]))


def install_specs(needed: list[str], mastra: tuple[int, int] | None) -> list[str]:
    """The names as the install command gives them: the latest, Mastra's on its core's major."""
    on_line = mastra is not None and mastra >= MASTRA_OBSERVABILITY
    return [f"{pkg}@{mastra[0]}" if on_line and pkg in MASTRA_LINE else pkg for pkg in needed]


def exports(needed: list[str], ai: tuple[int, int] | None, libraries: set[str]) -> dict[str, list[str]]:
    """package -> the names the check imports from it (the AI SDK 7's ``registerTelemetry``
    from ``ai`` too: it proves the installed ``ai`` is the version the snippet is for)."""
    names = {pkg: list(EXPORTS.get(pkg, ())) for pkg in needed}
    if "vercel-ai" in libraries and _ai_sdk_otel(ai):
        names["ai"] = ["registerTelemetry"]
    return names


def snippet(libraries: set[str], ai: tuple[int, int] | None, *, agent: str, endpoint: str,
            headers: dict[str, str]) -> str:
    lines: list[str] = []
    if libraries - {"mastra"}:
        lines += _otel_mjs(libraries, ai)
    if "vercel-ai" in libraries:
        lines += ["", "// your agent: on each generateText / streamText call"]
        option = (f"telemetry: {{ functionId: {_js(agent)} }}" if _ai_sdk_otel(ai)
                  else f"experimental_telemetry: {{ isEnabled: true, functionId: {_js(agent)} }}")
        lines.append(f"const result = await generateText({{ model, prompt, {option} }});")
    if "mastra" in libraries:
        lines += [*([""] if lines else []), *_mastra(agent, endpoint, headers)]
    return "\n".join(lines)


def run_line(libraries: set[str]) -> str:
    return "node your-agent.mjs" if libraries == {"mastra"} else "node --import ./otel.mjs your-agent.mjs"


def notes(libraries: set[str], versions: dict[str, tuple[str, tuple[int, int] | None]], agent: str) -> list[str]:
    found = []
    if "vercel-ai" in libraries:
        shown, ai = versions.get("ai", ("", None))
        if _ai_sdk_otel(ai):
            found.append(f"Vercel AI SDK 7 (ai {shown}): @ai-sdk/otel's OpenTelemetry integration, registered once "
                         f"in otel.mjs; telemetry: {{ functionId: '{agent}' }} on each call names the agent "
                         "(its invoke_agent span).")
        else:
            found.append(f"Vercel AI SDK {ai[0]} (ai {shown}): pass experimental_telemetry: "
                         f"{{ isEnabled: true, functionId: '{agent}' }} to each generateText / streamText call; its "
                         "spans go through the NodeSDK started in otel.mjs.")
    if "mastra" in libraries:
        shown, mastra = versions.get("@mastra/core", ("", None))
        found.append(f"Mastra (@mastra/core {shown}) exports its own spans: the observability config above, "
                     "OTLP/HTTP protobuf straight to the collector (Mastra's exporter adds /v1/traces).")
        if mastra is not None and mastra < MASTRA_OBSERVABILITY:
            found.append("@mastra/observability and @mastra/otel-exporter 1.x need @mastra/core "
                         f"{'.'.join(map(str, MASTRA_OBSERVABILITY))} or newer: upgrade @mastra/core first.")
    return found


def _js(text: str) -> str:
    """``text`` as a single-quoted JavaScript string (the snippets' style)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _ai_sdk_otel(ai: tuple[int, int] | None) -> bool:
    return ai is None or ai[0] >= AI_SDK_OTEL  # not known: npm installs the latest


def _otel_mjs(libraries: set[str], ai: tuple[int, int] | None) -> list[str]:
    lines = ["// otel.mjs: loaded before your agent with node --import ./otel.mjs",
             "import { NodeSDK } from '@opentelemetry/sdk-node';",
             "import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';"]
    instrumentations = []
    if "openai" in libraries:
        lines.append("import { OpenAIInstrumentation } from '@arizeai/openinference-instrumentation-openai';")
        instrumentations.append("new OpenAIInstrumentation()")
    if "anthropic" in libraries:
        lines.append("import { AnthropicInstrumentation } from '@traceloop/instrumentation-anthropic';")
        instrumentations.append("new AnthropicInstrumentation()")
    ai_otel = "vercel-ai" in libraries and _ai_sdk_otel(ai)
    if ai_otel:
        lines += ["import { OpenTelemetry } from '@ai-sdk/otel';", "import { registerTelemetry } from 'ai';"]
    lines += ["", "// reads OTEL_SERVICE_NAME and the OTEL_EXPORTER_OTLP_* variables",
              f"const sdk = new NodeSDK({{ traceExporter: new OTLPTraceExporter(), "
              f"instrumentations: [{', '.join(instrumentations)}] }});",
              "sdk.start();",
              "process.once('beforeExit', () => sdk.shutdown());  // sends what is left before a script ends"]
    if ai_otel:
        lines += ["// the AI SDK's spans, into the SDK above; its invoke_agent span named after the functionId",
                  "registerTelemetry(new OpenTelemetry({ agentSpanName: 'functionId' }));"]
    return lines


def _mastra(agent: str, endpoint: str, headers: dict[str, str]) -> list[str]:
    shown = ", ".join(f"{_js(k)}: {_js(v)}" for k, v in headers.items())
    return ["// where you create Mastra",
            "import { Mastra } from '@mastra/core/mastra';",
            "import { Observability } from '@mastra/observability';",
            "import { OtelExporter } from '@mastra/otel-exporter';",
            "",
            "export const mastra = new Mastra({",
            "  agents: { /* yours */ },",
            "  observability: new Observability({",
            "    configs: {",
            "      otel: {",
            f"        serviceName: {_js(agent)},",
            "        exporters: [new OtelExporter({ provider: { custom: {",
            f"          endpoint: {_js(endpoint)}, protocol: 'http/protobuf',",
            *([f"          headers: {{ {shown} }},"] if headers else []),
            "        } } })],",
            "      },",
            "    },",
            "  }),",
            "});",
            "// a script: await mastra.shutdown() before it ends (sends what is left)"]
