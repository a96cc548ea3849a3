"""Record what JavaScript agent stacks send over OTLP, with scripts/record_frameworks.py.

    (cd tests/js && npm ci)
    python scripts/record_js.py [--only vercel-ai-sdk,mastra] [--out tests/testdata/recorded]

The same weather agent as the Python stacks, written once per stack under tests/js/agents/
(the package versions are the lock's, tests/js/package-lock.json): each runs as
``node tests/js/agents/<file>.mjs ENDPOINT BASE_URL REPORT [flags]`` against the same stub
and capture server, exports spans with the OTel JS SDK (NodeSDK, OTLP/HTTP protobuf, one
request at shutdown) and writes its report (output, tool calls, versions) itself; the
recorder writes the folders, expected.json and the README section as for every stack.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import record_frameworks
from record_frameworks import REPO, STACKS, Stack

from otelbench.testing.frameworks import JS_AGENTS

AGENTS = REPO / "tests" / "js" / "agents"


def node(stack: str) -> Callable[[str, str, Path], list[str]]:
    """The argv of one stack's agent run (its file and flags: JS_AGENTS)."""
    script, *flags = JS_AGENTS[stack]

    def command(endpoint: str, base_url: str, report: Path) -> list[str]:
        return [shutil.which("node") or "node", str(AGENTS / script), endpoint, base_url, str(report), *flags]

    return command


JS_STACKS = [
    Stack("vercel-ai-sdk", "Vercel AI SDK 7 generateText with the tool (stopWhen 3 steps), @ai-sdk/otel "
          "OpenTelemetry integration (GenAI conventions, agentSpanName functionId), openai-compatible provider",
          (), "telemetry.functionId: the root span's name (invoke_agent weather_agent)", None,
          node("vercel-ai-sdk")),
    Stack("vercel-ai-sdk-stream", "Vercel AI SDK 7 streamText with the tool, otherwise as vercel-ai-sdk",
          (), "telemetry.functionId: the root span's name (invoke_agent weather_agent)", None,
          node("vercel-ai-sdk-stream")),
    Stack("vercel-ai-sdk-legacy", "Vercel AI SDK 7 generateText with @ai-sdk/otel's LegacyOpenTelemetry (the ai.* "
          "span shape)",
          (), "telemetry.functionId: ai.telemetry.functionId and resource.name on the ai.* spans", None,
          node("vercel-ai-sdk-legacy")),
    Stack("vercel-ai-sdk-v6", "Vercel AI SDK 6 generateText with the tool, experimental_telemetry (isEnabled, "
          "functionId) through the global tracer provider (ai 6 as the npm alias ai-v6)",
          (), "experimental_telemetry.functionId: ai.telemetry.functionId and resource.name on the ai.* spans",
          None, node("vercel-ai-sdk-v6")),
    Stack("mastra", "Mastra Agent with the tool (createTool), @mastra/observability with @mastra/otel-exporter "
          "(custom provider, OTLP/HTTP protobuf)",
          (), "Agent({name}): the agent run span", None, node("mastra")),
]

if __name__ == "__main__":
    STACKS.clear()
    STACKS.update({s.name: s for s in JS_STACKS})
    sys.exit(record_frameworks.main())
