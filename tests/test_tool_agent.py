"""otelbench.demo.tool_agent: its tools and parsers as tables, its spans through the real OTel
SDK and openai-v2 instrumentation over a scripted ``httpx.MockTransport``, and a run of
real tasks against the embedded SmolLM2 (``model`` marker)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from otelbench.demo import tool_agent as ta

# --- tools -------------------------------------------------------------------------------


@pytest.mark.parametrize(("expression", "result"), [
    ("17 * 23", "391"), ("144 / 16", "9"), ("2 ** 10", "1024"), ("3.5 * 4 + 2", "16"), ("(15 + 9) * 4", "96"),
    ("15 + 9 * 4", "51"), ("-3 + 10 // 4", "-1"), ("10 / 4", "2.5"), ("1 / 3", "0.3333"), (" 7 % 4 ", "3"),
])
def test_calculate(expression: str, result: str) -> None:
    assert ta.calculate(expression) == result


@pytest.mark.parametrize("expression", [
    "__import__('os').system('id')", "7 racks * 42 servers", "15% of 240", "x + 1", "abs(-2)", "(1).real",
    "[1, 2]", "'a' * 3", "True + 1", "2 ** 1000", "", "1 +",
])
def test_calculate_refuses_what_is_not_arithmetic(expression: str) -> None:
    with pytest.raises(ValueError):
        ta.calculate(expression)


def test_calculate_lets_a_division_by_zero_be_itself() -> None:
    with pytest.raises(ZeroDivisionError):
        ta.calculate("1 / (2 - 2)")


@pytest.mark.parametrize(("query", "result"), [
    ("5 km to mi", "3.11 mi"), ("20 kg to lb", "44.09 lb"), ("100 F to C", "37.78 C"), ("90 min to h", "1.5 h"),
    ("2 GB to MB", "2048 MB"), ("0 C in F", "32 F"), ("1500 ms to s", "1.5 s"), ("10 mi to km.", "16.09 km"),
])
def test_convert(query: str, result: str) -> None:
    assert ta.convert(query) == result


@pytest.mark.parametrize("query", ["5 km to kg", "5 parsecs to km", "five km to mi", "5 km", "5 C to km"])
def test_convert_refuses_what_it_cannot_convert(query: str) -> None:
    with pytest.raises(ValueError):
        ta.convert(query)


def test_lookup() -> None:
    assert ta.lookup("Checkout ") == "checkout: owner team-payments, on call Priya Shah"
    with pytest.raises(LookupError, match="'owner'"):
        ta.lookup("owner")


def test_read_file_and_a_missing_one() -> None:
    assert ta.read_file("deploy.yaml").startswith("replicas: 3")
    with pytest.raises(FileNotFoundError, match="secrets.env") as info:
        ta.read_file("secrets.env")
    assert info.value.filename == "secrets.env"


def test_fetch_status_answers_or_gives_up_at_its_timeout() -> None:
    assert ta.fetch_status("search") == "search: healthy, p99 120 ms"
    with pytest.raises(TimeoutError, match="gateway not received within 0.01s"):
        ta.fetch_status("gateway", timeout_s=0.01)
    with pytest.raises(LookupError):
        ta.fetch_status("nowhere")


# --- the model's reply and the answer ------------------------------------------------------


@pytest.mark.parametrize(("reply", "call"), [
    ('{"tool": "calculate", "input": "6 * 7"}', ("calculate", "6 * 7")),
    ('Sure: ```json\n{"tool": "lookup", "input": "auth"}\n``` done', ("lookup", "auth")),
    ('{"tool": "calculate", "input": 42} {"tool": "other"}', ("calculate", "42")),
    ('{"tool": "read_file", "input": "C:\\\\logs\\\\a.log"}', ("read_file", "C:\\logs\\a.log")),
])
def test_parse_tool_call(reply: str, call: tuple[str, str]) -> None:
    assert ta.parse_tool_call(reply) == call


@pytest.mark.parametrize(("reply", "reason"), [
    ("I would use the calculator.", "no JSON object"),
    ('{"tool": "read_file", "input": "C:\\logs\\app.log"}', "Invalid \\\\escape"),  # what SmolLM2 writes
    ('{"tool": "calculate", "input": "98765 * 43210 + 13', "Unterminated string"),  # cut at max_tokens
    ("{'tool': 'lookup', 'input': 'auth'}", "invalid JSON"),
    ('{"name": "lookup", "input": "auth"}', 'no "tool"'),
    ('{"tool": "lookup", "args": {"service": "auth"}}', 'no "input"'),
    ('["lookup", "auth"]', "no JSON object"),
])
def test_parse_tool_call_refuses_unusable_json(reply: str, reason: str) -> None:
    with pytest.raises(ta.BadJSON, match=reason):
        ta.parse_tool_call(reply)


@pytest.mark.parametrize(("answer", "expected", "ok"), [
    ("17 * 23 is 391.", "391", True), ("The result is 1,024", "1024", True), ("about 3.1 mi", "3.11", True),
    ("5 km is 3.2 mi", "3.11", False), ("15 + 9 = 24, so it is 30.", "96", False),
    ("Priya Shah is on call.", "priya shah", True), ("team-payments owns it", "Priya Shah", False),
])
def test_check_answer(answer: str, expected: str, ok: bool) -> None:
    assert ta.check_answer(answer, expected) is ok


def test_the_tasks_are_varied_and_checkable() -> None:
    assert 28 <= len(ta.TASKS) <= 36 and len({t.id for t in ta.TASKS}) == len(ta.TASKS)
    for kind in ta.TOOLS:
        assert sum(t.kind == kind for t in ta.TASKS) >= 4, kind
    for task in ta.TASKS:
        if task.expected is not None and re.fullmatch(r"[\d.]+", task.expected):
            # else an answer that merely repeats the request would pass
            assert task.expected not in re.findall(r"\d+(?:\.\d+)?", task.prompt), task.id
    assert sum(t.prompt.split()[-1] not in ta.FILES for t in ta.TASKS if t.kind == "read_file") >= 3
    assert sum(ta.STATUS[t.prompt.split()[-1]][1] > t.deadline_s for t in ta.TASKS if t.kind == "fetch_status") >= 3


# --- the agent's spans, with a scripted model ----------------------------------------------

SCRIPT = {  # task prompt: (the tool call the "model" writes, its answer, or None: restate the result)
    "Calculate 17 * 23": ('{"tool": "calculate", "input": "17 * 23"}', None),
    "Calculate (15 + 9) * 4": ('{"tool": "calculate", "input": "15 + 9 * 4"}', None),
    "Read the file secrets.env": ('{"tool": "read_file", "input": "secrets.env"}', None),
    r"Read the file C:\logs\app.log": ('{"tool": "read_file", "input": "C:\\logs\\app.log"}', None),
    "Fetch the status of gateway": ('{"tool": "fetch_status", "input": "gateway"}', None),
    "Look up who owns search": ('{"tool": "whois", "input": "search"}', None),
    "Convert 5 km to mi": ('{"tool": "convert", "input": "5 km to mi"}', "5 km is 8 mi."),
}


def scripted_model(request: httpx.Request) -> httpx.Response:
    messages = json.loads(request.content)["messages"]
    last = messages[-1]["content"]
    if last.startswith("Tool result: "):  # the second turn: the task, the call, the result
        result = json.loads(last.removeprefix("Tool result: "))
        text = SCRIPT[messages[-3]["content"]][1] or f"It is {result}."
    elif last == "Calculate 144 / 16":
        raise httpx.ReadTimeout("timed out", request=request)
    else:
        text = SCRIPT[last][0]
    return httpx.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """An SDK provider with an in-memory exporter; ``openai`` instrumented onto it."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider, exporter
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def by_run(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    """The spans of each agent run, keyed by its root's input message."""
    roots = {s.context.trace_id: s for s in spans if s.name == "invoke_agent ops-helper"}
    out: dict[str, list[ReadableSpan]] = {}
    for s in spans:
        root = roots[s.context.trace_id]
        out.setdefault(json.loads(root.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"], []).append(s)
    return out


def kinds(spans: list[ReadableSpan], operation: str) -> list[ReadableSpan]:
    return [s for s in spans if s.attributes.get("gen_ai.operation.name") == operation]


def test_each_task_is_one_agent_span_with_its_chats_and_tool_under_it(traced) -> None:
    from openai import OpenAI

    provider, exporter = traced
    client = OpenAI(base_url="http://model.test/v1", api_key="x", max_retries=0,
                    http_client=httpx.Client(transport=httpx.MockTransport(scripted_model)))
    tasks = [t for t in ta.TASKS if t.prompt in SCRIPT or t.prompt == "Calculate 144 / 16"]
    outcomes = {o.task_id: o for o in (ta.run_task(provider.get_tracer("t"), client, "scripted", t) for t in tasks)}
    assert {k: (o.status, o.error_type, o.verdict) for k, o in outcomes.items()} == {
        "calc-product": ("ok", None, "correct"),
        "calc-quotient": ("error", "Timeout", "unchecked"),
        "calc-grouped-sum": ("error", "WrongAnswer", "wrong"),
        "conv-distance": ("error", "WrongAnswer", "wrong"),
        "owner-search": ("error", "UnknownTool", "unchecked"),
        "file-secrets": ("error", "FileNotFoundError", "unchecked"),
        "file-windows-log": ("error", "BadJSON", "unchecked"),
        "status-gateway": ("error", "Timeout", "unchecked"),
    }
    runs = by_run(exporter.get_finished_spans())
    assert len(runs) == len(tasks)
    for task in tasks:
        spans = runs[task.prompt]
        (root,) = kinds(spans, "invoke_agent")
        assert root.parent is None and root.attributes["gen_ai.agent.name"] == "ops-helper"
        assert all(s.parent.span_id == root.context.span_id for s in spans if s is not root)
        outcome = outcomes[task.id]
        tools = kinds(spans, "execute_tool")
        chats = kinds(spans, "chat")
        assert [s.attributes["gen_ai.tool.name"] for s in tools] == ([outcome.tool] if outcome.tool in ta.TOOLS else [])
        assert len(chats) == (2 if outcome.status == "ok" or outcome.error_type == "WrongAnswer" else 1)
        if outcome.status == "ok":
            assert root.status.status_code is StatusCode.UNSET
            assert json.loads(root.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == outcome.answer
        else:
            assert root.status.status_code is StatusCode.ERROR and root.status.description == outcome.message
            assert root.attributes["error.type"] == outcome.error_type

    secrets_tool = kinds(runs["Read the file secrets.env"], "execute_tool")[0]
    assert secrets_tool.status.status_code is StatusCode.ERROR
    assert secrets_tool.attributes["error.type"] == "FileNotFoundError"
    assert "secrets.env" in secrets_tool.status.description
    assert secrets_tool.events[0].attributes["exception.type"] == "FileNotFoundError"
    assert json.loads(secrets_tool.attributes["gen_ai.tool.call.arguments"]) == {"input": "secrets.env"}
    gateway_tool = kinds(runs["Fetch the status of gateway"], "execute_tool")[0]
    assert gateway_tool.attributes["error.type"] == "Timeout" and "within 2s" in gateway_tool.status.description
    product_tool = kinds(runs["Calculate 17 * 23"], "execute_tool")[0]
    assert product_tool.attributes["gen_ai.tool.call.result"] == "391"
    assert outcomes["calc-grouped-sum"].message == "expected '96', got 'It is 51.'"
    bad = outcomes["file-windows-log"]
    assert bad.answer == SCRIPT[r"Read the file C:\logs\app.log"][0] and "Invalid \\escape" in bad.message


# --- against the embedded model ------------------------------------------------------------

REAL = ("calc-product", "conv-distance", "owner-inventory", "status-search",  # SmolLM2 mostly gets these
        "calc-grouped-sum", "file-secrets", "file-windows-log", "status-gateway")  # and mostly fails these
FAILURES = {"BadJSON", "UnknownTool", "WrongAnswer", "Timeout", "FileNotFoundError", "ValueError", "LookupError"}


@pytest.mark.model
def test_real_tasks_against_the_embedded_model(llama_server, traced) -> None:
    provider, exporter = traced
    done: list[ta.Outcome] = []
    tasks = [t for t in ta.TASKS if t.id in REAL]
    outcomes = ta.run_tasks(provider.get_tracer("t"), llama_server.base_url, llama_server.model_id, tasks,
                            on_done=done.append)
    assert done == outcomes and [o.task_id for o in outcomes] == [t.id for t in tasks]
    summary = [(o.task_id, o.status, o.error_type, o.message or o.answer) for o in outcomes]
    assert any(o.status == "ok" for o in outcomes) and any(o.status == "error" for o in outcomes), summary
    runs = by_run(exporter.get_finished_spans())
    assert len(runs) == len(tasks), summary
    for task, outcome in zip(tasks, outcomes):
        spans = runs[task.prompt]
        (root,) = kinds(spans, "invoke_agent")
        assert root.parent is None
        chats = kinds(spans, "chat")
        assert chats and all(s.parent.span_id == root.context.span_id for s in chats)
        assert all(s.attributes["gen_ai.request.model"] == llama_server.model_id for s in chats)
        tools = kinds(spans, "execute_tool")
        assert [s.name for s in tools] == ([f"execute_tool {outcome.tool}"] if outcome.tool in ta.TOOLS else [])
        if outcome.status == "ok":
            assert outcome.verdict == "correct" and tools and len(chats) == 2, summary
            continue
        assert outcome.error_type in FAILURES, summary
        assert root.attributes["error.type"] == outcome.error_type and root.status.description == outcome.message
        check_failure(outcome, root, tools, task)


def check_failure(outcome: ta.Outcome, root: ReadableSpan, tools: list[ReadableSpan], task: ta.Task) -> None:
    """The error's message says what really happened."""
    message = outcome.message
    if outcome.error_type == "BadJSON":
        assert not tools and outcome.answer and repr(outcome.answer) in message
        assert json.loads(root.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == outcome.answer
    elif outcome.error_type == "WrongAnswer":
        assert message == f"expected {task.expected!r}, got {outcome.answer!r}"
        assert not ta.check_answer(outcome.answer, task.expected)
    elif outcome.error_type == "UnknownTool":
        assert not tools and outcome.tool not in ta.TOOLS
    elif tools:  # the tool failed: its span says how, naming its input
        (tool,) = tools
        asked = json.loads(tool.attributes["gen_ai.tool.call.arguments"])["input"]
        assert tool.status.status_code is StatusCode.ERROR and tool.attributes["error.type"] == outcome.error_type
        assert asked.strip().lower() in tool.status.description.lower()
        if outcome.error_type == "FileNotFoundError":
            assert asked.strip() not in ta.FILES and "No such file" in message
        if outcome.error_type == "Timeout":
            assert ta.STATUS[asked.strip().lower()][1] > task.deadline_s
    else:  # the model call itself timed out
        assert outcome.error_type == "Timeout" and "timed out" in message
