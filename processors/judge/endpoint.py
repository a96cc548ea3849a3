"""The judge's side of one OpenAI-compatible endpoint: a check, then calls with retries.

Servers differ in what they accept, so the first calls negotiate and the endpoint
remembers for the rest of the pass:

- ``response_format``: OpenAI's ``json_schema`` (OpenAI, vLLM, LM Studio, Ollama ≥ 0.5),
  else ``json_object`` with a ``schema`` (llama-cpp-python: it answers ``json_schema``
  with a validation error — as a 500), else none (the answer is parsed tolerantly);
- ``logprobs``: asked for; a server that refuses them (an error naming ``logprobs``) is
  asked without, and its scores come from the parsed answer.

Failures are sorted three ways (``retry.py`` says which are retried):

- ``JudgeEndpointError`` — the endpoint cannot judge anything: not reachable after the
  retries, the key rejected (401/403), the model unknown (404). The pass stops; the
  caller writes nothing.
- ``CallFailed`` — this one request failed for good (a 400, or 429/5xx still after the
  last retry): the run gets a judge error row and a later pass tries it again.
- anything the server answered is a ``Completion``; whether it is usable is the parser's
  question.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from otelbench.processors.judge.logprobs import TopLogprobs
from otelbench.processors.judge.retry import RetryPolicy, retryable

DEFAULT_TOP_LOGPROBS = 20  # OpenAI's maximum; grades outside the top 20 carry ~no mass
DEFAULT_TIMEOUT_S = 120.0
FORMATS = ("json_schema", "json_object", None)
_MESSAGE_CHARS = 300


class JudgeEndpointError(RuntimeError):
    """The judge's endpoint cannot be used (down, key rejected, model unknown): one line."""


class CallFailed(RuntimeError):
    """One judge request failed for good; ``tries`` requests were sent."""

    def __init__(self, message: str, tries: int) -> None:
        super().__init__(message)
        self.tries = tries


@dataclass(frozen=True)
class Completion:
    content: str
    tokens: tuple[str, ...]  # generated tokens, when logprobs came back
    tops: tuple[TopLogprobs, ...]  # top alternatives at each generated token
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    response_format: str | None  # what this request was sent with
    tries: int  # requests sent for it, the successful one included


def _one_line(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    text = " ".join(str(getattr(exc, "message", None) or exc).split())
    if len(text) > _MESSAGE_CHARS:
        text = text[: _MESSAGE_CHARS - 1] + "…"
    return f"HTTP {status}: {text}" if status else f"{type(exc).__name__}: {text}"


def _connection_reason(exc: BaseException) -> str:
    """The cause of a failed connection in a few words: "connection refused", "timed out"."""
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, TimeoutError):
            return "timed out"
        text = str(cause).lower()
        for words in ("connection refused", "name or service not known", "temporary failure in name resolution",
                      "no route to host", "network is unreachable", "connection reset", "timed out"):
            if words in text:
                return words
        cause = cause.__cause__ or cause.__context__
    return _one_line(exc)


def _mentions(exc: BaseException, *words: str) -> bool:
    body = getattr(exc, "body", None)
    text = f"{getattr(exc, 'message', '')} {exc} {body!r}".lower()
    return any(w in text for w in words)


