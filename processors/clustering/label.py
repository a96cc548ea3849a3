"""What a model is asked to name a cluster's problem: a few-shot chat and a grammar.

Asked for "one short sentence" about a few failure texts, SmolLM2-135M (the embedded
model) copies the examples back, as small models do. Asked instead to complete a short
conversation whose earlier turns each answer ``<what fails>: <why>`` in a few words, it
names the problem, and a GBNF grammar (llama.cpp's ``grammar`` request field) holds it to
that shape: ``what fails`` is one of the cluster's own *subjects* (its failing tool, its
error type in words, its first top terms; "wrong answer" for low-scored runs), so the
model picks the subject by its likelihood among those, and ``why`` is 2-8 plain words and
a full stop. The examples it reads lose their agent apologies (a run's output says little
when it errored) and their placeholders, which the grammar could not write anyway:
``<num>`` and the like become ``#``, paths and URLs ``…``.

The earlier turns are made-up failures unlike any planted family, so that their answers
cannot be copied into a real one (a copy of one is an echo, ``describe.echoed``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from otelbench.processors.clustering.text import words

EXAMPLES = 3             # examples shown of a cluster (its nearest to the centre)
MAX_EXAMPLE_CHARS = 220  # each cut to this many characters
SUBJECT_TERMS = 3        # top terms offered as subjects, beside the tool and the error type
WRONG_ANSWER = "wrong answer"
MIN_WHY_WORDS, MAX_WHY_WORDS = 2, 8

SYSTEM = "You name the problem behind a group of failures of an AI agent in a few words."
QUESTION = "What fails, and why:"
SHOTS: tuple[tuple[str, str], ...] = (
    ("error: Out Of Memory Error: CUDA out of memory. Tried to allocate # MiB. failing tools: run_model: "
     "Out Of Memory Error", "run_model: the GPU runs out of memory."),
    ("error: Invalid Request Error: temperature must be between # and #, got #",
     "Invalid Request Error: the temperature is out of range."),
    ("error: Permission Error: [Errno #] Permission denied: '…'. failing tools: save_report: Permission Error: "
     "cannot write …", "save_report: it may not write to the folder."),
    ("low-scored answer: The capital of Australia is Sydney.", "wrong answer: Sydney is named as the capital."),
)
WORD = r"[a-zA-Z0-9][a-zA-Z0-9_'-]{0,15}"

_OUTPUT = re.compile(r"\. output: .*$")
_PLACEHOLDER = re.compile(r"<(?:num|id|hex|uuid|time|ip|email)>")
_ELIDED = re.compile(r"<(?:path|url)>")


@dataclass(frozen=True)
class Prompt:
    """A chat to complete (role, content pairs), the GBNF grammar its answer should
    follow, the subjects that grammar offers and the examples as given; ``text`` is
    every message's content and the examples as given, what an answer must not copy."""

    messages: tuple[tuple[str, str], ...]
    grammar: str
    subjects: tuple[str, ...]
    examples: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()  # subjects written as in code (the tool's name): never capitalized

    @property
    def text(self) -> str:
        return "\n\n".join([content for _, content in self.messages] + [f"- {e}" for e in self.examples])


def shown(example: str) -> str:
    """A failure text as the model reads it: without the agent's answer when the run
    errored, placeholders as ``#`` or ``…``, cut."""
    if not example.startswith("low-scored answer:"):
        example = _OUTPUT.sub("", example)
    return _ELIDED.sub("…", _PLACEHOLDER.sub("#", example))[:MAX_EXAMPLE_CHARS]


def subjects(tool: str | None, error_type: str | None, top_terms: Sequence[str]) -> tuple[str, ...]:
    """What may fail, as the answer may name it: the tool, the error type in words,
    "wrong answer" for runs that did not error, and those of the first ``SUBJECT_TERMS``
    top terms that do not merely respell one of those or a term before them (a term
    further down is offered no more: given "timed out", the model named no flight)."""
    found = [s for s in (tool, words(error_type) if error_type else None) if s]
    if error_type is None:
        found.append(WRONG_ANSWER)
    seen = {_bare(s) for s in found}
    for term in top_terms[:SUBJECT_TERMS]:
        if not any(_bare(term) in s for s in seen):  # "deadlockdetected" is "Deadlock Detected"
            found.append(term)
            seen.add(_bare(term))
    return tuple(found)


def _bare(text: str) -> str:
    return re.sub(r"[\s_-]+", "", text.lower())


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def grammar(subject_list: Sequence[str]) -> str:
    """GBNF: ``<one of the subjects>: <2-8 words>.``"""
    return "\n".join((
        f'root ::= subject ": " word (" " word){{{MIN_WHY_WORDS - 1},{MAX_WHY_WORDS - 1}}} "."',
        "subject ::= " + " | ".join(_literal(s) for s in subject_list),
        f"word ::= {WORD}",
    ))


def _turn(examples: Sequence[str]) -> str:
    return "Failures:\n" + "\n".join(f"- {e}" for e in examples) + "\n" + QUESTION


def label_prompt(examples: Sequence[str], top_terms: Sequence[str], tool: str | None = None,
                 error_type: str | None = None) -> Prompt:
    """The chat asking for ``<what fails>: <why>.`` about a cluster's example texts."""
    subject_list = subjects(tool, error_type, top_terms) or (WRONG_ANSWER,)
    messages: list[tuple[str, str]] = [("system", SYSTEM)]
    for example, answer in SHOTS:
        messages += [("user", _turn([example])), ("assistant", answer)]
    messages.append(("user", _turn([shown(e) for e in examples[:EXAMPLES]])))
    return Prompt(tuple(messages), grammar(subject_list), subject_list, tuple(examples[:EXAMPLES]),
                  (tool,) if tool else ())


def split_label(answer: str, prompt: Prompt) -> tuple[str, str] | None:
    """(subject, why) of an answer in the label's shape, else None."""
    for subject in sorted(prompt.subjects, key=len, reverse=True):
        if answer.startswith(subject + ": "):
            why = answer[len(subject) + 2:].strip().rstrip(".").strip()
            if MIN_WHY_WORDS <= len(why.split()) <= MAX_WHY_WORDS:
                return subject, why
    return None


def shot_whys() -> tuple[str, ...]:
    """The made-up turns' reasons, lower case: an answer repeating one copies the prompt."""
    return tuple(answer.split(": ", 1)[1].rstrip(".").lower() for _, answer in SHOTS)
