"""otelbench.sdk against a real collector on a real port (and the lake's views), the
embedded model for a real agent loop, a closed port for a collector that is down, and a
real HTTP server that answers slowly for one that is slow."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import otelbench.sdk as sdk
from otelbench.testing.serve import ROOT
from otelbench.testing.wait import run_async, wait_for
from otelbench.storage.duckdb import open_lake


def sql(lake: Path, query: str) -> list[tuple]:
    with open_lake(lake) as gw:
        return gw.query(query, max_rows=None).rows


def runs_of(lake: Path, agent: str) -> list[dict[str, Any]]:
    with open_lake(lake) as gw:
        r = gw.query("SELECT * FROM agent_runs WHERE agent = $a ORDER BY start_time", {"a": agent}, max_rows=None)
        return [dict(zip(r.columns, row)) for row in r.rows]


def provider() -> Any:
    """A TracerProvider of the test's own: ``observe`` then adds otelbench's exporter only
    when given an endpoint (the process's global provider can be set once; the tests that
    need ``observe`` to make one run in a process of their own)."""
    from opentelemetry.sdk.trace import TracerProvider

    return TracerProvider()


def lake_of(collector: Any) -> Path:
    return Path(collector.config.exporters.parquet.path)


def endpoint_of(collector: Any) -> str:
    return f"http://127.0.0.1:{collector.http_port}"


def test_a_task_is_an_agent_run_with_its_input_output_cost_and_log(collector) -> None:
    agent = sdk.observe("searcher", endpoint=endpoint_of(collector), tracer_provider=provider())
    with agent.task("search", input={"query": "cats"}) as task:
        task.log("found", 3, "results")
        task.cost(0.004)
        task.cost(0.001)
        task.set_output("three cats")
    assert agent.flush() and agent.stats() == {"ended": 1, "exported": 1, "failed": 0, "dropped": 0}
    lake = lake_of(collector)
    wait_for(lambda: len(runs_of(lake, "searcher")) == 1, what="the run in the lake")
    run = runs_of(lake, "searcher")[0]
    assert run["status"] == "ok" and run["cost_usd"] == pytest.approx(0.005)
    assert json.loads(run["input"])[0]["parts"][0]["content"] == '{"query": "cats"}'
    assert json.loads(run["output"])[0]["parts"][0]["content"] == "three cats"
    (name, source, events), = sql(lake, "SELECT name, cost_source, attributes FROM spans WHERE span_type = 'agent'")
    assert name == "invoke_agent searcher" and source == "reported"
    log = sql(lake, "SELECT count(*) FROM spans WHERE span_type = 'agent'")  # the log line is an event of it
    assert log == [(1,)]
    # the web (through the runs rollup) shows it as reported cost
    from otelbench.web.pages.agent import profile
    from otelbench.web.site import Site

    cost = profile(Site(lake, refresh_s=0), "searcher", "")["cost"]
    assert cost["source"] == "reported" and cost["reported"]["total_usd"] == pytest.approx(0.005)


def test_an_exception_fails_the_task_and_reaches_the_agent_unchanged(collector) -> None:
    agent = sdk.observe("divider", endpoint=endpoint_of(collector), tracer_provider=provider())
    raised = ZeroDivisionError("division by zero")
    with pytest.raises(ZeroDivisionError) as caught:
        with agent.task("divide", input="1/0"):
            raise raised
    assert caught.value is raised  # the very object, traceback and all

    @agent.task
    def parse(text: str) -> Any:
        return json.loads(text)

    with pytest.raises(json.JSONDecodeError):
        parse("not json")
    assert parse('{"a": 1}') == {"a": 1}
    agent.flush()
    lake = lake_of(collector)
    wait_for(lambda: len(runs_of(lake, "divider")) == 3, what="three runs")
    runs = runs_of(lake, "divider")
    assert [r["status"] for r in runs] == ["error", "error", "ok"]
    assert json.loads(runs[2]["output"])[0]["parts"][0]["content"] == '{"a": 1}'
    assert sql(lake, "SELECT error_type, error_message FROM spans WHERE status_code = 'error' ORDER BY start_time") == [
        ("ZeroDivisionError", "division by zero"),
        ("JSONDecodeError", "Expecting value: line 1 column 1 (char 0)")]


def test_async_tasks_and_threads_each_get_their_own_run_with_their_own_children(collector) -> None:
    from opentelemetry import trace

    p = provider()
    agent = sdk.observe("busy", endpoint=endpoint_of(collector), tracer_provider=p)
    tracer = p.get_tracer("test")

    async def one(i: int) -> None:
        async with agent.task("async", input=f"a{i}") as task:
            await asyncio.sleep(0.01 * (i % 3))  # interleaved: each task's context is its own
            with tracer.start_as_current_span(f"execute_tool step-{i}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"step-{i}"}):
                await asyncio.sleep(0)
            task.set_output(f"done {i}")

    async def many() -> None:
        await asyncio.gather(*(one(i) for i in range(6)))

    run_async(many)

    @agent.task("threaded")
    def work(i: int) -> str:
        assert trace.get_current_span().is_recording()
        return f"t{i}"

    threads = [threading.Thread(target=lambda i=i: [work(i * 10 + k) for k in range(5)]) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    agent.flush()
    lake = lake_of(collector)
    wait_for(lambda: len(runs_of(lake, "busy")) == 26, what="26 runs")
    runs = runs_of(lake, "busy")
    assert len({r["trace_id"] for r in runs}) == 26 and sum(r["tool_calls"] for r in runs) == 6
    # each tool span sits in the run whose task asked for it
    pairs = sql(lake, """SELECT t.tool_name, a.input_messages FROM spans AS t JOIN spans AS a
                         ON a.trace_id = t.trace_id AND a.span_id = t.parent_span_id WHERE t.span_type = 'tool'""")
    assert sorted((tool, json.loads(msgs)[0]["parts"][0]["content"]) for tool, msgs in pairs) == [
        (f"step-{i}", f"a{i}") for i in range(6)]
    assert sorted(json.loads(r["output"])[0]["parts"][0]["content"] for r in runs if r["input"] and "a" not in
                  json.loads(r["input"])[0]["parts"][0]["content"]) == sorted(f"t{i * 10 + k}" for i in range(4)
                                                                              for k in range(5))


def test_a_collector_that_is_down_costs_the_agent_nothing_and_is_told_once(caplog) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}"
    agent = sdk.observe("lonely", endpoint=down, tracer_provider=provider())
    caplog.set_level(logging.WARNING, logger="otelbench.sdk")
    t0 = time.perf_counter()
    for i in range(300):
        with agent.task("t", input=i) as task:
            task.set_output(i)
    spent = time.perf_counter() - t0
    agent.flush(timeout_s=30)
    stats = agent.stats()
    assert stats["ended"] == 300 and stats["exported"] == 0 and stats["failed"] + stats["dropped"] == 300
    assert spent < 1.0  # the export's retries run in the background, never in the agent
    told = [r for r in caplog.records if "spans dropped" in r.getMessage()]
    assert len(told) == 1 and "agent.stats()" in told[0].getMessage()


class _Slow(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        time.sleep(2.0)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_a_slow_collector_does_not_slow_the_agent_by_a_millisecond() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = sdk.observe("patient", endpoint=f"http://127.0.0.1:{server.server_port}", tracer_provider=provider())

        def work() -> int:
            return sum(range(2000))

        def timed(with_sdk: bool) -> float:
            t0 = time.perf_counter()
            if with_sdk:
                with agent.task("t", input="x") as task:
                    task.set_output(work())
            else:
                work()
            return time.perf_counter() - t0

        # alternate, so the machine's noise falls on both alike; the exporter is blocked on
        # the slow collector the whole time
        plain, observed = [], []
        for _ in range(400):
            plain.append(timed(False))
            observed.append(timed(True))
        extra_ms = (statistics.median(observed) - statistics.median(plain)) * 1000
        assert extra_ms < 1.0, f"{extra_ms:.3f} ms more per task"
    finally:
        server.shutdown()


def test_a_bad_key_is_counted_not_raised_and_a_good_one_names_the_owner(make_collector) -> None:
    c = make_collector(auth={"keys": [{"key": "right-key-123", "owner": "alice"}]})
    bad = sdk.observe("keyed", endpoint=endpoint_of(c), key="wrong-key", tracer_provider=provider())
    with bad.task("t", input="x"):
        pass
    bad.flush()
    assert bad.stats()["failed"] == 1 and bad.stats()["exported"] == 0
    good = sdk.observe("keyed", endpoint=endpoint_of(c), key="right-key-123", tracer_provider=provider())
    with good.task("t", input="y"):
        pass
    good.flush()
    assert good.stats()["exported"] == 1
    wait_for(lambda: len(runs_of(lake_of(c), "keyed")) == 1, what="the keyed run")
    assert runs_of(lake_of(c), "keyed")[0]["owner"] == "alice"


def test_the_applications_own_provider_is_used_as_it_is() -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    p, seen = provider(), InMemorySpanExporter()
    p.add_span_processor(SimpleSpanProcessor(seen))
    agent = sdk.observe("guest", tracer_provider=p)  # no endpoint: the application's exporters decide
    with agent.task("t", input="hello") as task:
        agent.event("checkpoint", {"step": 2, "detail": {"nested": True}})
        task.set_output("bye")
    (span,) = seen.get_finished_spans()
    assert span.name == "invoke_agent guest" and span.attributes["gen_ai.agent.name"] == "guest"
    assert [(e.name, dict(e.attributes)) for e in span.events] == [
        ("checkpoint", {"step": 2, "detail": '{"nested": true}'})]
    assert agent.stats()["ended"] == 0  # nothing of ours exported


SCRIPT = """
import otelbench.sdk, sys
agent = otelbench.sdk.observe(agent="exiting")  # OTEL_EXPORTER_OTLP_ENDPOINT from the environment
with agent.task("last words", input="bye") as task:
    task.set_output("gone")
