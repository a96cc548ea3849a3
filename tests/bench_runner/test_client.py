"""bench_runner.client and bench_runner.stats: failure modes and exact timing against the
scripted stub, pure helpers as tables, and real streamed runs against llama.cpp."""

from __future__ import annotations

import math
import socket
import statistics
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from otelbench.bench_runner.client import (
    ErrorKind,
    RunResult,
    TokenSource,
    build_request,
    derive_metrics,
    measure_run,
    output_tokens,
    prompt_tokens,
    server_speeds,
)
from otelbench.bench_runner.llama_server import LlamaServer
from otelbench.bench_runner.stats import FORMULAS, percentile, run_concurrent, summarize, t_critical_95
from otelbench.testing.openai_stub import LLAMA_TIMINGS, StubServer

# Generous on purpose: this 2-core machine is noisy, and the stub shares the test's
# interpreter. The precise figures come from benchmarks/bench_fidelity.py.
TIME_TOL_MS = 10.0
RATE_TOL = 0.05


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def run(stub: StubServer, script: str, **params: float) -> RunResult:
    return measure_run(stub.base_url(script, **params), "stub-model", "Say hello.", timeout_s=5.0)


# -- failure modes: ok=False with a kind and evidence, never an exception --------------


@pytest.mark.parametrize(
    ("script", "params", "kind", "evidence"),
    [
        ("cut", {}, ErrorKind.STREAM_CUT, '"content":" wor"'),  # chunked body dropped: httpx raises
        ("cut", {"quiet": 1}, ErrorKind.STREAM_CUT, '"content":" wor"'),  # close-delimited: ends quietly
        ("http500", {}, ErrorKind.HTTP_STATUS, "model crashed: out of memory"),
        ("garbage", {}, ErrorKind.BAD_CHUNK, "data: {not json at all <html>"),
        ("garbage", {"shape": 1}, ErrorKind.BAD_CHUNK, "data: [1, 2]"),  # JSON, not a chunk
        ("error", {}, ErrorKind.SERVER_ERROR, "context size exceeded"),
        ("json", {}, ErrorKind.BAD_CHUNK, '"object": "chat.completion"'),
        ("empty", {}, ErrorKind.NO_TOKENS, '"finish_reason":"stop"'),
    ],
)
def test_failure_modes_are_failed_runs_with_evidence(
    stub: StubServer, script: str, params: dict[str, float], kind: ErrorKind, evidence: str
) -> None:
    result = run(stub, script, **params)
    assert not result.ok
    assert result.error_kind == kind, result.error
    assert result.error
    assert evidence in (result.evidence or "")


def test_stream_cut_keeps_what_arrived(stub: StubServer) -> None:
    result = run(stub, "cut", quiet=1)
    assert result.error_kind == ErrorKind.STREAM_CUT
    assert result.text == "Hello wor"
    assert result.finish_reason is None and not result.done_marker


def test_drop_after_finish_reason_is_a_whole_answer(stub: StubServer) -> None:
    result = run(stub, "cut", after_finish=1)
    assert result.ok, result.error
    assert (result.finish_reason, result.done_marker, result.text) == ("stop", False, "Hello wor")


def test_hangup_before_any_response(stub: StubServer) -> None:
    result = run(stub, "hangup")
    assert result.error_kind == ErrorKind.TRANSPORT
    assert result.error and result.error.startswith("no response from http://127.0.0.1")


def test_http_500_keeps_status_and_body(stub: StubServer) -> None:
    result = run(stub, "http500")
    assert result.http_status == 500
    assert result.ttft_ms is None and result.n_out is None


def test_connection_refused_says_server_down() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    result = measure_run(url, "m", "hi")
    assert not result.ok
    assert result.error_kind == ErrorKind.CONNECT
    assert result.error and result.error.startswith(f"server down at {url}/chat/completions")


def test_silence_longer_than_the_read_timeout(stub: StubServer) -> None:
    with httpx.Client(trust_env=False, timeout=60) as shared:  # timeout_s wins over the client's
        for client in (None, shared):
            result = measure_run(stub.base_url("stall", stall_ms=2000), "m", "hi", timeout_s=0.3, client=client)
            assert result.error_kind == ErrorKind.TIMEOUT
            assert '"content":"Hello"' in (result.evidence or "")


