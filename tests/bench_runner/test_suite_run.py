"""``otelbench suite run`` end to end: the real command runs a real agent script once per
case × repeat against a real collector; the agent's own OTel spans join each case's trace
through TRACEPARENT; the ``suite_cases`` and ``suite_runs`` views read the verdicts and the
evidence back from the lake. The agent misbehaves on purpose for some cases — hangs,
crashes, floods stdout, prints garbage — and each of those fails only its own case."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otelbench.bench_runner.agent_suite import load
from otelbench.bench_runner.stats import wilson_95
from otelbench.bench_runner.environment import DEFAULTED, set_default, users
from otelbench.bench_runner.suite_run import MAX_STDOUT_BYTES, Finished, run_agent, score
from otelbench.testing.suites import CAPITAL, YEAR, suite_yaml
from otelbench.storage.duckdb import Gateway, open_lake

ROOT = Path(__file__).resolve().parents[2]

SUITE = suite_yaml("tricky", 1, CAPITAL, YEAR, """  - id: order
    input: {task: "Return the order as JSON", order: 17}
    check:
      json_schema: {type: object, required: [id], properties: {id: {type: integer}}}
  - id: hang
    input: Think forever.
    check: {exact: never}
  - id: crash
    input: Divide by zero.
    check: {exact: never}
  - id: flood
    input: Say everything.
    check: {regex: "x"}
  - id: essay
    input: Explain HDBSCAN.
    check: {judge: "Mentions density."}
  - id: sorted
    input: Sort 3 1 2.
    check: {python: check_sorted.py}
