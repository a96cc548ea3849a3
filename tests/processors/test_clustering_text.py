"""processors/clustering/text.py: what varies between repeats of a failure is normalized away."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from otelbench.processors.clustering.text import (EMPTY, FailureParts, failure_frame, failure_parts, failure_text,
                                        message_text, normalize, select_failures, words)

NORMALIZE = [
    ("get_weather timed out after 31s", "get_weather timed out after <num>s"),
    ("timed out after 7s", "timed out after <num>s"),
    ("retry in 12.5 seconds, 1,000 items", "retry in <num> seconds, <num> items"),
    ("at 2025-03-14T09:26:53.123Z and 2025-03-14 09:26", "at <time> and <time>"),
    ("since 14:03:22", "since <time>"),
    ("GET https://api.weather.com/v1/forecast?city=Paris&id=123 failed", "GET api.weather.com/<path> failed"),
    ("see https://example.org", "see example.org"),
    ("Connection refused to 10.0.3.4:5432", "Connection refused to <ip>"),
    ("mail bob@example.com", "mail <email>"),
    ("id 123e4567-e89b-12d3-a456-426614174000", "id <uuid>"),
    ("trace 4bf92f3577b34da6a3ce929d0e0e4736", "trace <hex>"),
    ("addr 0xdeadbeef", "addr <hex>"),
    ("No such file: '/srv/app/data/input_17.csv'", "No such file: '<path>'"),
    ('File "/usr/lib/python3.11/site-packages/httpx/_client.py", line 1024', 'File "<path>", line <num>'),
    (r"C:\Users\bob\report.docx not found", "<path> not found"),
    ("wrote reports/q3/summary.pdf", "wrote <path>"),
    ("request req_8f3a2b9 by user-4821 order #12345", "request req_<id> by user-<id> order #<num>"),
    ("key sk-AbC123xyz789QWe token x7Fq9LmZ2p", "key sk-<id> token <id>"),
    ("HTTP 404 Not Found", "HTTP 404 Not Found"),
    ("status code 503 after 3 retries", "status code 503 after <num> retries"),
    ("model gpt-4o, utf-8, and/or input/output", "model gpt-4o, utf-8, and/or input/output"),
    ("tool returned -1", "tool returned <num>"),
    ("  many   spaces\n\tand lines ", "many spaces and lines"),
]


@pytest.mark.parametrize(("raw", "expected"), NORMALIZE)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_repeats_of_one_failure_read_alike() -> None:
    a = failure_text("TimeoutError", "get_weather timed out after 31s (req_8f3a2b9)", None, None)
    b = failure_text("TimeoutError", "get_weather timed out after 7s (req_11aa22c)", None, None)
    assert a == b == "error: Timeout Error: get_weather timed out after <num>s (req_<id>)"


@pytest.mark.parametrize(("name", "expected"), [
    ("JSONDecodeError", "JSON Decode Error"), ("openai.RateLimitError", "openai Rate Limit Error"),
    ("context_length_exceeded", "context length exceeded"), ("OSError", "OS Error"), ("", ""),
])
def test_words(name: str, expected: str) -> None:
    assert words(name) == expected


def test_parts_and_text() -> None:
    parts = failure_parts("TimeoutError", "timed out after 31s", "get_weather: TimeoutError: timed out after 31s",
                          "Sorry, no weather for Paris.")
    assert parts == FailureParts("Timeout Error: timed out after <num>s",
                                 "get_weather: Timeout Error: timed out after <num>s", "Sorry, no weather for Paris.")
    assert parts.text == ("error: Timeout Error: timed out after <num>s. failing tools: get_weather: Timeout Error: "
                          "timed out after <num>s. output: Sorry, no weather for Paris.")


def test_a_low_score_reads_as_an_answer_and_nothing_as_a_placeholder() -> None:
    assert failure_text(None, None, None, "Your hotel is booked.") == "low-scored answer: Your hotel is booked."
    assert failure_text(None, "", "  ", None) == EMPTY


def test_parts_are_cut() -> None:
    parts = failure_parts("ValueError", "word " * 500, "t: " + "x " * 500, "y " * 500)
    assert len(parts.error) <= 402 and parts.error.endswith(" …")
    assert len(parts.tools) <= 302 and len(parts.output) <= 302


def test_output_as_message_json() -> None:
    """agent_runs.output is a JSON array of messages (docs/schema.md)."""
    value = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "It is sunny."}]}])
    assert message_text(value) == "It is sunny."
    assert message_text('[{"role": "assistant", "content": "Hi"}]') == "Hi"
    assert message_text("[not json") == "[not json"
    assert message_text(None) == ""


def test_select_failures() -> None:
    runs = pl.DataFrame({"status": ["error", "ok", "ok", "ok", "error"], "score": [None, 0.2, 0.5, None, 0.9]})
    assert select_failures(runs, 0.5).to_dicts() == [{"status": "error", "score": None},
                                                       {"status": "ok", "score": 0.2},
                                                       {"status": "error", "score": 0.9}]


def test_failure_frame_matches_failure_parts() -> None:
    rows = pl.DataFrame({
        "error_type": ["TimeoutError", "TimeoutError", None],
        "error_message": ["after 3s", "after 4s", None],
        "failing_tools": [None, "t: boom 0x1f", None],
        "output": [None, None, "It rained on 2025-01-01"],
        "start_time": [dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)] * 3,
    })
    frame = failure_frame(rows)
    assert frame.columns == ["error", "tools", "output", "text"]
    for got, row in zip(frame.iter_rows(), rows.select("error_type", "error_message", "failing_tools", "output")
                        .iter_rows()):
        parts = failure_parts(*row)
        assert got == (*parts, parts.text)
