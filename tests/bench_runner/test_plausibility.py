"""bench_runner.plausibility as tables: inputs → confidence and the reasons' wording."""

from __future__ import annotations

from typing import Any

import pytest

from otelbench.bench_runner.hardware import Cpu, Gpu, GpuSpec, Hardware
from otelbench.bench_runner.plausibility import (
    GUIDE_SLACK,
    CaseSummary,
    Confidence,
    LimitKind,
    Limits,
    ModelFacts,
    assess,
    limits_from_hardware,
    roofline,
)

# SmolLM2-135M Q4_1 as docs/bench.md states it: a 98 MB file on this ~24 GB/s machine.
SMOL = ModelFacts.from_size(98e6, parameter_count=134.5e6)
HERE = Limits(24.0, LimitKind.GUIDE, "measured: numpy copy", 313e9, LimitKind.GUIDE, "estimate: 2 cores", "CPU: AMD EPYC")
H200 = Limits(4800.0, LimitKind.PEAK, "datasheet: NVIDIA H200", 1979e12, LimitKind.PEAK, "datasheet: NVIDIA H200", "GPU")
GOOD: dict[str, Any] = {
    "decode_tps": 90.0, "prefill_tps": 95.0, "server_decode_tps": 100.0, "decode_cv": 0.05,
    "n_out": 128, "token_source": "server-timings", "n_runs": 5,
}  # fmt: skip


def test_roofline_for_the_embedded_model_here() -> None:
    bounds = roofline(SMOL, HERE)
    assert bounds.decode_tps is not None and 240 < bounds.decode_tps < 250
    assert bounds.decode_tps == pytest.approx(24e9 / 98e6)  # ≈ 245 tok/s
    assert bounds.prefill_tps == pytest.approx(313e9 / (2 * 134.5e6))
    assert "98.0 MB of weights read per token at 24.0 GB/s measured" in bounds.detail


def test_kv_cache_adds_to_the_bytes_read() -> None:
    model = ModelFacts(98e6, None, kv_bytes_per_context_token=23040)
    bounds = roofline(model, HERE, context_tokens=2000)
    assert bounds.bytes_per_token == pytest.approx(98e6 + 2000 * 23040)
    assert "46.1 MB of KV cache (2000 tokens)" in bounds.detail


def test_moe_reads_only_the_active_experts() -> None:
    moe = ModelFacts.from_size(16e9, parameter_count=30e9, expert_count=128, expert_used_count=8)
    assert moe.decode_bytes_per_token == pytest.approx(1e9)
    assert moe.prefill_flops_per_token == pytest.approx(2 * 30e9 / 16)
    assert roofline(moe, H200).decode_tps == pytest.approx(4800)


