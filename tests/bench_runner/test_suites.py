"""bench_runner.suites: checkers against tables of known good and bad replies, and one real
run of the whole suite against SmolLM2 (which fails most of it: only the evidence is checked)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from otelbench.bench_runner.suites import (
    SuiteTest,
    TestResult,
    Verdict,
    check,
    extract_json,
    load_suite,
    run_suite,
    schema_errors,
    score,
    strip_reasoning,
)
from otelbench.bench_runner.suites import core_v1

SUITE = load_suite()
LOG = core_v1.suite_data()["syslog"]["lines"]


def _verdict(test_name: str, response: str) -> Verdict:
    return check(SUITE.test(test_name), response)


def _assert_table(test_name: str, response: str, passed: bool, reason_part: str) -> None:
    verdict = _verdict(test_name, response)
    assert verdict.passed is passed, verdict
    assert reason_part.lower() in verdict.reason.lower(), verdict


# --- the suite as data -----------------------------------------------------------------


def test_suite_is_versioned_and_complete() -> None:
    assert (core_v1.SUITE_NAME, core_v1.SUITE_VERSION) == ("core", "core-v1")
    assert (SUITE.name, SUITE.version) == ("core", "core-v1")
    assert [t.name for t in SUITE.tests] == [
        "code_median", "logic_pets", "json_book", "count_stars", "summary_tunnel",
        "syslog_grounded", "syslog_format", "syslog_concise",
    ]
    assert {t.category for t in SUITE.tests[:5]} == {"ability"} and {t.category for t in SUITE.tests[5:]} == {"agent"}
    assert all(t.checker in core_v1.CHECKERS and t.suite_version == "core-v1" and t.max_tokens > 0 for t in SUITE.tests)
    assert len({t.prompt for t in SUITE.tests if t.category == "agent"}) == 1, "one shared syslog prompt"
    assert sum(" ERROR " in line for line in LOG) == core_v1.suite_data()["syslog"]["total_errors"]


def test_puzzle_has_exactly_one_solution_and_the_prompt_states_every_clue() -> None:
    puzzle = core_v1.suite_data()["puzzle"]
    assert core_v1.puzzle_solutions(puzzle) == [puzzle["solution"]]
    prompt = SUITE.test("logic_pets").prompt
    assert all(clue["text"] in prompt for clue in puzzle["clues"])


def test_median_prompt_specifies_the_edge_cases() -> None:
    prompt = SUITE.test("code_median").prompt
    assert "None for an empty list" in prompt and "Do not modify the input" in prompt
    names = {case["name"] for case in core_v1.suite_data()["median"]["cases"]}
    assert {"empty", "odd", "even", "negatives", "floats", "input not mutated"} <= names


# --- reading replies -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "visible"),
    [
        ("<think>hmm</think>\nAnswer", "Answer"),
        ("<THINK>a\nb</THINK> x <think>c</think>y", "x y"),
        ("reasoning the template opened</think>final", "final"),
        ("plain", "plain"),
    ],
)
def test_strip_reasoning(raw: str, visible: str) -> None:
    assert strip_reasoning(raw) == visible


@pytest.mark.parametrize(
    ("raw", "value", "wrapping"),
    [
        ('{"a": 1}', {"a": 1}, "bare"),
        ('```json\n{"a": 1}\n```', {"a": 1}, "fenced"),
        ('Sure! Here is the JSON:\n{"a": [1, 2]}\nHope it helps.', {"a": [1, 2]}, "in prose"),
        ('<think>{"no": 0}</think>{"a": 1}', {"a": 1}, "bare"),
    ],
)
def test_extract_json(raw: str, value: object, wrapping: str) -> None:
    assert extract_json(raw) == (value, wrapping)


@pytest.mark.parametrize(("raw", "message"), [("no json here", "no JSON"), ("see postgres[877] and [1, 2]", "no JSON"), ("{'a': 1,}", "invalid JSON"), ('x {"a": {"b": 1},} y', "invalid JSON")])
def test_extract_json_failures(raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        extract_json(raw)


@pytest.mark.parametrize(
    ("value", "schema", "errors"),
    [
        (1, {"type": "integer"}, []),
        (True, {"type": "integer"}, ["$: expected integer, got bool"]),
        (1.0, {"type": "number", "minimum": 2}, ["$: 1.0 < 2"]),
        ("", {"type": "string", "minLength": 1}, ["$: shorter than 1"]),
        ([], {"type": "array", "minItems": 1}, ["$: fewer than 1 items"]),
        (["a", 2], {"type": "array", "items": {"type": "string"}}, ["$[1]: expected string, got int"]),
        ({"a": 1, "b": 2}, {"type": "object", "required": ["c"], "additionalProperties": False, "properties": {"a": {}}},
         ["$: missing 'c'", "$: unexpected key 'b'"]),
        ({"y": 1970}, {"properties": {"y": {"const": 1969}}}, ["$.y: expected 1969, got 1970"]),
        ("x", {"enum": ["a", "b"]}, ["$: 'x' not one of ['a', 'b']"]),
    ],
)
def test_schema_subset(value: object, schema: dict, errors: list[str]) -> None:
    assert schema_errors(value, schema) == errors


# --- code generation -------------------------------------------------------------------

GOOD_MEDIAN = """def median_of_list(numbers):
    if not numbers:
        return None
    s = sorted(numbers)
    mid = len(s) // 2
    if len(s) % 2:
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2
"""


@pytest.mark.parametrize(
    ("response", "passed", "reason"),
    [
        (f"Sure! Here is the function:\n\n```python\n{GOOD_MEDIAN}```\nIt sorts a copy, so the input is untouched.", True, "9/9 cases"),
        (f"<think>I need to sort a copy. def median_of_list(x): pass</think>\n```py\n{GOOD_MEDIAN}```", True, "9/9"),
        (f"Here you go:\n\n{GOOD_MEDIAN}\nThis works by sorting a copy of the list.", True, "9/9"),
        ("```python\nimport statistics\n\ndef median_of_list(numbers):\n    return statistics.median(numbers) if numbers else None\n```", True, "9/9"),
        (f"```python\n{GOOD_MEDIAN}", True, "9/9"),  # cut off by max_tokens before the closing fence
        (f"```python\n{GOOD_MEDIAN}\nif __name__ == '__main__':\n    print(median_of_list(input()))\n```", True, "9/9"),
        (GOOD_MEDIAN.replace("(s[mid - 1] + s[mid]) / 2", "s[mid]"), False, "even (got 3, expected 2.5)"),
        (GOOD_MEDIAN.replace("s = sorted(numbers)", "numbers.sort()\n    s = numbers"), False, "input not mutated (modified the input list)"),
        (GOOD_MEDIAN.replace("    if not numbers:\n        return None\n", ""), False, "empty (raised IndexError"),
        (GOOD_MEDIAN.replace("return s[mid]", "return str(s[mid])"), False, "odd (got \"'2'\""),
        ("The median is the middle value of a sorted list.", False, "no parsable python"),
        ("```python\ndef median_of_list(numbers)\n    return None\n```", False, "no parsable python"),
        ("```python\nimport sys\nsys.exit(3)\ndef median_of_list(numbers):\n    return None\n```", False, "did not load: SystemExit"),
    ],
)
def test_median_checker(response: str, passed: bool, reason: str) -> None:
    _assert_table("code_median", response, passed, reason)


def test_median_checker_records_sandbox_evidence() -> None:
    verdict = _verdict("code_median", f"```python\n{GOOD_MEDIAN}```")
    assert verdict.extracted["code"].startswith("def median_of_list")
    assert [case["name"] for case in verdict.extracted["cases"]][:3] == ["empty", "single", "odd"]
    assert {"network", "user", "rlimits"} <= set(verdict.extracted["sandbox"]["isolation"])


def test_median_checker_survives_a_hanging_solution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core_v1, "_SANDBOX_TIMEOUT_S", 1.5)
    verdict = _verdict("code_median", "```python\ndef median_of_list(numbers):\n    while True:\n        pass\n```")
    assert not verdict.passed and "timed out" in verdict.reason


# --- logic puzzle ----------------------------------------------------------------------

PETS_OK = {"Alice": "parrot", "Bob": "dog", "Carol": "fish", "Dave": "cat"}


@pytest.mark.parametrize(
    ("response", "passed", "reason"),
    [
        ("Alice: parrot\nBob: dog\nCarol: fish\nDave: cat", True, "all four"),
        ("Alice has the parrot, Bob has the dog, Carol has the fish and Dave has the cat.", True, "all four"),
        ("Alice - Parrot\nBob - Dog\nCarol - Fish\nDave - Cat", True, "all four"),
        ("| Person | Pet |\n|---|---|\n| Alice | parrot |\n| Bob | dog |\n| Carol | fish |\n| Dave | cat |", True, "all four"),
        ("Alice's pet is the parrot. Bob owns the dog. The goldfish belongs to Carol. The cat is owned by Dave.", True, "all four"),
        (
            "Clue 1: Alice does not own the dog or the fish.\nSo Bob cannot have the cat.\nIf Alice had the cat, Dave would need the parrot.\n\n"
            "**Final answer:**\n- **Alice**: Parrot\n- **Bob**: Dog\n- **Carol**: Fish\n- **Dave**: Cat",
            True,
            "all four",
        ),
        ("Alice looks after the parrot; Bob walks the dog; Carol feeds the fish; Dave brushes the cat.", True, "all four"),
        ("<think>Alice: cat\nBob: fish</think>\nAlice: parrot\nBob: dog\nCarol: fish\nDave: cat", True, "all four"),
        ("Alice: cat\nBob: dog\nCarol: fish\nDave: parrot\nWait, that breaks clue 5. Corrected:\nAlice: parrot\nDave: cat", True, "all four"),
        ("Alice: parrot\nBob: dog\nCarol: cat\nDave: fish", False, "Carol: got cat, expected fish; Dave: got fish, expected cat"),
        ("Alice: parrot\nBob: dog\nCarol: fish", False, "Dave: got nothing, expected cat"),
        ("Alice does not own the dog. Bob does not own the cat.", False, "Alice: got nothing"),
        ("I am not sure who owns which pet.", False, "got nothing"),
    ],
)
def test_pet_puzzle_checker(response: str, passed: bool, reason: str) -> None:
    _assert_table("logic_pets", response, passed, reason)
    if passed:
        assert _verdict("logic_pets", response).extracted == PETS_OK


# --- JSON compliance -------------------------------------------------------------------

BOOK = {"title": "The Left Hand of Darkness", "author": "Ursula K. Le Guin", "year": 1969,
        "genres": ["science fiction", "anthropological fiction"], "won_hugo": True}


def _book(**changes: object) -> str:
    value = {**BOOK, **changes}
    return json.dumps({k: v for k, v in value.items() if v is not ...})


@pytest.mark.parametrize(
    ("response", "passed", "reason"),
    [
        (_book(), True, "JSON bare"),
        (f"```json\n{_book()}\n```", True, "JSON fenced"),
        (f"Sure! Here is the JSON you asked for:\n{_book()}", True, "JSON in prose"),
        (f"<think>keys: title...</think>{_book()}", True, "valid"),
        ("{'title': 'The Left Hand of Darkness', 'year': 1969}", False, "invalid JSON"),
        (_book()[:-1] + ",}", False, "invalid JSON"),
        (_book(year="1969"), False, "$.year: expected integer, got str"),
        (_book(year=1970), False, "$.year: expected 1969"),
        (_book(pages=304), False, "unexpected key 'pages'"),
        (_book(won_hugo=...), False, "missing 'won_hugo'"),
        (_book(won_hugo="yes"), False, "$.won_hugo: expected boolean"),
        (_book(genres=[]), False, "fewer than 1 items"),
        ("The book is The Left Hand of Darkness.", False, "no JSON"),
    ],
)
def test_json_schema_checker(response: str, passed: bool, reason: str) -> None:
    _assert_table("json_book", response, passed, reason)


# --- instruction following -------------------------------------------------------------

STARS = "1\n2*\n3\n4*\n5\n6*\n7\n8*\n9\n10*\n55"


@pytest.mark.parametrize(
    ("response", "passed", "reason"),
    [
        (STARS, True, "exactly"),
        ("\n" + STARS.replace("\n", "  \n") + "\n", True, "exactly"),
        (f"```\n{STARS}\n```", True, "inside a code fence"),
        (f"<think>evens get a star</think>\n{STARS}", True, "exactly"),
        (f"Sure! Here are the numbers:\n{STARS}", False, "line 1: got 'Sure! Here are the numbers:'"),
        (STARS.replace("55", "56"), False, "line 11: got '56', expected '55'"),
        (STARS.replace("3\n", "3*\n"), False, "line 3: got '3*'"),
        (STARS.replace("2*", "2 *"), False, "line 2"),
        (STARS.replace("\n55", ""), False, "10 lines, expected 11"),
        ("1, 2*, 3, 4*, 5, 6*, 7, 8*, 9, 10*, 55", False, "line 1"),
    ],
)
def test_exact_lines_checker(response: str, passed: bool, reason: str) -> None:
    _assert_table("count_stars", response, passed, reason)


# --- summarization ---------------------------------------------------------------------

SUMMARY = ("Lindenfeld opened the Weser Crossing on 14 March 2023: a 2.4-kilometre tunnel built by "
           "Hartmann & Sons for 310 million euros. About 22,000 vehicles a day are expected, and "
           "commutes to Brake get 12 minutes shorter.")


@pytest.mark.parametrize(
    ("response", "passed", "reason"),
    [
        (SUMMARY, True, "all 6 facts"),
        ("In March 2023 Hartmann & Sons' 2.4 km tunnel (€310m) opened; 22 000 vehicles/day, twelve minutes saved.", True, "all 6 facts"),
        (f"<think>six facts</think>**Summary:** {SUMMARY}", True, "all 6 facts"),
        (SUMMARY.replace("built by Hartmann & Sons ", ""), False, "missing: built by Hartmann & Sons"),
        (SUMMARY.replace("12 minutes", "15 minutes"), False, "missing: commute 12 minutes shorter"),
        (SUMMARY.replace("22,000", "20,000"), False, "missing: 22,000 vehicles"),
        (core_v1.suite_data()["summary"]["paragraph"], False, "words > 60"),
    ],
)
def test_key_facts_checker(response: str, passed: bool, reason: str) -> None:
    _assert_table("summary_tunnel", response, passed, reason)


# --- agent fitness: the syslog triage ------------------------------------------------

TRIAGE = {
    "services": [
        {"name": "nginx", "errors": 2, "example": LOG[2]},
        {"name": "postgres", "errors": 3, "example": LOG[4]},
        {"name": "payments-api", "errors": 2, "example": LOG[8]},
        {"name": "kernel", "errors": 1, "example": LOG[11]},
    ],
    "total_errors": 8,
    "scan_period": "2024-05-02T03:10:02Z to 2024-05-02T03:33:46Z",
}


def _triage(**changes: object) -> str:
    return json.dumps({**TRIAGE, **changes})


def _with_example(i: int, example: str) -> str:
    services = [dict(s) for s in TRIAGE["services"]]
    services[i]["example"] = example
    return _triage(services=services)


INVENTED = "2024-05-02T03:40:00Z web-01 redis[99]: ERROR MISCONF snapshot failed"


@pytest.mark.parametrize(
    ("response", "passed", "reason"),
    [
        (_triage(), True, "grounded: 4 citations"),
        (f"```json\n{_triage()}\n```", True, "grounded"),
        (_with_example(0, "03:12:07 nginx[1123]: ERROR upstream timed out (110: Connection timed out)..."), True, "grounded"),
        (f"The worst is postgres: `{LOG[4]}` and nginx: \"{LOG[14]}\".", True, "grounded: 2"),
        (_with_example(3, INVENTED), False, "not in the log: " + INVENTED),
        (_with_example(0, LOG[2].replace("03:12:07", "03:13:07")), False, "time 03:13:07"),
        (_with_example(1, "2024-05-02T03:12:11Z db-01 postgres[877]: ERROR disk full on /var/lib/postgresql"), False, "not in the log"),
        (_triage(services=[*TRIAGE["services"], {"name": "redis", "errors": 1}]), False, "service 'redis'"),
        (_triage(scan_period="2024-05-01T00:00:00Z to 2024-05-02T03:33:46Z"), False, "date 2024-05-01"),
        (f"Errors seen:\n{INVENTED}\n{LOG[2]}", False, "redis[99]"),
        ("I cannot help with that.", False, "does not engage"),
    ],
)
def test_syslog_grounded_checker(response: str, passed: bool, reason: str) -> None:
    _assert_table("syslog_grounded", response, passed, reason)


@pytest.mark.parametrize(
    ("response", "passed", "reason"),
    [
        (_triage(), True, "total correct (JSON bare)"),
        (f"<think>count ERROR lines</think>```json\n{_triage()}\n```", True, "JSON fenced"),
        (_triage(total_errors=7), False, "total_errors is 7, the log has 8"),
        (_triage(total_errors=11), False, "total_errors is 11"),
        (_triage(total_errors="8"), False, "$.total_errors: expected integer"),
        (json.dumps({k: v for k, v in TRIAGE.items() if k != "scan_period"}), False, "missing 'scan_period'"),
        (_triage(services={"nginx": 2}), False, "$.services: expected array"),
        (_triage(services=[]), False, "fewer than 1 items"),
        (_triage(services=[{"name": "nginx", "errors": "two"}]), False, "$.services[0].errors: expected integer"),
        (_triage()[:-2], False, "invalid JSON"),
        ("There were 8 errors between 03:10 and 03:33.", False, "no JSON"),
    ],
)
def test_syslog_format_checker(response: str, passed: bool, reason: str) -> None:
    _assert_table("syslog_format", response, passed, reason)


@pytest.mark.parametrize(
    ("response", "passed", "flag"),
    [
        (_triage(), True, "OK"),
        (f"<think>{'long reasoning ' * 500}</think>{_triage()}", True, "OK"),
        ("Here is a detailed walk through every line of the log.\n" + "\n".join(LOG) + "\n" + _triage(), False, "VERBOSE"),
        ("", False, "EMPTY"),
    ],
)
def test_syslog_concise_checker(response: str, passed: bool, flag: str) -> None:
    verdict = _verdict("syslog_concise", response)
    assert verdict.passed is passed and verdict.extracted["flag"] == flag, verdict
    if flag == "VERBOSE":
        assert verdict.reason.startswith("VERBOSE") and verdict.extracted["ratio"] > verdict.extracted["max_ratio"]


# --- running and scoring ---------------------------------------------------------------

PERFECT = {
    "code_median": f"```python\n{GOOD_MEDIAN}```",
    "logic_pets": "Alice: parrot\nBob: dog\nCarol: fish\nDave: cat",
    "json_book": _book(),
    "count_stars": STARS,
    "summary_tunnel": SUMMARY,
    "syslog_grounded": _triage(),
}


def test_run_suite_shares_one_reply_between_the_agent_tests_and_scores_it() -> None:
    asked: list[str] = []

    def complete(test: SuiteTest) -> str:
        asked.append(test.name)
        return PERFECT[test.name]

    results = run_suite(SUITE, complete)
    assert asked == list(PERFECT), "the three syslog tests share one completion"
    assert all(r.passed for r in results), [(r.test, r.reason) for r in results if not r.passed]
    assert score(results) == {"ability": 1.0, "agent_fitness": 1.0}
    assert len({r.response for r in results if r.category == "agent"}) == 1


def test_on_result_hears_every_verdict_in_order_as_it_is_made() -> None:
    heard: list[tuple[str, str, bool]] = []
    results = run_suite(SUITE, lambda test: PERFECT[test.name],
                        on_result=lambda test, result: heard.append((test.name, result.test, result.passed)))
    assert heard == [(r.test, r.test, r.passed) for r in results]
    assert [name for name, _, _ in heard] == [t.name for t in SUITE.tests]


def test_first_keeps_the_tests_of_the_first_replies() -> None:
    assert SUITE.replies == len(PERFECT) < len(SUITE.tests)  # the syslog tests share a reply
    quick = SUITE.first(2)
    assert [t.name for t in quick.tests] == list(PERFECT)[:2] and quick.replies == 2
    assert quick.version == SUITE.version
    assert SUITE.first(SUITE.replies).tests == SUITE.tests


def test_a_failing_model_call_is_a_failed_result_not_a_crash() -> None:
    def complete(test: SuiteTest) -> str:
        raise ConnectionError("server went away")

    results = run_suite(SUITE, complete)
    assert len(results) == len(SUITE.tests)
    assert all(not r.passed and r.error == "ConnectionError: server went away" for r in results)
    assert all(r.reason.startswith("no response") for r in results)


def test_a_broken_checker_is_a_failed_verdict() -> None:
    test = SuiteTest("x", "ability", "p", 10, "median_code", "core-v1", data={})
    verdict = check(test, "anything")
    assert not verdict.passed and "checker median_code raised KeyError" in verdict.reason


def _result(category: str, passed: bool) -> TestResult:
    return TestResult("core", "core-v1", "t", category, "c", "p", "r", None, passed, "why", 0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        ([], {"ability": None, "agent_fitness": None}),  # not measured is not 0
        ([_result("ability", True), _result("ability", False)], {"ability": 0.5, "agent_fitness": None}),
        ([_result("agent", True), _result("agent", True), _result("agent", False), _result("ability", True)],
         {"ability": 1.0, "agent_fitness": 2 / 3}),
    ],
)
def test_score(results: list[TestResult], expected: dict[str, float]) -> None:
    assert score(results) == expected


# --- the real model ------------------------------------------------------------------


@pytest.mark.model
def test_whole_suite_against_smollm2(llama_server) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=llama_server.base_url, api_key="none", timeout=300)
    complete: Callable[[SuiteTest], str] = lambda test: client.chat.completions.create(  # noqa: E731
        model=llama_server.model_id,
        messages=test.messages(),  # type: ignore[arg-type]
        max_tokens=min(test.max_tokens, 128),  # evidence, not ability, is under test
        temperature=0,
    ).choices[0].message.content or ""

    results = run_suite(SUITE, complete)
    assert [r.test for r in results] == [t.name for t in SUITE.tests]
    for result, test in zip(results, SUITE.tests):
        record = result.to_dict()
        assert record["suite_version"] == "core-v1" and record["suite"] == "core"
        assert record["prompt"] == test.prompt
        assert record["error"] is None, record["error"]
        assert isinstance(record["response"], str) and record["response"], f"{test.name}: empty reply"
        assert record["verdict"] in {"pass", "fail"} and isinstance(record["passed"], bool)
        assert record["reason"]
        assert "extracted" in record
        json.dumps(record)  # every result can be stored as it is
    scores = score(results)
    assert set(scores) == {"ability", "agent_fitness"} and all(0.0 <= v <= 1.0 for v in scores.values())
    print("SmolLM2 core-v1:", scores, [(r.test, r.passed, r.reason[:80]) for r in results])
