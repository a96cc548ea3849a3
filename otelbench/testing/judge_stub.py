"""A judge endpoint that fails on demand: for the processors' failure modes only.

The judge's real behaviour is tested against the real llama.cpp server with the embedded
model; this neighbour exists for what a real server will not do when asked: answer
garbage, answer 500, be slow enough for a process to be killed mid-pass, or show exactly
what it was sent (the privacy rule). Non-streamed chat completions only.

``mode``: ``json`` answers ``{"reasoning": ..., "score": 0.75}`` (or exactly ``text``, when
given); ``garbage`` answers prose with no grade in it; ``http500`` fails every completion. ``/v1/models`` always answers,
so an endpoint check passes and the failure shows per run. ``held``: answers wait until
``release()`` (a pass that stays in progress for as long as a test needs it to).
``score_of(prompt, asked_before)``: the score to answer, from the request's last message
and how many times that same message was asked before (a judge that answers a repeat
differently, by a known amount).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

MODEL = "stub-judge"
HOLD_MAX_S = 120.0  # a held answer goes out after this even if nobody releases it
GARBAGE = "Well, it depends on many things; hard to say, honestly."


class JudgeStub:
    def __init__(self, mode: str = "json", *, delay_s: float = 0.0, score: float = 0.75,
                 text: str | None = None, held: bool = False,
                 score_of: Callable[[str, int], float] | None = None) -> None:
        self.mode, self.delay_s, self.score, self.text, self.score_of = mode, delay_s, score, text, score_of
        self._asked: dict[str, int] = {}
        self._released = threading.Event()
        if not held:
            self._released.set()
        self.requests: list[dict[str, Any]] = []  # every chat completion's body
        self._lock = threading.Lock()
        self._stopped = False
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/v1/models"):
                    self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                last = str((body.get("messages") or [{}])[-1].get("content"))
                with stub._lock:
                    stub.requests.append(body)
                    before = stub._asked.get(last, 0)
                    stub._asked[last] = before + 1
                stub._released.wait(HOLD_MAX_S)
                if stub.delay_s:
                    time.sleep(stub.delay_s)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                elif stub.mode == "http500":
                    self._send(500, {"error": {"message": "model crashed: out of memory", "type": "server_error"}})
                else:
                    text = (GARBAGE if stub.mode == "garbage" else stub.text if stub.text is not None else
                            json.dumps({"reasoning": "The answer matches the task.",
                                        "score": stub.score if stub.score_of is None else stub.score_of(last, before)}))
                    self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": text}}],
                                     "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def prompts(self) -> str:
        """Everything the judge was sent, as one string (for "was X ever sent?")."""
        with self._lock:
            return json.dumps(self.requests)

    def __enter__(self) -> JudgeStub:
        self._thread.start()
        return self

    def release(self) -> None:
        """Let held answers (and every later one) go out."""
        self._released.set()

    def stop(self) -> None:
        """Go away, as a server that crashed does: later connections are refused."""
        if not self._stopped:
            self._stopped = True
            self._released.set()
            self._server.shutdown()
            self._server.server_close()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
