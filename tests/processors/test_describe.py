"""processors/clustering/describe.py and label.py: a label from the LLM, the top terms otherwise."""

from __future__ import annotations

import pytest

from otelbench.processors.clustering.describe import (BY_LLM, BY_TERMS, describe_cluster, from_terms, one_sentence,
                                            only_terms)
from otelbench.processors.clustering.label import (EXAMPLES, MAX_EXAMPLE_CHARS, SHOTS, WRONG_ANSWER, grammar, label_prompt,
                                         shown, subjects)

EXAMPLES_ = ["error: Timeout Error: get_weather timed out after <num>s. output: Sorry, I could not do it.",
             "error: Timeout Error: no answer in <num>s from api.weather.example.com/<path>"]
TERMS = ["timeout error", "get_weather", "timed out"]


def described(answer: str | None, tool: str | None = "get_weather",
              error_type: str | None = "TimeoutError") -> tuple[str, str]:
    return describe_cluster(EXAMPLES_, TERMS, lambda _: answer, tool, error_type)


def test_the_prompt_is_a_few_shot_chat_about_the_examples() -> None:
    asked = label_prompt(EXAMPLES_, TERMS, "get_weather", "TimeoutError")
    roles = [role for role, _ in asked.messages]
    assert roles == ["system"] + ["user", "assistant"] * len(SHOTS) + ["user"]
    last = asked.messages[-1][1]
    # the examples without the agent's apology, placeholders the grammar cannot write
    assert "- error: Timeout Error: get_weather timed out after #s\n" in last
    assert "from api.weather.example.com/…" in last and "Sorry" not in last and "<" not in last
    assert asked.subjects == ("get_weather", "Timeout Error", "timed out")
    assert len(label_prompt(["x" * 5000] * 9, []).messages[-1][1]) < EXAMPLES * (MAX_EXAMPLE_CHARS + 5) + 40


def test_a_low_scored_answer_keeps_its_text_and_may_be_a_wrong_answer() -> None:
    assert shown("low-scored answer: The total is <num> dollars. output: x") == \
        "low-scored answer: The total is # dollars. output: x"
    assert subjects(None, None, ["dollars", "total"]) == (WRONG_ANSWER, "dollars", "total")
    # a term that only respells the tool or the error type is not offered again
    assert subjects("update_inventory", "DeadlockDetected", ["deadlockdetected", "deadlock", "lock", "stock"]) == \
        ("update_inventory", "Deadlock Detected")


def test_the_grammar_names_a_subject_then_a_few_words() -> None:
    text = grammar(["get_weather", 'say "hi"'])
    assert text.splitlines()[0] == 'root ::= subject ": " word (" " word){1,7} "."'
    assert text.splitlines()[1] == 'subject ::= "get_weather" | "say \\"hi\\""'


@pytest.mark.parametrize(("answer", "expected"), [
    ("get_weather: the weather API does not answer in time.", "get_weather: the weather API does not answer in time."),
    ("timed out: the weather service is too slow.", "Timed out: the weather service is too slow."),
    ("Timeout Error: the weather lookup is cancelled.", "Timeout Error: the weather lookup is cancelled."),
    # a reason taken from an example's words is a choice of what matters
    ("get_weather: no answer in time from the service.", "get_weather: no answer in time from the service."),
])
def test_a_label_is_kept(answer: str, expected: str) -> None:
    assert described(answer) == (expected, BY_LLM)


@pytest.mark.parametrize("answer", [
    "get_weather: the GPU runs out of memory.",          # a made-up turn's reason, copied
    "get_weather: timed out, timeout error.",           # the top terms as a list
    "get_weather: timed out.",                           # the reason is a top term
    "Frequent terms: timeout error, get_weather, timed out",
    "- error: Timeout Error: get_weather timed out after <num>s - error: Timeout Error: no answer in <num>s",
    "error: Timeout Error: no answer in <num>s and get_weather failed.",
    "- error: the weather tool gave up.",               # the examples' bullet and label, new words
    "timed out, get_weather",                           # the terms, without the label's shape
])
def test_an_answer_that_copies_the_prompt_back_falls_back_to_the_terms(answer: str) -> None:
    assert described(answer) == (from_terms(TERMS), BY_TERMS)


def test_a_tool_keeps_its_spelling() -> None:
    assert described("geocode: the city is unknown.", tool="geocode", error_type="ValueError") == \
        ("geocode: the city is unknown.", BY_LLM)
    assert described("timed out: the geocoder is slow.", tool="geocode", error_type="ValueError") == \
        ("Timed out: the geocoder is slow.", BY_LLM)


def test_a_server_without_grammars_may_answer_a_sentence() -> None:
    assert described('Sure! Here is a one-sentence summary: "The weather tool times out." Hope this helps.') == \
        ("The weather tool times out.", BY_LLM)


@pytest.mark.parametrize("answer", [None, "", "   ", '""'])
def test_no_answer_falls_back_to_the_terms(answer: str | None) -> None:
    assert described(answer) == (from_terms(TERMS), BY_TERMS)


def test_a_failing_llm_falls_back_to_the_terms() -> None:
    def broken(_: object) -> str:
        raise ConnectionError("no server")

    assert describe_cluster(EXAMPLES_, TERMS, broken) == ("Failures about timeout error, get_weather, timed out.",
                                                          BY_TERMS)
    assert describe_cluster(EXAMPLES_, TERMS, None)[1] == BY_TERMS
    assert describe_cluster(EXAMPLES_, [], None) == ("Failures without distinctive terms.", BY_TERMS)


def test_the_llm_is_asked_the_label_prompt() -> None:
    asked: list[object] = []
    describe_cluster(EXAMPLES_, TERMS, lambda p: asked.append(p) or None, "get_weather", "TimeoutError")
    assert asked == [label_prompt(EXAMPLES_, TERMS, "get_weather", "TimeoutError")]


@pytest.mark.parametrize(("answer", "expected"), [
    ("The agent hits the rate limit. Then it stops.", "The agent hits the rate limit."),
    ("Description: Tool calls fail.", "Tool calls fail."),
    ("**Bookings are invented.**", "Bookings are invented."),
    ("word " * 100, ("word " * 100)[:200].rsplit(" ", 1)[0] + "…"),
])
def test_one_sentence(answer: str, expected: str) -> None:
    assert one_sentence(answer) == expected


@pytest.mark.parametrize(("text", "listed"), [
    ("timed out, timeout error", True), ("get_weather timed out", True), ("the weather API is slow", False),
    ("the file was not found", False), ("", True),
])
def test_only_terms(text: str, listed: bool) -> None:
    assert only_terms(text, [*TERMS, "file", "not found"]) is listed