# -- what counts as a token event ---------------------------------------------------


@pytest.mark.parametrize("field", [1, 2])  # 1: reasoning_content (llama.cpp, DeepSeek), 2: reasoning
def test_reasoning_counts_for_ttft_not_ttfo(stub: StubServer, field: int) -> None:
    result = run(stub, "reasoning", field=field, gap_ms=20, think_ms=60)
    assert result.ok, result.error
    assert result.reasoning == "Let me think."
    assert result.text == "Hello world!"
    assert result.n_token_events == 5
    assert result.ttft_ms is not None and result.ttfo_ms is not None
    # Lower bounds hold exactly: the stub's sleeps never end early. Upper bounds would be noise.
    assert result.ttft_ms >= 20  # the first reasoning piece, not the role chunk sent at once
    assert result.ttfo_ms >= 20 + 20 + 60  # both pieces and the thinking pause
    assert result.ttft_ms < result.ttfo_ms


def test_role_only_chunk_is_not_a_token(stub: StubServer) -> None:
    result = run(stub, "role-first", role_ms=30, gap_ms=50)
    assert result.ok, result.error
    assert result.n_token_events == 3
    assert result.ttft_ms is not None and result.ttft_ms >= 80  # not ~30, when the role came
    assert result.ttft_ms == result.ttfo_ms


def test_tool_calls_are_visible_tokens_and_assembled(stub: StubServer) -> None:
    result = run(stub, "tools")
    assert result.ok, result.error
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls == [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert result.n_token_events == 3
    assert result.ttfo_ms == result.ttft_ms


# -- token counts: source precedence ------------------------------------------------

USAGE = {"prompt_tokens": 20, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 4}}


@pytest.mark.parametrize(
    ("usage", "server", "text", "counter", "expected"),
    [
        (USAGE, {"llama.cpp": LLAMA_TIMINGS}, "abcd", None, (7, TokenSource.USAGE)),
        (None, {"llama.cpp": LLAMA_TIMINGS}, "abcd", None, (5, TokenSource.SERVER_TIMINGS)),
        (None, {"lmstudio": {"total_output_tokens": 9}}, "abcd", None, (9, TokenSource.SERVER_TIMINGS)),
        (None, {"ollama": {"eval_count": 6}}, "abcd", lambda t: 99, (6, TokenSource.SERVER_TIMINGS)),
        ({"total_tokens": 3}, {}, "abcd", lambda t: 11, (11, TokenSource.TOKENIZER)),
        (None, {}, "abcdefghij", lambda t: None, (2, TokenSource.ESTIMATE)),  # round(10 / 4)
        (None, {}, "abc", None, (1, TokenSource.ESTIMATE)),
        (None, {}, "", None, (None, TokenSource.NONE)),
    ],
)
def test_output_token_source_precedence(
    usage: dict[str, Any] | None, server: dict[str, Any], text: str, counter: Any, expected: tuple[Any, ...]
) -> None:
    assert output_tokens(usage, server, text, counter) == expected


