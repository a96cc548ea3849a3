"""The live dashboard from the outside, for tests and benchmarks: a WebSocket viewer that
records every message with the moment it arrived, and the web's live counters."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any, Callable

import httpx

from otelbench.testing.wait import wait_for


class LiveViewer:
    """A viewer of one live URL (``ws://…/live/…``; ``headers``: of its handshake, a read
    key's) reading in a thread of its own:
    ``messages`` holds ``(time.monotonic() on arrival, message)``; ``close_code`` is set
    when the server closes."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        from websockets.sync.client import connect

        self.ws = connect(url, open_timeout=10, close_timeout=2, additional_headers=headers)
        self.messages: list[tuple[float, dict[str, Any]]] = []
        self.close_code: int | None = None
        self._thread = threading.Thread(target=self._read, name="live-viewer", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            for text in self.ws:
                self.messages.append((time.monotonic(), json.loads(text)))
        except ConnectionClosed:
            pass
        self.close_code = self.ws.close_code

    def of(self, kind: str, **match: Any) -> list[dict[str, Any]]:
        """Messages of type ``kind`` whose fields equal ``match``."""
        return [m for _, m in list(self.messages)
                if m["type"] == kind and all(m.get(k) == v for k, v in match.items())]

    def wait(self, condition: Callable[[LiveViewer], Any], *, timeout_s: float = 30, what: str = "") -> Any:
        return wait_for(lambda: condition(self), timeout_s=timeout_s, what=what)

    def close(self) -> None:
        self.ws.close()
        self._thread.join(5)


_SAMPLE = re.compile(r"^(otelbench_web_live_\w+(?:\{[^}]*\})?) (\S+)$", re.M)


def live_counters(web: str) -> dict[str, float]:
    """The web's ``otelbench_web_live_*`` samples at ``web`` (``http://host:port``), by
    name with labels (``otelbench_web_live_messages_total{type="span"}``)."""
    text = httpx.get(f"{web}/metrics", timeout=10).text
    return {name: float(value) for name, value in _SAMPLE.findall(text)}