""", description="Cases an agent can pass, fail, hang on, crash on, flood",
                   time_limit_s=3)

# The agent: answers from its case id; sends one span of its own under TRACEPARENT
AGENT = r'''
import json, os, sys, time
question = sys.stdin.read()
case = os.environ["OTELBENCH_CASE_ID"]
assert question == os.environ["OTELBENCH_CASE_INPUT"], "stdin and the variable differ"
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
provider = TracerProvider(resource=Resource.create({"service.name": "scripted-agent"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
    endpoint=os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/traces")))
parent = TraceContextTextMapPropagator().extract({"traceparent": os.environ["TRACEPARENT"]})
with provider.get_tracer("scripted").start_as_current_span("invoke_agent scripted", context=parent, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "scripted-agent"}):
    with provider.get_tracer("scripted").start_as_current_span("chat tiny", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "tiny", "gen_ai.provider.name": "openai",
            "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5}):
        pass
provider.shutdown()
# the user's environment, not what otelbench set for its own processes (bench_runner.environment)
ours = {"PYDANTIC_DISABLE_PLUGINS", "OTELBENCH_DEFAULTED"} & set(os.environ)
if case == "capital": print("Paris" if not ours and os.environ["GRPC_VERBOSITY"] == "DEBUG" else f"leaked {ours}")
elif case == "year": print("It fell in 1989.")
elif case == "order": print("sure! {{{ not json")
elif case == "hang": time.sleep(60)
elif case == "crash": print("partial"); sys.stderr.write("ZeroDivisionError: division by zero\n"); sys.exit(3)
elif case == "flood":
    while True: sys.stdout.write("x" * 65536)
elif case == "essay": print("Density-based clustering with noise points.")
elif case == "sorted": print("1 2 3")
'''


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("suite_run")
    folder = tmp / "suites" / "tricky-v1"
    folder.mkdir(parents=True)
    (folder / "suite.yaml").write_text(SUITE)
    (folder / "check_sorted.py").write_text("def check(answer, case):\n    return '1 2 3' in answer, 'sorted'\n")
    (tmp / "agent.py").write_text(AGENT)
    collector = Collector(collector_config(tmp)).start()
    try:
        endpoint = f"http://127.0.0.1:{collector.http_port}"
        env = {**{k: v for k, v in os.environ.items() if k not in ("PYDANTIC_DISABLE_PLUGINS", DEFAULTED)},
               "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "COLUMNS": "80",  # a CI log
               "GRPC_VERBOSITY": "DEBUG"}  # the user's own: kept, where otelbench sets ERROR for itself
        done = subprocess.run(
            [sys.executable, "-m", "otelbench", "suite", "run", "tricky", "--root", str(tmp / "suites"),
             "--agent", f"{sys.executable} {tmp / 'agent.py'}", "--concurrency", "4", "--judge", "none",
             "--out", str(tmp / "out"), "--json"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)
        collector.wait_flushed()
    finally:
        collector.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    return {"lake": tmp / "lake", "record": json.loads(done.stdout), "stderr": done.stderr, "out": tmp / "out",
            "suite": load(folder)}


@pytest.fixture
def lake(ran: dict[str, Any]) -> Iterator[Gateway]:
    with open_lake(ran["lake"]) as gw:
        yield gw


def rows(gw: Gateway, sql: str, params: object = None) -> list[dict[str, Any]]:
    r = gw.query(sql, params)
    return [dict(zip(r.columns, row)) for row in r.rows]


EXPECTED = {"capital": "pass", "year": "pass", "order": "fail", "hang": "fail", "crash": "fail",
            "flood": "fail", "essay": "error", "sorted": "pass"}


def test_every_case_and_repeat_has_its_verdict_and_reason(ran: dict[str, Any]) -> None:
    trials = ran["record"]["trials"]
    assert len(trials) == 8 * 2
    assert {(t["case_id"], t["verdict"]) for t in trials} == set(EXPECTED.items())
    by = {t["case_id"]: t for t in trials}
    assert "timed out after 3 s" in by["hang"]["reason"] and by["hang"]["timed_out"]
    assert "exited with 3" in by["crash"]["reason"] and "ZeroDivisionError" in by["crash"]["reason"]
    assert by["crash"]["answer"] == "partial"  # what it printed before crashing is kept
    assert by["flood"]["flooded"] and by["flood"]["stdout_bytes"] > MAX_STDOUT_BYTES
    assert "no judge" in by["essay"]["reason"]
    assert "no JSON" in by["order"]["reason"] or "JSON" in by["order"]["reason"]
    assert ran["record"]["suite_version"] == ran["suite"].version
    saved = list(ran["out"].glob("tricky-v1_*.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text())["run_id"] == ran["record"]["run_id"]


def test_suite_cases_view_has_the_evidence_and_the_agents_own_spans(ran: dict[str, Any], lake: Gateway) -> None:
    got = rows(lake, "SELECT * FROM suite_cases ORDER BY case_id, repeat")
    assert len(got) == 16
    assert {(r["case_id"], r["verdict"]) for r in got} == set(EXPECTED.items())
    assert all(r["run_id"] == ran["record"]["run_id"] for r in got)
    by = {r["case_id"]: r for r in got}
    # the agent's own spans joined the case's trace (TRACEPARENT): its name, its call, its tokens
    assert by["capital"]["agent"] == "scripted-agent"
    assert (by["capital"]["llm_calls"], by["capital"]["input_tokens"], by["capital"]["output_tokens"]) == (1, 10, 5)
    assert by["capital"]["output"] == "Paris" and by["capital"]["passed"] is True
    assert by["crash"]["exit_code"] == 3 and "ZeroDivisionError" in by["crash"]["stderr"]
    assert by["hang"]["timed_out"] is True and by["hang"]["exit_code"] is None
    assert by["flood"]["flooded"] is True
    assert by["order"]["input"] == json.dumps({"task": "Return the order as JSON", "order": 17})
    # the agent span is a child of the case span, in the case's trace
    parents = rows(lake, """SELECT c.case_id, count(*) AS n FROM suite_cases AS c JOIN spans AS s
                            ON s.trace_id = c.trace_id AND s.parent_span_id = c.span_id GROUP BY 1""")
    assert {p["case_id"] for p in parents} == set(EXPECTED)  # each agent run sent its span before answering


def test_suite_runs_view_agrees_with_the_cases_and_the_printed_summary(ran: dict[str, Any], lake: Gateway) -> None:
    (run,) = rows(lake, "SELECT * FROM suite_runs")
    s = ran["record"]["summary"]
    assert run["run_id"] == ran["record"]["run_id"] and run["status"] == "complete" and run["partial"] is False
    assert (run["trials"], run["passed"], run["failed"], run["errors"]) == (16, 6, 8, 2)
    assert (s["passed"], s["failed"], s["errors"]) == (6, 8, 2)
    assert run["pass_rate"] == pytest.approx(6 / 14) == pytest.approx(s["pass_rate"])
    low, high = wilson_95(6, 14)
    assert (run["pass_rate_low"], run["pass_rate_high"]) == (pytest.approx(low), pytest.approx(high))
    assert run["pass_rate_low"] < run["pass_rate"] < run["pass_rate_high"]
    assert run["agent"] == "scripted-agent" and run["repeats"] == 2 and run["cases"] == 8
    assert run["timed_out"] == 2 and run["latency_p95_ms"] >= 3000  # the hangs took their time limit
    # benchmark evidence stays apart from telemetry: no suite trace is an agent run
    assert rows(lake, "SELECT count(*) AS n FROM agent_runs")[0]["n"] == 0


# lines kept whole however long: a command or a path cut in two cannot be copied
WHOLE = re.compile(r"^  (agent|judge)  |^evidence: |^  otelbench sql ")


@pytest.mark.parametrize("width", [80, 200])
def test_the_printed_report_fits_and_says_what_a_person_needs(ran: dict[str, Any], width: int) -> None:
    from rich.console import Console

    from otelbench.bench_runner.suite_console import print_summary

    if width == 80:
        text = ran["stderr"]  # what the command printed, in a pipe with COLUMNS=80
    else:
        console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
        print_summary(console, ran["record"], 12.0, Path("/tmp/evidence.json"), {"exported": 17, "failures": 0},
                      "http://127.0.0.1:4318")
        text = console.export_text()
    assert all(len(line) <= width for line in text.splitlines() if not WHOLE.match(line)), text
    flat = " ".join(text.split())
    for case, verdict in EXPECTED.items():
        n = 2 if verdict == "pass" else 0
        assert re.search(rf"{case} +│ \S+ +│ +{n}/2 │", text), case  # a row per case: checker, passed/repeats
    assert "pass rate 43% (6/14 scored runs; 95% CI" in flat and "2 unscored" in flat
    assert re.search(r"^evidence: \S+\.json$", text, re.M)  # one line, whole
    if width == 80:
        assert "agent  " + sys.executable in text and "judge  none" in text
        assert len(re.findall(r"^  (pass |fail |error) \S+ #[12] \d+\.\ds", text, re.M)) == 16


def test_the_wilson_interval_is_the_textbook_one() -> None:
    assert wilson_95(0, 0) == (None, None)
    low, high = wilson_95(8, 10)  # a published example: 0.490 – 0.943
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson_95(10, 10)[1] == 1.0 and wilson_95(0, 10)[0] == 0.0


def test_an_agent_that_cannot_start_fails_its_case_with_the_reason(tmp_path: Path) -> None:
    done = run_agent("/nonexistent/agent", "hi", {"PATH": "/usr/bin:/bin"}, 5)
    assert done.exit_code == 127
    suite = load(_tiny(tmp_path))
    verdict, reason = score(suite, suite.spec.cases[0], done, None)
    assert verdict == "fail" and "exited with 127" in reason and "not found" in reason


def test_a_python_checker_and_an_empty_answer(tmp_path: Path) -> None:
    suite = load(_tiny(tmp_path))
    assert score(suite, suite.spec.cases[0], Finished(stdout=b"   \n", exit_code=0), None) == (
        "fail", "the agent printed no answer on stdout")
    assert score(suite, suite.spec.cases[0], Finished(stdout=b"Paris\n", exit_code=0), None)[0] == "pass"


def test_the_command_refuses_unknown_cases(ran: dict[str, Any], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "otelbench", "suite", "run", str(_tiny(tmp_path)), "--agent", "true",
                           "--cases", "capital,nope", "--no-otel"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode != 0 and "no case nope" in done.stderr


def _tiny(tmp: Path) -> Path:
    folder = tmp / "tiny-v1"
    folder.mkdir(exist_ok=True)
    (folder / "suite.yaml").write_text("name: tiny\nversion: 1\ndescription: d\ncases:\n"
                                       "  - {id: capital, input: 'Capital of France?', check: {exact: Paris}}\n")
    return folder


def test_what_otelbench_sets_for_itself_is_taken_out_of_an_agents_environment() -> None:
    env = {"GRPC_VERBOSITY": "DEBUG", "HOME": "/home/me"}
    set_default(env, "PYDANTIC_DISABLE_PLUGINS", "__all__")
    set_default(env, "GRPC_VERBOSITY", "ERROR")  # the user's value stays, and stays theirs
    assert env == {"GRPC_VERBOSITY": "DEBUG", "HOME": "/home/me", "PYDANTIC_DISABLE_PLUGINS": "__all__",
                   DEFAULTED: "PYDANTIC_DISABLE_PLUGINS"}
    assert users(env) == {"GRPC_VERBOSITY": "DEBUG", "HOME": "/home/me"}


def test_the_model_file_joins_the_runs_manifest(tmp_path: Path) -> None:
    """``suite run --model-file``: the file's name and sha256 are in the evidence (and on
    the run's span, as ``bench.suite.manifest.*``, which ``otelbench gate`` compares);
    a file that is not there is a usage error."""
    model = tmp_path / "agent-model.gguf"
    model.write_bytes(b"GGUF not really a model")
    base = [sys.executable, "-m", "otelbench", "suite", "run", str(_tiny(tmp_path)), "--agent", "echo Paris",
            "--judge", "none", "--no-otel", "--out", str(tmp_path / "out"), "--json"]
    done = subprocess.run([*base, "--model-file", str(model)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)["manifest"]
    assert got["model_file"] == "agent-model.gguf"
    assert got["model_file_sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    missing = subprocess.run([*base, "--model-file", str(tmp_path / "nope.gguf")], capture_output=True, text=True,
                             cwd=ROOT)
    assert missing.returncode == 2 and "nope.gguf: no such file" in missing.stderr
