"""``otelbench replay`` end to end: agent runs recorded from real frameworks
(tests/testdata/recorded/) sent again through a real collector into a real lake, replayed
through the CLI on the canned OpenAI-compatible stub, whose candidates match the recorded
behaviour or not by design; runs picked by agent, window, sample, failure cluster and
suite run (the real ``otelbench suite run``); a judge model's grade (the judge stub); the
results back through the collector as bench spans; runs recorded without content refused
with the doctor's fix; the embedded model as the default candidate (``model`` marker);
and the pure parts (requests rebuilt, arguments compared) as tables."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from otelbench.bench_runner import replay_request as rq
from otelbench.bench_runner.replay_compare import canonical_arguments
from otelbench.cli import main
from otelbench.storage.duckdb import open_lake
from otelbench.testing import frameworks as fw
from otelbench.testing.openai_stub import WEATHER_USAGE, StubServer
from otelbench.testing.wait import wait_for
from otelbench.web.doctor_fixes import fix

RECORDED = Path(__file__).resolve().parents[1] / "testdata" / "recorded"
# weather_agent's runs recorded with their messages, two of them with tool definitions
WITH_CONTENT = ("openai-agents", "pydantic-ai", "openllmetry", "vercel-ai-sdk-stream")
WITH_DEFINITIONS = ("pydantic-ai", "openllmetry", "vercel-ai-sdk-stream")
WITHOUT_CONTENT = {"google-adk": "gcp.vertex.agent", "mastra": "@mastra/otel-exporter"}  # weather_agent's too
OTHER_AGENT = "openai-v2"  # weather_helper: four calls, two of them not about the weather


def trace_id(stack: str) -> str:
    """The (one) trace a recorded stack holds, from its OTLP/JSON requests."""
    ids = {s["traceId"] for path in (RECORDED / stack).glob("traces-*.json")
           for rs in json.loads(path.read_text())["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}
    assert len(ids) == 1, (stack, ids)
    return ids.pop()


@contextmanager
def recording(tmp: Path, stacks: tuple[str, ...]) -> Iterator[tuple[Path, str]]:
    """A real collector whose lake holds ``stacks``' recorded runs, sent to it over OTLP/HTTP:
    (the lake's folder, the collector's OTLP/HTTP endpoint), while in ``with``."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    collector = Collector(collector_config(tmp)).start()
    lake = Path(collector.config.exporters.parquet.path)
    endpoint = f"http://127.0.0.1:{collector.http_port}"

    def runs() -> int:
        with open_lake(lake) as gw:
            return gw.query("SELECT count(*) FROM agent_runs", max_rows=None).rows[0][0]

    try:
        for stack in stacks:
            fw.post(RECORDED / stack, endpoint)
        wait_for(lambda: runs() == len(stacks), what="the recorded runs in the lake")
        yield lake, endpoint
    finally:
        collector.stop()


def lake_of(tmp: Path, stacks: tuple[str, ...]) -> Path:
    with recording(tmp, stacks) as (lake, _):
        return lake


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lake_of(tmp_path_factory.mktemp("replay"), (*WITH_CONTENT, *WITHOUT_CONTENT, OTHER_AGENT))


@pytest.fixture(scope="module")
def stub() -> Any:
    with StubServer() as server:
        yield server


def replay_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["replay", *args, "--json", "--no-otel"])
    return code, json.loads(capsys.readouterr().out)


# (candidate script, agent) → behaviour matches, at least as good, calls with the same tool calls
SHARES = [
    ("weather", "weather_agent", (4, 4, 8)),  # the very turn recorded
    ("weather-spaced", "weather_agent", (4, 4, 8)),  # the same arguments, written otherwise
    ("weather-berlin", "weather_agent", (0, 4, 4)),  # another city asked; the answer (from the result) agrees
    ("normal", "weather_agent", (0, 0, 4)),  # no tool call, "Hello world!" for an answer
    # the weather turn on weather_helper: its first two calls asked for text (a tool call
    # instead), its third for the weather (the same), its answer differs from the recorded one
    ("weather", "weather_helper", (0, 0, 2)),
]


