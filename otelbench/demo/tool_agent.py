"""A small real agent for the demo: a tool-using loop over the ``openai`` client.

Each task is one ``invoke_agent ops-helper`` span holding one conversation: the model is
asked, after a few rigid example turns, for one tool call as JSON; the tool runs in an
``execute_tool <name>`` span; given its result, the model answers; the answer is checked
against the task's expected value. The caller instruments ``openai`` (openai-v2), so both
chat spans nest under the agent span. Attributes follow
https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-agent-spans/

Nothing fails by flag. Against SmolLM2-135M failures come from what happens: a backslash
left unescaped or a call cut at ``MAX_TOKENS`` (``BadJSON``), parentheses dropped or a
result misread (``WrongAnswer``), words passed to the calculator (``ValueError``), a file
that is not there (``FileNotFoundError``), a dependency slower than the task's deadline
(``Timeout``), an invented tool (``UnknownTool``).
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from openai import OpenAI
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from otelbench.demo.agents import genai_messages

AGENT_NAME = "ops-helper"
TOOL_DEADLINE_S = 2.0  # what a task grants its tool; the slow services in STATUS take longer
REQUEST_TIMEOUT_S = 30.0  # one model call: 0.2-1 s for SmolLM2 on 2 idle cores, 30 s only on crowded ones
MAX_TOKENS = 40  # room for an answer and for every tool call in TASKS but the two long expressions

# --- tools: real, local, small -----------------------------------------------------------

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_EXPONENT = 64  # 9 ** 9 ** 9 would hold the CPU for minutes


def calculate(expression: str) -> str:
    """Arithmetic on numbers (+ - * / // % **, parentheses), walked with ``ast``; never ``eval``."""
    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
                raise ValueError(f"exponent too large: {right}")
            return _BINARY[type(node.op)](left, right)
        raise ValueError(f"not arithmetic: {expression!r}")

    try:
        value = walk(ast.parse(expression.strip(), mode="eval").body)
    except SyntaxError:
        raise ValueError(f"not arithmetic: {expression!r}") from None
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


# per dimension, each unit's size in the first one; temperatures are affine, apart
_UNITS = {"length": {"m": 1.0, "km": 1000.0, "mi": 1609.344, "ft": 0.3048},
          "mass": {"g": 1.0, "kg": 1000.0, "lb": 453.59237},
          "time": {"s": 1.0, "ms": 0.001, "min": 60.0, "h": 3600.0},
          "data": {"mb": 1.0, "gb": 1024.0, "tb": 1024.0 ** 2}}
_CELSIUS = {"c": (1.0, 0.0), "f": (5 / 9, -32.0), "k": (1.0, -273.15)}  # (scale, offset): C = (v + offset) * scale
_CONVERSION = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s+(?:to|in)\s+([a-zA-Z]+)\s*\.?\s*")


def convert(query: str) -> str:
    """``"<number> <unit> to <unit>"``: length, mass, time, data sizes, temperatures."""
    match = _CONVERSION.fullmatch(query)
    if not match:
        raise ValueError(f"expected '<number> <unit> to <unit>', got {query!r}")
    value, src, dst = float(match[1]), match[2].lower(), match[3].lower()
    if src in _CELSIUS and dst in _CELSIUS:
        celsius = (value + _CELSIUS[src][1]) * _CELSIUS[src][0]
        return f"{round(celsius / _CELSIUS[dst][0] - _CELSIUS[dst][1], 2):g} {match[3]}"
    for units in _UNITS.values():
        if src in units and dst in units:
            return f"{round(value * units[src] / units[dst], 2):g} {match[3]}"
    raise ValueError(f"cannot convert {match[2]} to {match[3]}")


SERVICES = {  # service: (owning team, on call)
    "checkout": ("team-payments", "Priya Shah"), "search": ("team-discovery", "Tom Berg"),
    "inventory": ("team-supply", "Ana Ruiz"), "gateway": ("team-edge", "Lee Chen"),
    "ledger": ("team-finance", "Omar Haddad"), "auth": ("team-identity", "Mia Novak"),
}


def lookup(service: str) -> str:
    """Owner and on-call person of a service, from :data:`SERVICES`."""
    if (key := service.strip().lower()) not in SERVICES:
        raise LookupError(f"unknown service {service!r}")
    return f"{key}: owner {SERVICES[key][0]}, on call {SERVICES[key][1]}"


FILES = {
    "deploy.yaml": "replicas: 3\nimage: shop:1.4.2\nport: 8080\n",
    "build.log": "build 4411 failed: 2 tests (test_refund, test_tax)\n",
}


def read_file(name: str) -> str:
    """A file of the small in-memory set :data:`FILES`."""
    if name.strip() not in FILES:
        raise FileNotFoundError(2, "No such file or directory", name)
    return FILES[name.strip()]


STATUS = {  # service: (status, seconds its status endpoint takes to answer)
    "search": ("healthy, p99 120 ms", 0.05), "checkout": ("degraded, p99 2400 ms", 0.2),
    "inventory": ("healthy, p99 80 ms", 0.1), "gateway": ("degraded, p99 9000 ms", 8.0),
    "ledger": ("down", 10.0), "auth": ("degraded, p99 5000 ms", 6.0),
}


def fetch_status(service: str, timeout_s: float = TOOL_DEADLINE_S) -> str:
    """A service's health from a slow dependency, waited for as a client with a timeout would."""
    if (key := service.strip().lower()) not in STATUS:
        raise LookupError(f"unknown service {service!r}")
    status, latency_s = STATUS[key]
    time.sleep(max(0.0, min(latency_s, timeout_s)))
    if latency_s > timeout_s:
        raise TimeoutError(f"status of {key} not received within {timeout_s:g}s")
    return f"{key}: {status}"


TOOLS: dict[str, Callable[[str], str]] = {f.__name__: f for f in (calculate, convert, lookup, read_file, fetch_status)}

# --- tasks and outcomes ------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """A request. ``expected``: what the answer must say (see :func:`check_answer`; None:
    not checked); ``deadline_s``: how long its tool may take."""

    id: str
    kind: str  # a name in TOOLS
    prompt: str
    expected: str | None = None
    deadline_s: float = TOOL_DEADLINE_S


@dataclass(frozen=True)
class Outcome:
    """What became of a task, as its ``invoke_agent`` span records it."""

    task_id: str
    kind: str
    status: Literal["ok", "error"]
    error_type: str | None  # BadJSON, UnknownTool, WrongAnswer, Timeout, or the tool's exception
    answer: str  # the final answer, or the model's raw reply when that was unusable
    verdict: Literal["correct", "wrong", "unchecked"]
    message: str  # the agent span's status message ("" when ok)
    tool: str | None  # the tool the model chose
    seconds: float


# Against SmolLM2-135M (temperature 0, so the same every run) 17 of these 35 succeed; the
# rest fail as BadJSON 5, WrongAnswer 4, ValueError 3, FileNotFoundError 3, Timeout 3, all
# in ~24 s on 2 idle cores (measured).
TASKS: tuple[Task, ...] = (
    Task("calc-product", "calculate", "Calculate 17 * 23", "391"),
    Task("calc-quotient", "calculate", "Calculate 144 / 16", "9"),
    Task("calc-power", "calculate", "Calculate 2 ** 10", "1024"),
    Task("calc-mixed", "calculate", "Calculate 3.5 * 4 + 2", "16"),
    Task("calc-grouped-sum", "calculate", "Calculate (15 + 9) * 4", "96"),
    Task("calc-grouped-diff", "calculate", "Calculate (100 - 35) / 5", "13"),
    Task("calc-grouped-product", "calculate", "Calculate (8 + 2) * 5", "50"),
    Task("calc-grouped-right", "calculate", "Calculate 3 * (6 + 4)", "30"),
    Task("calc-grouped-double", "calculate", "Calculate (18 + 7) * 2", "50"),
    Task("calc-grouped-share", "calculate", "Calculate (50 - 20) / 6", "5"),
    Task("calc-racks", "calculate", "Calculate 7 racks * 42 servers", "294"),
    Task("calc-percent", "calculate", "Calculate 15% of 240", "36"),
    Task("calc-long-sum", "calculate",
         "Calculate 98765 * 43210 + 12345 * 67890 - 13579 * 24680 + 11223 * 44556", "5270659968"),
    Task("calc-long-product", "calculate", "Calculate 3.14159 * 2.71828 * 1.41421 * 1.73205 * 2.23606", "46.77"),
    Task("conv-distance", "convert", "Convert 5 km to mi", "3.11"),
    Task("conv-weight", "convert", "Convert 20 kg to lb", "44.09"),
    Task("conv-temperature", "convert", "Convert 100 F to C", "37.78"),
    Task("conv-duration", "convert", "Convert 90 min to h", "1.5"),
    Task("conv-size", "convert", "Convert 2 GB to MB", "2048"),
    Task("owner-checkout", "lookup", "Look up who is on call for checkout", "Priya Shah"),
    Task("owner-search", "lookup", "Look up who owns search", "team-discovery"),
    Task("owner-inventory", "lookup", "Look up who is on call for inventory", "Ana Ruiz"),
    Task("owner-ledger", "lookup", "Look up who owns ledger", "team-finance"),
    Task("file-replicas", "read_file", "Read the file deploy.yaml and tell me how many replicas it sets", "3"),
    Task("file-build", "read_file", "Read the file build.log and tell me which build failed", "4411"),
    Task("file-secrets", "read_file", "Read the file secrets.env"),
    Task("file-release-notes", "read_file", "Read the file release-notes.md"),
    Task("file-app-config", "read_file", "Read the file config/app.ini"),
    Task("file-windows-log", "read_file", r"Read the file C:\logs\app.log"),
    Task("file-dated-log", "read_file", r"Read the file logs\2024\jan.log"),
    Task("status-search", "fetch_status", "Fetch the status of search", "healthy"),
    Task("status-checkout", "fetch_status", "Fetch the status of checkout", "degraded"),
    Task("status-gateway", "fetch_status", "Fetch the status of gateway", "degraded"),
    Task("status-ledger", "fetch_status", "Fetch the status of ledger", "down"),
    Task("status-auth", "fetch_status", "Fetch the status of auth", "degraded"),
)

# --- the prompts -------------------------------------------------------------------------

SYSTEM_PROMPT = ('Reply with one line of JSON: {"tool": T, "input": X}. T is one of calculate, convert, '
                 "lookup, read_file, fetch_status. Then, given the tool result, answer in one short sentence.")
# Whole turns as chat history, each tool twice in a mixed order. With one example
# SmolLM2-135M names the last example's tool; with arguments as objects it invents their
# names; with the examples in the system prompt it answers in prose. Every request of
# every task starts with these turns, so llama.cpp keeps them evaluated instead of reading
# a ~400-token prompt again (1-2 s on 2 cores) for each request (all measured).
EXAMPLES = (  # request, tool, input, result, answer
    ("Calculate 6 * 7", "calculate", "6 * 7", "42", "6 * 7 is 42."),
    ("Read the file notes.txt", "read_file", "notes.txt", "standup moved to 10:30",
     "notes.txt says: standup moved to 10:30."),
    ("Convert 10 km to mi", "convert", "10 km to mi", "6.21 mi", "10 km is 6.21 mi."),
    ("Fetch the status of cache", "fetch_status", "cache", "cache: degraded, p99 900 ms",
     "cache is degraded (p99 900 ms)."),
    ("Look up the owner of billing", "lookup", "billing", "billing: owner team-money, on call Sam Lee",
     "billing is owned by team-money; Sam Lee is on call."),
    ("Calculate 120 / 8 + 1", "calculate", "120 / 8 + 1", "16", "120 / 8 + 1 is 16."),
    ("Convert 3 lb to kg", "convert", "3 lb to kg", "1.36 kg", "3 lb is 1.36 kg."),
    ("Look up who is on call for auth", "lookup", "auth", "auth: owner team-identity, on call Mia Novak",
     "Mia Novak is on call for auth (team-identity)."),
    ("Read the file build.log", "read_file", "build.log", "build 812 passed", "build.log says: build 812 passed."),
    ("Fetch the status of queue", "fetch_status", "queue", "queue: healthy, p99 40 ms",
     "queue is healthy (p99 40 ms)."),
)


def tool_result_message(result: str) -> dict[str, str]:
    # JSON-quoted, so a file's lines stay one line: 16 vs 13 of 32 tasks right (measured)
    return {"role": "user", "content": f"Tool result: {json.dumps(result)}"}


def first_messages(prompt: str) -> list[dict[str, str]]:
    """The conversation that asks for a task's tool call."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    for request, tool, arg, result, answer in EXAMPLES:
        messages += [{"role": "user", "content": request},
                     {"role": "assistant", "content": json.dumps({"tool": tool, "input": arg})},
                     tool_result_message(result), {"role": "assistant", "content": answer}]
    return messages + [{"role": "user", "content": prompt}]


