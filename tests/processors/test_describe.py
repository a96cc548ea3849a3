"""processors/clustering/describe.py: one sentence from the LLM, the top terms otherwise."""

from __future__ import annotations

import pytest

from processors.clustering.describe import (BY_LLM, BY_TERMS, describe_cluster, from_terms, one_sentence,
                                            prompt)

EXAMPLES = ["error: Timeout Error: get_weather timed out after <num>s", "error: Timeout Error: no answer in <num>s"]
TERMS = ["timeout error", "get_weather", "timed out"]


def test_the_prompt_shows_the_examples_and_terms() -> None:
    text = prompt(EXAMPLES, TERMS)
    assert all(f"- {e}" in text for e in EXAMPLES)
    assert "timeout error, get_weather, timed out" in text
    assert "one short sentence" in text
    assert len(prompt(["x" * 5000], [])) < 1000


def test_the_llm_answer_is_cut_to_one_sentence() -> None:
    calls: list[str] = []

    def llm(text: str) -> str:
        calls.append(text)
        return 'Sure! Here is a one-sentence summary: "The weather tool times out." Hope this helps.'

    assert describe_cluster(EXAMPLES, TERMS, llm) == ("The weather tool times out.", BY_LLM)
    assert calls == [prompt(EXAMPLES, TERMS)]


@pytest.mark.parametrize("answer", [None, "", "   ", '""'])
def test_no_answer_falls_back_to_the_terms(answer: str | None) -> None:
    assert describe_cluster(EXAMPLES, TERMS, lambda _: answer) == (from_terms(TERMS), BY_TERMS)


def test_a_failing_llm_falls_back_to_the_terms() -> None:
    def broken(_: str) -> str:
        raise ConnectionError("no server")

    assert describe_cluster(EXAMPLES, TERMS, broken) == ("Failures about timeout error, get_weather, timed out.",
                                                         BY_TERMS)
    assert describe_cluster(EXAMPLES, TERMS, None)[1] == BY_TERMS
    assert describe_cluster(EXAMPLES, [], None) == ("Failures without distinctive terms.", BY_TERMS)


@pytest.mark.parametrize(("answer", "expected"), [
    ("The agent hits the rate limit. Then it stops.", "The agent hits the rate limit."),
    ("Description: Tool calls fail.", "Tool calls fail."),
    ("**Bookings are invented.**", "Bookings are invented."),
    ("word " * 100, ("word " * 100)[:200].rsplit(" ", 1)[0] + "…"),
])
def test_one_sentence(answer: str, expected: str) -> None:
    assert one_sentence(answer) == expected


@pytest.mark.parametrize("answer", [
    "Frequent terms: timeout error, get_weather, timed out",  # SmolLM2 echoing the terms line
    "- error: Timeout Error: get_weather timed out after <num>s - error: Timeout Error: no answer in <num>s",
    "error: timeout error: GET_WEATHER timed out after <num>s.",
    # near-copies SmolLM2 wrote in the demo: the terms line trimmed, examples run together
    "Frequent terms: timeout error, timed out",
    "- error: Timeout Error: get_weather timed out - error: Timeout Error: no answer",
    "error: Timeout Error: no answer in <num>s and get_weather failed.",
    "- error: the weather tool gave up.",  # the examples' bullet and label, new words
    "The tool times out - frequent terms: timeout error",
])
def test_an_answer_that_copies_the_prompt_back_falls_back_to_the_terms(answer: str) -> None:
    assert describe_cluster(EXAMPLES, TERMS, lambda _: answer) == (from_terms(TERMS), BY_TERMS)


@pytest.mark.parametrize("said", [
    "The get_weather tool times out.",
    "Timeout errors: the get_weather tool never answers.",  # opens like an example, says more
    "Frequent timeouts of the get_weather tool.",
])
def test_a_sentence_that_uses_the_prompts_words_is_kept(said: str) -> None:
    assert describe_cluster(EXAMPLES, TERMS, lambda _: said) == (said, BY_LLM)
