"""processors/clustering/terms.py: c-TF-IDF top terms."""

from __future__ import annotations

from otelbench.processors.clustering.terms import class_terms, terms, tokens

DOCS = [  # (text, cluster, count)
    ("error: Timeout Error: get_weather timed out after <num>s", 0, 30),
    ("error: Timeout Error: the weather service did not answer within <num> seconds", 0, 10),
    ("error: Rate Limit Error: rate limit exceeded, retry in <num> seconds", 1, 25),
    ("error: Rate Limit Error: too many requests (HTTP 429) for the model", 1, 5),
    ("error: Key Error: 'city' missing from the tool arguments", -1, 1),
]


def test_top_terms_mark_each_cluster() -> None:
    top = class_terms(*zip(*DOCS))
    assert set(top) == {0, 1}                        # the unclustered get no terms
    assert top[0][0] == "timeout" and "timed out" in top[0] and "weather service" in top[0]
    assert top[1][0] == "rate limit" and "too many requests" not in top[1] and "many requests" in top[1]
    for words in top.values():                       # shared words and labels do not lead
        assert words[0] not in ("error", "seconds", "num")
        assert all("<" not in w and "num" not in w.split() for w in words)


def test_counts_weigh() -> None:
    """A wording seen 30 times outweighs one seen once."""
    top = class_terms(["alpha beta", "gamma delta", "epsilon zeta"], [0, 0, 1], [30, 1, 5], top=1)
    assert top == {0: ["alpha beta"], 1: ["epsilon zeta"]}  # a phrase before its words when they always go together


def test_tokens_skip_stop_words_placeholders_and_punctuation() -> None:
    assert tokens("The tool timed out after <num>s: not found!") == \
        ["", "tool", "timed", "out", "", "", "", "", "not", "found", ""]


def test_phrases_do_not_span_gaps_and_lone_particles_are_no_terms() -> None:
    found = terms("tool timed out. not found")
    assert found["timed out"] == 1 and found["not found"] == 1
    assert "out" not in found and "not" not in found and "out not" not in found


def test_no_texts_no_terms() -> None:
    assert class_terms([], [], []) == {}
    assert class_terms(["only noise"], [-1], [3]) == {}


def test_a_host_name_is_one_term() -> None:
    """normalize keeps a URL's host (which service failed): it is a term whole, not "com"."""
    found = terms("error: Connect Error: could not resolve api.weather.example.com")
    assert found["api.weather.example.com"] == 1
    assert "com" not in found and "example" not in found
