"""One measured streaming chat completion against an OpenAI-compatible server.

``measure_run`` sends one ``stream: true`` request and reads the Server-Sent Events
itself (the ``openai`` client hides a dropped stream; docs/bench.md "Metric
definitions" has every definition, ``stats.FORMULAS`` states them in results). One
clock, ``time.perf_counter_ns`` (passed in), stamps each network read as it returns;
chunks that arrive in one read share its time, the truth at the socket. The reads are
parsed after the stream ends, so the loop that waits on the socket does nothing else.

Output tokens come from server usage → server-native timings (llama.cpp ``timings``,
LM Studio ``stats``, Ollama ``eval_count``) → a tokenizer passed in → chars/4, with
the source recorded beside the count.

Failures never raise: a refused connection, a non-200 status, a non-JSON chunk, an
error object in the stream, a timeout or a stream that ends without ``finish_reason``
and without ``[DONE]`` all return ``RunResult(ok=False)`` with a kind, a message and
the evidence (the body, the bad line, or the stream's raw tail).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

import httpx
import orjson

DEFAULT_MAX_TOKENS = 128
DEFAULT_TIMEOUT_S = 120.0  # per read: the longest silence tolerated inside a stream
DEFAULT_CONNECT_TIMEOUT_S = 5.0
EVIDENCE_BYTES = 2000
_RECENT_READS = 16  # the last reads, joined, are a failed run's evidence
CHARS_PER_TOKEN = 4  # the usual English rule of thumb, used only when nothing better exists
_SSE_IGNORED = (b":", b"event:", b"id:", b"retry:")
_SEND_MARK = "http11.send_request_headers.started"
_CONNECT_MARKS = ("connection.connect_tcp.started", "connection.connect_tcp.complete")
_TRACE_MARKS = frozenset({_SEND_MARK, *_CONNECT_MARKS})
_OLLAMA_KEYS = ("eval_count", "eval_duration", "prompt_eval_count", "prompt_eval_duration")

Clock = Callable[[], int]
TokenCounter = Callable[[str], int | None]


# Idle connections are dropped after 2 s, before the server's own keep-alive timeout
# (llama-server's and uvicorn's are 5 s, httpx's default too): reusing one the server is
# closing at that instant fails as "Server disconnected without sending a response".
KEEPALIVE_EXPIRY_S = 2.0


def http_client(timeout: httpx.Timeout | float) -> httpx.Client:
    """The bench's HTTP client: no proxies from the environment, idle connections dropped
    before the server drops them."""
    return httpx.Client(timeout=timeout, trust_env=False, limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S))


class ErrorKind(StrEnum):
    CONNECT = "connect"  # nothing listening / connect timed out
    HTTP_STATUS = "http-status"  # answered, but not 200
    BAD_CHUNK = "bad-chunk"  # a line that is neither SSE nor JSON
    SERVER_ERROR = "server-error"  # an {"error": ...} object inside the stream
    STREAM_CUT = "stream-cut"  # ended without finish_reason and without [DONE]
    TIMEOUT = "timeout"  # silence longer than the read timeout
    TRANSPORT = "transport"  # any other transport failure
    NO_TOKENS = "no-tokens"  # finished cleanly but produced no token event: nothing to time


class TokenSource(StrEnum):
    USAGE = "usage"
    SERVER_TIMINGS = "server-timings"
    TOKENIZER = "tokenizer"
    ESTIMATE = "estimate-chars/4"
    NONE = "none"


@dataclass
class RunResult:
    """One run. Times in ms; on a failed run the metrics are partial, for diagnosis only."""

    ok: bool
    url: str
    model_requested: str
    nonce: str
    error_kind: str | None = None
    error: str | None = None
    evidence: str | None = None  # HTTP body, the bad line, or the raw tail of the stream
    http_status: int | None = None
    model: str | None = None  # the id the server returned in its chunks
    t_send_ns: int = 0  # raw clock value at send, to correlate with other processes' clocks
    connect_ms: float | None = None  # TCP connect, when this run opened a connection (before send)
    ttft_ms: float | None = None
    ttfo_ms: float | None = None  # None when nothing visible came (e.g. reasoning only)
    e2e_ms: float | None = None
    decode_ms: float | None = None
    stream_ms: float | None = None  # send → end of stream ([DONE] / close), beyond e2e
    n_out: int | None = None
    n_out_source: str = TokenSource.NONE
    n_prompt: int | None = None  # uncached prompt tokens (what prefill really computed)
    n_prompt_cached: int | None = None
    n_prompt_source: str = TokenSource.NONE
    n_token_events: int = 0
    n_chunks: int = 0  # JSON data events
    n_reads: int = 0  # network reads
    tpot_ms: float | None = None
    decode_tps: float | None = None
    e2e_tps: float | None = None  # includes TTFT
    prefill_tps: float | None = None
    itl_ms: list[float] = field(default_factory=list)
    server_decode_tps: float | None = None
    server_prefill_tps: float | None = None
    server_ttft_ms: float | None = None
    finish_reason: str | None = None
    done_marker: bool = False
    text: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    server_timings: dict[str, Any] = field(default_factory=dict)  # {"llama.cpp"|"lmstudio"|"ollama": {...}}
    client_overhead_us_per_chunk: float | None = None  # read loop's own time while streaming, per chunk
    parse_us_per_chunk: float | None = None  # SSE + JSON parsing, done after the stream, per chunk

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _StreamFailure(Exception):
    """A failed run; ``evidence`` None means "the stream's raw tail"."""

    def __init__(self, kind: ErrorKind, message: str, evidence: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.evidence = evidence


def _decode(raw: bytes, limit: int = EVIDENCE_BYTES) -> str:
    return raw[-limit:].decode("utf-8", "replace")


class _Stream:
    """One SSE stream: raw reads stamped while streaming, parsed after it ended.

    The loop that waits on the socket only stamps and stores each read; the JSON is
    parsed once the stream is over. That keeps the client's work per chunk during
    decode to an append (it shares the CPUs with a local server), and parsing all
    chunks in one go runs on warm caches instead of waking cold for each one.
    """

    def __init__(self) -> None:
        self.reads: list[tuple[bytes, int]] = []  # (bytes, clock when the read returned)
        self.done = False
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.usage: dict[str, Any] | None = None
        self.server: dict[str, Any] = {}
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.tools: dict[int, dict[str, Any]] = {}
        self.token_ns: list[int] = []
        self.first_visible_ns: int | None = None
        self.n_chunks = 0
        self.loop_ns = 0  # time in the read loop outside the socket wait
        self.parse_ns = 0

    def parse(self) -> None:
        """Interpret every read in order; raises at the first bad line or error object."""
        pending = b""
        for data, now in self.reads:
            lines = (pending + data if pending else data).split(b"\n")
            pending = lines.pop()  # a line split across reads belongs to the read that ends it
            for line in lines:
                self.line(line, now)
        if pending.strip():  # a last line without its newline
            self.line(pending, self.reads[-1][1])

    def line(self, line: bytes, now: int) -> None:
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            if payload == b"[DONE]":
                self.done = True
                return
            try:
                obj = orjson.loads(payload)
            except orjson.JSONDecodeError:
                raise _StreamFailure(ErrorKind.BAD_CHUNK, "a data line is not JSON", _decode(line)) from None
            try:
                self.chunk(obj, now)
            except (AttributeError, TypeError, ValueError) as exc:  # JSON, but not a chunk's shape
                raise _StreamFailure(ErrorKind.BAD_CHUNK, f"not a chunk: {exc}", _decode(line)) from None
        elif line.strip() and not line.startswith(_SSE_IGNORED):
            # Not SSE at all (e.g. a JSON body from a server that ignored stream: true).
            raise _StreamFailure(ErrorKind.BAD_CHUNK, "a line is not Server-Sent Events", _decode(line))

    def chunk(self, obj: dict[str, Any], now: int) -> None:
        self.n_chunks += 1
        if obj.get("error"):
            evidence = _decode(orjson.dumps(obj))
            raise _StreamFailure(ErrorKind.SERVER_ERROR, "the server sent an error in the stream", evidence)
        if self.model is None:
            self.model = obj.get("model")
        visible = thinking = False
        for choice in obj.get("choices") or ():
            delta = choice.get("delta") or {}
            content = delta.get("content") or choice.get("text")  # chat, or legacy completions
            if content:
                self.text.append(str(content))
                visible = True
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                self.reasoning.append(str(reasoning))
                thinking = True
            if delta.get("tool_calls"):
                self.add_tool_calls(delta["tool_calls"])
                visible = True
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        if visible or thinking:
            self.token_ns.append(now)
            if visible and self.first_visible_ns is None:
                self.first_visible_ns = now
        if obj.get("usage"):
            self.usage = obj["usage"]
        if obj.get("timings"):
            self.server["llama.cpp"] = obj["timings"]
        if obj.get("stats"):
            self.server["lmstudio"] = obj["stats"]
        if "eval_count" in obj:
            self.server["ollama"] = {k: obj[k] for k in _OLLAMA_KEYS if k in obj}

    def add_tool_calls(self, deltas: Sequence[Mapping[str, Any]]) -> None:
        # Tool calls stream as fragments keyed by index; the arguments arrive in pieces.
        for d in deltas:
            call = self.tools.setdefault(int(d.get("index", 0)), {"id": None, "name": "", "arguments": ""})
            call["id"] = d.get("id") or call["id"]
            fn = d.get("function") or {}
            call["name"] += fn.get("name") or ""
            call["arguments"] += fn.get("arguments") or ""

    def tail(self) -> str:
        return _decode(b"".join(data for data, _ in self.reads[-_RECENT_READS:]))


# -- request ------------------------------------------------------------------


# Temperature 0 is greedy decoding; saying so outright spares llama-server its default
# sampler chain (penalties, top-k 40, top-p, min-p… over the whole vocabulary) on every
# token, ~5 % of a small model's decode on 2 cores, for the very same tokens. vLLM reads
# top_k too; servers that know neither field ignore them.
GREEDY: dict[str, Any] = {"top_k": 1, "samplers": ["top_k"]}


def build_request(
    model: str,
    messages: Sequence[Mapping[str, Any]] | str,
    nonce: str,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 0.0,
    cache_prompt: bool | None = False,
    extra_body: Mapping[str, Any] | None = None,
    nonce_in_prompt: bool = True,
) -> dict[str, Any]:
    """The request body, with the nonce at the very start of the first message
    (``nonce_in_prompt=False``: the messages exactly as given, as a replay sends them).

    The nonce defeats prefix caches (llama.cpp reuses the longest matching prefix);
    a chat template's fixed text before the first message can still be reused, which
    is why prefill uses the *uncached* prompt count when the server reports one.
    """
    msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else [dict(m) for m in messages]
    if msgs and nonce_in_prompt:
        first = msgs[0]
        content = first.get("content")
        if isinstance(content, list):
            first["content"] = [{"type": "text", "text": f"[{nonce}] "}, *content]
        else:
            first["content"] = f"[{nonce}] {content or ''}"
    body: dict[str, Any] = {
        "model": model,
        "messages": msgs,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    if cache_prompt is not None:
        body["cache_prompt"] = cache_prompt  # llama.cpp; other servers ignore unknown fields
    if temperature == 0:
        body.update(GREEDY)
    body.update(extra_body or {})
    return body


def _prompt_text(body: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for m in body.get("messages", ()):
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(p.get("text", "") for p in c if isinstance(p, dict))
    return "\n".join(parts)


# -- token counts and metrics (pure) -------------------------------------------


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _estimate(text: str, count_tokens: TokenCounter | None) -> tuple[int | None, TokenSource]:
    if count_tokens is not None:
        n = count_tokens(text)
        if n is not None:
            return n, TokenSource.TOKENIZER
    if not text:
        return None, TokenSource.NONE
    return max(1, round(len(text) / CHARS_PER_TOKEN)), TokenSource.ESTIMATE


def output_tokens(
    usage: Mapping[str, Any] | None,
    server: Mapping[str, Any],
    text: str,
    count_tokens: TokenCounter | None = None,
) -> tuple[int | None, TokenSource]:
    """Output token count and its source: usage → server timings → tokenizer → chars/4."""
    if usage and (n := _int(usage.get("completion_tokens"))) is not None:
        return n, TokenSource.USAGE
    for name, key in (("llama.cpp", "predicted_n"), ("lmstudio", "total_output_tokens"), ("ollama", "eval_count")):
        if (n := _int((server.get(name) or {}).get(key))) is not None:
            return n, TokenSource.SERVER_TIMINGS
    return _estimate(text, count_tokens)


def prompt_tokens(
    usage: Mapping[str, Any] | None,
    server: Mapping[str, Any],
    prompt_text: str,
    count_tokens: TokenCounter | None = None,
) -> tuple[int | None, int | None, TokenSource]:
    """(uncached prompt tokens, cached prompt tokens, source); same precedence as output.

    A tokenizer or chars/4 sees only the messages' text, not the chat template around it.
    """
    if usage and (n := _int(usage.get("prompt_tokens"))) is not None:
        cached = _int((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0
        return n - cached, cached, TokenSource.USAGE
    llama = server.get("llama.cpp") or {}
    if (n := _int(llama.get("prompt_n"))) is not None:
        return n, _int(llama.get("cache_n")), TokenSource.SERVER_TIMINGS  # prompt_n excludes cache_n
    for name, key in (("lmstudio", "input_tokens"), ("ollama", "prompt_eval_count")):
        if (n := _int((server.get(name) or {}).get(key))) is not None:
            return n, None, TokenSource.SERVER_TIMINGS
    n, source = _estimate(prompt_text, count_tokens)
    return n, None, source


def server_speeds(server: Mapping[str, Any]) -> tuple[float | None, float | None, float | None]:
    """The server's own (decode tok/s, prefill tok/s, ttft ms), where it reports them."""
    llama = server.get("llama.cpp") or {}
    if llama:
        return llama.get("predicted_per_second"), llama.get("prompt_per_second"), None
    lms = server.get("lmstudio") or {}
    if lms:
        ttft_s = lms.get("time_to_first_token", lms.get("time_to_first_token_seconds"))
        return lms.get("tokens_per_second"), None, ttft_s * 1000.0 if ttft_s is not None else None
    oll = server.get("ollama") or {}
    decode = prefill = None
    if oll.get("eval_count") and oll.get("eval_duration"):
        decode = oll["eval_count"] / oll["eval_duration"] * 1e9  # durations are ns
    if oll.get("prompt_eval_count") and oll.get("prompt_eval_duration"):
        prefill = oll["prompt_eval_count"] / oll["prompt_eval_duration"] * 1e9
    return decode, prefill, None


