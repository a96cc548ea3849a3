"""``otelbench bench`` failure modes, end to end through the CLI entry point against the
scripted stub (otelbench/testing/openai_stub.py): what a real server will not do on
demand — be down, lack the model, cut a stream, answer 500, send garbage, think first.

Each run is ``--quick --no-otel`` (10 requests per model), in-process through
``otelbench.cli.main``; the result JSON in ``--out`` and the terminal text are the evidence.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otelbench.cli import main
from otelbench.testing.openai_stub import MODEL, StubServer

QUICK_CASES = ["short-50", "medium-200", "prefill-2k"]
QUICK_TESTS = ["code_median", "logic_pets", "json_book", "count_stars"]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture(autouse=True)
def quiet_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No GGUF lookup in the developer's model folders, no line wrapping of the messages."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "1000")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OLLAMA_MODELS", "LLAMA_CACHE", "HF_HOME",
                 "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def bench(capsys: pytest.CaptureFixture[str], out: Path, base_url: str, *models: str) -> tuple[int, str]:
    """Run the CLI; returns (exit code, terminal text)."""
    code = main(["bench", *models, "--base-url", base_url, "--quick", "--no-otel", "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def saved(out: Path) -> dict[str, dict[str, Any]]:
    """The result files in ``out``, by model."""
    results = [json.loads(f.read_text()) for f in sorted(out.glob("*.json"))] if out.exists() else []
    return {r["model"]: r for r in results}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_down_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, text = bench(capsys, tmp_path / "out", url, MODEL)
    assert code == 1
    assert f"server down: no OpenAI-compatible server answers at {url}" in text
    assert saved(tmp_path / "out") == {}


def test_a_model_the_server_does_not_offer_is_skipped(stub: StubServer, capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    code, text = bench(capsys, tmp_path / "out", stub.base_url("normal"), "no-such-model")
    assert code == 1
    assert (f"skipped: model 'no-such-model' is not offered by {stub.base_url('normal')} "
            f"(it offers: {MODEL}; see --list)") in text
    assert saved(tmp_path / "out") == {}  # nothing was benchmarked under a wrong name


# script, expected error kind, what the evidence must hold, HTTP status
FAILURES = [
    ("cut", "stream-cut", '"content":" wor"', 200),  # the raw tail, up to the cut
    ("http500", "http-status", "model crashed: out of memory", 500),  # the body
    ("garbage", "bad-chunk", "data: {not json at all <html>", 200),  # the bad line itself
]


@pytest.mark.parametrize(("script", "kind", "evidence", "status"), FAILURES, ids=[f[0] for f in FAILURES])
def test_a_failing_request_is_kept_as_evidence_and_the_run_goes_on(
    stub: StubServer, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    script: str, kind: str, evidence: str, status: int,
) -> None:
    code, text = bench(capsys, tmp_path / "out", stub.base_url(script), MODEL)
    assert code == 1, text
    result = saved(tmp_path / "out")[MODEL]
    # every case and every test was still tried after the first failure
    assert list(result["runs"]) == QUICK_CASES
    for case, runs in result["runs"].items():
        assert len(runs) == 1 and not runs[0]["ok"], case
        run = runs[0]
        assert (run["error_kind"], run["http_status"]) == (kind, status)
        assert evidence in run["evidence"]
        assert result["summary"]["cases"][case]["failures"][0]["kind"] == kind
    assert [t["name"] for t in result["tests"]] == QUICK_TESTS
    for t in result["tests"]:
        assert not t["passed"] and t["error"].startswith(f"NoReply: {kind}: ") and evidence in t["error"]
    assert len(result["failures"]) == len(QUICK_CASES) + len(QUICK_TESTS)
    assert all(f"{kind}: " in f for f in result["failures"])
    for case in QUICK_CASES:
        assert f"problem: {MODEL}: {case}: {kind}: " in text
    assert f"problem: {MODEL}: suite code_median: {kind}: " in text


def test_a_cut_stream_keeps_the_partial_answer(stub: StubServer, capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    bench(capsys, tmp_path / "out", stub.base_url("cut"), MODEL)
    run = saved(tmp_path / "out")[MODEL]["runs"]["medium-200"][0]
    assert run["text"] == "Hello wor" and run["finish_reason"] is None and not run["done_marker"]
    assert run["n_token_events"] == 2 and run["ttft_ms"] is not None  # measured up to the cut


def test_reasoning_counts_for_ttft_and_not_for_ttfo(stub: StubServer, capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    # the stub thinks for 2 x 20 ms, pauses 200 ms, then answers "Hello world!"
    code, text = bench(capsys, tmp_path / "out", stub.base_url("reasoning", think_ms=200), MODEL)
    assert code == 0, text  # wrong answers fail tests; they are not failures of the run
    result = saved(tmp_path / "out")[MODEL]
    assert result["failures"] == []
    for case in QUICK_CASES:
        run = result["runs"][case][0]
        assert run["ok"] and run["reasoning"] == "Let me think." and run["text"] == "Hello world!"
        assert run["n_token_events"] == 5  # two reasoning chunks, three visible ones
        assert run["ttft_ms"] < 150 < run["ttfo_ms"], (run["ttft_ms"], run["ttfo_ms"])
        assert run["ttfo_ms"] - run["ttft_ms"] > 150
    medium = result["summary"]["cases"]["medium-200"]
    assert medium["ttft_ms"]["median"] == result["runs"]["medium-200"][0]["ttft_ms"]
    assert medium["ttfo_ms"]["median"] == result["runs"]["medium-200"][0]["ttfo_ms"]
    assert all(t["error"] is None and t["response"] == "Hello world!" for t in result["tests"])


def test_a_wholly_failing_model_does_not_stop_the_next(stub: StubServer, capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    # under /by-model the model names the script: "hangup" never answers, "normal" does
    code, text = bench(capsys, tmp_path / "out", stub.base_url("by-model"), "hangup", "missing-model", "normal")
    assert code == 1
    results = saved(tmp_path / "out")
    assert set(results) == {"hangup", "normal"}
    failed, ok = results["hangup"], results["normal"]
    assert all(r["error_kind"] == "transport" for runs in failed["runs"].values() for r in runs)
    assert len(failed["failures"]) == len(QUICK_CASES) + len(QUICK_TESTS)
    assert failed["summary"]["cases"]["medium-200"]["ok"] == 0
    assert all(r["ok"] for runs in ok["runs"].values() for r in runs) and ok["failures"] == []
    assert ok["summary"]["cases"]["medium-200"]["decode_tps"]["median"] > 0
    assert [t["name"] for t in ok["tests"]] == QUICK_TESTS and all(t["error"] is None for t in ok["tests"])
    assert "skipped: model 'missing-model' is not offered" in text
    assert "problem: hangup: short-50: transport: " in text and "problem: normal" not in text
    assert text.count("saved ") == 2


def test_failures_under_concurrency_are_counted_and_kept(stub: StubServer, capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(["bench", MODEL, "--base-url", stub.base_url("http500"), "--quick", "--speed-only", "--no-otel",
                 "--concurrency", "2", "--out", str(out)])
    text = "".join(capsys.readouterr())
    assert code == 1
    level = saved(out)[MODEL]["summary"]["concurrency"][0]
    assert (level["n_clients"], level["n_ok"], level["failures"]) == (2, 0, {"http-status": 2})
    assert [r["http_status"] for r in level["failed_runs"]] == [500, 500]
    assert all("model crashed: out of memory" in r["evidence"] for r in level["failed_runs"])
    assert f"problem: {MODEL}: concurrency 2: 2 × http-status" in text