class BadJSON(ValueError):
    """The model's reply holds no usable tool call."""


def parse_tool_call(text: str) -> tuple[str, str]:
    """(tool, input) from the first JSON object in the reply. Prose or fences around it are
    skipped, but the object must be valid JSON with a string ``tool`` and an ``input``."""
    start = text.find("{")
    if start < 0:
        raise BadJSON("no JSON object in the reply")
    try:
        call, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise BadJSON(f"invalid JSON: {exc.msg} at char {exc.pos}") from None
    if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
        raise BadJSON('no "tool" name in the call')
    arg = call.get("input")
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        arg = str(arg)
    if not isinstance(arg, str):
        raise BadJSON('no "input" string in the call')
    return call["tool"], arg


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def check_answer(answer: str, expected: str) -> bool:
    """An expected number must be among the answer's numbers (within 1%), a phrase in it.
    No expected number appears in its task's prompt, so echoing the request never passes."""
    try:
        want = float(expected)
    except ValueError:
        return expected.lower() in answer.lower()
    return any(math.isclose(float(token.replace(",", "")), want, rel_tol=0.01)
               for token in _NUMBER.findall(answer))

# --- the agent ---------------------------------------------------------------------------


class _Failed(Exception):
    """Ends a task: its error type, status message, and the text kept as its output."""

    def __init__(self, error_type: str, message: str, output: str = "") -> None:
        super().__init__(message)
        self.error_type, self.message, self.output = error_type, message, output