@pytest.mark.parametrize(("candidate", "agent", "expected"), SHARES)
def test_shares_of_runs_matching(lake: Path, stub: Any, capsys: pytest.CaptureFixture[str], candidate: str,
                                 agent: str, expected: tuple[int, int, int]) -> None:
    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    code, report = replay_json(capsys, "--agent", agent, "--lake", str(lake), "--base-url", url, "--model", candidate)
    assert code == 0
    [summary] = report["summaries"]
    runs = len(WITH_CONTENT) if agent == "weather_agent" else 1
    assert (summary["agent"], summary["candidate"], summary["runs"]) == (agent, candidate, runs)
    matches, as_good, same_calls = expected
    assert (summary["behaviour_matches"], summary["at_least_as_good"], summary["calls_matching"]) == expected
    assert summary["match_share"] == matches / runs and summary["as_good_share"] == as_good / runs
    diverging = [r for r in report["runs"] if r["divergence"] > 0]
    assert [d["trace_id"] for d in summary["most_divergent"]] == sorted(
        (r["trace_id"] for r in diverging), key=lambda t: (-next(r["divergence"] for r in diverging
                                                                 if r["trace_id"] == t), t))
    assert all(d["link"] == f"/runs/{d['trace_id']}" for d in summary["most_divergent"])
    if agent == "weather_agent":
        assert {r["trace_id"] for r in report["runs"]} == {trace_id(s) for s in WITH_CONTENT}
        assert {u["trace_id"]: u["scopes"] for u in report["unreplayable"]} == {
            trace_id(s): [scope] for s, scope in WITHOUT_CONTENT.items()}


