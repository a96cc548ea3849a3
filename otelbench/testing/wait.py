"""Waiting on explicit state, for tests: poll a condition until it holds.

A test waits for what it needs to be true (a counter reached, a file written, a process
gone), never for a fixed time. Many such states live in another thread or process (the
flusher's counters in shared memory, the kernel's process table), where polling is the
only way to observe them. The timeout is a guard against a hung test, not a bound on
how fast the product must be: keep it generous (performance is measured in benchmarks/).
"""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")

POLL_S = 0.01
DEFAULT_TIMEOUT_S = 60.0


def wait_for(condition: Callable[[], T], *, timeout_s: float = DEFAULT_TIMEOUT_S, what: str = "") -> T:
    """Call ``condition`` until it returns something truthy, and return that.

    Raises ``TimeoutError`` naming ``what`` (or the condition) after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"still not true after {timeout_s} s: {what or condition}")
        time.sleep(POLL_S)
    return value


def run_async(make: Any) -> Any:
    """``asyncio.run(make())`` in a thread of its own: a test may run while another test's
    fixture keeps an event loop running in the main thread (Playwright's sync API does)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()