@pytest.mark.parametrize(
    ("changes", "model", "limits", "confidence", "substrings"),
    [
        ({}, SMOL, HERE, Confidence.HIGH, []),
        ({"decode_tps": 750.0, "server_decode_tps": None}, SMOL, HERE, Confidence.LOW,
         ["decode 3.1× above the memory-bandwidth bound", "750 vs ≤ 245 tok/s", "speculative decoding or a counting error?"]),
        ({"decode_tps": 300.0, "server_decode_tps": None}, SMOL, HERE, Confidence.MEDIUM,
         ["1.2× the memory-bandwidth bound of 245 tok/s", "may itself read low"]),
        ({"server_decode_tps": 600.0, "decode_tps": 590.0}, SMOL, HERE, Confidence.LOW,
         ["server decode 2.5× above the memory-bandwidth bound", "the server's own timings are wrong?"]),
        ({"prefill_tps": 5000.0}, SMOL, HERE, Confidence.LOW,
         ["prefill 4.3× above the compute bound", "prompt-cache hit"]),
        ({"decode_cv": 0.4}, SMOL, HERE, Confidence.LOW, ["CV 0.40 (> 0.30)"]),
        ({"decode_cv": 0.2}, SMOL, HERE, Confidence.MEDIUM, ["CV 0.20 (> 0.15)"]),
        ({"token_source": "estimate-chars/4"}, SMOL, HERE, Confidence.MEDIUM, ["token counts are an estimate (estimate-chars/4)"]),
        ({"token_source": "none"}, SMOL, HERE, Confidence.LOW, ["no token count"]),
        ({"token_source": "tokenizer"}, SMOL, HERE, Confidence.HIGH, []),
        ({"n_out": 8}, SMOL, HERE, Confidence.MEDIUM, ["median output of 8 tokens (< 16)"]),
        ({"n_out": 1}, SMOL, HERE, Confidence.LOW, ["decode speed is undefined"]),
        ({"server_decode_tps": 120.0}, SMOL, HERE, Confidence.MEDIUM,
         ["client decode 90.0 tok/s and server 120.0 tok/s differ by 25% (> 15%)"]),
        ({"server_decode_tps": 300.0}, SMOL, HERE, Confidence.LOW, ["differ by 70%"]),
        ({"n_runs": 3}, SMOL, HERE, Confidence.MEDIUM, ["3 timed run(s) (< 5)"]),
        ({}, None, HERE, Confidence.MEDIUM, ["no model file metadata: physical bounds not checked"]),
        ({}, SMOL, Limits(None, LimitKind.PEAK, "no datasheet figures for Quadro P400", None, LimitKind.PEAK, ""),
         Confidence.MEDIUM, ["decode bound not checked: no datasheet figures for Quadro P400"]),
        # On a datasheet peak: beyond it is impossible, close to it is suspicious.
        ({"decode_tps": 60_000.0, "server_decode_tps": None}, SMOL, H200, Confidence.LOW, ["1.2× above the memory-bandwidth bound"]),
        ({"decode_tps": 44_000.0, "server_decode_tps": None}, SMOL, H200, Confidence.MEDIUM, ["60%–85% of peak bandwidth"]),
        ({"decode_tps": 20_000.0, "server_decode_tps": None}, SMOL, H200, Confidence.HIGH, []),
    ],
)  # fmt: skip
def test_assess(
    changes: dict[str, Any], model: ModelFacts | None, limits: Limits, confidence: Confidence, substrings: list[str]
) -> None:
    result = assess({**GOOD, **changes}, model, limits)
    text = " | ".join(r.message for r in result.reasons)
    assert result.confidence is confidence, text
    for part in substrings:
        assert part in text
    if confidence is Confidence.HIGH:
        assert result.reasons == ()


def test_the_worst_finding_wins_and_all_are_listed() -> None:
    result = assess({**GOOD, "decode_cv": 0.2, "token_source": "estimate-chars/4", "decode_tps": 750.0}, SMOL, HERE)
    assert result.confidence is Confidence.LOW
    codes = {r.code for r in result.reasons}
    assert {"high_cv", "estimated_tokens", "decode_above_bound", "client_server_disagree"} <= codes
    assert result.to_dict()["confidence"] == "LOW"


def test_notes_give_the_utilisation() -> None:
    result = assess(CaseSummary(decode_tps=90.0, prefill_tps=95.0), SMOL, HERE)
    assert result.confidence is Confidence.HIGH
    assert any(n.startswith("decode at 37% of the memory-bandwidth bound") for n in result.notes)


def test_the_real_embedded_gguf_through_assess() -> None:
    from otelbench.bench_runner.gguf import read_gguf
    from otelbench.bench_runner.llama_server import EmbeddedModelMissing, find_embedded_model

    try:
        info = read_gguf(find_embedded_model())
    except EmbeddedModelMissing as exc:
        pytest.skip(str(exc))
    facts = ModelFacts.from_gguf(info)
    assert facts.decode_bytes_per_token == 96_576_768  # tied embeddings: token_embd is read as the head
    assert facts.prefill_flops_per_token == 2 * (134_515_008 - 28_311_552)  # no lookup, no head per prompt token
    assert facts.kv_bytes_per_context_token == 23040
    bound = roofline(facts, HERE).decode_tps
    assert bound is not None and 245 < bound < 252
    assert assess({**GOOD, "decode_tps": 105.0, "server_decode_tps": 105.0}, info, HERE).confidence is Confidence.HIGH


def _cpu(peak: float | None = 156e9) -> Cpu:
    return Cpu("AMD EPYC", 2, 2, 2, 2445.0, "psutil", "avx2+fma", peak, peak and 2 * peak, "estimate: flags")