@pytest.mark.parametrize(
    ("usage", "server", "expected"),
    [
        (USAGE, {"llama.cpp": LLAMA_TIMINGS}, (16, 4, TokenSource.USAGE)),  # uncached = 20 - 4
        ({"prompt_tokens": 20}, {}, (20, 0, TokenSource.USAGE)),
        (None, {"llama.cpp": LLAMA_TIMINGS}, (12, 3, TokenSource.SERVER_TIMINGS)),  # prompt_n excludes cache_n
        (None, {"ollama": {"prompt_eval_count": 30}}, (30, None, TokenSource.SERVER_TIMINGS)),
        (None, {}, (2, None, TokenSource.ESTIMATE)),
    ],
)
def test_prompt_token_source_precedence(
    usage: dict[str, Any] | None, server: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    assert prompt_tokens(usage, server, "12345678") == expected


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ({"llama.cpp": LLAMA_TIMINGS}, (100.0, 2000.0, None)),
        ({"lmstudio": {"tokens_per_second": 42.0, "time_to_first_token": 0.25}}, (42.0, None, 250.0)),
        ({"ollama": {"eval_count": 6, "eval_duration": 60_000_000, "prompt_eval_count": 30,
                     "prompt_eval_duration": 10_000_000}}, (100.0, 3000.0, None)),  # fmt: skip
        ({}, (None, None, None)),
    ],
)
def test_server_speeds(server: dict[str, Any], expected: tuple[Any, ...]) -> None:
    assert server_speeds(server) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("script", "params", "n_out", "source", "server_decode_tps"),
    [
        ("normal", {}, 3, TokenSource.ESTIMATE, None),  # "Hello world!" = 12 chars
        ("usage", {}, 7, TokenSource.USAGE, None),
        ("timings", {}, 5, TokenSource.SERVER_TIMINGS, 100.0),
        ("timings", {"usage": 1}, 7, TokenSource.USAGE, 100.0),  # usage wins, speeds still kept
        ("ollama", {}, 6, TokenSource.SERVER_TIMINGS, 100.0),
        ("lmstudio", {}, 3, TokenSource.ESTIMATE, 42.0),  # LM Studio's stats carry speeds, no count
    ],
)
def test_token_source_end_to_end(
    stub: StubServer, script: str, params: dict[str, float], n_out: int, source: str, server_decode_tps: float | None
) -> None:
    result = run(stub, script, **params)
    assert result.ok, result.error
    assert (result.n_out, result.n_out_source) == (n_out, source)
    assert result.server_decode_tps == server_decode_tps
    assert result.model == "stub-model"
    if script == "usage":
        assert (result.n_prompt, result.n_prompt_cached) == (16, 4)
        assert result.usage == {**USAGE, "total_tokens": 27}


# -- metrics from clock readings (pure) -----------------------------------------------


def _derived(token_ms: list[float], n_out: int | None, n_prompt: int | None, visible_ms: float | None) -> RunResult:
    result = RunResult(ok=True, url="u", model_requested="m", nonce="n", n_out=n_out, n_prompt=n_prompt)
    ns = [round(t * 1e6) for t in token_ms]
    derive_metrics(result, 0, ns, round(visible_ms * 1e6) if visible_ms is not None else None)
    return result


@pytest.mark.parametrize(
    ("tokens", "n_out", "n_prompt", "visible", "expected"),
    [
        # 5 events 10 ms apart after a 100 ms TTFT, one token each
        ([100, 110, 120, 130, 140], 5, 50, 100,
         {"ttft_ms": 100, "ttfo_ms": 100, "e2e_ms": 140, "decode_ms": 40, "tpot_ms": 10, "decode_tps": 100,
          "e2e_tps": 5 / 0.14, "prefill_tps": 500, "itl_ms": [10, 10, 10, 10]}),
        # the server counted 9 tokens in 5 chunks: decode spans 8 token intervals
        ([100, 110, 120, 130, 140], 9, None, 120,
         {"ttfo_ms": 120, "tpot_ms": 5, "decode_tps": 200, "e2e_tps": 9 / 0.14, "prefill_tps": None}),
        # one token: no decode phase, so no TPOT
        ([100], 1, 10, None, {"decode_ms": 0, "tpot_ms": None, "decode_tps": None, "ttfo_ms": None, "itl_ms": []}),
    ],
)  # fmt: skip
def test_derive_metrics(tokens: list[float], n_out: int, n_prompt: int | None, visible: float | None,
                        expected: dict[str, Any]) -> None:  # fmt: skip
    result = _derived(tokens, n_out, n_prompt, visible)
    for name, value in expected.items():
        assert getattr(result, name) == pytest.approx(value), name


# -- the request ---------------------------------------------------------------------------


