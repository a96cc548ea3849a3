"""core-v1: five ability tests and three agent-fitness tests; prompts and answers in core_v1.json.

Ability: a median function run in the sandbox against nine cases, a pets logic puzzle
with a unique solution, JSON against a schema, an exact line format, and a summary that
must keep six facts. Agent fitness: one syslog-triage prompt judged three ways, so one
reply answers for grounding (nothing invented), format (the JSON contract, correct
total) and conciseness (reply size against log size).

Checkers read replies tolerantly (reasoning blocks, fences, polite preambles) because
they grade the ability, not the manners; what they tolerated is said in the reason.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import textwrap
from itertools import permutations
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from otelbench.bench_runner.sandbox import run_python
from otelbench.bench_runner.suites import (
    Checker,
    Suite,
    SuiteTest,
    Verdict,
    extract_json,
    fenced_blocks,
    schema_errors,
    strip_reasoning,
)

SUITE_NAME = "core"
SUITE_VERSION = "core-v1"
DATA_FILE = Path(__file__).with_name("core_v1.json")
_SANDBOX_TIMEOUT_S = 10.0
_MAX_CODE_LINES = 400


@functools.cache
def suite_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    if (data["suite"], data["version"]) != (SUITE_NAME, SUITE_VERSION):
        raise ValueError(f"{DATA_FILE} holds {data['suite']} {data['version']}, not {SUITE_VERSION}")
    return data


def build_suite() -> Suite:
    d = suite_data()
    puzzle = d["puzzle"]
    clues = [f"{i}. {clue['text']}" for i, clue in enumerate(puzzle["clues"], 1)]
    summary = d["summary"]
    syslog = d["syslog"]
    triage = "\n".join([*syslog["prompt_head"], *syslog["lines"]])

    def test(name: str, category: str, prompt: str, max_tokens: int, checker: str, data: Mapping[str, Any]) -> SuiteTest:
        return SuiteTest(name, category, prompt, max_tokens, checker, SUITE_VERSION, data)  # type: ignore[arg-type]

    tests = (
        test("code_median", "ability", "\n".join(d["median"]["prompt"]), d["median"]["max_tokens"], "median_code", d["median"]),
        test("logic_pets", "ability", "\n".join([*puzzle["prompt_head"], *clues, puzzle["prompt_tail"]]), puzzle["max_tokens"], "pet_puzzle", puzzle),
        test("json_book", "ability", "\n".join(d["json_book"]["prompt"]), d["json_book"]["max_tokens"], "json_schema", d["json_book"]),
        test("count_stars", "ability", "\n".join(d["count_stars"]["prompt"]), d["count_stars"]["max_tokens"], "exact_lines", d["count_stars"]),
        test("summary_tunnel", "ability", f"{summary['prompt_head']}\n\n{summary['paragraph']}", summary["max_tokens"], "key_facts", summary),
        test("syslog_grounded", "agent", triage, syslog["max_tokens"], "syslog_grounded", syslog),
        test("syslog_format", "agent", triage, syslog["max_tokens"], "syslog_format", syslog),
        test("syslog_concise", "agent", triage, syslog["max_tokens"], "syslog_concise", syslog),
    )
    return Suite(SUITE_NAME, SUITE_VERSION, tests, CHECKERS)


# --- code generation -------------------------------------------------------------------


def extract_code(response: str, function: str) -> str | None:
    """Python source defining ``function`` at top level, from fences or surrounding prose."""
    visible = strip_reasoning(response)
    sources = [body for lang, body in fenced_blocks(visible) if lang in {"", "python", "py", "python3"}]
    sources.append(visible)
    if visible != response.strip():
        sources.append(response)  # a reply that never closed its reasoning may hold the only code
    for source in sources:
        code = _parsable_definition(source, function)
        if code is not None:
            return code
    return None


def _defines(code: str, function: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.FunctionDef) and node.name == function for node in tree.body)


def _parsable_definition(text: str, function: str) -> str | None:
    if _defines(text, function):
        return text.strip("\n")
    lines = text.splitlines()[:_MAX_CODE_LINES]
    start = next((i for i, line in enumerate(lines) if re.match(rf"\s*def\s+{function}\s*\(", line)), None)
    if start is None:
        return None
    imports = [line.strip() for line in lines[:start] if re.match(r"\s*(import\s|from\s+\S+\s+import\s)", line)]
    # Prose after the code is not Python: drop trailing lines until the rest parses.
    for end in range(len(lines), start, -1):
        code = "\n".join([*imports, textwrap.dedent("\n".join(lines[start:end]))])
        if _defines(code, function):
            return code
    return None


_MEDIAN_HARNESS = """
import copy, json, math, runpy
CASES = json.loads({cases!r})
FUNCTION = {function!r}

def same(got, expected):
    if expected is None:
        return got is None
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    return math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9)

