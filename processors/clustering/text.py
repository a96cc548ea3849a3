"""A failed run as one line of text, with what varies between repeats normalized away.

The text of a failure is its error type and message, the failing tool calls and
their errors and the last output, with ids, numbers, hex, paths and timestamps replaced by
placeholders, so that "timed out after 31s" and "timed out after 7s" read alike. Failures
repeat, so normalization is also what lets the embedder see each distinct failure once
(``benchmarks/cluster.py``: 100,000 planted failures are ~11 % distinct texts).

Everything here is pure: strings in, strings out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import NamedTuple

import polars as pl

# Each part of the text is cut to these many characters after normalization: the
# embedder reads at most 256 tokens, and its cost grows with the length (~0.2 ms a token
# on one core), so a 20 KB stack trace must not be read whole.
MAX_ERROR_CHARS = 400
MAX_TOOLS_CHARS = 300
MAX_OUTPUT_CHARS = 300

# Placeholders. Written as <word> so the top terms (terms.py) can drop them.
TIME, URL, EMAIL, IP, UUID, PATH, HEX, ID, NUM = ("<time>", "<url>", "<email>", "<ip>", "<uuid>", "<path>", "<hex>",
                                                  "<id>", "<num>")
PLACEHOLDER = re.compile(r"<(?:time|url|email|ip|uuid|path|hex|id|num)>")

# The labels failure_text puts before each part (terms.py leaves them out of the top terms).
LABELS = ("error", "failing tools", "output", "low-scored answer")


def _url(m: re.Match[str]) -> str:
    # the host says which service failed; the path and query mostly carry ids
    return m.group("host") + ("/" + PATH if m.group("rest") else "")


def _keep_status(m: re.Match[str]) -> str:
    # "HTTP 404" and "HTTP 503" are different failures; any other number is noise
    return m.group(0) if m.group("status") else NUM


# (pattern, replacement), applied in this order: a timestamp before its numbers, a URL
# before its path, a uuid before its hex, a prefixed id before bare numbers.
_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2}\b)?"), TIME),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), TIME),
    (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^\s/@]+@)?(?P<host>[^\s/?#:'\"<>]+)(?::\d+)?(?P<rest>[/?#][^\s'\"<>]*)?"),
     _url),
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), EMAIL),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), IP),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), UUID),
    # /a/b, ~/a/b, ./a/b, a/b/c.py, C:\a\b: at least two separators, or one and an extension
    (re.compile(r"(?<![\w<])(?:[A-Za-z]:\\|~/|\.{1,2}/|/)?(?:[\w.@+-]+[/\\]){1,}[\w.@+-]+\.[A-Za-z0-9]{1,8}\b"
                r"|(?<![\w<])(?:[A-Za-z]:\\|~/|\.{1,2}/|/)(?:[\w.@+-]+[/\\])+[\w.@+-]*"), PATH),
    (re.compile(r"\b0[xX][0-9a-fA-F]+\b"), HEX),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{6,}\b"), HEX),
    # req_8f3k2, call-Ab12Cd, user#4821, order:99123 — the prefix says what the id is
    (re.compile(r"\b(?P<prefix>[A-Za-z]+[_\-#:])(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{3,}\b"),
     lambda m: m.group("prefix") + ID),
    # x7Fq9LmZ2p: long tokens of letters with several digits
    (re.compile(r"\b(?=[A-Za-z0-9]*\d[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{8,}\b"), ID),
    (re.compile(r"(?P<status>\b(?:HTTP(?:/[\d.]+)?|[Ss]tatus(?: code)?|[Cc]ode)[\s:=]*[1-5]\d\d\b)"
                r"|(?<![A-Za-z0-9_<])(?<![A-Za-z]-)[-+]?\d+(?:[.,]\d+)*"), _keep_status),
]
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """``text`` with timestamps, URLs' paths, e-mails, IPs, uuids, paths, hex, ids and
    numbers replaced by placeholders, whitespace collapsed.

    >>> normalize("get_weather timed out after 31s (req_8f3a2b, /srv/app/tools.py)")
    'get_weather timed out after <num>s (req_<id>, <path>)'
    """
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return _SPACE.sub(" ", text).strip()


_ERROR_NAME = re.compile(r"\b(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception)\b")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def words(name: str) -> str:
    """An identifier as words: ``JSONDecodeError`` → ``JSON Decode Error``,
    ``openai.RateLimitError`` → ``openai Rate Limit Error``. The embedder's word pieces
    know "rate limit error"; "ratelimiterror" reads as noise to it."""
    return _CAMEL.sub(" ", name.replace("_", " ").replace(".", " ")).strip()


def _readable(text: str) -> str:
    return _ERROR_NAME.sub(lambda m: words(m.group(0)), normalize(text))


def message_text(value: str | None) -> str:
    """The text of an output: ``agent_runs.output`` is a JSON array of messages
    (docs/schema.md); a plain string is taken as it is."""
    if not value:
        return ""
    stripped = value.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return value
        found: list[str] = []
        _collect_text(parsed, found)
        if found:
            return " ".join(found)
    return value


def _collect_text(node: object, found: list[str]) -> None:
    if isinstance(node, str):
        found.append(node)
    elif isinstance(node, list):
        for item in node:
            _collect_text(item, found)
    elif isinstance(node, dict):
        for key in ("content", "text", "result", "response", "parts"):
            if key in node:
                _collect_text(node[key], found)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + " …"


class FailureParts(NamedTuple):
    """A failure's three parts, normalized and cut, each "" when absent."""

    error: str    # "<type>: <message>" of the run
    tools: str    # the failing tool calls and their errors
    output: str   # the last output (the answer, for a run that scored low)

    @property
    def text(self) -> str:
        """The whole failure as one line: ``error: …. failing tools: …. output: …``; a
        run that did not error but scored low is ``low-scored answer: …``."""
        labelled = [f"{label}: {part}" for label, part in
                    zip(("error", "failing tools", "output" if self.error or self.tools else "low-scored answer"),
                        self) if part]
        return ". ".join(labelled) if labelled else EMPTY


