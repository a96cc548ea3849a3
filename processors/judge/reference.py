"""The judge's own answer to the run's task, and how far the agent's output agrees with it.

A small model asked "is this answer right?" is close to a coin toss (docs/judge.md), but
asked the task itself it often knows the answer — "Canberra", "s[::-1]", the fields of
a JSON extraction, the numbers in a tool result — and a number that needs computing it
writes as a Python expression ("0.15 * 240") more reliably than as a result. So the
judge answers the task (the ``solve`` section of the prompt: a few fixed examples, then
the task and the tool results) and this module compares, without a model:

- the reference is an arithmetic expression or a number → the output agrees when one of
  its numbers equals the value (to 1 %, or to its printed decimals) — ``evaluate`` reads
  the expression with ``ast``, arithmetic only, exponents and sizes bounded;
- the reference is a JSON object → the share of its values the output contains;
- otherwise → the share of the reference's answer words (those not already in the task,
  so that restating the question earns nothing) the output contains.

``agreement`` returns None when there is nothing to compare (an empty reference, or one
that only restates the task): the judge then scores without it.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from dataclasses import dataclass

_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|[^\w\s]{2,}", re.UNICODE)
_FENCE = re.compile(r"^```\w*\s*|\s*```$")
_STOP = frozenset(
    "a an the is are was were be been of to in on at by for with from and or but not no yes it its this that "
    "these those there their they them he she his her you your i we our as into than then so do does did has "
    "have had will would can could should about which who what when where how answer result".split()
)
_MAX_EXPONENT = 64
_MAX_MAGNITUDE = 1e15
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > _MAX_EXPONENT or abs(left) > _MAX_MAGNITUDE):
            raise ValueError("exponent too large")
        value = _BINARY[type(node.op)](left, right)
        if not math.isfinite(value) or abs(value) > _MAX_MAGNITUDE:
            raise ValueError("too large")
        return value
    raise ValueError(f"not arithmetic: {type(node).__name__}")


_EXPRESSION = re.compile(r"[(\d][\d\s.,()+\-*/]*[\d)]")
_OPERATOR = re.compile(r"\d\s*(?:[+\-/]|\*\*?)\s*[\d(]|\)\s*(?:[+\-/]|\*\*?)")


def evaluate(text: str) -> float | None:
    """The value of an arithmetic expression (``0.15 * 240``, ``(12 + 15 + 21) / 3``,
    ``2 ** 10``, ``1,234``), of the left side of ``expr = …``, of an expression written
    inside a sentence (``15% of 240 is 0.15 * 240 = 32`` → 36: a small model computes
    worse than it writes the computation) or, failing those, of a right side that is a
    number; None for anything else."""
    cleaned = _FENCE.sub("", text.strip()).strip().rstrip(".").replace("×", "*").replace("÷", "/")
    cleaned = cleaned.replace("^", "**").replace("$", "").replace("€", "")
    sides = [s.strip() for s in cleaned.split("=")]
    inner = [m.group(0).strip() for m in _EXPRESSION.finditer(cleaned) if _OPERATOR.search(m.group(0))]
    candidates = [sides[0], *inner] + ([sides[-1]] if len(sides) > 1 else [])
    for candidate in candidates:
        expr = re.sub(r"(?<=\d),(?=\d{3}\b)", "", candidate)
        if not expr or len(expr) > 200:
            continue
        try:
            return _eval(ast.parse(expr, mode="eval"))
        except (SyntaxError, ValueError, ZeroDivisionError, TypeError, OverflowError, RecursionError):
            continue
    return None


_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


@dataclass(frozen=True)
class Written:
    value: float
    decimals: int  # digits after the point, as written


def numbers(text: str) -> list[Written]:
    """Every number written in ``text``, in digits (``1,240.50`` is one) or as a word up to twenty."""
    found = []
    for m in _NUMBER.finditer(text):
        digits = m.group(0).replace(",", "")
        found.append(Written(float(digits), len(digits.split(".")[1]) if "." in digits else 0))
    found += [Written(float(_NUMBER_WORDS[w.lower()]), 0) for w in re.findall(r"[A-Za-z]+", text)
              if w.lower() in _NUMBER_WORDS]
    return found


def _same_number(value: float, written: Written) -> bool:
    """``written`` is ``value`` as printed to its own decimals (36 for 36.0, 37.8 for 37.78, 217.00
    for 217) — never a nearby number: 1991 is not 1989."""
    return abs(value - written.value) <= 0.5 * 10 ** -written.decimals + 1e-9 * max(1.0, abs(value))


def words(text: str) -> set[str]:
    """Lower-cased content words and numbers (stop words left out)."""
    out = {w.lower().replace("’", "'") for w in _WORD.findall(text)}
    out |= {f"{n.value:g}" for n in numbers(text)}
    return {w for w in out if w not in _STOP and (len(w) > 1 or w.isdigit())}


def _json_object(text: str) -> dict[str, object] | None:
    cleaned = _FENCE.sub("", text.strip()).strip()
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(cleaned[start : end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) and value else None


def _flat_values(value: object) -> list[str]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in _flat_values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _flat_values(item)]
    return [] if value is None else [str(value)]


@dataclass(frozen=True)
class Agreement:
    value: float  # in [0, 1]
    kind: str  # number | json | words
    detail: str  # a few words for the reasoning, e.g. "reference 391; output says 381"


def agreement(output: str | None, reference: str | None, task: str = "") -> Agreement | None:
    """How far ``output`` agrees with the judge's ``reference`` answer to ``task``."""
    if not reference or not reference.strip():
        return None
    ref = reference.strip()
    out = output or ""
    value = evaluate(ref) if len(ref) <= 200 else None
    if value is not None:
        said = numbers(out)
        hit = any(_same_number(value, n) for n in said)
        shown = f"{value:,.4f}".rstrip("0").rstrip(".")
        return Agreement(1.0 if hit else 0.0, "number",
                         f"reference {shown}; output {'agrees' if hit else 'says ' + (', '.join(f'{n.value:g}' for n in said[:4]) or 'no number')}")
    obj = _json_object(ref)
    if obj is not None:
        values = [v for v in _flat_values(obj) if v.strip()]
        if values:
            haystack = " ".join(out.lower().split())
            found = [v for v in values if " ".join(v.lower().split()) in haystack
                     or (evaluate(v) is not None and any(_same_number(evaluate(v) or 0.0, n) for n in numbers(out)))]
            return Agreement(len(found) / len(values), "json", f"{len(found)} of {len(values)} reference values in the output")
    wanted = words(ref) - words(task)
    if not wanted:
        return None
    have = words(out)
    found = wanted & have
    return Agreement(len(found) / len(wanted), "words",
                     f"{len(found)} of {len(wanted)} reference words in the output")
