"""bench_runner.spans end to end: two model runs against the scripted stub, exported by the
real OTel SDK exporter to a real collector, read back from the lake by the bench_results
and bench_tests views (storage.queries) — one row per model run, one per judged test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from otelbench.bench_runner import runner, servers
from otelbench.bench_runner.hardware import probe_hardware
from otelbench.bench_runner.spans import REASON_CHARS, BenchSpans
from otelbench.testing.openai_stub import StubServer
from otelbench.storage.duckdb import Gateway, open_lake

MODELS = ("normal", "http500")  # under /by-model the stub runs the script the model names


@pytest.fixture(scope="module")
def benched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``run_model`` for a working and a wholly failing model, spans to a real collector."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("bench_spans")
    collector = Collector(collector_config(tmp)).start()
    try:
        with StubServer() as stub, pytest.MonkeyPatch.context() as mp:
            mp.setenv("HOME", str(tmp))  # no GGUF lookup in the developer's model folders
            info = servers.probe(stub.base_url("by-model"))
            spans = BenchSpans(f"http://127.0.0.1:{collector.http_port}")
            hardware = probe_hardware(measure_bandwidth=False)
            runs = {m: runner.run_model(m, info, hardware, spans, runner.Options(quick=True)) for m in MODELS}
            exported = spans.shutdown()  # the SDK's flush: every span acknowledged by the collector
        collector.wait_flushed()
    finally:
        collector.stop()
    return {"runs": runs, "exported": exported, "lake": tmp / "lake", "port": stub.port}


@pytest.fixture
def lake(benched: dict[str, Any]) -> Iterator[Gateway]:
    with open_lake(benched["lake"]) as gw:
        yield gw


def rows(gw: Gateway, sql: str, params: object = None) -> list[dict[str, Any]]:
    r = gw.query(sql, params)
    return [dict(zip(r.columns, row)) for row in r.rows]


def test_every_span_was_exported(benched: dict[str, Any]) -> None:
    assert benched["exported"]["failures"] == 0
    # per model: 3 quick speed cases x (warm-up + run) + 4 suite replies, 4 tests, 1 root
    assert benched["exported"]["exported"] == len(MODELS) * (6 + 4 + 4 + 1)


def test_bench_results_is_one_row_per_model_run(benched: dict[str, Any], lake: Gateway) -> None:
    got = {r["model"]: r for r in rows(lake, "SELECT * FROM bench_results")}
    assert set(got) == set(MODELS)
    assert len({r["trace_id"] for r in got.values()}) == len(MODELS)  # a trace per model run
    for model, row in got.items():
        result = benched["runs"][model].result
        summary = result["summary"]
        assert row["provider"] == "openai_compatible" and row["server_kind"] == "openai_compatible"
        assert (row["server_address"], row["server_port"]) == ("127.0.0.1", benched["port"])
        assert (row["suite"], row["suite_version"], row["speed_version"]) == ("core", "core-v1", "speed-v1")
        assert row["quick"] is True and row["runs"] == 1
        assert row["start_time"] is not None and row["duration_ms"] > 0
        assert row["ability_score"] == summary["ability_score"] == 0.0  # "Hello world!" passes nothing
        assert row["agent_fitness_score"] is None  # --quick runs no agent test: not measured, not 0
        assert (row["tests_passed"], row["tests_total"]) == (0, 4)
        assert row["confidence"] == result["plausibility"]["confidence"]
        assert row["confidence_reasons"] == [r["message"] for r in result["plausibility"]["reasons"]]
        assert row["quantization"] is None and row["architecture"] is None  # the stub has no GGUF
        assert row["gguf_sha256"] is None and result["gguf"]["sha256"] is None
        assert row["server_version"] == "unknown"  # the stub states none

    ok, failed = got["normal"], got["http500"]
    medium = benched["runs"]["normal"].result["summary"]["cases"]["medium-200"]
    assert ok["decode_tps_median"] == medium["decode_tps"]["median"] > 0
    assert ok["ttft_ms_median"] == medium["ttft_ms"]["median"] > 0
    prefill = benched["runs"]["normal"].result["summary"]["cases"]["prefill-2k"]
    assert ok["prefill_tps_median"] == prefill["prefill_tps"]["median"] > 0
    assert (ok["status"], ok["failures"], ok["error_message"]) == ("ok", 0, None)

    problems = benched["runs"]["http500"].problems
    assert len(problems) == 3 + 4  # every speed case and every suite reply
    assert failed["status"] == "error" and failed["failures"] == len(problems)
    assert failed["error_message"].startswith("7 failures; first: short-50: http-status: HTTP 500")
    assert "model crashed: out of memory" in failed["error_message"]  # the body, as evidence
    assert failed["decode_tps_median"] is None and failed["ttft_ms_median"] is None


def test_bench_tests_is_one_row_per_judged_test(benched: dict[str, Any], lake: Gateway) -> None:
    got = rows(lake, "SELECT * FROM bench_tests ORDER BY model, start_time")
    runs = {r["model"]: r["trace_id"] for r in rows(lake, "SELECT model, trace_id FROM bench_results")}
    for model in MODELS:
        expected = [(t["name"], t["category"], t["verdict"], t["reason"][:REASON_CHARS], t["checker"])
                    for t in benched["runs"][model].result["tests"]]
        mine = [r for r in got if r["model"] == model]
        assert [(r["test"], r["category"], r["verdict"], r["reason"], r["checker"]) for r in mine] == expected
        assert {(r["suite"], r["suite_version"], r["trace_id"]) for r in mine} == {("core", "core-v1", runs[model])}
    failed = [r for r in got if r["model"] == "http500"]
    assert all(r["reason"].startswith("no response: NoReply: http-status: HTTP 500") for r in failed)


def test_a_test_hangs_under_the_request_it_judged(benched: dict[str, Any], lake: Gateway) -> None:
    replies = rows(lake, """SELECT t.test, c.operation, c.status_code, c.request_model, t.model,
                                   c.attributes->>'$."bench.test.name"' AS asked_by
                            FROM bench_tests AS t JOIN spans AS c
                              ON c.trace_id = t.trace_id AND c.span_id = t.reply_span_id""")
    assert len(replies) == len(MODELS) * 4
    for r in replies:
        assert r["operation"] == "chat" and r["request_model"] == r["model"] and r["asked_by"] == r["test"]
        assert r["status_code"] == ("error" if r["model"] == "http500" else "unset")


def test_test_spans_are_not_model_calls(benched: dict[str, Any], lake: Gateway) -> None:
    calls = rows(lake, """SELECT r.model, count(c.span_id) AS calls FROM bench_results AS r
                          JOIN llm_calls AS c USING (trace_id) GROUP BY r.model ORDER BY r.model""")
    assert calls == [{"model": m, "calls": 6 + 4} for m in sorted(MODELS)]
    # a model run is benchmark evidence, not an agent's run: agent_runs leaves it out
    assert rows(lake, "SELECT count(*) AS n FROM agent_runs") == [{"n": 0}]



def test_suite_replies_and_the_machine_are_recorded(benched: dict[str, Any], lake: Gateway) -> None:
    """The evidence beside each verdict (the reply's text, as GenAI output messages on its
    chat span) and the machine the run was made on (bench_results.hardware_*)."""
    replies = rows(lake, """SELECT t.model, t.test, c.output_messages FROM bench_tests AS t
                            JOIN llm_calls AS c ON c.trace_id = t.trace_id AND c.span_id = t.reply_span_id
                            ORDER BY t.model, t.start_time""")
    for model in MODELS:
        expected = [(t["name"], t["response"]) for t in benched["runs"][model].result["tests"]]
        got = [(r["test"], r["output_messages"]) for r in replies if r["model"] == model]
        if model == "normal":
            assert [(n, json.loads(m)) for n, m in got] == [
                (n, [{"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}])
                for n, text in expected] and expected[0][1] == "Hello world!"
        else:  # no reply: nothing recorded, the failure is the span's status
            assert [m for _, m in got] == [None] * len(expected)
    speed = rows(lake, """SELECT count(*) AS n FROM spans WHERE output_messages IS NOT NULL
                          AND attributes->>'$."bench.case"' <> 'suite'""")
    assert speed == [{"n": 0}]  # a speed case's text is not kept
    hardware = benched["runs"]["normal"].result["hardware"]
    machine = rows(lake, "SELECT DISTINCT hardware_cpu, hardware_gpus, hardware_ram_bytes FROM bench_results")
    assert machine == [{"hardware_cpu": hardware["cpu"]["model"], "hardware_gpus": [g["name"] for g in hardware["gpus"]],
                        "hardware_ram_bytes": hardware["ram_bytes"]}]