def _error_type(exc: BaseException) -> str:
    # openai's APITimeoutError and the tools' TimeoutError are one failure to a reader
    if isinstance(exc, TimeoutError) or type(exc).__name__ == "APITimeoutError":
        return "Timeout"
    return type(exc).__name__


def _fail(span: Span, error_type: str, message: str) -> None:
    span.set_status(Status(StatusCode.ERROR, message))
    span.set_attribute("error.type", error_type)


class _Run:
    """One task: one conversation asking for a tool call, then, given its result, the answer."""

    def __init__(self, tracer: Tracer, client: OpenAI, model: str, task: Task) -> None:
        self.tracer, self.client, self.model, self.task = tracer, client, model, task
        self.tool: str | None = None

    def chat(self, messages: list[dict[str, str]], doing: str) -> str:
        try:
            reply = self.client.chat.completions.create(model=self.model, messages=messages, temperature=0,
                                                        max_tokens=MAX_TOKENS, timeout=REQUEST_TIMEOUT_S)
        except Exception as exc:  # the openai client's errors: timeout, connection, HTTP status
            raise _Failed(_error_type(exc), f"{doing} failed: {exc}") from exc
        return reply.choices[0].message.content or ""

    def run_tool(self, name: str, arg: str) -> str:
        with self.tracer.start_as_current_span(f"execute_tool {name}", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": f"call_{self.task.id}", "gen_ai.tool.call.arguments": json.dumps({"input": arg}),
        }, record_exception=False, set_status_on_exception=False) as span:
            try:  # only fetch_status waits on anything; the others answer at once
                result = fetch_status(arg, self.task.deadline_s) if name == "fetch_status" else TOOLS[name](arg)
            except Exception as exc:  # the tool's own error ends the task, named by its type
                span.record_exception(exc)
                _fail(span, _error_type(exc), str(exc))
                raise _Failed(_error_type(exc), f"{name} failed: {exc}") from exc
            span.set_attribute("gen_ai.tool.call.result", result)
            return result

    def __call__(self) -> tuple[str, Literal["correct", "unchecked"]]:
        messages = first_messages(self.task.prompt)
        raw = self.chat(messages, "asking for a tool call")
        try:
            name, arg = parse_tool_call(raw)
        except BadJSON as exc:
            raise _Failed("BadJSON", f"{exc}; the model replied {raw!r}", raw) from exc
        self.tool = name
        if name not in TOOLS:
            raise _Failed("UnknownTool", f"the model asked for an unknown tool {name!r}", raw)
        messages += [{"role": "assistant", "content": raw.strip()}, tool_result_message(self.run_tool(name, arg))]
        answer = self.chat(messages, "asking for the answer").strip()
        if self.task.expected is None:
            return answer, "unchecked"
        if not check_answer(answer, self.task.expected):
            raise _Failed("WrongAnswer", f"expected {self.task.expected!r}, got {answer!r}", answer)
        return answer, "correct"


