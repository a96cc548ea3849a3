"""`otelbench bench` end to end: the real llama.cpp server with SmolLM2, the real collector,
the result JSON, the spans in the lake. Asserts on recorded evidence, not on the model being clever."""

from __future__ import annotations

import json
import socket

import pytest

from otelbench.storage.duckdb import open_lake
from tests.model_fixture import bench


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def quick_run(quick_bench):
    """One --quick run with spans exported to a real collector (tests/model_fixture.py)."""
    return quick_bench


def test_quick_run_writes_a_complete_result(quick_run):
    proc, files, _ = quick_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(files) == 1
    r = json.loads(files[0].read_text())
    assert r["schema_version"] == 1 and r["suite"]["version"] == "core-v1"
    g = r["gguf"]
    assert g["path"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf") and g["size_bytes"] > 90_000_000
    assert g["architecture"] == "llama" and g["quantization"] == "Q4_1"
    case = r["summary"]["cases"]["medium-200"]
    for metric in ("ttft_ms", "decode_tps", "prefill_tps"):
        assert case[metric]["median"] is not None and case[metric]["median"] > 0, metric
    assert "median" in r["summary"]["cases"]["prefill-2k"]["prefill_tps"]
    assert r["plausibility"]["confidence"] in ("HIGH", "MEDIUM", "LOW")
    assert isinstance(r["plausibility"]["reasons"], list)
    assert r["tests"], "the quick suite ran no test"
    for t in r["tests"]:
        assert {"name", "category", "passed", "reason", "response", "prompt"} <= set(t)
        assert t["category"] in ("ability", "agent") and t["reason"]
    assert r["formulas"]["decode_tps"]
    assert r["runs"]["medium-200"][0]["t_send_ns"] > 0  # raw per-run measurements kept
    # the terminal summary table
    assert "decode tok/s" in proc.stdout and "Q4_1" in proc.stdout


def test_spans_reach_the_lake(quick_run):
    _, files, tmp = quick_run
    r = json.loads(files[0].read_text())
    db = open_lake(tmp / "lake")
    roots = db.query("SELECT name, attributes->>'$.\"bench.suite.version\"', attributes->>'$.\"bench.confidence\"' "
                     "FROM spans WHERE attributes->>'$.\"bench.kind\"' = 'model_run'").rows
    assert roots == [(f"bench {r['model']}", "core-v1", r["plausibility"]["confidence"])]
    n_requests = sum(len(v) for v in r["runs"].values())
    chats = db.query("SELECT count(*), count(DISTINCT trace_id) FROM llm_calls WHERE operation = 'chat'").rows
    assert chats[0][0] >= n_requests and chats[0][1] == 1  # one trace per model run
    tests = db.query("SELECT count(*) FROM spans WHERE attributes->>'$.\"bench.test.verdict\"' IN ('pass', 'fail')").rows
    assert tests[0][0] == len(r["tests"])
    # the lake's views of them: one row per model run, one per judged test
    medium = r["summary"]["cases"]["medium-200"]
    assert db.query("SELECT model, suite_version, quantization, decode_tps_median, ability_score, confidence, "
                    "tests_total, status FROM bench_results").rows == [
        (r["model"], "core-v1", "Q4_1", medium["decode_tps"]["median"], r["summary"]["ability_score"],
         r["plausibility"]["confidence"], len(r["tests"]), "ok")]
    judged = db.query("SELECT model, test, verdict FROM bench_tests ORDER BY start_time").rows
    assert judged == [(r["model"], t["name"], t["verdict"]) for t in r["tests"]]


def test_list_and_check(llama_server, tmp_path):
    listing = bench("--list", "--base-url", llama_server.base_url)
    assert listing.returncode == 0, listing.stderr
    assert "READY" in listing.stdout and "Q4_1" in listing.stdout
    ok = bench("--check", llama_server.model_id, "--base-url", llama_server.base_url, "--no-otel")
    assert ok.returncode == 0, ok.stdout
    assert "OK" in ok.stdout and "FAIL" not in ok.stdout
    bad = bench("--check", "no-such-model", "--base-url", llama_server.base_url,
                "--otlp-endpoint", f"http://127.0.0.1:{_free_port()}")
    assert bad.returncode == 1
    assert "FAIL model no-such-model" in bad.stdout and "FAIL otlp endpoint" in bad.stdout


def test_server_down_is_a_clear_error():
    proc = bench("some-model", "--base-url", f"http://127.0.0.1:{_free_port()}/v1", "--no-otel")
    assert proc.returncode == 1
    assert "server down" in proc.stdout and "no OpenAI-compatible server answers" in proc.stdout
    # and what to do next, readable at 80 columns (a pipe: rich's 80-column default)
    for step in ("otelbench bench --local --quick", "otelbench model serve", "Ollama", "LM Studio", "vLLM"):
        assert step in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()[2:]) <= 80


def test_compare_keeps_suite_versions_apart(quick_run, tmp_path):
    _, files, _ = quick_run
    r = json.loads(files[0].read_text())
    other = dict(r, model="other-model", suite={**r["suite"], "version": "core-v0"})
    (tmp_path / "a.json").write_text(json.dumps(r))
    (tmp_path / "b.json").write_text(json.dumps(other))
    proc = bench("--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert proc.returncode == 0, proc.stderr
    assert "suite core-v1" in proc.stdout and "suite core-v0" in proc.stdout
    assert "not comparable" in proc.stdout