# no flush: the exit does it
"""


def test_observe_makes_a_provider_from_the_environment_and_flushes_at_exit(collector) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint_of(collector), "PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lake = lake_of(collector)
    wait_for(lambda: len(runs_of(lake, "exiting")) == 1, what="the run sent at exit")
    assert sql(lake, "SELECT service_name FROM spans") == [("exiting",)]


JOINING = """
import otelbench.sdk
agent = otelbench.sdk.observe(agent="joining")  # TRACEPARENT from the environment, as `otelbench suite run` sets it
with agent.task("case", input="q"):
    with agent.task("step"):
        pass
agent.event("outside")
with agent.provider.get_tracer("app").start_as_current_span("the application's own"):
    with agent.task("inside"):
        pass
"""


def test_tasks_outside_any_span_join_the_traceparent_of_the_environment(collector) -> None:
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint_of(collector), "TRACEPARENT": f"00-{trace_id}-{parent}-01",
           "PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    done = subprocess.run([sys.executable, "-c", JOINING], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lake = lake_of(collector)
    wait_for(lambda: len(sql(lake, "SELECT 1 FROM spans")) == 5, what="five spans")
    task = "coalesce(attributes->>'$.\"otelbench.task\"', name)"  # a task's own name, else the span's
    spans = {name: ids for name, *ids in sql(lake, f"SELECT {task}, trace_id, span_id, parent_span_id FROM spans")}
    assert spans["case"][0] == trace_id and spans["case"][2] == parent  # the task outside any span
    assert spans["step"][0] == trace_id and spans["step"][2] == spans["case"][1]  # a task inside it, as ever
    assert spans["event outside"][0] == trace_id and spans["event outside"][2] == parent
    # inside the application's own span, the application's trace wins
    assert spans["inside"][0] == spans["the application's own"][0] != trace_id
    assert spans["inside"][2] == spans["the application's own"][1]


@pytest.mark.model
def test_a_real_agent_loop_against_the_embedded_model(llama_server, collector) -> None:
    done = subprocess.run([sys.executable, "-m", "otelbench.testing.sdk_agent", "--base-url", llama_server.base_url,
                           "--model", llama_server.model_id, "--endpoint", endpoint_of(collector),
                           "--agent", "sdk-demo"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "openai" in report["instrumented"]  # and any other installed one (LangChain, in CI)
    assert report["stats"]["exported"] == report["stats"]["ended"] >= 7 and report["stats"]["failed"] == 0
    lake = lake_of(collector)
    wait_for(lambda: len(runs_of(lake, "sdk-demo")) == 3, what="three runs", timeout_s=60)
    runs = runs_of(lake, "sdk-demo")
    assert [r["status"] for r in runs] == ["ok", "ok", "error"]
    assert all(r["llm_calls"] == 1 for r in runs)  # the instrumentation's chat span, under the task
    for r in runs[:2]:
        assert r["cost_usd"] >= 0.001 and json.loads(r["output"])[0]["parts"][0]["content"]
    calls = sql(lake, """SELECT c.request_model, a.name FROM spans AS c JOIN spans AS a
                         ON a.trace_id = c.trace_id AND a.span_id = c.parent_span_id WHERE c.span_type = 'llm'""")
    assert calls == [(llama_server.model_id, "invoke_agent sdk-demo")] * 3
    assert sql(lake, "SELECT error_type FROM spans WHERE span_type = 'agent' AND status_code = 'error'") == [
        ("JSONDecodeError",)]
