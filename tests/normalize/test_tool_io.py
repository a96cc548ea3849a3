"""normalize.tool_io: a framework's wrapper comes off whatever the tool was called with
and returned (properties over any JSON value; the cases per convention: cases.TOOL_IO)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from otelbench.normalize import tool_io

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                     max_leaves=12)
_KWARGS = st.dictionaries(st.text(min_size=1, max_size=8), _JSON, min_size=1, max_size=4)


def _value(text: str | None) -> Any:
    """The column's text as the value it stands for: a string as itself, else its JSON."""
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return text


@given(kwargs=_KWARGS, result=_JSON)
def test_openllmetry_call_comes_out_of_its_wrapper(kwargs: dict[str, Any], result: Any) -> None:
    arguments, returned = tool_io.traceloop({"traceloop.entity.input": json.dumps({"args": [], "kwargs": kwargs}),
                                             "traceloop.entity.output": json.dumps(result)})
    assert json.loads(arguments) == kwargs
    if isinstance(result, str):
        assert returned == (result or None)  # a string result is its text
    else:
        assert json.loads(returned) == result


@given(kwargs=_KWARGS, raw=_JSON)
@example(kwargs={"a": 1}, raw="")
def test_llamaindex_call_comes_out_of_its_wrapper(kwargs: dict[str, Any], raw: Any) -> None:
    output = {"blocks": [], "tool_name": "t", "raw_input": {"kwargs": kwargs}, "raw_output": raw, "is_error": False}
    arguments, returned = tool_io.openinference({
        "input.value": json.dumps({"kwargs": kwargs}), "input.mime_type": tool_io.JSON_MIME,
        "output.value": json.dumps(output), "output.mime_type": tool_io.JSON_MIME})
    assert json.loads(arguments) == kwargs
    assert (returned if isinstance(raw, str) else _value(returned)) == (raw if raw != "" else None)


@given(text=st.text(min_size=1))
def test_text_is_kept_as_sent(text: str) -> None:
    assert tool_io.openinference({"input.value": text, "output.value": text}) == (text, text)
