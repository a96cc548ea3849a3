"""The recorded agent-framework runs through the lake, beside what each run really was.

``tests/testdata/recorded/<stack>/`` holds one run per agent stack
(scripts/record_frameworks.py) and its ``expected.json``: what a person reading the run
would say (agent, input, output, the calls' models and tokens, the tool call, reported
costs, TTFT). ``load_lake`` puts a folder's OTLP requests through the collector's own
write path (``exporters.parquet.ParquetSink``: the columnar span normalizer, the row path
for logs and metrics) into a fresh lake, ``views`` reads ``agent_runs``, ``llm_calls``,
``tool_calls`` (and the spans' GenAI columns) through the gateway, and ``compare`` puts
each answer beside the expected one: ``✓`` the same, ``≈`` an acceptable difference (the
reason is in the expected text), ``✗`` a gap.

Used by scripts/compare_frameworks.py (prints it) and tests/test_frameworks.py (holds
the list of known gaps to it). ``post`` sends a folder's requests, as recorded, to a running
collector over OTLP/HTTP instead (tests/bench_runner/test_replay.py replays those runs).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

SIGNALS = ("traces", "logs", "metrics")
# The JavaScript stacks' weather agents (tests/js/agents/, packages pinned by tests/js's lock
# file): stack -> the agent file and its flags, run as ``node FILE ENDPOINT BASE_URL REPORT FLAGS``.
JS_AGENTS: dict[str, tuple[str, ...]] = {
    "vercel-ai-sdk": ("ai-sdk.mjs",),
    "vercel-ai-sdk-stream": ("ai-sdk.mjs", "--stream"),
    "vercel-ai-sdk-legacy": ("ai-sdk.mjs", "--legacy"),
    "vercel-ai-sdk-v6": ("ai-sdk-v6.mjs",),
    "mastra": ("mastra.mjs",),
}

RUNS_SQL = """SELECT agent, root_name, status, llm_calls, tool_calls, input_tokens, output_tokens,
                     cost_usd, input, output FROM agent_runs ORDER BY start_time"""
CALLS_SQL = """SELECT span_id, agent, operation, provider, request_model, response_model, input_tokens, output_tokens,
                      total_tokens, cost_usd, cost_source, ttft_ms, finish_reasons, input_messages,
                      output_messages FROM llm_calls ORDER BY start_time"""
TOOLS_SQL = """SELECT c.agent, c.tool_name, l.tool_call_id, c.arguments, c.result, l.llm_span_id, c.status
               FROM tool_calls AS c LEFT JOIN tool_call_links AS l USING (trace_id, span_id)
               ORDER BY c.start_time"""
SPANS_SQL = """SELECT name, kind, span_type, operation, agent_name, resolved_agent, tool_name
               FROM spans ORDER BY start_time"""

# The lake's one spelling of "the model asked for a tool" (docs/normalization.md,
# finish_reasons): the GenAI semconv's, where expected.json has what the stub sent (OpenAI's).
TOOL_CALL_FINISH = {"tool_calls": "tool_call"}

Row = tuple[str, Any, Any, str]  # (field, today's answer, expected, mark)


def stacks(folder: Path) -> list[Path]:
    """The recorded stacks: every sub-folder with an expected.json."""
    return sorted(p.parent for p in folder.glob("*/expected.json"))


def load_lake(folder: Path, root: Path) -> None:
    """Every recorded request of ``folder`` into a new lake at ``root``, as one flush."""
    from otelbench.exporters.parquet import ParquetSink
    from otelbench.testing.otlp_capture import otlp_json_to_protobuf
    from otelbench.storage.lake import Lake

    lake = Lake(root)
    lake.init()
    sink = ParquetSink(lake, frozenset(SIGNALS), dedupe_window=10_000)
    for signal in SIGNALS:
        paths = sorted(folder.glob(f"{signal}-*.json"), key=lambda p: int(p.stem.split("-")[-1]))
        for path in paths:
            sink.add(signal, None, otlp_json_to_protobuf(signal, json.loads(path.read_text())))
    sink.write(f"{1:020d}", sink.take())


def post(folder: Path, endpoint: str) -> int:
    """Every recorded OTLP/JSON request of ``folder`` sent again, as recorded, to the OTLP/HTTP
    receiver at ``endpoint`` (``http://host:port``); returns how many were sent."""
    import httpx

    sent = 0
    with httpx.Client(trust_env=False, timeout=30) as client:
        for signal in SIGNALS:
            for path in sorted(folder.glob(f"{signal}-*.json"), key=lambda p: int(p.stem.split("-")[-1])):
                r = client.post(f"{endpoint.rstrip('/')}/v1/{signal}", content=path.read_bytes(),
                                headers={"content-type": "application/json"})
                r.raise_for_status()
                sent += 1
    return sent


def _dicts(result: Any) -> list[dict[str, Any]]:
    return [dict(zip(result.columns, row)) for row in result.rows]


def views(root: Path) -> dict[str, list[dict[str, Any]]]:
    """The rows of agent_runs, llm_calls, tool_calls and spans (GenAI columns) of a lake."""
    from otelbench.storage.duckdb import open_lake

    with open_lake(root) as gateway:
        return {name: _dicts(gateway.query(sql, max_rows=None))
                for name, sql in (("agent_runs", RUNS_SQL), ("llm_calls", CALLS_SQL),
                                  ("tool_calls", TOOLS_SQL), ("spans", SPANS_SQL))}  # fmt: skip


def run(folder: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """(expected.json, the views' rows) of one recorded stack, through a temporary lake."""
    expected = json.loads((folder / "expected.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        load_lake(folder, Path(tmp) / "lake")
        return expected, views(Path(tmp) / "lake")


def texts(messages: str | None) -> str | None:
    """A message array (JSON) in a few words: ``role: text`` or ``role: tool_call name(args)``."""
    if messages is None:
        return None
    try:
        parsed = json.loads(messages)
    except ValueError:
        return f"(not JSON) {messages[:80]}"
    out = []
    for m in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(m, dict):
            out.append(repr(m)[:80])
            continue
        for part in m.get("parts") or []:
            kind = part.get("type")
            if kind == "text":
                out.append(f"{m.get('role')}: {str(part.get('content'))[:80]}")
            elif kind == "tool_call":
                out.append(f"{m.get('role')}: tool_call {part.get('name')}({json.dumps(part.get('arguments'))})")
            elif kind == "tool_call_response":
                out.append(f"{m.get('role')}: tool_call_response {str(part.get('response'))[:60]}")
            else:
                out.append(f"{m.get('role')}: {kind}")
    return " | ".join(out)


def compare(expected: dict[str, Any], got: dict[str, list[dict[str, Any]]]) -> list[Row]:
    """(field, today's answer, expected, mark) for every field the views answer; mark is
    ✓, ≈ (the expected text says why) or ✗."""
    rows: list[Row] = []

    def add(field: str, today: Any, want: Any, same: bool | str | None = None) -> None:
        if same is None:
            same = today == want
        rows.append((field, today, want, same if isinstance(same, str) else "✓" if same else "✗"))

    runs = got["agent_runs"]
    add("agent_runs: rows", len(runs), 1)
    run = runs[0] if runs else {}
    add("agent_runs.agent", run.get("agent"), expected["agent_name"])
    run_input, run_output = texts(run.get("input")), texts(run.get("output"))
    add("agent_runs.input", run_input, expected["input"],
        run_input is not None and run_input.endswith(f"user: {expected['input']}"))  # fmt: skip
    add("agent_runs.output", run_output, expected["output"], run_output == f"assistant: {expected['output']}")
    calls = expected["llm_calls"]
    add("agent_runs.llm_calls", run.get("llm_calls"), len(calls))
    add("agent_runs.tool_calls", run.get("tool_calls"), len(expected["tool_calls"]))
    unseen = not all(c["usage_sent_to_client"] for c in calls)  # a stream without include_usage
    for key in ("input_tokens", "output_tokens"):
        total = sum(c[key] for c in calls)
        if unseen and run.get(key) is None:
            add(f"agent_runs.{key}", None, f"{total} (never reached the client: ≈)", "≈")
        else:
            add(f"agent_runs.{key}", run.get(key), total)
    # A reported cost of 0 for calls that used tokens is OpenLIT offline (it could not
    # fetch its price list): "unknown", which the lake prices (docs/normalization.md).
    reported = [float(c["value"]) for c in expected["reported_costs"]]
    priced = not any(reported)
    cost = run.get("cost_usd")
    if not priced:
        add("agent_runs.cost_usd", cost, f"reported: {sum(reported):.6g}",
            cost is not None and math.isclose(cost, sum(reported), rel_tol=1e-9))
    else:
        why = "reported as 0" if reported else "none reported"
        add("agent_runs.cost_usd", cost, f"{why} (priced by otelbench: ≈)",
            "≈" if cost is not None or unseen else "✗")  # fmt: skip
    llm = got["llm_calls"]
    add("llm_calls: rows", len(llm), len(calls))
    for i, want in enumerate(calls):
        have = llm[i] if i < len(llm) else {}
        model = have.get("request_model")
        if isinstance(model, str) and model.endswith(f"/{want['request_model']}") and model != want["request_model"]:
            add(f"llm_calls[{i}].request_model", model,
                f"{want['request_model']} (a provider/model route, as the app named it: ≈)", "≈")
        else:
            add(f"llm_calls[{i}].request_model", model, want["request_model"])
        for key in ("response_model", "input_tokens", "output_tokens"):
            if key.endswith("tokens") and not want["usage_sent_to_client"] and have.get(key) is None:
                add(f"llm_calls[{i}].{key}", None, f"{want[key]} (never reached the client: ≈)", "≈")
            else:
                add(f"llm_calls[{i}].{key}", have.get(key), want[key])
        add(f"llm_calls[{i}].agent", have.get("agent"), expected["agent_name"])
        want_ttft = want["ttft_ms_server"]
        ttft = have.get("ttft_ms")
        add(f"llm_calls[{i}].ttft_ms", None if ttft is None else round(ttft, 1),
            "none (not streamed)" if want_ttft is None else f"≥ {want_ttft} (server side)",
            (ttft is None) if want_ttft is None else (ttft is not None and ttft >= want_ttft - 1))  # fmt: skip
        reason = want["finish_reason"]
        add(f"llm_calls[{i}].finish_reasons", have.get("finish_reasons"), [TOOL_CALL_FINISH.get(reason, reason)])
        want_source = "computed" if priced else "reported"
        add(f"llm_calls[{i}].cost_source", have.get("cost_source"), want_source,
            have.get("cost_source") == want_source
            or ("≈" if not want["usage_sent_to_client"] and have.get("cost_source") is None else False))
    tools = got["tool_calls"]
    add("tool_calls: rows", len(tools), len(expected["tool_calls"]))
    for i, want in enumerate(expected["tool_calls"]):
        have = tools[i] if i < len(tools) else {}
        add(f"tool_calls[{i}].tool_name", have.get("tool_name"), want["name"])
        add(f"tool_calls[{i}].tool_call_id", have.get("tool_call_id"), want["call_id"])
        add(f"tool_calls[{i}].agent", have.get("agent"), expected["agent_name"])
        add(f"tool_calls[{i}].arguments", have.get("arguments"), want["arguments"],
            _json_or_text(have.get("arguments")) == want["arguments"])
        add(f"tool_calls[{i}].result", have.get("result"), want["result"])
        # the call that asked: the i-th of those that stopped for a tool
        askers = [j for j, c in enumerate(calls) if c["finish_reason"] == "tool_calls"]
        asked_by = [j for j, c in enumerate(llm) if have.get("llm_span_id") and c.get("span_id") == have["llm_span_id"]]
        add(f"tool_calls[{i}].llm_call", asked_by[0] if asked_by else None, askers[i] if i < len(askers) else None)
    return rows


def _json_or_text(text: str | None) -> Any:
    """A column holding JSON text or plain text, as a value to compare."""
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return text


def gaps(rows: list[Row]) -> set[str]:
    """The fields marked ✗."""
    return {field for field, _, _, mark in rows if mark == "✗"}


def child_env(endpoint: str, repo: Path) -> dict[str, str]:
    """The environment a stack's agent runs in (scripts/record_frameworks.py --child):
    telemetry to ``endpoint`` over OTLP/HTTP protobuf, exported once at shutdown, nothing
    phoning home, this repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "TRACELOOP_"))}
    env.update({
        "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")])),
        # one request per signal at shutdown, so re-recording gives the same file layout
        "OTEL_BSP_SCHEDULE_DELAY": "600000", "OTEL_BLRP_SCHEDULE_DELAY": "600000",
        "OTEL_METRIC_EXPORT_INTERVAL": "3600000",
        # the standard variables, for the stacks that configure themselves from them (logfire)
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        # nothing phones home: no network here, and no noise in the recordings
        "TRACELOOP_TELEMETRY": "false", "DO_NOT_TRACK": "1", "LANGSMITH_TRACING": "false",
        "CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    })  # fmt: skip
    return env


# -- what is known not to match, and why ---------------------------------------------

_NOT_SENT = "not sent by the stack"

# stack → {field: why it differs}. "views": a rule across spans, for the views/lake to
# apply; "not sent": nothing in the recording says it.
KNOWN_GAPS: dict[str, dict[str, str]] = {
    "crewai": {},
    "google-adk": {
        "agent_runs.input": "not sent: ADK captures no content by default",
        "agent_runs.output": "not sent: ADK captures no content by default",
        "llm_calls[0].response_model": _NOT_SENT,
        "llm_calls[1].response_model": _NOT_SENT,
        "llm_calls[0].finish_reasons": "ADK sends 'stop' for the tool call (its own mapping)",
        "tool_calls[0].arguments": "not sent: ADK captures no content by default",
        "tool_calls[0].result": "not sent: ADK captures no content by default",
    },
    "langchain": {
        "llm_calls[0].ttft_ms": "not sent: openinference-instrumentation-langchain has no first-token event",
        "llm_calls[1].ttft_ms": "not sent: openinference-instrumentation-langchain has no first-token event",
        "tool_calls[0].arguments": "sent otherwise: the TOOL span's input.value is the tool's input string ('Paris'); "
                                   "the arguments object is only in the asking call's tool_call part",
    },
    "llamaindex": {
        **{field: "the name is only in Python reprs of workflow-step CHAIN spans (current_agent_name='…')"
           for field in ("agent_runs.agent", "llm_calls[0].agent", "llm_calls[1].agent", "tool_calls[0].agent")},
        "llm_calls[0].response_model": "only in a Python repr on a sibling CHAIN span (parse_agent_output's raw)",
        "llm_calls[1].response_model": "only in a Python repr on a sibling CHAIN span (parse_agent_output's raw)",
    },
    "openai-agents": {
        "llm_calls[0].response_model": _NOT_SENT,
        "llm_calls[1].response_model": _NOT_SENT,
        "llm_calls[0].finish_reasons": _NOT_SENT,
        "llm_calls[1].finish_reasons": _NOT_SENT,
    },
    "openlit": {
        **{field: "nothing names an agent: @openlit.trace names a function span after the function"
           for field in ("agent_runs.agent", "llm_calls[0].agent", "llm_calls[1].agent")},
        **{field: "nothing marks the @openlit.trace tool function's span as a tool"
           for field in ("agent_runs.tool_calls", "tool_calls: rows", "tool_calls[0].tool_name",
                         "tool_calls[0].tool_call_id", "tool_calls[0].agent", "tool_calls[0].arguments",
                         "tool_calls[0].result", "tool_calls[0].llm_call")},
    },
    "openllmetry": {},
    "logfire": {},
    "pydantic-ai": {},
    # The JavaScript stacks (scripts/record_js.py).
    "mastra": {},
    "vercel-ai-sdk": {},
    "vercel-ai-sdk-stream": {},
    "vercel-ai-sdk-legacy": {},
    "vercel-ai-sdk-v6": {},
}