verdict = {{"cases": [], "load_error": None}}
try:
    fn = runpy.run_path("solution.py", run_name="solution")[FUNCTION]
except BaseException as exc:
    verdict["load_error"] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
else:
    for case in CASES:
        numbers = copy.deepcopy(case["input"])
        row = {{"name": case["name"], "expected": case["expected"]}}
        try:
            got = fn(numbers)
            row["got"] = got if got is None or isinstance(got, (int, float)) else repr(got)[:100]
            row["mutated"] = numbers != case["input"]
            row["ok"] = same(got, case["expected"]) and not row["mutated"]
        except BaseException as exc:
            row.update(ok=False, error="%s: %s" % (type(exc).__name__, str(exc)[:200]))
        verdict["cases"].append(row)
with open("verdict.json", "w") as f:
    json.dump(verdict, f)
"""


def check_median_code(response: str, data: Mapping[str, Any]) -> Verdict:
    function = data["function"]
    code = extract_code(response, function)
    if code is None:
        return Verdict(False, f"no parsable Python defining {function}()", {"code": None})
    harness = _MEDIAN_HARNESS.format(cases=json.dumps(data["cases"]), function=function)
    result = run_python(code, harness, timeout_s=_SANDBOX_TIMEOUT_S)
    verdict = result.verdict or {}
    cases = verdict.get("cases") or []
    evidence = {
        "code": code,
        "cases": cases,
        "sandbox": {
            "ok": result.ok,
            "timed_out": result.timed_out,
            "killed_by_signal": result.killed_by_signal,
            "exit_code": result.exit_code,
            "stderr_tail": result.stderr_tail[-2000:],
            "isolation": result.isolation,
        },
    }
    if result.timed_out:
        return Verdict(False, f"sandbox: timed out after {_SANDBOX_TIMEOUT_S:g}s", evidence)
    if not result.verdict:
        why = f"killed by signal {result.killed_by_signal}" if result.killed_by_signal else result.verdict_error
        return Verdict(False, f"sandbox: no verdict ({why}); stderr: {result.stderr_tail[-300:]!r}", evidence)
    if verdict.get("load_error"):
        return Verdict(False, f"the code did not load: {verdict['load_error']}", evidence)
    failed = [_case_failure(case) for case in cases if not case.get("ok")]
    if failed or len(cases) != len(data["cases"]):
        return Verdict(False, "failed cases: " + "; ".join(failed), evidence)
    return Verdict(True, f"{len(cases)}/{len(cases)} cases passed in the sandbox", evidence)


def _case_failure(case: Mapping[str, Any]) -> str:
    if "error" in case:
        return f"{case['name']} (raised {case['error']})"
    if case.get("mutated"):
        return f"{case['name']} (modified the input list)"
    return f"{case['name']} (got {case.get('got')!r}, expected {case['expected']!r})"


# --- logic puzzle ----------------------------------------------------------------------

_NEGATION = re.compile(r"\b(not|no|neither|nor|never|cannot|without|except|if)\b|n't|\?", re.IGNORECASE)
_ANSWER_MARK = re.compile(r"\b(final answer|answer|solution)\b", re.IGNORECASE)


def puzzle_solutions(puzzle: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every assignment satisfying the clues, by brute force (a good puzzle has exactly one)."""
    people, solutions = puzzle["people"], []
    for pets in permutations(puzzle["pets"]):
        owns = dict(zip(people, pets))
        owner = {pet: person for person, pet in owns.items()}
        if all(_holds(rule, owns, owner, people) for clue in puzzle["clues"] for rule in clue["rules"]):
            solutions.append(owns)
    return solutions


def _holds(rule: list[str], owns: dict[str, str], owner: dict[str, str], people: list[str]) -> bool:
    kind, a, b = rule
    if kind == "not":
        return owns[a] != b
    if kind == "is":
        return owns[a] == b
    if kind == "before":  # the owner of pet a comes earlier in the alphabet than the owner of pet b
        return people.index(owner[a]) < people.index(owner[b])
    raise ValueError(f"unknown rule {kind!r}")


