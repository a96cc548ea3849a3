"""``otelbench doctor`` on the recorded stacks (tests/testdata/recorded): each recording
through the collector's write path into a lake (``otelbench.testing.frameworks.load_lake``),
then the report — the conventions it detects, the shares, the deprecated keys, and for
every gap a recording is known to have because its stack does not send something
(``KNOWN_GAPS``), a finding with its fix."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from otelbench.normalize import conventions as cv
from otelbench.normalize import coverage
from otelbench.testing.frameworks import KNOWN_GAPS, load_lake
from otelbench.storage.duckdb import open_lake
from otelbench.web import doctor_report as doctor
from otelbench.web.doctor_fixes import FIXES, fix

RECORDED = Path(__file__).parent / "testdata" / "recorded"
STACKS = sorted(p.name for p in RECORDED.iterdir() if (p / "traces-1.json").exists())


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for stack in STACKS:
        out[stack] = tmp_path_factory.mktemp(stack) / "lake"
        load_lake(RECORDED / stack, out[stack])
    # openai-v2 with message capture off: the same spans, and no message log events
    # (what OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT unset sends)
    bare = tmp_path_factory.mktemp("openai-v2-no-content")
    for f in (RECORDED / "openai-v2").glob("traces-*.json"):
        shutil.copy(f, bare / f.name)
    out["openai-v2-no-content"] = bare / "lake"
    load_lake(bare, out["openai-v2-no-content"])
    return out


def report(lake: Path, **kw: Any) -> dict[str, Any]:
    with open_lake(lake) as gateway:
        return doctor.read(lake, doctor.gateway_rows(gateway), "all", **kw)


def scopes(r: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["scope"]: s for svc in r["services"] for s in svc["scopes"]}


def findings(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for svc in r["services"] for f in [*svc["findings"], *(x for s in svc["scopes"] for x in s["findings"])]]


# the conventions each stack's LLM scope speaks, and the semconv version its keys tell
CONVENTIONS = {
    "crewai": ("openinference.instrumentation.openai", {"openinference"}, None),
    "google-adk": ("gcp.vertex.agent", {"genai"}, ">= 1.37"),
    "langchain": ("openinference.instrumentation.langchain", {"openinference"}, None),
    "llamaindex": ("openinference.instrumentation.llama_index", {"openinference"}, None),
    "logfire": ("pydantic-ai", {"genai", "genai_deprecated", "pydantic_ai"}, ">= 1.37"),
    "openai-agents": ("openinference.instrumentation.openai_agents", {"openinference"}, None),
    "openai-v2": ("opentelemetry.instrumentation.openai_v2", {"genai", "genai_deprecated"}, "1.27 – 1.36"),
    "openai-v2-latest": ("opentelemetry.util.genai.handler", {"genai"}, ">= 1.37"),
    "openinference": ("openinference.instrumentation.openai", {"openinference"}, None),
    "openlit": ("openlit.instrumentation.openai", {"genai", "openlit"}, ">= 1.37"),
    "openllmetry": ("opentelemetry.instrumentation.openai.v1", {"genai", "genai_deprecated", "openllmetry"}, ">= 1.37"),
    "pydantic-ai": ("pydantic-ai", {"genai", "genai_deprecated", "pydantic_ai"}, ">= 1.37"),
    "mastra": ("@mastra/otel-exporter", {"genai", "genai_deprecated", "mastra"}, ">= 1.37"),
    "vercel-ai-sdk": ("gen_ai", {"genai"}, ">= 1.37"),
    "vercel-ai-sdk-legacy": ("ai", {"ai_sdk", "genai", "genai_deprecated"}, "1.27 – 1.36"),
    "vercel-ai-sdk-stream": ("gen_ai", {"genai"}, ">= 1.37"),
    "vercel-ai-sdk-v6": ("ai", {"ai_sdk", "genai", "genai_deprecated"}, "1.27 – 1.36"),
}


def test_every_recorded_stack_has_its_expectation() -> None:
    assert set(CONVENTIONS) == set(STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_the_conventions_and_semconv_version_of_each_stack(lakes: dict[str, Path], stack: str) -> None:
    scope, want, version = CONVENTIONS[stack]
    got = scopes(report(lakes[stack]))[scope]
    assert (set(got["conventions"]), got["semconv"]) == (want, version)
    assert got["llm_calls"] >= 2
    # no key a mapping reads is listed as unread; no value is shown, keys and counts only
    assert not [u for u in got["unread"] if coverage.is_read(u["key"])]
    assert all(set(u) == {"key", "spans"} for u in got["unread"])


def test_deprecated_keys_are_named_with_their_current_name(lakes: dict[str, Path]) -> None:
    old = scopes(report(lakes["openai-v2"]))["opentelemetry.instrumentation.openai_v2"]
    assert old["deprecated"] == [{"key": "gen_ai.system", "current": "gen_ai.provider.name", "spans": 4}]
    gap = [f for f in old["findings"] if f["gap"] == "deprecated"]
    assert gap and "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental" in gap[0]["fix"]
    new = scopes(report(lakes["openai-v2-latest"]))["opentelemetry.util.genai.handler"]
    assert new["deprecated"] == [] and not [f for f in new["findings"] if f["gap"] == "deprecated"]


def test_message_capture_off_is_reported_with_the_variable_that_turns_it_on(lakes: dict[str, Path]) -> None:
    on = report(lakes["openai-v2"])
    off = report(lakes["openai-v2-no-content"])
    scope = "opentelemetry.instrumentation.openai_v2"
    # with capture on, the messages come as log events and every call has them
    assert scopes(on)[scope]["shares"]["input_messages"] == 1.0
    assert not [f for f in findings(on) if f["gap"] == "messages"]
    assert scopes(off)[scope]["shares"]["input_messages"] == 0.0
    assert scopes(off)[scope]["shares"]["output_messages"] == 0.0
    (gap,) = [f for f in findings(off) if f["gap"] == "messages"]
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in gap["fix"] and gap["scope"] == scope


def test_google_adk_is_told_how_to_capture_content(lakes: dict[str, Path]) -> None:
    r = report(lakes["google-adk"])
    (svc,) = r["services"]
    assert svc["run_shares"] == {"agent": 1.0, "input": 0.0, "output": 0.0, "tokens": 1.0, "cost": 1.0}
    shares = scopes(r)["gcp.vertex.agent"]["shares"]
    assert shares["request_model"] == 1.0 and shares["response_model"] == 0.0 and shares["tokens"] == 1.0
    for gap in ("messages", "run_io"):
        (f,) = [f for f in findings(r) if f["gap"] == gap]
        assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT" in f["fix"]


def test_a_stack_that_sends_everything_has_no_run_findings(lakes: dict[str, Path]) -> None:
    (svc,) = report(lakes["pydantic-ai"])["services"]
    assert svc["run_shares"] == {"agent": 1.0, "input": 1.0, "output": 1.0, "tokens": 1.0, "cost": 1.0}
    assert svc["findings"] == []


# KNOWN_GAPS' fields → the doctor's gap that reports them. Left out: a tool call's id that
# is only in the sibling chat span (a rule across spans, for the views), and a value sent
# wrong rather than not sent (ADK's 'stop' for a tool call).
FIELD_GAPS = [(re.compile(r"^(agent_runs|llm_calls\[\d\]|tool_calls\[\d\])\.agent$"), "agent"),
              (re.compile(r"^agent_runs\.(input|output)$"), "run_io"),
              (re.compile(r"^llm_calls\[\d\]\.response_model$"), "response_model"),
              (re.compile(r"^llm_calls\[\d\]\.finish_reasons$"), "finish_reasons"),
              (re.compile(r"^llm_calls\[\d\]\.ttft_ms$"), "ttft"),
              # a tool span without arguments or result; or none at all (then nothing is a tool)
              (re.compile(r"^tool_calls\[\d\]\.(arguments|result)$"), ("tool_io", "tools")),
              (re.compile(r"^(agent_runs\.tool_calls|tool_calls: rows|"
                          r"tool_calls\[\d\]\.(tool_name|tool_call_id|agent|arguments|result|llm_call))$"), "tools")]
CROSS_SPAN = "cross-span"
SENT_WRONG = ("sends 'stop'", "sent otherwise")


def _not_sent(stack: str) -> list[tuple[str, tuple[str, ...]]]:
    """(field, the doctor's gaps any one of which reports it) of each gap ``stack`` does not send."""
    out = []
    for field, why in KNOWN_GAPS[stack].items():
        if CROSS_SPAN in why or any(s in why for s in SENT_WRONG):
            continue
        gaps = [g for pattern, g in FIELD_GAPS if pattern.match(field)]
        assert gaps, f"{stack}: no doctor gap for {field!r} ({why})"
        out.append((field, gaps[0] if isinstance(gaps[0], tuple) else (gaps[0],)))
    return out


@pytest.mark.parametrize("stack", sorted(KNOWN_GAPS))
def test_every_gap_a_stack_is_known_not_to_send_is_reported_with_its_fix(lakes: dict[str, Path], stack: str) -> None:
    found = {f["gap"]: f for f in findings(report(lakes[stack]))}
    for field, gaps in _not_sent(stack):
        reported = [g for g in gaps if g in found]
        assert reported, f"{stack}: {field} is not sent, and the doctor does not say so ({sorted(found)})"
        gap = reported[0]
        assert found[gap]["fix"] == fix(gap, found[gap]["scope"]) and len(found[gap]["fix"]) > 20


def test_a_stack_without_tool_content_is_told_how_to_capture_it(lakes: dict[str, Path]) -> None:
    (f,) = [f for f in findings(report(lakes["google-adk"])) if f["gap"] == "tool_io"]
    assert "1 without their arguments, 1 without their result" in f["what"] and "SPAN_AND_EVENT" in f["fix"]
    assert not [f for f in findings(report(lakes["pydantic-ai"])) if f["gap"] == "tool_io"]


def test_every_gap_has_a_fallback_fix() -> None:
    assert all(patterns[-1][0] == "*" for patterns in FIXES.values())
    assert fix("messages", "openinference.instrumentation.langchain").startswith("unset OPENINFERENCE_HIDE_INPUTS")
    assert "TRACELOOP_TRACE_CONTENT=true" in fix("messages", "opentelemetry.instrumentation.anthropic")
    assert "recordInputs" in fix("messages", "ai")
    assert "capture_message_content" in fix("messages", "openlit.instrumentation.openai")


def test_the_read_keys_come_from_the_alias_table() -> None:
    for aliases in cv.ALIASES.values():
        assert all(coverage.is_read(k) for k in aliases)
    assert coverage.is_read("llm.input_messages.N.message.content")
    assert coverage.key_form("gen_ai.prompt.12.tool_calls.0.name") == "gen_ai.prompt.N.tool_calls.N.name"
    assert coverage.DEPRECATED["gen_ai.usage.prompt_tokens"] == "gen_ai.usage.input_tokens"
    assert coverage.semconv_version({"gen_ai.usage.prompt_tokens", "gen_ai.system"}) == "< 1.27"
    assert coverage.conventions("ai", {"ai.model.id"}) == ["ai_sdk"]
    assert coverage.conventions("@mastra/core", {"mastra.span.type"}) == ["mastra"]


def test_indexed_keys_are_one_key_carried_by_its_most_carried_index() -> None:
    import datetime as dt

    group = {"service_name": "svc", "scope_name": "my.scope", "scope_version": "1"}
    counts = {c: 0 for c in ("spans", "named_spans", "request_named_spans", "agent_spans", "llm_calls",
                             "tool_calls", "with_tool_call_id", "tool_call_requests",
                             *(col for _, col in doctor.CALL_FIELDS))}
    keys = [{**group, "key": "my.items.0.name", "spans": 5}, {**group, "key": "my.items.1.name", "spans": 3},
            {**group, "key": "my.items.2.name", "spans": 1}, {**group, "key": "gen_ai.request.model", "spans": 5}]
    r = doctor.report([{**group, "agent": "a", **counts, "spans": 5}], keys, [], [], since=dt.date(2026, 1, 1),
                      window="all", source="lake")
    (sc,) = r["services"][0]["scopes"]
    assert sc["unread"] == [{"key": "my.items.N.name", "spans": 5}] and sc["unread_keys"] == 1


def test_the_command_reads_at_80_columns_and_as_json(lakes: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    from otelbench.cli import main

    assert main(["doctor", "--lake", str(lakes["google-adk"]), "--since", "all", "--width", "80"]) == 0
    text = capsys.readouterr().out
    assert "scope gcp.vertex.agent 2.13.0" in text and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in text
    for line in text.splitlines():  # only a line holding a word too long to wrap may go past 80
        assert len(line) <= 80 or max(map(len, line.split())) > 30, line
    assert main(["doctor", "--lake", str(lakes["google-adk"]), "--since", "all", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == "lake" and data["services"][0]["service"] == "weather-app"
    assert main(["doctor", "--lake", str(lakes["google-adk"]), "--since", "yesterday"]) == 2
    assert "24h, 7d" in capsys.readouterr().err


def test_the_command_on_an_empty_lake(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from otelbench.storage.lake import Lake

    Lake(tmp_path / "lake").init()
    from otelbench.cli import main

    assert main(["doctor", "--lake", str(tmp_path / "lake")]) == 0
    assert "no spans in this window" in capsys.readouterr().out


def test_otelbench_own_traces_are_not_reported() -> None:
    """The judge's calls and benchmark evidence are not a user's instrumentation."""
    import datetime as dt

    from otelbench.storage.queries.conventions import SCOPE_COUNTS
    from otelbench.storage.queries.views import BENCH_SERVICE, JUDGE_SERVICE
    from otelbench.web.doctor_report import report as pure_report

    def scope(service: str) -> dict[str, Any]:
        return {**dict.fromkeys(SCOPE_COUNTS, 0), "spans": 3, "llm_calls": 3, "agent": service,
                "service_name": service, "scope_name": "s", "scope_version": None}

    rows = [scope(s) for s in (JUDGE_SERVICE, BENCH_SERVICE, "weather-app")]
    keys = [{"service_name": r["service_name"], "scope_name": "s", "scope_version": None, "key": "k", "spans": 3}
            for r in rows]
    r = pure_report(rows, keys, [], [], since=dt.date(2026, 1, 1), window="all", source="views")
    assert [s["service"] for s in r["services"]] == ["weather-app"]
