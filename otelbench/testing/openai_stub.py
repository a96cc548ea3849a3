"""A scripted OpenAI-compatible SSE server, for failure modes and exact timing only.

Real behaviour is tested against the real llama.cpp server; this stub exists for what
a real server will not do on demand: drop a stream, answer 500, send garbage, or emit
tokens on an exact schedule. The script and its parameters sit in the base URL:

    http://127.0.0.1:PORT/paced;ttft_ms=50;rate=100;n=64/v1   (+ /chat/completions)

``GET …/v1/models`` lists ``stub-model``, so ``otelbench bench --base-url <that URL>``
drives the real CLI through a script end to end. Under ``/by-model/v1`` the request's
``model`` picks the script instead and every script is listed as a model, so one base URL
serves a failing model next to a working one.

``GET /stub/last_trace`` returns the stub's own clock readings (``perf_counter_ns``,
CLOCK_MONOTONIC on Linux, shared by all processes) of the last completed script, so a
benchmark can tell the stub's pacing error from the client's measuring error.

``/weather/v1`` is a canned one-tool agent turn for recording what agent frameworks send
(scripts/record_frameworks.py): a request without a ``tool`` message is answered with a
call of ``get_weather`` for Paris, one with the tool's result with the final answer;
streamed or not as asked, with usage (in a stream only when ``stream_options``
asks for it, as OpenAI does), and a response ``model`` that is the requested one's dated
snapshot. ``GET /stub/served`` lists what each such reply was (``StubServer.served``).
``/weather-spaced/v1`` asks for the same call with its arguments written otherwise (the
same JSON), ``/weather-berlin/v1`` for Berlin's weather instead.

Run it in its own process (as benchmarks/bench_fidelity.py does) with
``python -m otelbench.testing.openai_stub``; it prints ``listening <url>``.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

SPIN_NS = 1_000_000  # busy-wait the last millisecond: sleep() overshoots by ~0.1 ms or more
MODEL = "stub-model"
BY_MODEL = "by-model"  # the pseudo-script whose requests name their script as the model


def wait_until(deadline_ns: int, spin_ns: int = SPIN_NS) -> None:
    """Return at ``deadline_ns`` (perf_counter_ns), sleeping while far, spinning when near."""
    while True:
        remaining = deadline_ns - time.perf_counter_ns()
        if remaining <= 0:
            return
        if remaining > spin_ns:
            time.sleep((remaining - spin_ns) / 1e9)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": MODEL,
            "choices": choices, **top}  # fmt: skip


def sse(obj: dict[str, Any] | str) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


DONE = sse("[DONE]")
ROLE = sse(chunk({"role": "assistant", "content": ""}))  # OpenAI's first chunk: role, empty content
STOP = sse(chunk({}, "stop"))
WORDS = ["Hello", " world", "!"]


def content(text: str) -> bytes:
    return sse(chunk({"content": text}))


class Out:
    """The response as a script writes it: chunked by default, or close-delimited."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self.h = handler
        self.chunked = True
        self.t_tokens: list[int] = []
        self.request: Any = None  # the request body as JSON, None when it is not JSON

    def start(self, status: int = 200, *, chunked: bool = True) -> None:
        self.chunked = chunked
        self.h.send_response(status)
        self.h.send_header("Content-Type", "text/event-stream")
        if chunked:
            self.h.send_header("Transfer-Encoding", "chunked")
        else:  # the body ends when the connection closes: a drop looks like a normal end
            self.h.send_header("Connection", "close")
            self.h.close_connection = True
        self.h.end_headers()

    def send(self, data: bytes, *, token: bool = False) -> None:
        # One sendall per event, so each lands in its own TCP segment (TCP_NODELAY is on).
        frame = b"%x\r\n%s\r\n" % (len(data), data) if self.chunked else data
        if token:  # stamped as the write starts: a client can never see it earlier
            self.t_tokens.append(time.perf_counter_ns())
        self.h.connection.sendall(frame)

    def trace(self) -> dict[str, Any]:
        return {"t_received_ns": getattr(self.h, "t_received", None), "t_token_ns": self.t_tokens,
                "t_end_ns": time.perf_counter_ns()}  # fmt: skip

    def json(self, body: dict[str, Any]) -> None:
        """A whole (non-streamed) JSON answer."""
        data = json.dumps(body).encode()
        self.h.send_response(200)
        self.h.send_header("Content-Type", "application/json")
        self.h.send_header("Content-Length", str(len(data)))
        self.h.end_headers()
        self.h.wfile.write(data)

    def end(self) -> None:
        # Publish the trace before the body's last byte, so a client that asks for it
        # right after its stream ended always gets this one.
        self.h.server.last_trace = self.trace()  # type: ignore[attr-defined]
        if self.chunked:
            self.h.connection.sendall(b"0\r\n\r\n")

    def cut(self) -> None:
        """Drop the connection mid-body, the way a crashed server does."""
        self.h.close_connection = True
        self.h.connection.shutdown(socket.SHUT_RDWR)