EMPTY = "no error, tool failure or output recorded"


def failure_parts(error_type: str | None, error_message: str | None, failing_tools: str | None,
                  output: str | None) -> FailureParts:
    """The parts of one failure, normalized (``normalize``), error class names as words
    (``words``), each cut to its limit."""
    return FailureParts(_error_part(error_type, error_message), _tools_part(failing_tools), _output_part(output))


def _error_part(error_type: str | None, error_message: str | None) -> str:
    error = ": ".join(x.strip() for x in (error_type, error_message) if x and x.strip())
    return _cut(_readable(error), MAX_ERROR_CHARS) if error else ""


def _tools_part(failing_tools: str | None) -> str:
    tools = failing_tools.strip() if failing_tools else ""
    return _cut(_readable(tools), MAX_TOOLS_CHARS) if tools else ""


def _output_part(output: str | None) -> str:
    return _cut(normalize(message_text(output)), MAX_OUTPUT_CHARS)


def failure_text(error_type: str | None, error_message: str | None, failing_tools: str | None,
                 output: str | None) -> str:
    """One failure as one normalized line (``FailureParts.text``)."""
    return failure_parts(error_type, error_message, failing_tools, output).text


def select_failures(runs: pl.DataFrame, score_below: float) -> pl.DataFrame:
    """The runs clustering takes: ``status = 'error'``, or a latest score below
    ``score_below``. Successes and unscored ok runs are left out."""
    return runs.filter((pl.col("status") == "error") | (pl.col("score").is_not_null() & (pl.col("score") < score_below)))


def failure_frame(failures: pl.DataFrame) -> pl.DataFrame:
    """The parts and the text of every row: String columns ``error``, ``tools``,
    ``output`` and ``text``, in row order. Each distinct raw value is normalized once
    (the regexes cost ~18 µs a string; 100,000 failures hold ~75,000 distinct values)."""
    errors: dict[tuple[str | None, str | None], str] = {}
    tools: dict[str | None, str] = {}
    outputs: dict[str | None, str] = {}
    rows = []
    for error_type, message, failing, output in failures.select(
            "error_type", "error_message", "failing_tools", "output").iter_rows():
        e = errors.get((error_type, message))
        if e is None:
            e = errors[(error_type, message)] = _error_part(error_type, message)
        t = tools.get(failing)
        if t is None:
            t = tools[failing] = _tools_part(failing)
        o = outputs.get(output)
        if o is None:
            o = outputs[output] = _output_part(output)
        parts = FailureParts(e, t, o)
        rows.append((e, t, o, parts.text))
    return pl.DataFrame(rows, schema={"error": pl.String, "tools": pl.String, "output": pl.String, "text": pl.String},
                        orient="row")
