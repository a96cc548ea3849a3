"""Versioned agent benchmark suites: a folder ``benchmarks/suites/<name>-v<N>/`` holding
``suite.yaml`` (name, version, description, repeats, a time limit per case, the cases) and
whatever files its cases use. A case is an input and how to score the agent's answer: an
``exact``, ``regex``, ``json_schema`` or ``numeric`` (with ``tolerance``) checker, a
``python`` checker (a file of the suite, run in the bench runner's sandbox) or the
``judge`` with a rubric.

The suite's version is its declared version plus a hash of its files' content
(``grounded-research-v1+3f2a9c1e``): change a question or a checker without bumping the
version and the results still never average with the old ones. A typo is an error naming
the file, the line and the key. docs/suites.md.

Checking here covers the checkers that need nothing but the answer (``check``) and the
``python`` checker, run in the bench runner's sandbox (``check_python``: its own process,
rlimits, a timeout, no network where the OS allows); ``judge`` cases are validated when
the suite loads and scored by bench_runner/suite_judge.py when suites run
(bench_runner/suite_run.py).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from otelbench.bench_runner.sandbox import run_python
from otelbench.bench_runner.suites import Verdict, extract_json, schema_errors, strip_reasoning

# the suites that ship: benchmarks/suites in a checkout, otelbench/suites once installed (setup.py)
_UP = Path(__file__).resolve().parent.parent
SUITES_DIR = next((d for d in (_UP / "benchmarks" / "suites", _UP / "suites") if d.is_dir()), _UP / "benchmarks" / "suites")
SUITE_FILE = "suite.yaml"
CHECKERS = ("exact", "regex", "json_schema", "numeric", "python", "judge")
_FOLDER = re.compile(r"^(?P<name>[a-z0-9][a-z0-9-]*)-v(?P<version>\d+)$")


class SuiteError(ValueError):
    """A suite that cannot be used; the message names the file, the line and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Check(_Strict):
    """How one case's answer is scored: exactly one checker."""

    exact: str | None = None
    regex: str | None = None
    json_schema: dict[str, Any] | None = None
    numeric: float | None = None
    python: str | None = None  # a file of the suite defining check(answer, case) -> (bool, reason)
    judge: str | None = None  # the rubric the judge scores the answer against
    tolerance: float = Field(0.0, ge=0)  # numeric: |answer - expected| <= tolerance
    case_sensitive: bool = False  # exact, regex

    @model_validator(mode="after")
    def _one(self) -> Check:
        given = [c for c in CHECKERS if getattr(self, c) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one checker of {', '.join(CHECKERS)} (got {', '.join(given) or 'none'})")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex does not compile: {exc}") from None
        return self

    @property
    def kind(self) -> str:
        return next(c for c in CHECKERS if getattr(self, c) is not None)