Script = Callable[[Out, dict[str, float]], None]


def _words(out: Out, gap_ms: float = 0.0) -> None:
    for w in WORDS:
        if gap_ms:
            time.sleep(gap_ms / 1000)
        out.send(content(w), token=True)


def s_normal(out: Out, p: dict[str, float]) -> None:
    out.start()
    _words(out)
    out.send(STOP)
    out.send(DONE)
    out.end()


# What a renderer must show as inert text: markup, a script URL, an RTL override.
MARKUP_REPLY = '<script>alert(1)</script>"><img src=x onerror=alert(2)><a href="javascript:alert(3)">x</a>\u202egnp.exe'


def s_markup(out: Out, p: dict[str, float]) -> None:
    """A reply of hostile markup (MARKUP_REPLY), then ``pad`` characters more (a long reply)."""
    out.start()
    out.send(content(MARKUP_REPLY), token=True)
    if p.get("pad"):
        out.send(content("x" * int(p["pad"])), token=True)
    out.send(STOP)
    out.send(DONE)
    out.end()


def s_usage(out: Out, p: dict[str, float]) -> None:
    # completion_tokens deliberately differs from the 3 chunks: the count must come from here
    out.start()
    _words(out)
    out.send(STOP)
    out.send(sse(chunk(None, usage={"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27,
                                    "prompt_tokens_details": {"cached_tokens": 4}})))  # fmt: skip
    out.send(DONE)
    out.end()


LLAMA_TIMINGS = {"prompt_n": 12, "prompt_ms": 6.0, "prompt_per_token_ms": 0.5, "prompt_per_second": 2000.0,
                 "predicted_n": 5, "predicted_ms": 50.0, "predicted_per_token_ms": 10.0,
                 "predicted_per_second": 100.0, "cache_n": 3}  # fmt: skip


