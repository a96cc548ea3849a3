"""web/text.py: a run's task and answer as text."""

from __future__ import annotations

import json

import pytest

from otelbench.web.text import message_text


def _msgs(*texts: str, role: str = "user") -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": t} for t in texts]}])


@pytest.mark.parametrize(("value", "expected"), [
    (None, None),
    ("plain words", "plain words"),
    (_msgs("What is 2 + 2?"), "What is 2 + 2?"),
    (_msgs("a", "b"), "a\n\nb"),
    (_msgs('quote " and \\ and <script>'), 'quote " and \\ and <script>'),
    (json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "x"}]}]),
     json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "x"}]}])),
    (_msgs("a long answer that was cut")[:-8], "a long answer that was …"),
    ("[not json", "[not json"),
])
def test_message_text(value: object, expected: object) -> None:
    assert message_text(value) == expected
