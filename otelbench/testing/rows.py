"""Lake rows for tests: one dict per row with sensible defaults, turned into the
columnar dicts ``Lake.write_batch`` takes. Every column of the schema is present, so a
test names only what it is about."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from otelbench.storage.schema import LOGS, METRICS, SPANS, TABLES

DAY = dt.datetime(2025, 3, 14, 12, 0, tzinfo=dt.timezone.utc)


def us(when: dt.datetime | str, plus_s: float = 0.0) -> int:
    """Microseconds since the epoch for a datetime or ISO string (naive means UTC)."""
    if isinstance(when, str):
        when = dt.datetime.fromisoformat(when)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1_000_000) + int(plus_s * 1_000_000)


def tid(n: int) -> str:
    return f"{n:032x}"


def sid(n: int) -> str:
    return f"{n:016x}"


def span(trace: int = 1, span_id: int = 1, parent: int | None = None, *, at: float = 0.0, **values: Any) -> dict[str, Any]:
    """A span ``at`` seconds after DAY, lasting duration_ms (default 100)."""
    start = us(DAY, at)
    duration = values.pop("duration_ms", 100.0)
    row: dict[str, Any] = dict.fromkeys(SPANS.columns)
    row.update(
        trace_id=tid(trace),
        span_id=sid(span_id),
        parent_span_id=sid(parent) if parent is not None else None,
        name="span",
        kind="internal",
        service_name="svc",
        start_time=start,
        end_time=start + int(duration * 1000),
        duration_ms=duration,
        status_code="unset",
        flags=0,
        resource_attributes="{}",
        scope_attributes="{}",
        attributes="{}",
        events="[]",
        links="[]",
        dropped_attributes_count=0,
        dropped_events_count=0,
        dropped_links_count=0,
        span_type="other",
    )
    return _apply(row, values)


def llm(trace: int = 1, span_id: int = 2, parent: int | None = 1, **values: Any) -> dict[str, Any]:
    defaults = dict(
        name="chat gpt-4o", kind="client", span_type="llm", operation="chat", provider="openai",
        request_model="gpt-4o", response_model="gpt-4o-2024-08-06",
        input_tokens=100, output_tokens=20, total_tokens=120, cost_usd=0.001, cost_source="computed",
    )
    return span(trace, span_id, parent, **{**defaults, **values})


def agent(trace: int = 1, span_id: int = 1, parent: int | None = None, name: str = "triage", **values: Any) -> dict[str, Any]:
    defaults = dict(name=f"invoke_agent {name}", span_type="agent", operation="invoke_agent", agent_name=name)
    return span(trace, span_id, parent, **{**defaults, **values})


def tool(trace: int = 1, span_id: int = 3, parent: int | None = 1, name: str = "web_search", **values: Any) -> dict[str, Any]:
    defaults = dict(name=f"execute_tool {name}", span_type="tool", operation="execute_tool", tool_name=name,
                    tool_call_id=f"call_{span_id}")
    return span(trace, span_id, parent, **{**defaults, **values})


BENCH_SCOPE = "otelbench.bench_runner"  # bench_runner.spans.SCOPE_NAME


def bench_run(trace: int = 1, span_id: int = 1, model: str = "qwen", **attributes: Any) -> dict[str, Any]:
    """The root span of an ``otelbench bench`` model run: its results as ``bench.*`` attributes."""
    attrs = {"bench.kind": "model_run", "bench.suite": "core", "bench.suite.version": "core-v1", **attributes}
    return span(trace, span_id, None, name=f"bench {model}", scope_name=BENCH_SCOPE, span_type="agent",
                operation="invoke_workflow", agent_name="otelbench-bench", request_model=model,
                attributes=json.dumps(attrs))


def bench_test(trace: int = 1, span_id: int = 3, reply: int = 2, name: str = "json_book", verdict: str = "pass",
               **attributes: Any) -> dict[str, Any]:
    """A judged test of a bench run, under the chat span ``reply`` it judged."""
    attrs = {"bench.kind": "test", "bench.suite": "core", "bench.suite.version": "core-v1",
             "bench.test.name": name, "bench.test.category": "ability", "bench.test.checker": "json_schema",
             "bench.test.verdict": verdict, "bench.test.reason": f"{name}: {verdict}", **attributes}
    return span(trace, span_id, reply, name=f"test {name}", scope_name=BENCH_SCOPE, attributes=json.dumps(attrs))


def log(trace: int | None = 1, span_id: int | None = 2, *, at: float = 0.0, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(LOGS.columns)
    row.update(
        time=us(DAY, at), observed_time=us(DAY, at),
        trace_id=tid(trace) if trace is not None else None,
        span_id=sid(span_id) if span_id is not None else None,
        severity_number=9, severity_text="INFO", service_name="svc", flags=0,
        resource_attributes="{}", attributes="{}", dropped_attributes_count=0,
    )
    return _apply(row, values)


def metric(name: str = "gen_ai.client.token.usage", *, at: float = 0.0, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(METRICS.columns)
    row.update(
        time=us(DAY, at), start_time=us(DAY, at - 60), metric_name=name, unit="{token}",
        metric_type="sum", aggregation_temporality="delta", is_monotonic=True, service_name="svc",
        resource_attributes="{}", attributes="{}", value=1.0, flags=0,
    )
    return _apply(row, values)


def columnar(table: str, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Row dicts → ``{column: [values]}`` in schema order."""
    return {c: [r[c] for r in rows] for c in TABLES[table].columns}


def batch(
    spans: Sequence[dict[str, Any]] = (),
    logs: Sequence[dict[str, Any]] = (),
    metrics: Sequence[dict[str, Any]] = (),
) -> dict[str, dict[str, list[Any]]]:
    """Columnar dicts for write_batch, only for the tables given rows."""
    out = {}
    for name, rows in (("spans", spans), ("logs", logs), ("metrics", metrics)):
        if rows:
            out[name] = columnar(name, list(rows))
    return out


def _apply(row: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    unknown = set(values) - set(row)
    if unknown:
        raise KeyError(f"not a column: {sorted(unknown)}")
    row.update(values)
    return row
