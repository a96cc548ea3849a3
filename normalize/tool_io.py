"""What a tool was called with and returned, where a convention keeps it in a document.

The GenAI keys (``gen_ai.tool.call.arguments`` / ``.result``) and the other plain
attributes are aliases (``conventions.ALIASES``: ``tool_arguments``, ``tool_result``).
Two conventions put the call in a span's generic input and output instead, wrapped by
the framework; the readers here take the wrapper off. Both run on the row path only:
spans carrying these keys are message sources (``message_sources.MESSAGE_KEYS``), which
the columnar path hands to the reference.

- OpenInference TOOL spans: ``input.value`` / ``output.value``, JSON when their
  ``*.mime_type`` says ``application/json`` (or when sent structured), else text.
  LlamaIndex wraps the arguments as ``{"kwargs": {...}}`` and the result as a
  ``ToolOutput`` (``raw_output``); LangChain's result is a ToolMessage
  (``{"type": "tool", "data": {"content": ...}}``).
- OpenLLMetry tool spans (``traceloop.span.kind`` = tool): ``traceloop.entity.input`` /
  ``traceloop.entity.output``, always JSON: ``{"args": [...], "kwargs": {...}}`` and the
  returned value; its LangChain callback wraps them as ``{"inputs": ...}`` /
  ``{"outputs": ...}``.

The column's text: a string argument or result as itself, any other value as its JSON
text (as sent when nothing was unwrapped).
"""

from __future__ import annotations

from typing import Any

import orjson

from otelbench.normalize.anyvalue import as_text

JSON_MIME = "application/json"
OI_INPUT, OI_OUTPUT = "input.value", "output.value"
OI_INPUT_MIME, OI_OUTPUT_MIME = "input.mime_type", "output.mime_type"
TL_INPUT, TL_OUTPUT = "traceloop.entity.input", "traceloop.entity.output"

# the keys of a call's wrapper around its arguments: Python's (*args, **kwargs), and
# OpenLLMetry's LangChain callback, whose documents carry these beside the input / output
_CALL_KEYS = frozenset({"args", "kwargs"})
_INPUTS_KEYS = frozenset({"inputs", "tags", "metadata", "kwargs"})
_OUTPUTS_KEYS = frozenset({"outputs", "kwargs"})
# LlamaIndex's ToolOutput (model_dump): the tool's own return value is raw_output
_LLAMAINDEX_OUTPUT = ("raw_output", "tool_name", "raw_input")
_NOTHING = object()


def _parsed(v: Any, json: bool) -> Any:
    """The document of a value: a structured value as it is, a JSON string parsed (when
    ``json``); _NOTHING when it is text or not JSON after all."""
    if isinstance(v, (dict, list)):
        return v
    if json and isinstance(v, str):
        try:
            return orjson.loads(v)
        except orjson.JSONDecodeError:
            return _NOTHING
    return _NOTHING


def _arguments(doc: Any) -> Any:
    """The arguments inside a framework's wrapper (_NOTHING: no wrapper)."""
    if not isinstance(doc, dict) or not doc:
        return _NOTHING
    keys = doc.keys()
    if keys <= _CALL_KEYS and "kwargs" in doc:
        args, kwargs = doc.get("args") or [], doc["kwargs"]
        if not args:
            return kwargs
        return args if not kwargs else _NOTHING
    if "inputs" in doc and keys <= _INPUTS_KEYS:
        return doc["inputs"]
    return _NOTHING


def _result(doc: Any) -> Any:
    """The returned value inside a framework's wrapper (_NOTHING: no wrapper)."""
    if not isinstance(doc, dict):
        return _NOTHING
    if "outputs" in doc and doc.keys() <= _OUTPUTS_KEYS:
        doc = doc["outputs"]
        inner = _result(doc)
        return doc if inner is _NOTHING else inner
    data = doc.get("data")
    if doc.get("type") == "tool" and isinstance(data, dict) and "content" in data:
        return data["content"]
    if all(k in doc for k in _LLAMAINDEX_OUTPUT):
        return doc["raw_output"]
    return _NOTHING


def _read(v: Any, json: bool, unwrap: Any) -> str | None:
    if v is None or v == "":
        return None
    doc = _parsed(v, json)
    if doc is _NOTHING:
        return as_text(v)
    inner = unwrap(doc)
    if inner is not _NOTHING:
        return as_text(inner)
    if isinstance(doc, str):  # a JSON string: the string itself
        return as_text(doc)
    return as_text(v)


def openinference(attrs: dict[str, Any]) -> tuple[str | None, str | None]:
    """(arguments, result) of an OpenInference TOOL span."""
    return (_read(attrs.get(OI_INPUT), attrs.get(OI_INPUT_MIME) == JSON_MIME, _arguments),
            _read(attrs.get(OI_OUTPUT), attrs.get(OI_OUTPUT_MIME) == JSON_MIME, _result))


def traceloop(attrs: dict[str, Any]) -> tuple[str | None, str | None]:
    """(arguments, result) of an OpenLLMetry tool span."""
    return _read(attrs.get(TL_INPUT), True, _arguments), _read(attrs.get(TL_OUTPUT), True, _result)
