"""One sentence about a cluster, written by an LLM from its examples; the top terms when
no LLM answers.

The LLM is a callable the caller passes in (prompt in, answer text out: the processor
wraps its OpenAI-compatible client in one), so this module does no I/O of its own and is
tested with plain functions. An answer is cut to its first sentence; an empty answer, an
answer that only copies a piece of the prompt back (small models echo an example or the
terms line: SmolLM2 answered "Frequent terms: expected, wronganswer, calculate failed"),
an exception or no callable at all falls back to the cluster's top terms, and the result
says which it was (``described_by`` in the cluster's ``params``). Near-copies count too: the
terms line with some terms left out, and an example's opening with more run on after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

# prompt in, the model's answer out (None or "" when it has none)
Describe = Callable[[str], "str | None"]

MAX_EXAMPLE_CHARS = 300
MAX_SENTENCE_CHARS = 200
BY_LLM, BY_TERMS = "llm", "top_terms"
TERMS_LABEL = "Frequent terms:"  # the prompt's terms line; an answer holding it copies it

PROMPT = """These are examples of one kind of failure of an AI agent (numbers, ids and paths are replaced by placeholders like <num>):

{examples}

{terms_label} {terms}

In one short sentence, say what goes wrong in these failures. Answer with the sentence only."""

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’]?\s")
# "Sure! Here is a one-sentence summary:" and the like
_LEAD_IN = re.compile(r"^[^:]{0,40}\b(?:sentence|summary|description)\b[^:]{0,20}:\s*", re.IGNORECASE)


def prompt(examples: Sequence[str], top_terms: Sequence[str]) -> str:
    """The prompt asking for one sentence about these example failure texts."""
    lines = "\n".join(f"- {text[:MAX_EXAMPLE_CHARS]}" for text in examples)
    return PROMPT.format(examples=lines, terms_label=TERMS_LABEL, terms=", ".join(top_terms) or "(none)")


def one_sentence(answer: str | None) -> str | None:
    """The first sentence of a model's answer, without quotes or a "Sentence:" lead-in,
    at most ``MAX_SENTENCE_CHARS``; None when nothing usable is left."""
    if not answer:
        return None
    text = " ".join(answer.split())
    text = _LEAD_IN.sub("", text)
    text = text.strip(" \"'`*")
    text = _SENTENCE_END.split(text, maxsplit=1)[0].strip(" \"'`*")
    if len(text) > MAX_SENTENCE_CHARS:
        text = text[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + "…"
    return text or None


_ECHO_HEAD = 24  # an answer that opens with this much of an example copies the example


def echoed(sentence: str, asked: str) -> bool:
    """Whether ``sentence`` is a piece of the prompt ``asked`` copied back, not a description:
    a piece of it word for word, its terms line however trimmed ("Frequent terms:
    expected, calculate failed"), an example's opening whatever follows it, or a line in
    the examples' own format (their bullet and label: "- low-scored answer: This is a
    failure…", "- error: Invalid JSON: …"), as SmolLM2 wrote them in the demo."""
    said = sentence.rstrip("….!? ").lower()
    if len(said) >= 12 and said in " ".join(asked.split()).lower():
        return True
    if TERMS_LABEL.lower() in said:
        return True
    examples = [" ".join(line.split()).lower().lstrip("- ") for line in asked.splitlines() if line.startswith("- ")]
    if said.startswith("- "):  # the examples' bullet and label, whatever words follow them
        labels = {example.split(":", 1)[0] + ":" for example in examples if ":" in example}
        if any(said[2:].startswith(label) for label in labels):
            return True
    head = said.lstrip("- ")[:40]
    return len(head) >= _ECHO_HEAD and any(example.startswith(head) for example in examples)


def from_terms(top_terms: Sequence[str]) -> str:
    """The description when no LLM answers: the top terms, as a line."""
    if not top_terms:
        return "Failures without distinctive terms."
    return "Failures about " + ", ".join(top_terms[:5]) + "."


def describe_cluster(examples: Sequence[str], top_terms: Sequence[str],
                     describe: Describe | None) -> tuple[str, str]:
    """(description, described_by): the LLM's sentence, or the top terms when there is no
    LLM, it raises, or it answers nothing usable. An LLM failing never fails clustering."""
    if describe is not None:
        asked = prompt(examples, top_terms)
        try:
            sentence = one_sentence(describe(asked))
        except Exception:  # noqa: BLE001 - any client error: the terms will do
            sentence = None
        if sentence and not echoed(sentence, asked):
            return sentence, BY_LLM
    return from_terms(top_terms), BY_TERMS