def _ms(ns: int) -> float:
    return ns / 1e6


def derive_metrics(result: RunResult, t_send: int, token_ns: Sequence[int], first_visible_ns: int | None) -> None:
    """Fill the timing metrics of ``result`` from raw clock readings (see stats.FORMULAS)."""
    if not token_ns:
        return
    result.ttft_ms = _ms(token_ns[0] - t_send)
    result.e2e_ms = _ms(token_ns[-1] - t_send)
    result.decode_ms = result.e2e_ms - result.ttft_ms
    result.ttfo_ms = _ms(first_visible_ns - t_send) if first_visible_ns is not None else None
    result.itl_ms = [_ms(b - a) for a, b in zip(token_ns, token_ns[1:])]
    n = result.n_out
    if n is not None and n >= 2 and result.decode_ms > 0:
        result.tpot_ms = result.decode_ms / (n - 1)
        result.decode_tps = 1000.0 / result.tpot_ms
    if n is not None and result.e2e_ms > 0:
        result.e2e_tps = n / (result.e2e_ms / 1000.0)
    if result.n_prompt is not None and result.ttft_ms > 0:
        result.prefill_tps = result.n_prompt / (result.ttft_ms / 1000.0)


# -- the run --------------------------------------------------------------------


def measure_run(
    base_url: str,
    model: str,
    messages: Sequence[Mapping[str, Any]] | str,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 0.0,
    cache_prompt: bool | None = False,
    extra_body: Mapping[str, Any] | None = None,
    nonce: str | None = None,
    client: httpx.Client | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    api_key: str | None = None,
    count_tokens: TokenCounter | None = None,
    clock: Clock = time.perf_counter_ns,
    nonce_in_prompt: bool = True,
) -> RunResult:
    """Stream one chat completion from ``base_url`` (…/v1) and time it. Never raises for
    server or transport failures. Pass a shared ``client`` to reuse its connection.

    A request sent on a kept-alive connection that the server closed as it was being sent
    gets no response at all; it is sent once more, on a new connection (as urllib3 does for
    a stale connection): llama-server's router closes its side after some proxied answers."""
    result = _measure_once(base_url, model, messages, max_tokens=max_tokens, temperature=temperature,
                           cache_prompt=cache_prompt, extra_body=extra_body, nonce=nonce, client=client,
                           timeout_s=timeout_s, api_key=api_key, count_tokens=count_tokens, clock=clock,
                           nonce_in_prompt=nonce_in_prompt)
    if result.error_kind == ErrorKind.TRANSPORT and result.http_status is None and result.connect_ms is None:
        result = _measure_once(base_url, model, messages, max_tokens=max_tokens, temperature=temperature,
                               cache_prompt=cache_prompt, extra_body=extra_body, nonce=nonce, client=client,
                               timeout_s=timeout_s, api_key=api_key, count_tokens=count_tokens, clock=clock,
                               nonce_in_prompt=nonce_in_prompt)
    return result


