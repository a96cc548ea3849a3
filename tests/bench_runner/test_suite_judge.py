"""The ``judge`` checker of agent suites: the real embedded SmolLM2 grades answers against a
rubric; a judge that is down or answers with no grade leaves the case unscored (``error``),
never passed or failed on its account (the failing judge is a neighbour: judge_stub)."""

from __future__ import annotations

from pathlib import Path

import pytest

from otelbench.bench_runner.agent_suite import load
from otelbench.bench_runner.suite_judge import SuiteJudge
from otelbench.bench_runner.suite_run import Finished, JudgeUnavailable, score
from otelbench.testing.judge_stub import JudgeStub

SUITE = """name: judged
version: 1
description: one judged case
cases:
  - id: why
    input: Why did the Orbitron 3.2 rollout stop?
    check: {judge: "Says the rollout stopped because the checksum of the migration did not match. Anything else scores 0."}
"""


@pytest.fixture
def suite(tmp_path: Path):
    (tmp_path / "judged-v1").mkdir()
    (tmp_path / "judged-v1" / "suite.yaml").write_text(SUITE)
    return load(tmp_path / "judged-v1")


def _answer(text: str) -> Finished:
    return Finished(stdout=text.encode(), exit_code=0)


def test_a_grade_at_or_above_half_passes_with_the_judges_reason(suite) -> None:
    case = suite.spec.cases[0]
    with JudgeStub("json", score=0.75) as stub:
        verdict, reason = score(suite, case, _answer("The checksum did not match."), SuiteJudge(stub.base_url))
        assert (verdict, reason.split(":")[0]) == ("pass", "judge 0.75 (≥ 0.5)")
        sent = stub.prompts()
    assert "checksum of the migration did not match" in sent and "The checksum did not match." in sent
    with JudgeStub("json", score=0.25) as stub:
        assert score(suite, case, _answer("No idea."), SuiteJudge(stub.base_url))[0] == "fail"


@pytest.mark.parametrize("mode", ["garbage", "http500"])
def test_a_judge_that_cannot_grade_leaves_the_case_unscored(suite, mode: str) -> None:
    with JudgeStub(mode) as stub:
        verdict, reason = score(suite, suite.spec.cases[0], _answer("The checksum."), SuiteJudge(stub.base_url))
    assert verdict == "error" and reason.startswith("the judge could not score it")


@pytest.mark.parametrize(("reply", "verdict", "graded"), [
    ('{"grade": 5, "reasoning": "Names the checksum."}', "pass", "judge 1.00 (≥ 0.5)"),
    ('{"grade": 3, "reasoning": "Right cause, vague."}', "pass", "judge 0.50 (≥ 0.5)"),
    ('{"grade": 2, "reasoning": "Misses the checksum."}', "fail", "judge 0.25 (< 0.5)"),
    ('{"grade": 1, "reasoning": "Wrong."}', "fail", "judge 0.00 (< 0.5)"),
])
def test_the_judge_grades_on_the_scale_its_prompt_asks_for(suite, reply: str, verdict: str, graded: str) -> None:
    """Grades 1–5, as the prompt and the schema ask: 5 is full marks (the prompt once asked
    for 0–1, and a judge's "score": 1 was read as the lowest grade)."""
    with JudgeStub(text=reply) as stub:
        got, reason = score(suite, suite.spec.cases[0], _answer("The checksum."), SuiteJudge(stub.base_url))
        (body,) = stub.requests
    assert (got, reason.split(":")[0]) == (verdict, graded)
    assert "1, 2, 3, 4 or 5" in body["messages"][0]["content"]


@pytest.mark.parametrize("reply", ['{"grade": 3, "reasoning": "<one sentence>"}',
                                   '{"grade": 4, "reasoning": " <reason> "}'])
def test_a_judge_that_copies_the_template_leaves_the_case_unscored(suite, reply: str) -> None:
    """SmolLM2 as a judge echoed the prompt's '<one sentence>' with a grade: not a grading,
    so the case is unscored with the reply kept, never passed."""
    with JudgeStub(text=reply) as stub:
        verdict, reason = score(suite, suite.spec.cases[0], _answer("The checksum."), SuiteJudge(stub.base_url))
    assert verdict == "error" and "copied the prompt's template" in reason and "<" in reason


def test_a_judge_that_is_not_there_is_said_when_it_is_made() -> None:
    with pytest.raises(JudgeUnavailable, match="lists no model"):
        SuiteJudge("http://127.0.0.1:9/v1")


@pytest.mark.model
def test_the_embedded_model_grades_a_case_with_a_reason(suite, llama_server) -> None:
    judge = SuiteJudge(llama_server.base_url)
    verdict, reason = score(suite, suite.spec.cases[0],
                            _answer("The rollout stopped because the migration's checksum did not match."), judge)
    # SmolLM2-135M is a weak judge: what is tested is that a real model's answer becomes a
    # verdict with a grade and a reason (or, when it writes no grade, an unscored case)
    assert verdict in ("pass", "fail", "error")
    if verdict != "error":
        assert reason.startswith("judge ") and float(reason.split()[1]) <= 1.0
