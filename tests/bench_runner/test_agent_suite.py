"""Agent benchmark suites as folders: loading, versions by content, typos named by file,
line and key, and the checkers that need nothing but the answer — on suite folders
written in tmp_path, through the module and the real ``otelbench suite`` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from otelbench.bench_runner import agent_suite
from otelbench.bench_runner.agent_suite import SuiteError, check, load

ROOT = Path(__file__).resolve().parents[2]

SUITE = """name: tiny
version: 1
description: A tiny suite for the tests
repeats: 2
time_limit_s: 30
cases:
  - id: capital
    input: What is the capital of France?
    check: {exact: Paris}
  - id: year
    input: When did the Berlin wall fall?
    check: {regex: "\\\\b1989\\\\b"}
  - id: order
    input: {task: "Return the order as JSON", order: 17}
    check:
      json_schema: {type: object, required: [id, items], properties: {id: {type: integer}}}
  - id: pi
    input: Give pi to two decimals.
    check: {numeric: 3.14, tolerance: 0.005}
  - id: essay
    input: Explain HDBSCAN in two sentences.
    check: {judge: "Mentions density and noise points; no invented parameters."}
  - id: sorted
    input: Sort 3 1 2.
    check: {python: check_sorted.py}
"""


def suite_at(tmp: Path, text: str = SUITE, folder: str = "tiny-v1") -> Path:
    (tmp / folder).mkdir(parents=True, exist_ok=True)
    (tmp / folder / "suite.yaml").write_text(text)
    (tmp / folder / "check_sorted.py").write_text("def check(answer, case):\n    return '1 2 3' in answer, 'sorted'\n")
    return tmp / folder


def test_a_suite_loads_with_a_version_that_follows_its_content(tmp_path: Path) -> None:
    s = load(suite_at(tmp_path))
    assert (s.spec.name, s.spec.version, s.spec.repeats, len(s.spec.cases)) == ("tiny", 1, 2, 6)
    assert s.version.startswith("tiny-v1+") and len(s.version) == len("tiny-v1+") + 8
    (tmp_path / "tiny-v1" / "check_sorted.py").write_text("def check(answer, case):\n    return True, 'lenient'\n")
    assert load(tmp_path / "tiny-v1").version != s.version  # a checker changed: not the same suite
    assert [c.check.kind for c in s.spec.cases] == ["exact", "regex", "json_schema", "numeric", "judge", "python"]


@pytest.mark.parametrize("edit, says", [
    (("repeats: 2", "repeets: 2"), "suite.yaml:4: repeets: unknown key (did you mean 'repeats'?)"),
    (("    check: {exact: Paris}", "    chek: {exact: Paris}"), "suite.yaml:9: cases.0.chek: unknown key (did you mean 'check'?)"),
    (("check: {numeric: 3.14, tolerance: 0.005}", "check: {numeric: 3.14, tolerence: 0.005}"),
     "suite.yaml:19: cases.3.check.tolerence: unknown key (did you mean 'tolerance'?)"),
    (("check: {exact: Paris}", "check: {exact: Paris, regex: Par}"), "suite.yaml:9: cases.0.check: Value error, give "
                                                                      "exactly one checker"),
    (("check: {python: check_sorted.py}", "check: {python: missing.py}"), "suite.yaml:25: cases.5.check.python: no "
                                                                          "file missing.py"),
    (("  - id: year", "  - id: capital"), "case id 'capital' is used twice"),
    (("time_limit_s: 30", "time_limit_s: [30"), "not YAML"),
])
def test_a_typo_is_named_by_file_line_and_key(tmp_path: Path, edit: tuple[str, str], says: str) -> None:
    folder = suite_at(tmp_path, SUITE.replace(*edit))
    with pytest.raises(SuiteError) as err:
        load(folder)
    assert says in str(err.value)
    assert str(folder / "suite.yaml") in str(err.value)


def test_the_folder_names_the_suite(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="must be named tiny-v1"):
        load(suite_at(tmp_path, folder="tiny-v2"))


@pytest.mark.parametrize("case_id, answer, passed", [
    ("capital", "  paris ", True), ("capital", "Paris, of course", False),
    ("capital", "<think>Lyon? no</think>Paris", True),
    ("year", "It fell in 1989.", True), ("year", "In 19890.", False),
    ("order", 'Here: ```json\n{"id": 17, "items": []}\n```', True), ("order", '{"id": "17"}', False),
    ("order", "no json at all", False),
    ("pi", "Pi is about 3.14159", True), ("pi", "3.2", False), ("pi", "I don't know", False),
])
def test_the_checkers(tmp_path: Path, case_id: str, answer: str, passed: bool) -> None:
    s = load(suite_at(tmp_path))
    case = next(c for c in s.spec.cases if c.id == case_id)
    verdict = check(case, answer)
    assert verdict.passed is passed and verdict.reason


def test_python_and_judge_cases_need_more_than_the_answer(tmp_path: Path) -> None:
    s = load(suite_at(tmp_path))
    with pytest.raises(ValueError, match="needs the judge"):
        check(s.spec.cases[4], "anything")
    with pytest.raises(ValueError, match=r"needs check_python \(the sandbox\)"):
        check(s.spec.cases[5], "anything")


def test_the_command_lists_and_shows(tmp_path: Path) -> None:
    suite_at(tmp_path)
    run = lambda *a: subprocess.run([sys.executable, "-m", "otelbench", "suite", *a, "--root", str(tmp_path)],  # noqa: E731
                                    cwd=ROOT, capture_output=True, text=True, timeout=60)
    listed = run("list")
    assert listed.returncode == 0 and "tiny-v1+" in listed.stdout and "6 cases × 2 repeats" in listed.stdout
    shown = run("show", "tiny")
    assert shown.returncode == 0 and "capital" in shown.stdout and "json_schema" in shown.stdout
    missing = run("show", "nope")
    assert missing.returncode == 2 and "no suite 'nope' (suites: tiny-v1)" in missing.stderr
    suite_at(tmp_path, SUITE.replace("repeats: 2", "repeets: 2"))
    broken = run("list")
    assert broken.returncode == 2 and "repeets: unknown key" in broken.stderr


@pytest.mark.parametrize("checker, answer, passed, says", [
    ("def check(answer, case):\n    return answer.split() == ['1', '2', '3'], 'sorted'\n", "1 2 3", True, "sorted"),
    ("def check(answer, case):\n    return answer.split() == ['1', '2', '3'], 'not sorted'\n", '3 "1"\n2', False,
     "not sorted"),
    ("def check(answer, case):\n    return case['input'] == 'Sort 3 1 2.', 'saw the case'\n", "x", True, "saw the case"),
    ("def check(answer, case):\n    raise KeyError('boom')\n", "x", False, "the checker raised KeyError"),
    ("def check(answer, case):\n    while True: pass\n", "x", False, "the checker timed out"),
    ("import os\ndef check(answer, case):\n    os._exit(3)\n", "x", False, "the checker exited with 3"),
])
def test_a_python_checker_runs_in_the_sandbox(tmp_path: Path, checker: str, answer: str, passed: bool,
                                               says: str) -> None:
    from otelbench.bench_runner.agent_suite import check_python

    folder = suite_at(tmp_path)
    (folder / "check_sorted.py").write_text(checker)
    s = load(folder)
    verdict = check_python(s, s.spec.cases[5], answer, timeout_s=2)
    assert verdict.passed is passed and says in verdict.reason, verdict
