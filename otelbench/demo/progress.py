"""The demo's progress on the console: each step, its time, and what it says."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

STEPS = ("serve", "model", "bench", "agents", "judge + clusters", "report")
PROGRESS_EVERY_S = 30.0  # a long step's count, in a pipe or a CI log


class Progress:
    """Each step as ``[n/6 m:ss] name — what it does and why it takes the time it takes``,
    wrapped under its own start at the console's width (80 in a CI log); what a step says
    indented under it."""

    def __init__(self, console: Any) -> None:
        self.console, self.started, self.n = console, time.monotonic(), 0

    def elapsed(self) -> str:
        s = int(time.monotonic() - self.started)
        return f"{s // 60}:{s % 60:02d}"

    def _header(self, name: str, doing: str) -> None:
        import textwrap

        from rich.text import Text

        self.n = STEPS.index(name) + 1
        head = f"[{self.n}/{len(STEPS)} {self.elapsed()}] {name} — "
        lines = textwrap.wrap(doing, max(self.console.width - len(head), 20), break_on_hyphens=False)
        text = Text(head, style="bold")
        text.append(("\n" + " " * len(head)).join(lines))
        self.console.print()
        self.console.print(text, soft_wrap=True)  # wrapped here, under the step's own start

    @contextmanager
    def step(self, name: str, doing: str) -> Iterator[Any]:
        self._header(name, doing)
        began = time.monotonic()
        with self.console.status(f"{name}…") as status:
            yield status
        self.console.print(f"  done in {time.monotonic() - began:.1f} s")

    def counter(self, status: Any, every_s: float = PROGRESS_EVERY_S) -> Callable[[str, int, int], None]:
        """A (what, done, total) callback for a long step: the spinner's text on a terminal;
        in a pipe or a CI log, a line when ``every_s`` has passed since the last, and at the end."""
        said = [time.monotonic()]

        def update(what: str, done: int, total: int) -> None:
            text = f"{what}: {done} of {total}"
            if self.console.is_terminal:
                status.update(text)
            elif done == total or time.monotonic() - said[0] >= every_s:
                said[0] = time.monotonic()
                self.say(f"{text} ({self.elapsed()})")
        return update

    def skip(self, name: str, why: str) -> None:
        self._header(name, f"skipped: {why}")

    def say(self, text: str) -> None:
        from rich.padding import Padding
        from rich.text import Text

        self.console.print(Padding(Text.from_markup(text), (0, 0, 0, 2), expand=False), highlight=False)

    @property
    def width(self) -> int:
        """What a said line has, after its indent."""
        return self.console.width - 2