def s_timings(out: Out, p: dict[str, float]) -> None:
    out.start()
    _words(out)
    out.send(sse(chunk({}, "stop", timings=LLAMA_TIMINGS)))  # llama.cpp puts it on the last chunk
    if p.get("usage"):
        out.send(sse(chunk(None, usage={"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27})))
    out.send(DONE)
    out.end()


def s_lmstudio(out: Out, p: dict[str, float]) -> None:
    out.start()
    _words(out)
    stats = {"tokens_per_second": 42.0, "time_to_first_token": 0.25, "generation_time": 0.05,
             "stop_reason": "eosFound"}  # fmt: skip
    out.send(sse(chunk({}, "stop", stats=stats)))
    out.send(DONE)
    out.end()


def s_ollama(out: Out, p: dict[str, float]) -> None:
    out.start()
    _words(out)
    out.send(sse(chunk({}, "stop", eval_count=6, eval_duration=60_000_000,
                       prompt_eval_count=30, prompt_eval_duration=10_000_000)))  # fmt: skip
    out.send(DONE)
    out.end()


def s_role_first(out: Out, p: dict[str, float]) -> None:
    out.start()
    time.sleep(p.get("role_ms", 30) / 1000)
    out.send(ROLE)
    time.sleep(p.get("gap_ms", 50) / 1000)
    _words(out)
    out.send(STOP)
    out.send(DONE)
    out.end()


def s_reasoning(out: Out, p: dict[str, float]) -> None:
    fieldname = "reasoning" if p.get("field") == 2 else "reasoning_content"
    out.start()
    out.send(ROLE)
    for piece in ("Let me", " think."):
        time.sleep(p.get("gap_ms", 20) / 1000)
        out.send(sse(chunk({fieldname: piece})), token=True)
    time.sleep(p.get("think_ms", 60) / 1000)
    _words(out)
    out.send(STOP)
    out.send(DONE)
    out.end()


def s_tools(out: Out, p: dict[str, float]) -> None:
    out.start()
    out.send(ROLE)
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    out.send(sse(chunk({"tool_calls": [first]})), token=True)
    for part in ('{"city": ', '"Paris"}'):
        out.send(sse(chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})), token=True)
    out.send(sse(chunk({}, "tool_calls")))
    out.send(DONE)
    out.end()


def s_cut(out: Out, p: dict[str, float]) -> None:
    out.start(chunked=not p.get("quiet"))
    out.send(ROLE)
    out.send(content("Hello"), token=True)
    out.send(content(" wor"), token=True)
    if p.get("after_finish"):  # the answer is whole; only [DONE] and the last chunk are lost
        out.send(STOP)
    out.cut()


def s_hangup(out: Out, p: dict[str, float]) -> None:
    out.cut()  # no status line at all


def s_http500(out: Out, p: dict[str, float]) -> None:
    body = b'{"error": {"message": "model crashed: out of memory", "type": "server_error"}}'
    out.h.send_response(500)
    out.h.send_header("Content-Type", "application/json")
    out.h.send_header("Content-Length", str(len(body)))
    out.h.end_headers()
    out.h.wfile.write(body)


def s_garbage(out: Out, p: dict[str, float]) -> None:
    out.start()
    out.send(content("Hello"), token=True)
    out.send(b"data: [1, 2]\n\n" if p.get("shape") else b"data: {not json at all <html>\n\n")
    out.send(content(" world"), token=True)
    out.send(STOP)
    out.send(DONE)
    out.end()


def s_error(out: Out, p: dict[str, float]) -> None:
    out.start()
    out.send(content("Hello"), token=True)
    out.send(sse({"error": {"code": 500, "message": "context size exceeded", "type": "server_error"}}))
    out.end()


def s_stall(out: Out, p: dict[str, float]) -> None:
    out.start()
    out.send(content("Hello"), token=True)
    time.sleep(p.get("stall_ms", 1000) / 1000)  # longer than the client's read timeout
    out.send(STOP)
    out.send(DONE)
    out.end()


def s_empty(out: Out, p: dict[str, float]) -> None:
    out.start()
    out.send(ROLE)
    out.send(STOP)
    out.send(DONE)
    out.end()


def s_json(out: Out, p: dict[str, float]) -> None:
    """A server that ignored ``stream: true`` and answered one JSON body."""
    choice = {"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}
    body = json.dumps({"id": "x", "object": "chat.completion", "model": MODEL, "choices": [choice]}).encode()
    out.h.send_response(200)
    out.h.send_header("Content-Type", "application/json")
    out.h.send_header("Content-Length", str(len(body)))
    out.h.end_headers()
    out.h.wfile.write(body)


def s_paced(out: Out, p: dict[str, float]) -> None:
    """First token ``ttft_ms`` after the request arrived, then exactly ``rate`` tokens/s;
    ``n`` tokens that answer nothing (" t0 t1 …")."""
    _paced(out, p, [f" t{i}" for i in range(int(p.get("n", 64)))])


# The right answer to the core suite's ``count_stars`` test (bench_runner/suites/core_v1.json).
STARS_ANSWER = ["1\n", "2*\n", "3\n", "4*\n", "5\n", "6*\n", "7\n", "8*\n", "9\n", "10*\n", "55"]


def s_stars(out: Out, p: dict[str, float]) -> None:
    """``paced``, answering with STARS_ANSWER (11 tokens): a reply a checker passes."""
    _paced(out, p, STARS_ANSWER)


def _paced(out: Out, p: dict[str, float], tokens: list[str]) -> None:
    """``tokens`` on a schedule: the first ``ttft_ms`` after the request arrived, then
    ``rate``/s. With ``serial=1`` the server answers one such request at a time, like a
    server with one slot: the next one's TTFT starts when the slot frees (queueing shows)."""
    slot = out.h.server.slot if p.get("serial") else None  # type: ignore[attr-defined]
    if slot is not None:
        slot.acquire()
    try:
        t0 = time.perf_counter_ns() if slot is not None else out.h.t_received  # type: ignore[attr-defined]
        ttft_ns, n = int(p.get("ttft_ms", 50) * 1e6), len(tokens)
        period_ns = 1e9 / p.get("rate", 100)
        # Spinning holds a core; on a machine with few cores a shorter spin leaves the
        # client one (time.sleep overshoots by ~0.07 ms on an idle Linux box).
        spin_ns = int(p.get("spin_us", SPIN_NS / 1000) * 1000)
        frames = [content(t) for t in tokens]  # encoded before the clock matters
        out.start()
        out.send(ROLE)
        for i, frame in enumerate(frames):
            wait_until(t0 + ttft_ns + round(i * period_ns), spin_ns)
            out.send(frame, token=True)
        out.send(STOP)
        out.send(sse(chunk(None, usage={"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n})))
        out.send(DONE)
        out.end()
    finally:
        if slot is not None:
            slot.release()


# -- the weather agent turn ------------------------------------------------------
# One scripted answer per side of a tool-using turn; the numbers are distinct per call,
# so a recording shows which call each token count came from.
# the tool both recorders' agents declare (scripts/record_fixtures.py, record_frameworks.py)
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
WEATHER_CITY = "Paris"
WEATHER_ARGUMENTS = '{"city": "Paris"}'
WEATHER_ANSWER = "It is sunny in Paris, 22 °C."
WEATHER_CALL_ID = "call_weather_paris_1"
WEATHER_USAGE = {  # reply → (prompt_tokens, completion_tokens)
    "tool_call": (61, 17),
    "answer": (94, 12),
}
SNAPSHOT = "-2024-07-18"  # the dated snapshot a response names, e.g. gpt-4o-mini-2024-07-18


def response_model(requested: str) -> str:
    return requested if requested.endswith(SNAPSHOT) else requested + SNAPSHOT


def _weather_reply(request: dict[str, Any]) -> str:
    """``answer`` once the conversation holds a tool result, else ``tool_call``."""
    messages = request.get("messages") or []
    return "answer" if any(isinstance(m, dict) and m.get("role") == "tool" for m in messages) else "tool_call"


def _usage(reply: str) -> dict[str, Any]:
    prompt, completion = WEATHER_USAGE[reply]
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}


def _tool_call(arguments: str | None = WEATHER_ARGUMENTS) -> dict[str, Any]:
    call: dict[str, Any] = {"id": WEATHER_CALL_ID, "type": "function",
                            "function": {"name": "get_weather", "arguments": arguments}}
    return call


def s_weather(out: Out, p: dict[str, float], arguments: str = WEATHER_ARGUMENTS) -> None:
    """A tool call to get_weather (with ``arguments``), then (after the tool result) the
    final answer.

    ``ttft_ms`` delays the first streamed token (default 120), ``gap_ms`` spaces the rest
    (default 15); a non-streamed answer comes at once.
    """
    request = out.request if isinstance(out.request, dict) else {}
    reply = _weather_reply(request)
    requested = str(request.get("model") or MODEL)
    model = response_model(requested)
    stream = bool(request.get("stream"))
    include_usage = stream and bool((request.get("stream_options") or {}).get("include_usage"))
    cid = f"chatcmpl-weather-{reply}"
    created = int(time.time())
    served = {"requested_model": requested, "response_model": model, "stream": stream, "reply": reply,
              "usage": _usage(reply), "usage_sent": not stream or include_usage, "ttft_ms": None,
              "tools": [t.get("function", {}).get("name") for t in request.get("tools") or []]}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if reply == "tool_call":
            message["tool_calls"] = [_tool_call(arguments)]
            finish = "tool_calls"
        else:
            message["content"] = WEATHER_ANSWER
            finish = "stop"
        # recorded before the answer goes out: a client that asks right after has it
        out.h.server.served.append(served)  # type: ignore[attr-defined]
        out.json({"id": cid, "object": "chat.completion", "created": created, "model": model,
                  "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                  "usage": _usage(reply), "system_fingerprint": "fp_stub"})
        return

    def frame(delta: dict[str, Any] | None, finish: str | None = None, **top: Any) -> bytes:
        return sse(chunk(delta, finish, id=cid, created=created, model=model, system_fingerprint="fp_stub", **top))

    t0 = out.h.t_received  # type: ignore[attr-defined]
    ttft_ns, gap_s = int(p.get("ttft_ms", 120) * 1e6), p.get("gap_ms", 15) / 1000
    out.start()
    # OpenAI's first chunk (role, empty content) comes with the first token, after the
    # prefill; sent at once it would make "time to first chunk" meaningless.
    wait_until(t0 + ttft_ns)
    out.send(frame({"role": "assistant", "content": None if reply == "tool_call" else ""}))
    if reply == "tool_call":
        first = {"index": 0, **_tool_call("")}
        pieces = [frame({"tool_calls": [first]})]
        pieces += [frame({"tool_calls": [{"index": 0, "function": {"arguments": a}}]})
                   for a in _halves(arguments)]
        finish = "tool_calls"
    else:
        words = WEATHER_ANSWER.split(" ")
        pieces = [frame({"content": w if i == 0 else " " + w}) for i, w in enumerate(words)]
        finish = "stop"
    for i, piece in enumerate(pieces):
        if i:
            time.sleep(gap_s)
        out.send(piece, token=True)
    served["ttft_ms"] = (out.t_tokens[0] - t0) / 1e6
    out.h.server.served.append(served)  # type: ignore[attr-defined]
    out.send(frame({}, finish))
    if include_usage:
        out.send(frame(None, usage=_usage(reply)))
    out.send(DONE)
    out.end()


def _halves(arguments: str) -> tuple[str, str]:
    """The arguments in two stream pieces, cut after the first space (``{"city": `` ``"Paris"}``)."""
    cut = arguments.find(" ") + 1 or len(arguments) // 2
    return arguments[:cut], arguments[cut:]


# Replay candidates (tests/bench_runner/test_replay.py): the weather turn with arguments that
# are the same JSON written otherwise, and with another city.
WEATHER_SPACED_ARGUMENTS = '{ "city" :"Paris" }'
WEATHER_BERLIN_ARGUMENTS = '{"city": "Berlin"}'


def s_weather_spaced(out: Out, p: dict[str, float]) -> None:
    s_weather(out, p, WEATHER_SPACED_ARGUMENTS)


def s_weather_berlin(out: Out, p: dict[str, float]) -> None:
    s_weather(out, p, WEATHER_BERLIN_ARGUMENTS)


SCRIPTS: dict[str, Script] = {
    "normal": s_normal, "usage": s_usage, "timings": s_timings, "lmstudio": s_lmstudio,
    "ollama": s_ollama, "role-first": s_role_first, "reasoning": s_reasoning, "tools": s_tools,
    "cut": s_cut, "hangup": s_hangup, "http500": s_http500, "garbage": s_garbage, "error": s_error, "stall": s_stall,
    "empty": s_empty, "json": s_json, "paced": s_paced, "stars": s_stars, "weather": s_weather,
    "markup": s_markup, "weather-spaced": s_weather_spaced, "weather-berlin": s_weather_berlin,
}  # fmt: skip


def parse_path(path: str) -> tuple[str, dict[str, float]]:
    """``/paced;ttft_ms=50;rate=100/v1/chat/completions`` → ("paced", {...})."""
    head = path.lstrip("/").split("/", 1)[0]
    name, *pairs = head.split(";")
    return name, {k: float(v) for k, v in (pair.split("=", 1) for pair in pairs)}


def models(path: str) -> list[str]:
    """The model ids ``GET <path>`` lists: every script under ``/by-model``, else the one."""
    return sorted(SCRIPTS) if parse_path(path)[0] == BY_MODEL else [MODEL]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def parse_request(self) -> bool:
        # The request line has just been read: this is the request's arrival, the moment a
        # server's own TTFT clock starts (header parsing below is the stub's cost, not the
        # client's).
        self.t_received = time.perf_counter_ns()
        return super().parse_request()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet in tests
        pass

    def do_GET(self) -> None:  # noqa: N802
        status, answer = 404, {}
        if self.path == "/stub/last_trace":
            status, answer = 200, self.server.last_trace
        elif self.path == "/stub/served":
            status, answer = 200, {"served": self.server.served}
        elif self.path.endswith("/v1/models"):
            status, answer = 200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "stub"} for m in models(self.path)]}
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        request = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        name, params = parse_path(self.path)
        if name == BY_MODEL:
            try:
                name = str(json.loads(request).get("model"))
            except (ValueError, AttributeError):
                name = ""
        script = SCRIPTS.get(name)
        if script is None:
            self.send_error(404, f"no script {name!r}")
            return
        out = Out(self)
        try:
            out.request = json.loads(request)
        except ValueError:
            pass
        try:
            script(out, params)
        except OSError:  # the client went away; nothing to answer
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    last_trace: dict[str, Any] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.served: list[dict[str, Any]] = []  # what each weather reply was, in order
        self.slot = threading.Lock()  # the one slot of ``serial=1`` scripts

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hang up mid-stream on purpose here (a bad chunk ends their read).
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class StubServer:
    """The stub on 127.0.0.1 and a free port, served from a thread while in ``with``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), _Handler)
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever, name="stub-sse", daemon=True)

    def base_url(self, script: str, **params: float) -> str:
        head = ";".join([script, *(f"{k}={v}" for k, v in params.items())])
        return f"http://{self.host}:{self.port}/{head}/v1"

    @property
    def last_trace(self) -> dict[str, Any]:
        return self._server.last_trace

    @property
    def served(self) -> list[dict[str, Any]]:
        """What each weather reply was, in the order sent (a live list)."""
        return self._server.served

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    stub = StubServer(port=args.port)
    print(f"listening http://{stub.host}:{stub.port}", flush=True)
    try:
        stub._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stub._server.server_close()


if __name__ == "__main__":
    sys.exit(main())