def _measure_once(
    base_url: str,
    model: str,
    messages: Sequence[Mapping[str, Any]] | str,
    *,
    max_tokens: int,
    temperature: float,
    cache_prompt: bool | None,
    extra_body: Mapping[str, Any] | None,
    nonce: str | None,
    client: httpx.Client | None,
    timeout_s: float,
    api_key: str | None,
    count_tokens: TokenCounter | None,
    clock: Clock,
    nonce_in_prompt: bool = True,
) -> RunResult:
    url = base_url.rstrip("/") + "/chat/completions"
    nonce = nonce or secrets.token_hex(6)
    body = build_request(model, messages, nonce, max_tokens=max_tokens, temperature=temperature,
                         cache_prompt=cache_prompt, extra_body=extra_body, nonce_in_prompt=nonce_in_prompt)  # fmt: skip
    content = orjson.dumps(body)  # encoded before the clock starts
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    result = RunResult(ok=False, url=url, model_requested=model, nonce=nonce)
    timeout = httpx.Timeout(timeout_s, connect=DEFAULT_CONNECT_TIMEOUT_S)
    http = client or http_client(timeout)
    stream = _Stream()
    marks: dict[str, int] = {}

    def trace(name: str, info: Mapping[str, Any]) -> None:
        if name in _TRACE_MARKS:
            marks[name] = clock()

    failure: _StreamFailure | None = None
    cut: _StreamFailure | None = None  # the peer closed before the body's end
    t_send = t_end = clock()
    try:
        # Built (URL, headers, body) before the clock starts, and "send" is stamped by
        # httpcore's trace hook as the request starts to be written: the ~0.1 ms httpx
        # spends choosing a connection is the client's cost, not the server's latency.
        request = http.build_request("POST", url, content=content, headers=headers, timeout=timeout,
                                     extensions={"trace": trace})  # fmt: skip
        t_send = t_end = clock()
        response = http.send(request, stream=True)
        t_send = marks.get(_SEND_MARK, t_send)  # the fallback for transports without the hook
        try:
            result.http_status = response.status_code
            if response.status_code != 200:
                failure = _StreamFailure(
                    ErrorKind.HTTP_STATUS, f"HTTP {response.status_code} from {url}", _decode(response.read())
                )
            else:
                reads = stream.reads
                for data in response.iter_bytes():  # the hot loop: stamp, store, wait again
                    now = clock()
                    reads.append((data, now))
                    stream.loop_ns += clock() - now
            t_end = clock()
        finally:
            response.close()
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        failure = _StreamFailure(ErrorKind.CONNECT, f"server down at {url}: {exc}")
    except httpx.TimeoutException as exc:
        failure = _StreamFailure(ErrorKind.TIMEOUT, f"no data for {timeout_s:g}s from {url}: {exc!r}")
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        t_end = clock()
        if result.http_status is None:
            failure = _StreamFailure(ErrorKind.TRANSPORT, f"no response from {url}: {exc}")
        else:
            cut = _StreamFailure(ErrorKind.STREAM_CUT, f"stream cut: {exc}")
    except httpx.HTTPError as exc:
        failure = _StreamFailure(ErrorKind.TRANSPORT, repr(exc))
    finally:
        if client is None:
            http.close()
    t_parse = clock()  # off the clock from here: the stream is over
    try:
        stream.parse()  # a bad line or an error object is the first problem, if there is one
        if failure is None:
            # A drop after finish_reason lost only the goodbye ([DONE], the last chunk).
            if cut is not None and stream.finish_reason is None:
                raise cut
            result.ok = _complete(stream)
    except _StreamFailure as exc:
        failure = exc  # it arrived before whatever ended the transfer
    stream.parse_ns = clock() - t_parse
    if failure is not None:
        result.error_kind, result.error = failure.kind, str(failure)
        result.evidence = failure.evidence if failure.evidence is not None else (stream.tail() or None)
    result.t_send_ns = t_send
    if all(m in marks for m in _CONNECT_MARKS):  # a new connection was opened for this run
        result.connect_ms = _ms(marks[_CONNECT_MARKS[1]] - marks[_CONNECT_MARKS[0]])
    _fill(result, stream, body, t_send, t_end, count_tokens)
    return result