def response_format(kind: str | None, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` field of a request, in the named dialect."""
    if kind == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "judgement", "schema": schema, "strict": True}}
    if kind == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


@dataclass
class Endpoint:
    """One model behind one OpenAI-compatible base URL, shared by the judge's workers."""

    client: Any  # an openai.OpenAI (or anything with its chat.completions / models shape)
    model: str
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    top_logprobs: int = DEFAULT_TOP_LOGPROBS
    temperature: float = 0.0
    timeout_s: float = DEFAULT_TIMEOUT_S  # per request; a timeout is retried like a 5xx
    on_request: Callable[[dict[str, Any]], None] | None = None  # sees each request's body, for tracing
    _format: int = 0
    _logprobs: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        with_options = getattr(self.client, "with_options", None)
        if with_options is not None:  # our retry policy is the only one (retry.py)
            self.client = with_options(max_retries=0, timeout=self.timeout_s)

    @property
    def base_url(self) -> str:
        return str(getattr(self.client, "base_url", "?")).rstrip("/")

    @property
    def logprobs(self) -> bool:
        return self._logprobs

    # -- before judging ------------------------------------------------------------

    def check(self) -> None:
        """Raise ``JudgeEndpointError`` unless the endpoint answers and knows the model.

        A server without ``GET /models`` (404) is asked for one token instead."""
        try:
            listed = [m.id for m in self.client.models.list().data]
        except openai.NotFoundError:
            listed = None
        except (openai.APIConnectionError, openai.APIStatusError) as exc:
            raise self._endpoint_error(exc) from exc
        if listed is not None:
            # a single-model server (llama.cpp, llama-cpp-python) answers whatever model is named
            if len(listed) > 1 and self.model not in listed:
                shown = ", ".join(listed[:5]) + (f" (+{len(listed) - 5} more)" if len(listed) > 5 else "")
                raise JudgeEndpointError(f"judge endpoint {self.base_url} has no model {self.model!r}; it serves: {shown}")
            return
        try:
            self.client.chat.completions.create(model=self.model, max_tokens=1,
                                                messages=[{"role": "user", "content": "ping"}])
        except (openai.APIConnectionError, openai.APIStatusError) as exc:
            raise self._endpoint_error(exc) from exc

    def _endpoint_error(self, exc: BaseException) -> JudgeEndpointError:
        if isinstance(exc, openai.APIConnectionError):
            return JudgeEndpointError(f"judge endpoint {self.base_url} unreachable: {_connection_reason(exc)}")
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            why = "rejected the API key"
        elif isinstance(exc, openai.NotFoundError):
            why = f"does not know model {self.model!r}"
        else:
            why = "failed"
        return JudgeEndpointError(f"judge endpoint {self.base_url} {why} ({_one_line(exc)})")

    # -- judging ---------------------------------------------------------------------

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int,
                 schema: dict[str, Any] | None = None, logprobs: bool = True,
                 stop: Sequence[str] | None = None) -> Completion:
        """One chat completion, retried per the policy; see the module doc for failures."""
        tries = 0
        while True:
            kind = FORMATS[self._format] if schema is not None else None
            want_logprobs = logprobs and self._logprobs
            body: dict[str, Any] = {"model": self.model, "messages": list(messages), "max_tokens": max_tokens,
                                    "temperature": self.temperature}
            if stop:
                body["stop"] = list(stop)
            if want_logprobs:
                body.update(logprobs=True, top_logprobs=self.top_logprobs)
            if schema is not None and (fmt := response_format(kind, schema)) is not None:
                body["response_format"] = fmt
            tries += 1
            if self.on_request is not None:
                self.on_request(body)
            try:
                response = self.client.chat.completions.create(**body)
            except (openai.APIConnectionError, openai.APIStatusError) as exc:
                if self._downgrade(exc, kind, want_logprobs):
                    tries -= 1  # a negotiation, not a failure of this run
                    continue
                if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)):
                    raise self._endpoint_error(exc) from exc
                if not retryable(exc):
                    raise CallFailed(_one_line(exc), tries) from exc
                if tries >= self.retry.tries:
                    if isinstance(exc, openai.APIConnectionError):
                        raise self._endpoint_error(exc) from exc
                    raise CallFailed(f"{_one_line(exc)} (after {tries} tries)", tries) from exc
                self.retry.wait(tries, exc)
                continue
            return self._completion(response, kind if schema is not None else None, tries)

    def _downgrade(self, exc: BaseException, kind: str | None, want_logprobs: bool) -> bool:
        """After an error that names a feature we sent: stop sending it; True to resend."""
        if not isinstance(exc, openai.APIStatusError) or exc.status_code in (401, 403, 404, 429):
            return False
        with self._lock:
            if kind is not None and _mentions(exc, "response_format", "json_schema", "json_object"):
                if FORMATS[self._format] == kind and self._format < len(FORMATS) - 1:
                    self._format += 1
                return True
            if want_logprobs and _mentions(exc, "logprobs"):
                self._logprobs = False
                return True
        return False

    @staticmethod
    def _completion(response: Any, kind: str | None, tries: int) -> Completion:
        choices = getattr(response, "choices", None) or []
        choice = choices[0] if choices else None
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None) or ""
        tokens: list[str] = []
        tops: list[TopLogprobs] = []
        for item in getattr(getattr(choice, "logprobs", None), "content", None) or []:
            tokens.append(str(item.token))
            alternatives = [(str(t.token), float(t.logprob)) for t in (item.top_logprobs or [])]
            tops.append(alternatives or [(str(item.token), float(item.logprob))])
        usage = getattr(response, "usage", None)
        return Completion(content, tuple(tokens), tuple(tops), getattr(usage, "prompt_tokens", None),
                          getattr(usage, "completion_tokens", None), getattr(choice, "finish_reason", None),
                          kind, tries)
