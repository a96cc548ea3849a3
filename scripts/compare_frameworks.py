"""What today's views say about each recorded framework run, next to what the run really was.

    python scripts/compare_frameworks.py [--only langchain] [--json out.json] [--dir tests/testdata/recorded]

For each ``<dir>/<stack>/`` with an ``expected.json`` (scripts/record_frameworks.py), the
recorded OTLP requests go through the collector's own write path — ``exporters.parquet``'s
``ParquetSink`` (the columnar span normalizer, the row path for logs and metrics) into a
fresh lake by ``Lake.write_batch`` — and the ``agent_runs``, ``llm_calls`` and
``tool_calls`` views are read through the gateway. Each answer is printed beside the
expected one: ``✓`` the same, ``≈`` an acceptable difference (said why), ``✗`` a gap.
Nothing here judges how a view *should* answer: expected.json is what a person reading the
run would say.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO / "tests" / "testdata" / "recorded"
SIGNALS = ("traces", "logs", "metrics")

RUNS_SQL = """SELECT agent, root_name, status, llm_calls, tool_calls, input_tokens, output_tokens,
                     cost_usd, input, output FROM agent_runs ORDER BY start_time"""
CALLS_SQL = """SELECT agent, operation, provider, request_model, response_model, input_tokens, output_tokens,
                      total_tokens, cost_usd, cost_source, ttft_ms, finish_reasons, input_messages,
                      output_messages FROM llm_calls ORDER BY start_time"""
TOOLS_SQL = "SELECT agent, tool_name, tool_call_id, status FROM tool_calls ORDER BY start_time"
SPANS_SQL = """SELECT name, kind, span_type, operation, agent_name, resolved_agent, tool_name
               FROM spans ORDER BY start_time"""


def load_lake(folder: Path, root: Path) -> None:
    """Every recorded request of ``folder`` into a new lake at ``root``, as one flush."""
    from exporters.parquet import ParquetSink
    from otelbench.testing.otlp_capture import otlp_json_to_protobuf
    from storage.lake import Lake

    lake = Lake(root)
    lake.init()
    sink = ParquetSink(lake, frozenset(SIGNALS), dedupe_window=10_000)
    for signal in SIGNALS:
        paths = sorted(folder.glob(f"{signal}-*.json"), key=lambda p: int(p.stem.split("-")[-1]))
        for path in paths:
            sink.add(signal, None, otlp_json_to_protobuf(signal, json.loads(path.read_text())))
    sink.write(f"{1:020d}", sink.take())


def _dicts(result: Any) -> list[dict[str, Any]]:
    return [dict(zip(result.columns, row)) for row in result.rows]


def views(root: Path) -> dict[str, list[dict[str, Any]]]:
    from storage.duckdb import open_lake

    with open_lake(root) as gateway:
        return {name: _dicts(gateway.query(sql, max_rows=None))
                for name, sql in (("agent_runs", RUNS_SQL), ("llm_calls", CALLS_SQL),
                                  ("tool_calls", TOOLS_SQL), ("spans", SPANS_SQL))}  # fmt: skip


def texts(messages: str | None) -> str | None:
    """A message array (JSON) in a few words: ``role: text`` or ``role: tool_call name(args)``."""
    if messages is None:
        return None
    try:
        parsed = json.loads(messages)
    except ValueError:
        return f"(not JSON) {messages[:80]}"
    out = []
    for m in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(m, dict):
            out.append(repr(m)[:80])
            continue
        for part in m.get("parts") or []:
            kind = part.get("type")
            if kind == "text":
                out.append(f"{m.get('role')}: {str(part.get('content'))[:80]}")
            elif kind == "tool_call":
                out.append(f"{m.get('role')}: tool_call {part.get('name')}({json.dumps(part.get('arguments'))})")
            elif kind == "tool_call_response":
                out.append(f"{m.get('role')}: tool_call_response {str(part.get('response'))[:60]}")
            else:
                out.append(f"{m.get('role')}: {kind}")
    return " | ".join(out)


TOOL_FINISH = {"tool_calls", "tool_call"}  # OpenAI's value; the GenAI semconv's output-message enum


def compare(expected: dict[str, Any], got: dict[str, list[dict[str, Any]]]) -> list[tuple[str, Any, Any, str]]:
    """(field, today's answer, expected, mark) for every field the views answer; mark is ✓, ≈ or ✗."""
    rows: list[tuple[str, Any, Any, str]] = []

    def add(field: str, today: Any, want: Any, same: bool | str | None = None) -> None:
        if same is None:
            same = today == want
        rows.append((field, today, want, same if isinstance(same, str) else "✓" if same else "✗"))

    runs = got["agent_runs"]
    add("agent_runs: rows", len(runs), 1)
    run = runs[0] if runs else {}
    add("agent_runs.agent", run.get("agent"), expected["agent_name"])
    run_input, run_output = texts(run.get("input")), texts(run.get("output"))
    add("agent_runs.input", run_input, expected["input"],
        run_input is not None and run_input.endswith(f"user: {expected['input']}"))  # fmt: skip
    add("agent_runs.output", run_output, expected["output"], run_output == f"assistant: {expected['output']}")
    calls = expected["llm_calls"]
    add("agent_runs.llm_calls", run.get("llm_calls"), len(calls))
    add("agent_runs.tool_calls", run.get("tool_calls"), len(expected["tool_calls"]))
    unseen = not all(c["usage_sent_to_client"] for c in calls)  # a stream without include_usage
    for key in ("input_tokens", "output_tokens"):
        total = sum(c[key] for c in calls)
        if unseen and run.get(key) is None:
            add(f"agent_runs.{key}", None, f"{total} (never reached the client: ≈)", "≈")
        else:
            add(f"agent_runs.{key}", run.get(key), total)
    reported = [c["value"] for c in expected["reported_costs"]]
    if reported:
        add("agent_runs.cost_usd", run.get("cost_usd"), f"reported: {reported}", run.get("cost_usd") is not None)
    else:  # nothing reported: otelbench prices the calls itself (with the tokens it has)
        add("agent_runs.cost_usd", run.get("cost_usd"), "none reported (priced by otelbench: ≈)",
            "≈" if run.get("cost_usd") is not None or unseen else "✗")  # fmt: skip
    llm = got["llm_calls"]
    add("llm_calls: rows", len(llm), len(calls))
    # Pair the calls in order, skipping rows with neither tokens nor a finish reason (a
    # framework's helper span that its instrumentation marks LLM, e.g. LlamaIndex's
    # OpenAI._prepare_chat_with_tools): the rows count above shows them.
    answered = [c for c in llm if c.get("input_tokens") is not None or c.get("finish_reasons") is not None]
    llm = answered if len(answered) >= len(calls) else llm
    for i, want in enumerate(calls):
        have = llm[i] if i < len(llm) else {}
        for key in ("request_model", "response_model", "input_tokens", "output_tokens"):
            if key.endswith("tokens") and not want["usage_sent_to_client"] and have.get(key) is None:
                add(f"llm_calls[{i}].{key}", None, f"{want[key]} (never reached the client: ≈)", "≈")
            else:
                add(f"llm_calls[{i}].{key}", have.get(key), want[key])
        add(f"llm_calls[{i}].agent", have.get("agent"), expected["agent_name"])
        want_ttft = want["ttft_ms_server"]
        ttft = have.get("ttft_ms")
        add(f"llm_calls[{i}].ttft_ms", None if ttft is None else round(ttft, 1),
            "none (not streamed)" if want_ttft is None else f"≥ {want_ttft} (server side)",
            (ttft is None) if want_ttft is None else (ttft is not None and ttft >= want_ttft - 1))  # fmt: skip
        finish = have.get("finish_reasons")
        if want["finish_reason"] == "tool_calls" and finish == ["tool_call"]:
            add(f"llm_calls[{i}].finish_reasons", finish, "['tool_calls'] (semconv's 'tool_call': ≈)", "≈")
        else:
            add(f"llm_calls[{i}].finish_reasons", finish, [want["finish_reason"]])
        want_source = "reported" if reported else "computed"
        add(f"llm_calls[{i}].cost_source", have.get("cost_source"), want_source,
            have.get("cost_source") == want_source or ("≈" if not want["usage_sent_to_client"] else False))
    tools = got["tool_calls"]
    add("tool_calls: rows", len(tools), len(expected["tool_calls"]))
    for i, want in enumerate(expected["tool_calls"]):
        have = tools[i] if i < len(tools) else {}
        add(f"tool_calls[{i}].tool_name", have.get("tool_name"), want["name"])
        add(f"tool_calls[{i}].tool_call_id", have.get("tool_call_id"), want["call_id"])
        add(f"tool_calls[{i}].agent", have.get("agent"), expected["agent_name"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--only", help="comma-separated stacks (default: every folder with an expected.json)")
    parser.add_argument("--json", type=Path, help="also write the views' rows and the comparison here")
    parser.add_argument("--spans", action="store_true", help="also print the spans table's GenAI columns")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    folders = sorted(p.parent for p in args.dir.glob("*/expected.json"))
    if args.only:
        folders = [f for f in folders if f.name in args.only.split(",")]
    everything = {}
    for folder in folders:
        expected = json.loads((folder / "expected.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            load_lake(folder, Path(tmp) / "lake")
            got = views(Path(tmp) / "lake")
        rows = compare(expected, got)
        everything[folder.name] = {"views": got, "comparison": rows}
        print(f"\n== {folder.name}: {expected['description']}")
        if args.spans:
            for s in got["spans"]:
                print("   span", {k: v for k, v in s.items() if v is not None})
        for field, today, want, mark in rows:
            print(f" {mark} {field:32} today: {today!s:60.60}  expected: {want}")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1, default=str, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