def test_what_the_candidate_was_sent_and_its_measures(lake: Path, stub: Any,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Each recorded call sent once, with the recorded tools when its span had them; the
    candidate's tokens are the stub's usage, its TTFT the stub's pacing."""
    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    served = len(stub.served)
    code, report = replay_json(capsys, "--agent", "weather_agent", "--lake", str(lake), "--base-url", url,
                               "--model", "weather")
    assert code == 0
    sent = stub.served[served:]
    assert len(sent) == 2 * len(WITH_CONTENT)
    assert sorted(s["tools"] == ["get_weather"] for s in sent) == sorted(
        [True] * 2 * len(WITH_DEFINITIONS) + [False] * 2 * (len(WITH_CONTENT) - len(WITH_DEFINITIONS)))
    assert [s["reply"] for s in sent] == ["tool_call", "answer"] * len(WITH_CONTENT)
    [summary] = report["summaries"]
    assert summary["output_tokens"]["candidate"] == sum(out for _, out in WEATHER_USAGE.values())
    ttft = summary["ttft_ms"]
    assert ttft["runs"] >= 1 and ttft["candidate"] < ttft["recorded"]
    assert any("no gen_ai.tool.definitions" in n and trace_id("openai-agents") in n for n in report["notes"])


@pytest.mark.parametrize(("answer", "as_good", "score"), [
    ('{"grade": 2, "reasoning": "It asked for another city."}', 0, 0.25),  # the judge's grade decides
    ('{"grade": 4, "reasoning": "Right, and says it plainly."}', 4, 0.75),
    (None, 4, None),  # no grade in its answer: the deterministic checks decide
])
def test_a_judge_model_compares_the_answers(lake: Path, stub: Any, capsys: pytest.CaptureFixture[str],
                                            answer: str | None, as_good: int, score: float | None) -> None:
    from otelbench.testing.judge_stub import JudgeStub

    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    with JudgeStub("json" if answer else "garbage", text=answer) as judge:
        code, report = replay_json(capsys, "--agent", "weather_agent", "--lake", str(lake), "--base-url", url,
                                   "--model", "weather-berlin", "--judge", judge.base_url)
        prompts = judge.prompts()
    assert code == 0 and report["judge"] == f"stub-judge at {judge.base_url}"
    [summary] = report["summaries"]
    assert (summary["behaviour_matches"], summary["at_least_as_good"]) == (0, as_good)
    assert summary["judged"] == (len(WITH_CONTENT) if score is not None else 0)
    assert [r["judge_score"] for r in report["runs"]] == [score] * len(WITH_CONTENT)
    assert len(judge.requests) == len(WITH_CONTENT)
    assert "What is the weather in Paris?" in prompts and "It is sunny in Paris, 22 \\u00b0C." in prompts
    if score is None:
        assert sum("not judged" in n for n in report["notes"]) == len(WITH_CONTENT)


def test_runs_without_content_are_refused_with_the_doctors_fix(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing to replay: exit 1, no server needed (none is given, the embedded one is not
    started), each run named with its instrumentation and the fix."""
    lake = lake_of(tmp_path, ("google-adk",))
    assert main(["replay", "--agent", "weather_agent", "--lake", str(lake), "--no-otel"]) == 1
    out = capsys.readouterr().out
    assert f"/runs/{trace_id('google-adk')}" in out and "recorded without message content" in out
    adk = fix("messages", "gcp.vertex.agent")
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT" in adk
    assert " ".join(adk.split()) in " ".join(out.split())
    code, report = replay_json(capsys, "--agent", "weather_agent", "--lake", str(lake))
    assert code == 1 and report["runs"] == [] and report["unreplayable"][0]["fix"] == [adk]


def test_usage_errors(lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--agent", "nobody", "--lake", str(lake)]) == 2
    assert "no recorded runs of agent 'nobody'" in capsys.readouterr().err
    assert main(["replay", "--cluster", "1", "--lake", str(lake)]) == 2
    assert "--cluster needs --agent" in capsys.readouterr().err
    assert main(["replay", "--agent", "weather_agent", "--model", "m", "--lake", str(lake)]) == 2
    assert main(["replay", "--agent", "weather_agent", "--window", "2026-01-01..2026-01-02",
                 "--since", "2026-01-01", "--lake", str(lake)]) == 2


def test_the_servers_only_model_is_the_candidate(lake: Path, stub: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = replay_json(capsys, "--agent", "weather_agent", "--lake", str(lake),
                               "--base-url", stub.base_url("weather", ttft_ms=5, gap_ms=0))
    assert code == 0 and report["candidate"] == "stub-model"
    assert report["summaries"][0]["behaviour_matches"] == len(WITH_CONTENT)
    assert main(["replay", "--agent", "weather_agent", "--lake", str(lake),
                 "--base-url", stub.base_url("by-model"), "--no-otel"]) == 2
    assert "name the candidate with --model" in capsys.readouterr().err


@pytest.mark.model
def test_replay_on_the_embedded_model(lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No --base-url: the embedded SmolLM2 is started for the replay, and every recorded call
    gets a measured, streamed reply from it."""
    from otelbench.bench_runner.llama_server import LlamaServerMissing, find_llama_server

    try:
        find_llama_server()
    except LlamaServerMissing as exc:
        pytest.skip(str(exc))
    code, report = replay_json(capsys, "--agent", "weather_agent", "--lake", str(lake), "--max-tokens", "16")
    assert code == 0 and "SmolLM2" in report["candidate"]
    assert {r["trace_id"] for r in report["runs"]} == {trace_id(s) for s in WITH_CONTENT}
    assert all(not r["errors"] and r["candidate_ttft_ms"] > 0 and r["candidate_output_tokens"] > 0
               for r in report["runs"])


def test_a_failure_cluster_picks_its_members(tmp_path: Path, stub: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import polars as pl

    from otelbench.storage.lake import Lake

    lake = lake_of(tmp_path, WITH_CONTENT)
    members = [trace_id(s) for s in WITH_CONTENT]
    Lake(lake).replace("cluster_members", pl.DataFrame({"trace_id": members, "cluster_id": [7, 7, 8, 8]}),
                       {"agent": "weather_agent"})
    code, report = replay_json(capsys, "--agent", "weather_agent", "--cluster", "7", "--lake", str(lake),
                               "--base-url", stub.base_url("by-model", ttft_ms=5, gap_ms=0), "--model", "weather")
    assert code == 0 and sorted(r["trace_id"] for r in report["runs"]) == sorted(members[:2])


# A suite agent that "runs" by sending pydantic-ai's recorded weather run again as its own
# telemetry, inside the trace the suite runner gave it (TRACEPARENT), then answers.
SUITE_AGENT = """import json, os, sys, urllib.request
sys.stdin.read()
_, trace, parent, _ = os.environ["TRACEPARENT"].split("-")
body = json.loads(open(sys.argv[1]).read())
for rs in body["resourceSpans"]:
    for ss in rs["scopeSpans"]:
        for s in ss["spans"]:
            s["traceId"] = trace
            s["parentSpanId"] = s.get("parentSpanId") or parent
url = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/traces"
request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
urllib.request.urlopen(request).read()
print("It is sunny in Paris, 22 °C.")
"""
SUITE = ("name: weather\nversion: 1\ndescription: The weather\nrepeats: 1\ntime_limit_s: 30\ncases:\n"
         + "".join(f"  - id: w{i}\n    input: What is the weather in Paris?\n    check: {{regex: sunny}}\n"
                   for i in range(2)))


def test_a_suite_run_picks_its_traces(tmp_path: Path, stub: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "suites" / "weather-v1").mkdir(parents=True)
    (tmp_path / "suites" / "weather-v1" / "suite.yaml").write_text(SUITE)
    (tmp_path / "agent.py").write_text(SUITE_AGENT)
    recorded = RECORDED / "pydantic-ai" / "traces-1.json"
    with recording(tmp_path, ()) as (lake, endpoint):
        done = subprocess.run(
            [sys.executable, "-m", "otelbench", "suite", "run", "weather", "--root", str(tmp_path / "suites"),
             "--agent", f"{sys.executable} {tmp_path / 'agent.py'} {recorded}", "--judge", "none",
             "--out", str(tmp_path / "out"), "--json"],
            capture_output=True, text=True, env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        run_id = json.loads(done.stdout)["run_id"]

        def calls() -> int:
            with open_lake(lake) as gw:
                return gw.query("SELECT count(*) FROM llm_calls AS l JOIN suite_cases AS c USING (trace_id) "
                                "WHERE c.run_id = $id", {"id": run_id}, max_rows=None).rows[0][0]

        wait_for(lambda: calls() == 4, what="the suite's cases and the agent's calls in the lake")
    code, report = replay_json(capsys, "--suite-run", run_id, "--lake", str(lake),
                               "--base-url", stub.base_url("by-model", ttft_ms=5, gap_ms=0), "--model", "weather")
    assert code == 0
    [summary] = report["summaries"]
    assert (summary["agent"], summary["runs"], summary["behaviour_matches"]) == ("weather_agent", 2, 2)


def test_the_window_and_the_sample_pick_runs(lake: Path, stub: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    assert main(["replay", "--agent", "weather_agent", "--window", "2000-01-01..2000-01-02",
                 "--lake", str(lake), "--base-url", url, "--model", "weather"]) == 2
    assert "no recorded runs" in capsys.readouterr().err
    _, one = replay_json(capsys, "--agent", "weather_agent", "--sample", "1", "--lake", str(lake),
                         "--base-url", url, "--model", "weather")
    _, again = replay_json(capsys, "--agent", "weather_agent", "--sample", "1", "--lake", str(lake),
                           "--base-url", url, "--model", "weather")
    assert len(one["runs"]) + len(one["unreplayable"]) == 1
    assert [r["trace_id"] for r in one["runs"] + one["unreplayable"]] == [
        r["trace_id"] for r in again["runs"] + again["unreplayable"]]


def test_without_an_agent_every_agents_runs_are_replayed(lake: Path, stub: Any,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    code, every = replay_json(capsys, "--sample", "2", "--lake", str(lake), "--base-url", url, "--model", "weather")
    assert code == 0
    with open_lake(lake) as gw:  # at most 2 runs of each agent, the same 2 as --agent NAME --sample 2 picks
        agents = [r[0] for r in gw.query("SELECT DISTINCT agent FROM agent_runs ORDER BY agent").rows]
    picked = sorted(r["trace_id"] for r in every["runs"] + every["unreplayable"])
    one_by_one = []
    for agent in agents:
        _, alone = replay_json(capsys, "--agent", agent, "--sample", "2", "--lake", str(lake), "--base-url", url,
                               "--model", "weather")
        one_by_one += [r["trace_id"] for r in alone["runs"] + alone["unreplayable"]]
    assert len(agents) > 1 and picked == sorted(one_by_one)
    assert {s["agent"] for s in every["summaries"]} == {r["agent"] for r in every["runs"]}


def test_cost_recorded_and_candidate(lake: Path, stub: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The recorded side costs what its llm calls cost in the lake; a candidate whose model
    has no price (a local one) has none, and one with a price is priced by the same table."""
    from otelbench.bench_runner.replay import priced
    from otelbench.bench_runner.replay_compare import Outcome
    from otelbench.normalize import pricing

    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    _, report = replay_json(capsys, "--agent", "weather_agent", "--lake", str(lake), "--base-url", url,
                            "--model", "weather")
    with open_lake(lake) as gw:
        lake_cost = dict(gw.query("SELECT trace_id, CASE WHEN count(*) = count(cost_usd) THEN sum(cost_usd) END "
                                  "FROM llm_calls GROUP BY trace_id").rows)
    runs = report["runs"]
    assert runs and all(r["recorded_cost_usd"] == pytest.approx(lake_cost[r["trace_id"]]) for r in runs)
    assert any(r["recorded_cost_usd"] for r in runs)  # the recordings' models are priced
    assert all(r["candidate_cost_usd"] is None for r in runs)  # "weather" has no price
    [summary] = report["summaries"]
    costs = [r["recorded_cost_usd"] for r in runs if r["recorded_cost_usd"] is not None]
    assert summary["cost_usd"] == {"recorded": pytest.approx(sum(costs) / len(costs)), "candidate": None,
                                   "runs": len(costs), "ratio": None}
    model = "gpt-4o-mini"
    assert pricing.lookup(model) is not None
    got = priced(Outcome(input_tokens=1000, output_tokens=200), model)
    assert got.cost_usd == pytest.approx(pricing.cost(pricing.lookup(model), 1000, 200)) and got.cost_usd > 0
    assert priced(Outcome(input_tokens=1000, output_tokens=200), "weather").cost_usd is None
    assert priced(Outcome(input_tokens=1000), model).cost_usd is None  # tokens not counted: no price


def test_the_terminal_table(lake: Path, stub: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    assert main(["replay", "--agent", "weather_agent", "--lake", str(lake), "--base-url", url,
                 "--model", "weather-berlin", "--no-otel"]) == 0
    out = capsys.readouterr().out
    assert "0/4 (0 %)" in out and "4/4 (100 %)" in out and "4/8 (50 %)" in out
    assert all(f"/runs/{trace_id(s)}" in out for s in WITH_CONTENT)
    assert "2 run(s) not replayed" in out


def test_results_reach_the_lake_as_bench_spans(tmp_path: Path, stub: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Through the real collector into the replay_runs view, one row per replayed run as the
    report has it; none of it is an agent run or an llm call."""
    url = stub.base_url("by-model", ttft_ms=5, gap_ms=0)
    with recording(tmp_path, WITH_CONTENT) as (lake, endpoint):
        code = main(["replay", "--agent", "weather_agent", "--lake", str(lake), "--base-url", url,
                     "--model", "weather-berlin", "--otlp-endpoint", endpoint, "--json"])
        report = json.loads(capsys.readouterr().out)
        assert code == 0 and report["spans"]["failures"] == 0
        replay_id = report["spans"]["replay_id"]

        def rows() -> list[tuple[Any, ...]]:
            with open_lake(lake) as gw:
                return gw.query("""SELECT trace_id, agent, candidate, calls, calls_matching, behaviour_matches,
                                          at_least_as_good, divergence, candidate_output_tokens, candidate_answer
                                   FROM replay_runs WHERE replay_id = $id ORDER BY trace_id""",
                                {"id": replay_id}, max_rows=None).rows

        wait_for(lambda: len(rows()) == len(WITH_CONTENT), what="the replay's spans in the lake")
        assert rows() == sorted((r["trace_id"], r["agent"], "weather-berlin", r["calls"], r["calls_matching"],
                                 r["behaviour_matches"], r["at_least_as_good"], r["divergence"],
                                 r["candidate_output_tokens"], r["candidate_answer"]) for r in report["runs"])
        with open_lake(lake) as gw:
            assert gw.query("SELECT count(*) FROM agent_runs", max_rows=None).rows[0][0] == len(WITH_CONTENT)
            assert gw.query("SELECT count(*) FROM llm_calls", max_rows=None).rows[0][0] == 2 * len(WITH_CONTENT)


# -- the pure parts ---------------------------------------------------------------------------

PYDANTIC_TURN = [  # pydantic-ai's second call: the tool's result as a user message, with "result"
    {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
    {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
    {"role": "assistant", "parts": [{"type": "reasoning", "content": "use the tool"},
                                    {"type": "tool_call", "id": "c1", "name": "get_weather",
                                     "arguments": {"city": "Paris"}}]},
    {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "name": "get_weather",
                                "result": "sunny"}]},
]


def test_messages_rebuilt_as_openai_chat() -> None:
    messages, dropped = rq.openai_messages(PYDANTIC_TURN)
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    assert dropped == ["reasoning"]


@pytest.mark.parametrize(("definitions", "tools"), [
    (None, None), ("not json", None), ("[]", None),
    ('[{"type": "function", "name": "f", "parameters": {"type": "object"}}]',
     [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]),
    ('[{"type": "function", "function": {"name": "f", "description": "d"}}]',
     [{"type": "function", "function": {"name": "f", "description": "d",
                                        "parameters": {"type": "object", "properties": {}}}}]),
])
def test_tool_definitions_rebuilt(definitions: str | None, tools: list[dict[str, Any]] | None) -> None:
    assert rq.openai_tools(definitions) == tools


@pytest.mark.parametrize(("a", "b", "same"), [
    ('{"city": "Paris"}', '{ "city" :"Paris" }', True),
    ('{"a": 1, "b": [1, 2]}', {"b": [1, 2], "a": 1}, True),
    ('{"city": "Paris"}', '{"city": "Berlin"}', False),
    ('{"n": 1}', '{"n": 1.5}', False),
    ("not json ", "not json", True),
    ("", {}, True),
])
def test_arguments_compared_as_json(a: Any, b: Any, same: bool) -> None:
    assert (canonical_arguments(a) == canonical_arguments(b)) is same
