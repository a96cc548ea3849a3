"""A cluster's description, written by an LLM from its examples; the top terms when no
LLM answers usably.

The LLM is a callable the caller passes in (a ``Prompt`` in, answer text out: the
processor wraps its OpenAI-compatible client in one, clients.py), so this module does no
I/O of its own and is tested with plain functions. The prompt (label.py) asks for
``<what fails>: <why>.`` in a few words, a grammar holding the model to it where the
server takes one. An answer in that shape is kept unless its reason is one of the
made-up turns' reasons (copied from the prompt) or a bare list of the top terms; a reason
taken from an example's words is a choice of what matters, at most eight plain words,
where the echoes this check was made for were whole examples. Any other answer (a server that
ignores grammars) is cut to its first sentence and refused when it copies a piece of the
prompt back, word for word or nearly: small models echo an example (SmolLM2 answered
"Frequent terms: expected, wronganswer, calculate failed" to a prompt that listed the terms). An empty
or refused answer, an exception or no callable at all falls back to the cluster's top
terms, and the result says which it was (``described_by`` in the cluster's ``params``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from otelbench.processors.clustering.label import Prompt, label_prompt, shot_whys, split_label
from otelbench.processors.clustering.terms import STOP_WORDS

# the prompt in, the model's answer out (None or "" when it has none)
Describe = Callable[[Prompt], "str | None"]

MAX_SENTENCE_CHARS = 200
BY_LLM, BY_TERMS = "llm", "top_terms"
TERMS_LABEL = "Frequent terms:"  # the prompt's terms line; an answer holding it copies it

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’]?\s")
# "Sure! Here is a one-sentence summary:" and the like
_LEAD_IN = re.compile(r"^[^:]{0,40}\b(?:sentence|summary|description)\b[^:]{0,20}:\s*", re.IGNORECASE)


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


def only_terms(text: str, top_terms: Sequence[str]) -> bool:
    """Whether ``text`` is a bare list of the top terms, the fallback's content rather
    than a description: every word one of the terms' words, and no stop word joining them
    into a clause ("not found, read_file, directory"; "the file was not found" is a clause)."""
    said = re.findall(r"[a-z0-9_']+", text.lower())
    known = {w for term in top_terms for w in re.findall(r"[a-z0-9_']+", term.lower())}
    return all(w in known for w in said) and not any(w in STOP_WORDS and w not in known for w in said)


def usable(answer: str | None, asked: Prompt, top_terms: Sequence[str]) -> str | None:
    """The description in ``answer``, or None when there is none or it copies the prompt."""
    text = " ".join((answer or "").split()).strip(" \"'`*")
    label = split_label(text, asked)
    if label is not None:
        subject, why = label
        if why.lower() in shot_whys() or only_terms(why, [*top_terms, *asked.subjects]):
            return None
        if subject not in asked.identifiers and subject[:1].islower():  # "Rate limit: …", not "Geocode: …"
            subject = subject[0].upper() + subject[1:]
        return f"{subject}: {why}."
    sentence = one_sentence(text)
    if not sentence or echoed(sentence, asked.text) or only_terms(sentence, top_terms):
        return None
    return sentence


def describe_cluster(examples: Sequence[str], top_terms: Sequence[str], describe: Describe | None,
                     tool: str | None = None, error_type: str | None = None) -> tuple[str, str]:
    """(description, described_by): the LLM's label, or the top terms when there is no
    LLM, it raises, or it answers nothing usable. An LLM failing never fails clustering.
    ``tool`` and ``error_type``: what most of the cluster's failures carry (the label's
    possible subjects, beside the top terms)."""
    if describe is not None:
        asked = label_prompt(examples, top_terms, tool, error_type)
        try:
            answer = describe(asked)
        except Exception:  # noqa: BLE001 - any client error: the terms will do
            answer = None
        described = usable(answer, asked, top_terms)
        if described:
            return described, BY_LLM
    return from_terms(top_terms), BY_TERMS
