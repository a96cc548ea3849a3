"""Prompt files and their versions (processors/judge/prompt.py, processors/prompts/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from otelbench.processors.judge import DEFAULT_PROMPT, load_prompt
from otelbench.processors.judge.judgement import RunText, grade_messages, solve_messages
from otelbench.processors.judge.prompt import PROMPTS_DIR, PromptError, parse_prompt
from otelbench.processors.judge.signals import read_signals

TEXT = b"=== system ===\nRubric.\n=== run ===\nTASK: ${task}\nOUT: ${output} costs $$5\n=== grade ===\nGrade it.\n"


def test_version_is_name_and_content_hash() -> None:
    a = parse_prompt("judge", TEXT)
    assert a.name == "judge" and a.version.startswith("judge@") and len(a.version) == len("judge@") + 12
    assert parse_prompt("judge", TEXT).version == a.version
    assert parse_prompt("judge", TEXT.replace(b"Rubric.", b"Rubric,")).version != a.version


def test_sections_and_rendering() -> None:
    p = parse_prompt("judge", TEXT)
    assert p.text("system") == "Rubric."
    # a run's own dollar signs and braces are substituted, never read as placeholders
    assert p.render("run", task="pay ${x} {y}", output="ok") == "TASK: pay ${x} {y}\nOUT: ok costs $5"
    with pytest.raises(PromptError, match="output"):
        p.render("run", task="t")
    with pytest.raises(PromptError):
        p.text("solve")


@pytest.mark.parametrize("data", [b"no sections", b"text first\n=== system ===\nx\n",
                                  b"=== a ===\nx\n=== a ===\ny\n", b"\xff\xfe=== a ===\n"])
def test_malformed_files(data: bytes) -> None:
    with pytest.raises(PromptError):
        parse_prompt("p", data)


def test_missing_prompt_names_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "other.txt").write_bytes(TEXT)
    with pytest.raises(PromptError, match="known: other"):
        load_prompt("nope", tmp_path)
    assert load_prompt("other", tmp_path).version == parse_prompt("other", TEXT).version


def test_repo_prompts_load_and_put_the_fixed_part_first() -> None:
    names = sorted(p.stem for p in PROMPTS_DIR.glob("*.txt"))
    assert DEFAULT_PROMPT in names
    for name in names:
        prompt = load_prompt(name)
        run = RunText("What is 2+2?", "ZEBRA", "calc(2+2) → ok: 4", "(none)", False, read_signals("ok", "ZEBRA"))
        a = grade_messages(prompt, run)
        b = grade_messages(prompt, RunText("Other task", "5", "(none)", "(none)", False, read_signals("ok", "5")))
        assert a[0] == b[0] and a[0]["role"] == "system"  # the cacheable prefix does not depend on the run
        assert "What is 2+2?" in a[1]["content"] and "What is 2+2?" not in a[0]["content"]
        solve = solve_messages(prompt, run)
        if solve is not None:
            assert "ZEBRA" not in str(solve) and "calc(2+2)" in str(solve)  # tools yes, the output never