class Case(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    input: str | dict[str, Any]
    check: Check


class SuiteSpec(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    version: int = Field(ge=1)
    description: str
    repeats: int = Field(3, ge=1, le=100)
    time_limit_s: float = Field(60.0, gt=0, le=3600)
    cases: tuple[Case, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> SuiteSpec:
        seen: set[str] = set()
        for c in self.cases:
            if c.id in seen:
                raise ValueError(f"case id {c.id!r} is used twice")
            seen.add(c.id)
        return self


_KEYS = sorted({*SuiteSpec.model_fields, *Case.model_fields, *Check.model_fields})


@dataclass(frozen=True)
class AgentSuite:
    spec: SuiteSpec
    folder: Path
    content_hash: str  # sha256 of every file of the folder, names and bytes

    @property
    def version(self) -> str:
        """What results are grouped by: never averaged across two of these."""
        return f"{self.spec.name}-v{self.spec.version}+{self.content_hash[:8]}"


def load(folder: Path) -> AgentSuite:
    """The suite in ``folder``; SuiteError naming file, line and key when it cannot be used."""
    folder = Path(folder)
    path = folder / SUITE_FILE
    try:
        text = path.read_text()
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read it: {exc.strerror}") from None
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SuiteError(f"{path}:{mark.line + 1 if mark else '?'}: not YAML: {getattr(exc, 'problem', exc)}") from None
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # a typo shows as an unknown key and, often, a missing one: name the typo
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = [str(p) for p in first["loc"]]
        line = _line_of(node, first["loc"])
        what = first["msg"]
        if first["type"] == "extra_forbidden":
            near = difflib.get_close_matches(loc[-1], _KEYS, n=1)
            what = "unknown key" + (f" (did you mean {near[0]!r}?)" if near else "")
        raise SuiteError(f"{path}:{line}: {'.'.join(loc) or '(top)'}: {what}") from None
    found = _FOLDER.match(folder.name)
    if not found or (found["name"], int(found["version"])) != (spec.name, spec.version):
        raise SuiteError(f"{path}:1: the folder must be named {spec.name}-v{spec.version} (name-v<version>), "
                         f"not {folder.name}")
    for i, case in enumerate(spec.cases):
        if case.check.python is not None and not (folder / case.check.python).is_file():
            raise SuiteError(f"{path}:{_line_of(node, ('cases', i, 'check', 'python'))}: cases.{i}.check.python: "
                             f"no file {case.check.python} in the suite")
    return AgentSuite(spec, folder, _content_hash(folder))


def discover(root: Path = SUITES_DIR) -> list[AgentSuite]:
    """Every suite under ``root`` (a folder per suite), by name and version."""
    if not root.is_dir():
        return []
    return sorted((load(f) for f in root.iterdir() if (f / SUITE_FILE).is_file()),
                  key=lambda s: (s.spec.name, s.spec.version))


def find(name: str, root: Path = SUITES_DIR) -> AgentSuite:
    """A suite by folder path, ``name-vN``, or ``name`` (its latest version)."""
    if Path(name).is_dir():
        return load(Path(name))
    suites = discover(root)
    exact = [s for s in suites if f"{s.spec.name}-v{s.spec.version}" == name]
    latest = [s for s in suites if s.spec.name == name][-1:]
    if exact or latest:
        return (exact or latest)[0]
    known = ", ".join(f"{s.spec.name}-v{s.spec.version}" for s in suites) or "none"
    raise SuiteError(f"no suite {name!r} (suites: {known})")


def check(case: Case, answer: str) -> Verdict:
    """The verdict of the checkers that need nothing but the answer; ValueError for a
    ``python`` case (``check_python``) or a ``judge`` one."""
    c = case.check
    visible = strip_reasoning(answer)
    flags = 0 if c.case_sensitive else re.IGNORECASE
    if c.exact is not None:
        got = visible.strip()
        same = got == c.exact if c.case_sensitive else got.casefold() == c.exact.casefold()
        return Verdict(same, "the answer is exactly the expected text" if same else
                       f"expected {c.exact!r}, got {got[:200]!r}", got[:200])
    if c.regex is not None:
        m = re.search(c.regex, visible, flags)
        return Verdict(m is not None, f"matches {c.regex!r}" if m else f"no match for {c.regex!r}",
                       m.group(0) if m else None)
    if c.json_schema is not None:
        try:
            value, how = extract_json(visible)
        except ValueError as exc:
            return Verdict(False, str(exc))
        errors = schema_errors(value, c.json_schema)
        return Verdict(not errors, f"JSON ({how}) fits the schema" if not errors else "; ".join(errors[:5]), value)
    if c.numeric is not None:
        numbers = re.findall(r"-?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?", visible)
        if not numbers:
            return Verdict(False, "no number in the answer")
        got = float(numbers[-1].replace(",", ""))
        ok = math.isclose(got, c.numeric, rel_tol=0, abs_tol=c.tolerance)
        return Verdict(ok, f"{got:g} is within {c.tolerance:g} of {c.numeric:g}" if ok else
                       f"{got:g} is not within {c.tolerance:g} of {c.numeric:g}", got)
    raise ValueError(f"case {case.id}: a {c.kind} checker needs "
                     f"{'check_python (the sandbox)' if c.kind == 'python' else 'the judge'}")


PYTHON_CHECK_TIMEOUT_S = 10.0
_HARNESS = """
import json, runpy
answer, case = json.loads({answer!r}), json.loads({case!r})
try:
    passed, reason = runpy.run_path("solution.py")["check"](answer, case)
    verdict = {{"passed": bool(passed), "reason": str(reason)[:1000]}}
except Exception as exc:
    verdict = {{"passed": False, "reason": f"the checker raised {{type(exc).__name__}}: {{exc}}"[:1000]}}
with open("verdict.json", "w") as f:
    json.dump(verdict, f)
"""


def check_python(suite: AgentSuite, case: Case, answer: str, timeout_s: float = PYTHON_CHECK_TIMEOUT_S) -> Verdict:
    """A ``python`` case's verdict: the suite's checker file (``check(answer, case) ->
    (passed, reason)``) run in the sandbox on the answer; a checker that raises, hangs or
    floods fails the case with that as the reason (the answer is the agent's: untrusted)."""
    import json

    if case.check.python is None:
        raise ValueError(f"case {case.id} has no python checker")
    code = (suite.folder / case.check.python).read_text()
    harness = _HARNESS.format(answer=json.dumps(answer), case=json.dumps(case.model_dump(mode="json")))
    result = run_python(code, harness, timeout_s=timeout_s)
    if result.ok and result.verdict is not None:
        return Verdict(bool(result.verdict.get("passed")), str(result.verdict.get("reason", "")))
    why = ("timed out" if result.timed_out else f"exited with {result.exit_code}" if result.exit_code
           else f"was killed by signal {result.killed_by_signal}" if result.killed_by_signal else
           result.verdict_error or "left no verdict")
    return Verdict(False, f"the checker {why}: {result.stderr_tail[-300:].strip()}".strip().rstrip(":"))


def _line_of(node: Any, loc: tuple[Any, ...] | list[Any]) -> int:
    """The 1-based line of what ``loc`` names in the YAML: the key itself for a mapping
    entry (an unknown key included), else the deepest node found (a missing key: its
    mapping's first line)."""
    line = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if str(k.value) == str(part)]
            if not match:
                break
            key, node = match[0]
            line = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _content_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()
