"""Top terms of each cluster: class-based TF-IDF (c-TF-IDF, as BERTopic defines it).

All the texts of one class (a cluster, or the unclustered) are one document; a term's
weight in a class is its frequency there, normalized by the class's length, times
``log(1 + A / f)`` with ``A`` the average number of terms per class and ``f`` the term's
frequency over all classes. A term every failure shares ("timed", "tool") weighs little;
one that marks a cluster weighs much. The unclustered runs count as a class, so words
common to them and a cluster are not that cluster's mark. Terms are words and
two-word phrases ("timed out", "rate limit"); placeholders (``<num>``), the labels
``failure_text`` writes and common English words are left out.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from otelbench.processors.clustering.text import LABELS, PLACEHOLDER

TOP_TERMS = 8
# a word, or a host name kept whole ("api.weather.example.com", not "com")
_WORD = re.compile(r"[a-z][a-z0-9_-]*(?:\.[a-z0-9-]+)+|[a-z][a-z0-9_]*(?:'[a-z]+)?")
_TOKEN = re.compile(PLACEHOLDER.pattern + r"|" + _WORD.pattern + r"|[^\sa-z0-9_]")
_LABEL_WORDS = frozenset(w for label in LABELS for w in re.split(r"[\s-]+", label))
# A short list on purpose: "not", "no", "out", "off", "down" carry meaning in errors
# ("not found", "timed out", "shut down").
STOP_WORDS = frozenset("""
a about above after again all also am an and any are as at be been before being below between both but by
can could did do does doing during each few for from further had has have having he her here hers him his
how i if in into is it its itself just me more most my of on once only or other our ours over own same she
should so some such than that the their theirs them then there these they this those through to too under
until up very was we were what when where which while who whom why will with within would you your yours
s t d ll re ve m y
""".split()) | _LABEL_WORDS
# Words kept for phrases ("not found", "timed out") but no term alone.
PHRASE_ONLY = frozenset("not no out off down up get got set".split())


def tokens(text: str) -> list[str]:
    """Lowercased words of ``text``, with an empty string wherever a stop word, a
    placeholder or a punctuation mark was, so that phrases do not span them."""
    out: list[str] = []
    for token in _TOKEN.findall(text.lower()):
        out.append(token if _WORD.fullmatch(token) and token not in STOP_WORDS else "")
    return out


def terms(text: str) -> Counter[str]:
    """Words and adjacent two-word phrases of ``text`` (stop words and placeholders break
    phrases), each counted."""
    words = tokens(text)
    found: Counter[str] = Counter(w for w in words if len(w) > 1 and w not in PHRASE_ONLY)
    found.update(f"{a} {b}" for a, b in zip(words, words[1:]) if len(a) > 1 and len(b) > 1)
    return found


def class_terms(texts: Sequence[str], classes: Sequence[int], weights: Sequence[int], *,
                top: int = TOP_TERMS) -> dict[int, list[str]]:
    """The ``top`` c-TF-IDF terms of each class >= 0 (-1, the unclustered, only weighs in
    the frequencies). ``texts[i]`` belongs to ``classes[i]`` and stands for ``weights[i]``
    identical texts (failures repeat: the text is read once)."""
    per_class: dict[int, Counter[str]] = {}
    for text, label, weight in zip(texts, classes, weights):
        bag = per_class.setdefault(int(label), Counter())
        for term, n in terms(text).items():
            bag[term] += n * int(weight)
    if not per_class:
        return {}
    overall: Counter[str] = Counter()
    for bag in per_class.values():
        overall.update(bag)
    average = sum(overall.values()) / len(per_class)
    ranked: dict[int, list[str]] = {}
    for label, bag in per_class.items():
        if label < 0:
            continue
        length = sum(bag.values()) or 1
        scores = {t: (n / length) * math.log(1 + average / overall[t]) for t, n in bag.items()}
        # equal weights (words that always come together): the phrase first
        ranked[label] = _pick(sorted(scores, key=lambda t: (-round(scores[t], 9), -t.count(" "), t)), top)
    return ranked


def _pick(ordered: list[str], top: int) -> list[str]:
    """The first ``top`` terms, skipping one whose every word an earlier pick already
    shows ("timed" after "timed out", "timed out" after "timed" and "out")."""
    chosen: list[str] = []
    seen: set[str] = set()
    for term in ordered:
        words = set(term.split())
        if words <= seen:
            continue
        chosen.append(term)
        seen |= words
        if len(chosen) == top:
            break
    return chosen