def _complete(stream: _Stream) -> bool:
    """True for a whole answer; raises for a cut stream or one without any token."""
    if not stream.done and stream.finish_reason is None:
        raise _StreamFailure(ErrorKind.STREAM_CUT, "stream cut: ended without finish_reason or [DONE]")
    if not stream.token_ns:
        raise _StreamFailure(ErrorKind.NO_TOKENS, "the stream finished without any token")
    return True


def _fill(
    result: RunResult,
    stream: _Stream,
    body: Mapping[str, Any],
    t_send: int,
    t_end: int,
    count_tokens: TokenCounter | None,
) -> None:
    result.model = stream.model
    result.finish_reason = stream.finish_reason
    result.done_marker = stream.done
    result.text = "".join(stream.text)
    result.reasoning = "".join(stream.reasoning)
    result.tool_calls = [stream.tools[i] for i in sorted(stream.tools)]
    result.usage = stream.usage
    result.server_timings = stream.server
    result.n_token_events = len(stream.token_ns)
    result.n_chunks = stream.n_chunks
    result.n_reads = len(stream.reads)
    result.stream_ms = _ms(t_end - t_send) if t_end > t_send else None
    if stream.n_chunks:
        result.client_overhead_us_per_chunk = stream.loop_ns / stream.n_chunks / 1000.0
        result.parse_us_per_chunk = stream.parse_ns / stream.n_chunks / 1000.0
    generated = result.reasoning + result.text + "".join(c["name"] + c["arguments"] for c in result.tool_calls)
    result.n_out, result.n_out_source = output_tokens(stream.usage, stream.server, generated, count_tokens)
    result.n_prompt, result.n_prompt_cached, result.n_prompt_source = prompt_tokens(
        stream.usage, stream.server, _prompt_text(body), count_tokens
    )
    result.server_decode_tps, result.server_prefill_tps, result.server_ttft_ms = server_speeds(stream.server)
    derive_metrics(result, t_send, stream.token_ns, stream.first_visible_ns)
