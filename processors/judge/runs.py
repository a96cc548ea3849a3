"""What the judge reads about a run: the runs frame, its texts, tool summaries, the sample.

``judge_runs`` takes one row per agent run (``RUNS_SCHEMA``): the columns of the
``agent_runs`` view it needs plus two summaries a caller builds from the run's spans —
``tool_summary`` (``summarize_tools`` turns ``tool_calls`` rows into it) and
``error_summary`` (the status messages of the run's failed agent/llm spans). Everything
here is pure: frames in, frames or strings out.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

RUNS_SCHEMA: dict[str, Any] = {
    "trace_id": pl.String,
    "agent": pl.String,
    "status": pl.String,  # ok | error
    "input": pl.String,  # JSON array of one GenAI message, or null
    "output": pl.String,  # JSON array of one GenAI message, or null
    "tool_summary": pl.String,  # e.g. "get_weather(city=Paris) → ok: {...}; search(q=x) → error: timeout"
    "error_summary": pl.String,
    "llm_calls": pl.Int64,
    "tool_calls": pl.Int64,
}
TOOL_ROWS_SCHEMA: dict[str, Any] = {  # summarize_tools' input: the run's tool calls, in order
    "trace_id": pl.String,
    "tool_name": pl.String,
    "status": pl.String,
    "error_message": pl.String,
    "arguments": pl.String,  # gen_ai.tool.call.arguments (JSON), or null
    "result": pl.String,  # gen_ai.tool.call.result, or null
}
RESULT_CHARS = 240  # of one tool's result in the summary; the budget cuts the whole later
ARGUMENT_CHARS = 80


def check_runs(runs: pl.DataFrame) -> None:
    """Raise ``ValueError`` naming the first missing or mistyped column."""
    for name, dtype in RUNS_SCHEMA.items():
        if name not in runs.columns:
            raise ValueError(f"runs frame: no column {name!r} (needs {', '.join(RUNS_SCHEMA)})")
        got = runs.schema[name]
        if got != dtype and got != pl.Null and not (dtype == pl.Int64 and got.is_integer()):
            raise ValueError(f"runs frame: column {name!r} is {got}, not {dtype}")


def message_text(messages: str | None) -> str | None:
    """The text parts of a GenAI message array (JSON), joined; None when there are none.

    Anything that is not such an array is taken as the text itself — a run's message is
    shown to the judge as it is rather than dropped."""
    if messages is None:
        return None
    try:
        parsed = json.loads(messages)
    except ValueError:
        return messages if messages.strip() else None
    texts: list[str] = []
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(message, dict):
            continue
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "text" and part.get("content") is not None:
                texts.append(str(part["content"]))
        if isinstance(message.get("content"), str):  # an OpenAI-shaped message slipped through
            texts.append(message["content"])
    joined = "\n".join(t for t in texts if t.strip())
    return joined or None


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _arguments(arguments: str | None) -> str:
    if not arguments:
        return ""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return _clip(arguments, ARGUMENT_CHARS)
    if isinstance(parsed, dict):
        return _clip(", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in parsed.items()),
                     ARGUMENT_CHARS)
    return _clip(json.dumps(parsed), ARGUMENT_CHARS)


def tool_line(name: str | None, status: str | None, error: str | None, arguments: str | None,
              result: str | None) -> str:
    """``get_weather(city=Paris) → ok: {...}`` or ``search(q=x) → error: timeout``."""
    head = f"{name or 'tool'}({_arguments(arguments)})"
    if status == "error":
        return f"{head} → error: {_clip(error or 'failed', RESULT_CHARS)}"
    return f"{head} → ok" + (f": {_clip(result, RESULT_CHARS)}" if result else "")


def summarize_tools(tool_rows: pl.DataFrame) -> pl.DataFrame:
    """One ``(trace_id, tool_summary)`` row per run from its tool calls (``TOOL_ROWS_SCHEMA``,
    in call order); columns it lacks (arguments, result) are read as null."""
    rows = tool_rows
    for name in TOOL_ROWS_SCHEMA:
        if name not in rows.columns:
            rows = rows.with_columns(pl.lit(None, dtype=pl.String).alias(name))
    lines: dict[str, list[str]] = {}
    for r in rows.select(list(TOOL_ROWS_SCHEMA)).iter_rows(named=True):
        lines.setdefault(r["trace_id"], []).append(
            tool_line(r["tool_name"], r["status"], r["error_message"], r["arguments"], r["result"]))
    return pl.DataFrame({"trace_id": list(lines), "tool_summary": ["; ".join(v) for v in lines.values()]},
                        schema={"trace_id": pl.String, "tool_summary": pl.String})


def with_summaries(runs: pl.DataFrame, tool_rows: pl.DataFrame, errors: pl.DataFrame) -> pl.DataFrame:
    """``runs`` (agent_runs columns) with ``tool_summary`` from their tool calls
    (``TOOL_ROWS_SCHEMA``, in call order) and ``error_summary`` from ``errors``
    (``trace_id``, ``error_summary``): the frame ``judge_runs`` takes. The pipeline and the
    calibration benchmark both build it here, so what is measured is what runs."""
    errors = errors.select(pl.col("trace_id").cast(pl.String), pl.col("error_summary").cast(pl.String))
    return (runs.join(summarize_tools(tool_rows), on="trace_id", how="left")
            .join(errors, on="trace_id", how="left"))