def run_task(tracer: Tracer, client: OpenAI, model: str, task: Task) -> Outcome:
    """One task in one ``invoke_agent`` span."""
    started, run = time.monotonic(), _Run(tracer, client, model, task)
    with tracer.start_as_current_span(f"invoke_agent {AGENT_NAME}", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.request.model": model, "gen_ai.input.messages": genai_messages("user", task.prompt),
    }, record_exception=False, set_status_on_exception=False) as span:
        try:
            answer, verdict = run()
            error_type, message = None, ""
        except _Failed as failed:
            answer, error_type, message = failed.output, failed.error_type, failed.message
            verdict = "wrong" if error_type == "WrongAnswer" else "unchecked"
            _fail(span, error_type, message)
        if answer:
            span.set_attribute("gen_ai.output.messages", genai_messages("assistant", answer))
    return Outcome(task.id, task.kind, "error" if error_type else "ok", error_type, answer, verdict, message,
                   run.tool, time.monotonic() - started)


def run_tasks(tracer: Tracer, base_url: str, model: str, tasks: Sequence[Task] | None = None, *,
              on_done: Callable[[Outcome], None] | None = None, concurrency: int = 1) -> list[Outcome]:
    """Run ``tasks`` (default :data:`TASKS`) against ``model`` at ``base_url``, ``concurrency``
    at a time (a server with parallel slots decodes them together); outcomes in task order.

    The caller has instrumented the ``openai`` package already. ``on_done`` gets each
    outcome once its span has ended (for a progress line), from one thread at a time."""
    chosen = list(TASKS if tasks is None else tasks)
    done = threading.Lock()
    # no retries: a retried timeout would hide the failure and double the wait
    with OpenAI(base_url=base_url, api_key="local", max_retries=0) as client:
        def one(task: Task) -> Outcome:
            outcome = run_task(tracer, client, model, task)
            if on_done is not None:
                with done:
                    on_done(outcome)
            return outcome

        with ThreadPoolExecutor(max(1, concurrency)) as pool:
            return list(pool.map(one, chosen))