def extract_pets(response: str, people: list[str], synonyms: Mapping[str, list[str]]) -> dict[str, str]:
    """Person → pet as the reply states it; a later statement about a person wins."""
    canonical = {word: pet for pet, words in synonyms.items() for word in words}
    person = "(" + "|".join(map(re.escape, people)) + ")"
    pet = r"(" + "|".join(sorted(map(re.escape, canonical), key=len, reverse=True)) + r")(?:e?s)?\b"
    article = r"(?:(?:the|a|an|one)\s+)?"
    link = r"(?:\s*(?:->|[:=|>\u2192\u2013\u2014-])+\s*|\s+(?:has|owns|keeps|gets|takes|is with|ends up with)\s+|'s\s+pet\s+is\s+|'s\s+)"
    direct = re.compile(rf"\b{person}\b{link}{article}{pet}", re.IGNORECASE)
    reverse = re.compile(rf"\b{pet}\s+(?:belongs to|is owned by|goes to|is with)\s+{person}\b", re.IGNORECASE)
    people_re, pets_re = re.compile(rf"\b{person}\b", re.IGNORECASE), re.compile(rf"\b{pet}", re.IGNORECASE)
    by_name = {p.lower(): p for p in people}

    def read(text: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for line in text.replace("\u2019", "'").splitlines():
            line = re.sub(r"[*_`#]", "", line)
            pairs = [(m.start(), m.group(1), m.group(2)) for m in direct.finditer(line)]
            pairs += [(m.start(), m.group(2), m.group(1)) for m in reverse.finditer(line)]
            if not pairs:  # "| Alice | parrot |", "Alice takes care of the parrot"
                for order, part in enumerate(re.split(r";|,|\.\s|\band\b", line)):
                    names, animals = people_re.findall(part), pets_re.findall(part)
                    if len(set(names)) == 1 and len(set(animals)) == 1 and not _NEGATION.search(part):
                        pairs.append((order, names[0], animals[0]))
            for _, name, animal in sorted(pairs):
                found[by_name[name.lower()]] = canonical[animal.lower()]
        return found

    visible = strip_reasoning(response)
    marks = list(_ANSWER_MARK.finditer(visible))
    if marks:  # prefer the stated final answer when it names everyone
        tail = read(visible[marks[-1].start() :])
        if len(tail) == len(people):
            return tail
    return read(visible)


def check_pet_puzzle(response: str, data: Mapping[str, Any]) -> Verdict:
    answer = extract_pets(response, data["people"], data["synonyms"])
    solution = data["solution"]
    wrong = [f"{p}: got {answer.get(p) or 'nothing'}, expected {solution[p]}" for p in data["people"] if answer.get(p) != solution[p]]
    if wrong:
        return Verdict(False, "; ".join(wrong), answer)
    return Verdict(True, "all four person-pet pairs are correct", answer)


# --- JSON, exact format, summary -------------------------------------------------------


def check_json_schema(response: str, data: Mapping[str, Any]) -> Verdict:
    try:
        value, wrapping = extract_json(response)
    except ValueError as exc:
        return Verdict(False, str(exc), None)
    errors = schema_errors(value, data["schema"])
    if errors:
        return Verdict(False, "schema: " + "; ".join(errors[:8]), value)
    return Verdict(True, f"valid against the schema (JSON {wrapping})", value)


def check_exact_lines(response: str, data: Mapping[str, Any]) -> Verdict:
    visible, note = strip_reasoning(response), ""
    blocks = fenced_blocks(visible)
    if len(blocks) == 1 and visible.startswith("```") and visible.endswith("```"):
        visible, note = blocks[0][1], " (inside a code fence)"
    lines = [line.strip() for line in visible.strip().splitlines()]
    expected: list[str] = data["expected_lines"]
    if lines == expected:
        return Verdict(True, f"exactly the {len(expected)} expected lines{note}", lines)
    for i, (got, want) in enumerate(zip(lines, expected), 1):
        if got != want:
            return Verdict(False, f"line {i}: got {got!r}, expected {want!r}", lines)
    return Verdict(False, f"{len(lines)} lines, expected {len(expected)}", lines)


def _normalized(text: str) -> str:
    text = text.lower().replace("\u00a0", " ").replace("\u2009", " ").replace("\u202f", " ")
    return re.sub(r"(?<=\d)[, '](?=\d{3}\b)", "", text)  # 22,000 / 22 000 -> 22000


def check_key_facts(response: str, data: Mapping[str, Any]) -> Verdict:
    visible = strip_reasoning(response)
    text, words = _normalized(visible), len(visible.split())
    found = {
        fact["name"]: any(all(re.search(p, text) for p in group) for group in fact["any"]) for fact in data["facts"]
    }
    missing = [name for name, ok in found.items() if not ok]
    problems = ([f"missing: {', '.join(missing)}"] if missing else []) + (
        [f"{words} words > {data['max_words']}"] if words > data["max_words"] else []
    )
    evidence = {"facts": found, "words": words}
    if problems:
        return Verdict(False, "; ".join(problems), evidence)
    return Verdict(True, f"all {len(found)} facts in {words} words", evidence)


# --- agent fitness: one syslog triage, judged three ways ------------------------------

_TIME = re.compile(r"(?<!\d)\d{2}:\d{2}:\d{2}(?!\d)")  # not \b: "T03:12:07Z" has no word boundary
_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
_STAMP = re.compile(r"^\s*(?:\d{4}-\d{2}-\d{2}[T ])?\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?\s*")
_LOGGISH = re.compile(r"\b(ERROR|WARN|INFO)\b|[\w.-]+\[\d+\]:|\bkernel:")
_QUOTED = re.compile(r"\"([^\"\n]{15,})\"|`([^`\n]{15,})`")


def _squash(text: str) -> str:
    return " ".join(text.split())


def _citations(visible: str) -> list[str]:
    """Strings the reply presents as log lines: JSON strings, quotes, or lines led by a time."""
    try:
        value: Any = extract_json(visible)[0]
    except ValueError:
        value = None
    if isinstance(value, dict):
        strings = _strings(value)
    else:
        strings = [a or b for a, b in _QUOTED.findall(visible)]
        strings += [line for line in visible.splitlines() if _STAMP.match(line) and _LOGGISH.search(line)]
    return [s.strip() for s in strings if _LOGGISH.search(s) and len(s.strip()) >= 15]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _grounded(citation: str, lines: list[str]) -> bool:
    """A citation exists when, past a (possibly reformatted) timestamp, it is part of a log
    line carrying that same time; a trailing ellipsis marks a shortened quote."""
    stamp = _STAMP.match(citation)
    rest = _squash(citation[stamp.end() :] if stamp else citation).rstrip(".\u2026 ")
    when = _TIME.search(stamp.group(0)) if stamp else None
    return any(rest in _squash(line) and (when is None or when.group(0) in line) for line in lines)


def _services(lines: list[str]) -> set[str]:
    return {m.group(1) for line in lines if (m := re.search(r"\s([\w.-]+)(?:\[\d+\])?: (?:ERROR|WARN|INFO)\b", line))}


def check_syslog_grounded(response: str, data: Mapping[str, Any]) -> Verdict:
    lines: list[str] = data["lines"]
    log, visible = "\n".join(lines), strip_reasoning(response)
    invented = [c for c in _citations(visible) if not _grounded(c, lines)]
    invented += [f"time {t}" for t in sorted(set(_TIME.findall(visible)) - set(_TIME.findall(log)))]
    invented += [f"date {d}" for d in sorted(set(_DATE.findall(visible)) - set(_DATE.findall(log)))]
    known = _services(lines)
    try:
        value, _ = extract_json(visible)
        named = [s.get("name") for s in value.get("services", []) if isinstance(s, dict)] if isinstance(value, dict) else []
    except ValueError:
        named = []
    invented += [f"service {n!r}" for n in named if isinstance(n, str) and n not in known]
    mentioned = sorted(s for s in known if re.search(rf"\b{re.escape(s)}\b", visible))
    evidence = {"citations": _citations(visible), "invented": invented, "services_mentioned": mentioned}
    if invented:
        return Verdict(False, "not in the log: " + "; ".join(invented[:6]), evidence)
    if not mentioned:
        return Verdict(False, "does not engage with the log: names none of its services", evidence)
    return Verdict(True, f"grounded: {len(evidence['citations'])} citations, all in the log", evidence)


def check_syslog_format(response: str, data: Mapping[str, Any]) -> Verdict:
    try:
        value, wrapping = extract_json(response)
    except ValueError as exc:
        return Verdict(False, str(exc), None)
    errors = schema_errors(value, data["schema"])
    if not errors and value["total_errors"] != data["total_errors"]:
        errors.append(f"total_errors is {value['total_errors']}, the log has {data['total_errors']}")
    if errors:
        return Verdict(False, "; ".join(errors[:8]), value)
    return Verdict(True, f"services/total_errors/scan_period as asked, total correct (JSON {wrapping})", value)


def check_syslog_concise(response: str, data: Mapping[str, Any]) -> Verdict:
    visible = strip_reasoning(response)  # reasoning is the model's business; the reply is ours
    log_chars = len("\n".join(data["lines"]))
    ratio = len(visible) / log_chars
    evidence = {"output_chars": len(visible), "input_chars": log_chars, "ratio": round(ratio, 3), "max_ratio": data["max_ratio"]}
    if not visible:
        return Verdict(False, "empty reply", {**evidence, "flag": "EMPTY"})
    if ratio > data["max_ratio"]:
        return Verdict(False, f"VERBOSE: {len(visible)} chars for a {log_chars}-char log (ratio {ratio:.2f} > {data['max_ratio']})", {**evidence, "flag": "VERBOSE"})
    return Verdict(True, f"concise: ratio {ratio:.2f} <= {data['max_ratio']}", {**evidence, "flag": "OK"})


CHECKERS: dict[str, Checker] = {
    "median_code": check_median_code,
    "pet_puzzle": check_pet_puzzle,
    "json_schema": check_json_schema,
    "exact_lines": check_exact_lines,
    "key_facts": check_key_facts,
    "syslog_grounded": check_syslog_grounded,
    "syslog_format": check_syslog_format,
    "syslog_concise": check_syslog_concise,
}