def test_limits_from_hardware_prefers_known_gpus() -> None:
    cpu_only = Hardware(_cpu(), 24 * 2**30, (), 15.0, "measured: numpy copy")
    limits = limits_from_hardware(cpu_only)
    assert (limits.bandwidth_gbs, limits.bandwidth_kind, limits.peak_ops) == (15.0, LimitKind.GUIDE, 312e9)

    h200 = Gpu(0, "NVIDIA H200", 143771 * 2**20, "570", GpuSpec(4800, 989, 1979, "NVIDIA H200 datasheet (SXM)"))
    two = Hardware(_cpu(), 24 * 2**30, (h200, h200), 15.0, "measured")
    limits = limits_from_hardware(two, model_bytes=98e6)
    assert (limits.bandwidth_gbs, limits.bandwidth_kind, limits.peak_ops) == (9600, LimitKind.PEAK, 2 * 1979e12)
    assert "datasheet" in limits.bandwidth_source

    huge = limits_from_hardware(Hardware(_cpu(), 0, (h200,), None, ""), model_bytes=400e9)
    assert "partly on the CPU" in huge.bandwidth_source

    unknown = Gpu(0, "Quadro P400", None, None, None)
    limits = limits_from_hardware(Hardware(_cpu(), 0, (unknown,), 15.0, "measured"))
    assert limits.bandwidth_gbs is None and "Quadro P400" in limits.bandwidth_source


def test_from_mapping_ignores_unknown_keys() -> None:
    case = CaseSummary.from_mapping({"decode_tps": 1.0, "ttft_ms": 3.0, "n_out": 20})
    assert (case.decode_tps, case.n_out) == (1.0, 20)


def test_from_runs_takes_medians_and_the_weakest_token_source() -> None:
    from types import SimpleNamespace as Run

    runs = [
        Run(ok=True, decode_tps=90.0, prefill_tps=80.0, server_decode_tps=100.0, n_out=64, n_out_source="usage",
            n_prompt=30, n_prompt_cached=2),
        Run(ok=True, decode_tps=100.0, prefill_tps=90.0, server_decode_tps=110.0, n_out=64, n_out_source="estimate-chars/4",
            n_prompt=30, n_prompt_cached=2),
        Run(ok=True, decode_tps=110.0, prefill_tps=100.0, server_decode_tps=None, n_out=32, n_out_source="usage",
            n_prompt=30, n_prompt_cached=2),
        Run(ok=False, decode_tps=9999.0, n_out=1, n_out_source="none"),  # failed runs do not count
    ]  # fmt: skip
    case = CaseSummary.from_runs(runs, name="chat")
    assert (case.decode_tps, case.prefill_tps, case.server_decode_tps, case.n_out) == (100.0, 90.0, 105.0, 64)
    assert case.decode_cv == pytest.approx(0.1)
    assert (case.token_source, case.n_runs, case.name) == ("estimate-chars/4", 3, "chat")
    assert case.context_tokens == pytest.approx(32 + 32)
    assert CaseSummary.from_mapping({"n_out_source": "usage"}).token_source == "usage"


@pytest.mark.model
def test_real_llama_cpp_numbers_are_within_the_bounds(llama_server: Any) -> None:
    """The embedded model, served for real, timed by the real client, on the probed hardware."""
    import httpx

    from otelbench.bench_runner.client import measure_run
    from otelbench.bench_runner.model_files import Status, locate_gguf
    from otelbench.bench_runner.hardware import probe_hardware

    found = locate_gguf(llama_server.model_id, server_paths=(str(llama_server.model_path),))
    assert found.status is Status.READY and found.info is not None
    with httpx.Client(timeout=60, trust_env=False) as client:
        runs = [
            measure_run(llama_server.base_url, llama_server.model_id, "Count from one to forty in words.",
                        max_tokens=32, client=client)
            for _ in range(3)
        ]  # fmt: skip
    assert all(r.ok for r in runs), [r.error for r in runs]
    case = CaseSummary.from_runs(runs[1:])  # the first is the warm-up
    hw = probe_hardware()
    result = assess(case, found.info, limits_from_hardware(hw, found.info.size_bytes))
    assert result.bounds is not None and result.bounds.decode_tps is not None
    assert not any(r.code.endswith("_above_bound") for r in result.reasons), result.reasons
    assert case.decode_tps is not None and case.decode_tps < GUIDE_SLACK * result.bounds.decode_tps
