"""Versioned ability and agent-fitness suites: tests are data, checkers turn a reply into a Verdict.

A suite module (``core_v1``) defines ``SUITE_NAME``, ``SUITE_VERSION``, ``CHECKERS``
(checker id → function of the full response text and the test's data) and
``build_suite()``. This package holds what every suite shares: the data types, the
registry, ``check``, ``run_suite`` (the model call is passed in, so running is pure
apart from it; a per-test callback lets the caller record each verdict as it is made),
``score``, and the tolerant readers of model replies (reasoning blocks,
fenced code, embedded JSON, a small JSON-schema subset).

A version names frozen prompts and checkers: change either and the version changes, so
scores of different versions are never compared as if equal.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

Category = Literal["ability", "agent"]
DEFAULT_SUITE = "core"

# suite version → module; suite name → its current version
_MODULES: dict[str, str] = {"core-v1": "otelbench.bench_runner.suites.core_v1"}
_CURRENT: dict[str, str] = {"core": "core-v1"}


@dataclass(frozen=True)
class Verdict:
    """A checker's judgement of one response, with what it extracted as evidence."""

    passed: bool
    reason: str
    extracted: Any = None


@dataclass(frozen=True)
class SuiteTest:
    """One test as data: the prompt and the id and parameters of its checker."""

    name: str
    category: Category
    prompt: str
    max_tokens: int
    checker: str
    suite_version: str
    data: Mapping[str, Any] = field(default_factory=dict)
    system: str | None = None

    def messages(self) -> list[dict[str, str]]:
        """The chat messages for an OpenAI-compatible server."""
        head = [{"role": "system", "content": self.system}] if self.system else []
        return [*head, {"role": "user", "content": self.prompt}]

    @property
    def reply_key(self) -> tuple[str | None, str, int]:
        """Tests with equal keys send the same request, so they are judged on one reply."""
        return (self.system, self.prompt, self.max_tokens)


Checker = Callable[[str, Mapping[str, Any]], Verdict]


@dataclass(frozen=True)
class Suite:
    name: str
    version: str
    tests: tuple[SuiteTest, ...]
    checkers: Mapping[str, Checker]

    def test(self, name: str) -> SuiteTest:
        for test in self.tests:
            if test.name == name:
                return test
        raise KeyError(f"{self.version} has no test {name!r}")

    @property
    def replies(self) -> int:
        """How many completions running the suite asks for (tests sharing a reply ask once)."""
        return len({t.reply_key for t in self.tests})

    def first(self, replies: int) -> Suite:
        """The same suite cut to the tests judged on its first ``replies`` replies (``--quick``)."""
        keys: list[tuple[str | None, str, int]] = []
        for test in self.tests:
            if test.reply_key not in keys:
                keys.append(test.reply_key)
        kept = set(keys[:replies])
        return replace(self, tests=tuple(t for t in self.tests if t.reply_key in kept))


@dataclass(frozen=True)
class TestResult:
    """Everything needed to audit one verdict later: prompt, full reply, evidence, reason."""

    __test__ = False  # not a pytest test class, despite the name

    suite: str
    suite_version: str
    test: str
    category: Category
    checker: str
    prompt: str
    response: str
    extracted: Any
    passed: bool
    reason: str
    duration_s: float
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": "pass" if self.passed else "fail"}


def load_suite(name: str = DEFAULT_SUITE, version: str | None = None) -> Suite:
    """The suite ``name`` at ``version`` (default: its current version)."""
    version = version or _CURRENT.get(name)
    if version is None or version not in _MODULES:
        raise KeyError(f"unknown suite {name!r} version {version!r}; known: {sorted(_MODULES)}")
    suite: Suite = importlib.import_module(_MODULES[version]).build_suite()
    return suite


def check(test: SuiteTest, response: str) -> Verdict:
    """Judge ``response`` with the test's checker; a checker bug becomes a failed verdict."""
    try:
        checkers: Mapping[str, Checker] = importlib.import_module(_MODULES[test.suite_version]).CHECKERS
        return checkers[test.checker](response, test.data)
    except Exception as exc:  # a checker must never take the bench run down with it
        return Verdict(False, f"checker {test.checker} raised {type(exc).__name__}: {exc}", None)