def test_build_request_puts_the_nonce_first_and_disables_prompt_cache() -> None:
    body = build_request("m", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "n0nce")
    assert body["messages"][0]["content"] == "[n0nce] Be brief."
    assert body["messages"][1]["content"] == "Hi"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["cache_prompt"] is False
    parts = build_request("m", [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "x")
    assert parts["messages"][0]["content"][0] == {"type": "text", "text": "[x] "}
    plain = build_request("m", "Hi", "x", cache_prompt=None, extra_body={"max_tokens": 5, "seed": 1})
    assert "cache_prompt" not in plain and plain["max_tokens"] == 5 and plain["seed"] == 1


def test_every_run_gets_a_fresh_nonce(stub: StubServer) -> None:
    a, b = run(stub, "normal"), run(stub, "normal")
    assert a.nonce and b.nonce and a.nonce != b.nonce


# -- exact timing: the paced stream -----------------------------------------------------------


def _within_tolerance(result: RunResult, ttft_ms: float, rate: float) -> bool:
    assert result.ttft_ms is not None and result.decode_tps is not None
    return (
        result.ttft_ms < ttft_ms + TIME_TOL_MS
        and result.decode_tps == pytest.approx(rate, rel=RATE_TOL)
        and statistics.median(result.itl_ms) == pytest.approx(1000 / rate, abs=TIME_TOL_MS)
    )


def test_paced_stream_is_measured_within_tolerance(stub: StubServer) -> None:
    ttft_ms, rate, n = 100.0, 50.0, 20
    with httpx.Client(trust_env=False) as client:
        measure_run(stub.base_url("normal"), "m", "warm", client=client)  # connect outside the timing
        results = [
            measure_run(stub.base_url("paced", ttft_ms=ttft_ms, rate=rate, n=n), "m", "hi", client=client)
            for _ in range(3)
        ]
    for result in results:
        assert result.ok, result.error
        assert (result.n_out, result.n_out_source) == (n, TokenSource.USAGE)
        assert result.ttft_ms is not None and result.ttft_ms >= ttft_ms  # exact: nothing comes early
        assert result.client_overhead_us_per_chunk is not None and result.client_overhead_us_per_chunk > 0
        assert result.parse_us_per_chunk is not None and result.parse_us_per_chunk > 0
    # A preempted thread on a loaded 2-core machine only ever adds delay, so a systematic
    # error fails every run while noise rarely spoils all three.
    assert any(_within_tolerance(r, ttft_ms, rate) for r in results), [(r.ttft_ms, r.decode_tps) for r in results]


def test_shared_client_reuses_one_connection(stub: StubServer) -> None:
    with httpx.Client(trust_env=False) as client:
        results = [measure_run(stub.base_url("usage"), "m", "hi", client=client) for _ in range(3)]
    assert all(r.ok for r in results)
    # Only the first run paid for a TCP connect, and it is kept out of its TTFT.
    assert [r.connect_ms is not None for r in results] == [True, False, False]


def test_send_is_stamped_as_the_request_is_written(stub: StubServer) -> None:
    result = run(stub, "normal")
    arrival = stub.last_trace["t_received_ns"]
    assert result.t_send_ns <= arrival  # one clock for both: the stub shares CLOCK_MONOTONIC
    assert result.ttft_ms is not None and result.t_send_ns + result.ttft_ms * 1e6 >= arrival


# -- statistics --------------------------------------------------------------------------------

ONE_TO_TEN = [float(x) for x in range(1, 11)]


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        (ONE_TO_TEN, 0.9, 9.1),
        (ONE_TO_TEN, 0.5, 5.5),
        (ONE_TO_TEN, 0.99, 9.91),
        (ONE_TO_TEN, 0.0, 1.0),
        (ONE_TO_TEN, 1.0, 10.0),
        ([10.0, 1.0, 5.0], 0.5, 5.0),  # unsorted input
        ([1.0, 2.0], 0.25, 1.25),
        ([7.0], 0.99, 7.0),
    ],
)
def test_percentile_linear_interpolation(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706), (4, 2.776), (30, 2.042), (35, 2.030), (90, 1.987), (1000, 1.962), (10**9, 1.960)],
)
def test_t_critical_95(df: int, expected: float) -> None:
    assert t_critical_95(df) == pytest.approx(expected, abs=0.0015)  # table values, 3 decimals


def test_summarize_known_values() -> None:
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    sd = math.sqrt(32 / 7)
    half = 2.365 * sd / math.sqrt(8)
    assert (s.n, s.mean, s.median, s.min, s.max) == (8, 5.0, 4.5, 2.0, 9.0)
    assert s.sd == pytest.approx(sd)
    assert s.cv == pytest.approx(sd / 5)
    assert (s.ci95_low, s.ci95_high) == pytest.approx((5 - half, 5 + half))
    assert s.p90 == pytest.approx(7.6)  # h = 6.3 → 7 + 0.3 × (9 − 7)


