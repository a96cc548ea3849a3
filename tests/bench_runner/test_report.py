"""The bench report as a person reads it, at 80, 120 and 200 columns (rich's console width):
headers whole, every figure whole, reasons listed, nothing past the edge."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from rich.console import Console

from otelbench.bench_runner import report

PATH = "/home/someone/.cache/lm-studio/models/bartowski/Qwen2.5-Coder-0.5B-Instruct-GGUF/" \
       "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf"


def _stat(median: float, low: float | None = None, high: float | None = None, n: int = 5) -> dict[str, Any]:
    return {"n": n, "median": median, "ci95_low": low, "ci95_high": high}


def result(model: str = PATH, decode: float = 133.94, conf: str = "MEDIUM") -> dict[str, Any]:
    cases = {
        "short-50": {"decode_tps": _stat(131.2, 120.07, 140.19), "ttft_ms": _stat(95.4, 90.1, 101.9),
                     "prefill_tps": _stat(412.0, 380.5, 440.25)},
        "medium-200": {"decode_tps": _stat(decode, 128.31, 139.77), "ttft_ms": _stat(156.46, 150.02, 163.3),
                       "prefill_tps": _stat(352.0, 340.0, 360.0), "server_decode_tps": _stat(141.25, 139.5, 143.0)},
        "prefill-2k": {"decode_tps": _stat(54.5), "ttft_ms": _stat(6625.36, 6400.0, 6850.0),
                       "prefill_tps": _stat(263.08, 255.1, 271.9)},
    }
    return {
        "model": model,
        "server": {"kind": "llama_cpp", "base_url": "http://127.0.0.1:8080/v1"},
        "hardware": {"cpu": {"model": "AMD EPYC", "usable_cores": 2}, "ram_bytes": 25 * 2**30, "cpu_bandwidth_gbs": 36.4},
        "gguf": {"status": "READY", "path": PATH, "size_bytes": 491_400_032, "architecture": "qwen2",
                 "quantization": "Q4_K_M", "parameter_count": 494_032_768, "block_count": 24, "context_length": 32768},
        "suite": {"version": "core-v1"},
        "summary": {"cases": cases, "ability_score": 0.75, "agent_fitness_score": 0.5, "tests_passed": 3,
                    "tests_total": 4},
        "plausibility": {"confidence": conf, "reasons": [
            {"message": "short-50: 1 timed run(s) (< 5): medians and CV are rough"},
            {"message": "prefill-2k: median output of 8 tokens: decode figures rest on few tokens"},
            {"message": "decode 133.9 tok/s needs 65.8 GB/s of weights read per second; measured memory bandwidth "
                        "36.4 GB/s: above what this machine can read — suspect caching or a wrong model"}]},
        "tests": [
            {"name": "code_median", "category": "ability", "passed": False,
             "reason": "the code did not load: NameError: name 'median_mode' is not defined"},
            {"name": "logic_pets", "category": "ability", "passed": True, "reason": "all four pets right"},
            {"name": "json_book", "category": "ability", "passed": True, "reason": "valid JSON with every key"},
            {"name": "tool_weather", "category": "agent", "passed": True, "reason": "called get_weather(city=Paris)"},
        ],
        "_file": "/home/someone/benchmarks/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf-20261204T011219.json",
    }


def render(results: list[dict[str, Any]], width: int) -> str:
    console = Console(width=width, record=True, color_system=None, highlight=False)
    report.print_results(results, console)
    return console.export_text()


def fits(text: str, width: int) -> bool:
    """Every line within ``width``, but the saved file's path: one line, however long."""
    return all(len(line.rstrip()) <= width for line in text.splitlines() if not line.startswith("saved "))


def joined(text: str) -> str:
    """The text with wrapped lines put back together (a wrapped value is still whole)."""
    return " ".join(" ".join(line.split()) for line in text.splitlines())


FIGURES = ["131.2", "[120.1–140.2]", "133.9", "[128.3–139.8]", "141.2", "156", "[150–163]", "6625", "[6400–6850]",
           "263", "[255–272]", "0.75 (3 of 4 tests passed)", "0.50"]


@pytest.mark.parametrize("width", [80, 120, 200])
def test_one_model_is_a_vertical_report_that_fits(width: int) -> None:
    text = render([result()], width)
    assert fits(text, width)
    flat = joined(text)
    for label in ("model", "GGUF", "path", "size", "arch", "quant", "SPEED", "TESTS", "SUMMARY",
                  "decode tok/s", "TTFT ms", "prefill tok/s", "confidence"):
        assert label in text
    for figure in FIGURES:
        assert figure in text, figure  # on one line: a number never breaks
    assert "Q4_K_M" in text and "qwen2, 24 blocks, context 32,768" in text and "469 MiB, 494.0 M parameters" in text
    assert PATH in flat.replace(" ", "") or PATH in text.replace("\n", "").replace(" ", "")
    for verdict, name in (("FAIL", "code_median"), ("PASS", "logic_pets"), ("PASS", "tool_weather")):
        assert any(verdict in line and name in line for line in text.splitlines())
    assert "name 'median_mode' is not defined" in flat
    for i in (1, 2, 3):
        assert f"{i}. " in text
    assert "suspect caching or a wrong model" in flat
    assert "saved /home/someone/benchmarks/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf-20261204T011219.json\n" in text


@pytest.mark.parametrize("width", [80, 120, 200])
def test_several_models_split_their_columns_across_tables_and_list_reasons(width: int) -> None:
    a = result()
    b = copy.deepcopy(result(model="SmolLM2-135M-Instruct.Q4_1.gguf", decode=1234.56, conf="LOW"))
    text = render([a, b], width)
    assert fits(text, width)
    for header in ("size", "arch", "quant", "decode tok/s", "server tok/s", "TTFT ms", "prefill tok/s", "ability",
                   "agent", "confidence"):
        assert header in text, header
    for figure in ("133.9", "1234.6", "[128.3–139.8]", "141.2", "Q4_K_M", "LOW", "MEDIUM"):
        assert figure in text, figure
    assert text.count("otelbench results") == 1
    assert ("(more columns)" in text) == (width < 200)  # at 200 columns everything fits one table
    assert "SmolLM2-135M-Instruct.Q4_1.gguf — confidence LOW:" in text
    assert text.count("3. ") >= 2  # each model's reasons, numbered, keyed by model
    # a vLLM id keeps its organisation (only a GGUF's path shortens to its file name)
    assert "Qwen/Qwen2.5-7B — confidence" in render([a, result(model="Qwen/Qwen2.5-7B", conf="LOW")], width)


def test_compare_keeps_suite_versions_apart_at_80_columns() -> None:
    a, b = result(), result(model="SmolLM2.gguf")
    b["suite"] = {"version": "core-v2"}
    console = Console(width=80, record=True, color_system=None)
    report.print_compare([a, b], console)
    text = console.export_text()
    assert "comparison — suite core-v1" in text and "comparison — suite core-v2" in text
    assert "not comparable" in text and fits(text, 80)