def run_suite(
    suite: Suite,
    complete: Callable[[SuiteTest], str],
    *,
    on_result: Callable[[SuiteTest, TestResult], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> list[TestResult]:
    """Ask ``complete`` for each test's reply and check it; ``on_result`` hears each verdict.

    Tests that share a request (``SuiteTest.reply_key``: the agent-fitness tests judge one
    syslog triage in three ways) share one completion, so their verdicts describe the same
    reply. A ``complete`` that raises fails the tests of that reply, with the error kept.
    """
    replies: dict[tuple[str | None, str, int], tuple[str, str | None, float]] = {}
    results = []
    for test in suite.tests:
        key = test.reply_key
        if key not in replies:
            began = clock()
            try:
                replies[key] = (complete(test), None, clock() - began)
            except Exception as exc:  # a failed call is a failed test, not a failed run
                replies[key] = ("", f"{type(exc).__name__}: {exc}", clock() - began)
        response, error, duration = replies[key]
        verdict = check(test, response) if error is None else Verdict(False, f"no response: {error}", None)
        result = TestResult(
            suite=suite.name,
            suite_version=suite.version,
            test=test.name,
            category=test.category,
            checker=test.checker,
            prompt=test.prompt,
            response=response,
            extracted=verdict.extracted,
            passed=verdict.passed,
            reason=verdict.reason,
            duration_s=duration,
            error=error,
        )
        results.append(result)
        if on_result is not None:
            on_result(test, result)
    return results


def score(results: Sequence[TestResult]) -> dict[str, float | None]:
    """Share of passed tests per category, 0..1; None for a category with no results (not
    measured is not 0: ``--quick`` runs no agent-fitness test). A test whose request failed
    counts as failed."""

    def share(category: Category) -> float | None:
        chosen = [r for r in results if r.category == category]
        return sum(r.passed for r in chosen) / len(chosen) if chosen else None

    return {"ability": share("ability"), "agent_fitness": share("agent")}


# --- reading model replies -------------------------------------------------------------

_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
# An unclosed last fence counts: max_tokens often cuts a reply inside its code block.
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def strip_reasoning(text: str) -> str:
    """The visible answer: reasoning blocks removed, including one whose opening tag the
    chat template swallowed (only ``</think>`` left)."""
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    return text.strip()


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of each fenced block, in order."""
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]


def extract_json(text: str) -> tuple[Any, str]:
    """The JSON in a reply and how it was wrapped: "bare" or "fenced" (any JSON value), or
    "in prose" (the first object that decodes: "[877]" in a log quote is not an answer).

    Raises ``ValueError`` with a readable reason when there is none.
    """
    visible = strip_reasoning(text)
    try:
        return json.loads(visible), "bare"
    except ValueError:
        pass
    for language, body in fenced_blocks(visible):
        if language in {"", "json", "jsonc"}:
            try:
                return json.loads(body), "fenced"
            except ValueError:
                continue
    decoder = json.JSONDecoder()
    error: str | None = None
    skip_to = 0
    for match in re.finditer(r"{", visible):
        if match.start() < skip_to:
            continue  # inside a broken value: its nested parts are not the answer
        try:
            value, _ = decoder.raw_decode(visible, match.start())
        except ValueError as exc:
            error = error or str(exc)
            skip_to = _balanced_end(visible, match.start())
            continue
        return value, "in prose"
    raise ValueError(f"invalid JSON: {error}" if error else "no JSON object in the reply")


def _balanced_end(text: str, start: int) -> int:
    """Where the bracketed span opened at ``start`` closes (strings respected), or the end."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def schema_errors(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Violations of a JSON-schema subset: type, properties, required,
    additionalProperties (bool), items, minItems, minLength, minimum, maximum, enum, const.

    Hand-written because ``jsonschema`` is not a dependency and the suite uses only this.
    """
    kind = schema.get("type")
    if kind is not None and not _TYPES[kind](value):
        return [f"{path}: expected {kind}, got {type(value).__name__}"]
    errors: list[str] = []
    if "const" in schema and (value != schema["const"] or type(value) is not type(schema["const"])):
        errors.append(f"{path}: expected {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not one of {schema['enum']!r}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        errors.append(f"{path}: shorter than {schema['minLength']}")
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > {schema['maximum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        for i, item in enumerate(value):
            errors += schema_errors(item, schema.get("items", {}), f"{path}[{i}]")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        errors += [f"{path}: missing {key!r}" for key in schema.get("required", []) if key not in value]
        if schema.get("additionalProperties", True) is False:
            errors += [f"{path}: unexpected key {key!r}" for key in value if key not in properties]
        for key, sub in properties.items():
            if key in value:
                errors += schema_errors(value[key], sub, f"{path}.{key}")
    return errors