def test_summarize_edges() -> None:
    assert summarize([]).to_dict() == {**{k: None for k in summarize([]).to_dict()}, "n": 0}
    one = summarize([3.0, None])
    assert (one.n, one.mean, one.p99, one.sd, one.ci95_low) == (1, 3.0, 3.0, None, None)
    assert summarize([0.0, 0.0]).cv is None


def test_formulas_cover_every_metric() -> None:
    metrics = {"ttft_ms", "ttfo_ms", "e2e_ms", "decode_ms", "tpot_ms", "decode_tps", "e2e_tps", "prefill_tps",
               "itl_ms", "n_out", "n_prompt", "server_decode_tps", "server_prefill_tps", "aggregate_tps"}  # fmt: skip
    stats = set(summarize([1.0, 2.0]).to_dict()) - {"p50", "p90", "p99", "ci95_low", "ci95_high"} | {"p", "ci95"}
    assert metrics | stats <= set(FORMULAS)
    assert "includes TTFT" in FORMULAS["e2e_tps"]


# -- concurrency -------------------------------------------------------------------------------


@dataclass
class _Fake:
    ok: bool
    n_out: int | None = None
    error_kind: str | None = None
    ttft_ms: float | None = None
    e2e_ms: float | None = None
    tpot_ms: float | None = None
    decode_tps: float | None = None


def test_run_concurrent_counts_failures_and_crashes() -> None:
    def fn(i: int) -> _Fake:
        if i == 0:
            raise RuntimeError("boom")
        if i == 1:
            return _Fake(ok=False, error_kind="stream-cut")
        return _Fake(ok=True, n_out=10, ttft_ms=float(i), e2e_ms=2.0 * i)

    load = run_concurrent(4, fn, runs_per_client=2)
    assert (load.n_runs, load.n_ok, load.total_out_tokens) == (8, 4, 40)
    assert load.failures == {"exception:RuntimeError": 2, "stream-cut": 2}
    assert (load.ttft_ms.n, load.ttft_ms.min, load.ttft_ms.max) == (4, 2.0, 3.0)


def test_run_concurrent_overlaps_streams(stub: StubServer) -> None:
    url = stub.base_url("paced", ttft_ms=20, rate=50, n=10)  # ~200 ms each, mostly waiting
    # One client per thread, made beforehand: building an httpx.Client costs ~40 ms of CPU.
    clients = [httpx.Client(trust_env=False) for _ in range(4)]
    # Each set of runs starts only once all four clients are in it: run back to back
    # instead of at once, they would break the barrier (counted as crashes).
    together = threading.Barrier(4)

    def one_run(i: int) -> RunResult:
        together.wait(timeout=60)  # a guard against a hang, not a bound on speed
        return measure_run(url, "m", "hi", client=clients[i])

    try:
        load = run_concurrent(4, one_run, runs_per_client=2)
    finally:
        for client in clients:
            client.close()
    assert load.n_ok == 8, load.failures  # the four clients really ran at once
    assert load.total_out_tokens == 80
    assert load.aggregate_tps == pytest.approx(80 / load.wall_s)
    assert load.ttft_ms.n == 8 and load.ttft_ms.p50 is not None and load.ttft_ms.p50 >= 20


# -- the real llama.cpp server (llama-server) -----------------------------------------------------


@pytest.mark.model
def test_real_streamed_run(llama_server: LlamaServer) -> None:
    assert llama_server.model_id is not None
    result = measure_run(llama_server.base_url, llama_server.model_id, "Count from one to ten.", max_tokens=24)
    assert result.ok, (result.error, result.evidence)
    assert result.model == llama_server.model_id  # the alias: the file's name
    assert result.finish_reason in ("stop", "length") and result.done_marker
    assert result.text and result.n_token_events > 0
    assert result.ttft_ms is not None and result.e2e_ms is not None and 0 < result.ttft_ms < result.e2e_ms
    assert result.decode_tps is not None and result.decode_tps > 0
    # llama-server ends a stream with usage (stream_options.include_usage) and its own timings
    assert result.usage is not None and result.n_out == result.usage["completion_tokens"] == 24
    assert result.n_out_source == TokenSource.USAGE
    assert result.server_timings["llama.cpp"]["predicted_n"] == 24
    assert result.server_decode_tps is not None and result.server_decode_tps > 0
