"""How fast the views answer at scale: prints the figures quoted in docs/performance.md.

    .venv/bin/python benchmarks/query.py                 # 10,000,000 spans (5 M llm calls) in a temp lake
    .venv/bin/python benchmarks/query.py --rows 1000000 --lake /tmp/lake --keep
    .venv/bin/python benchmarks/query.py --rows 20000000 --no-fresh   # 10 M llm calls, compacted

Generates realistic agent traces through ``Lake.write_batch`` in chunks: an invoke_agent
root that alone names the agent (``gen_ai.agent.name``); chat, execute_tool and workflow
spans under it, none naming an agent; one trace in ten with a sub-agent; a third of the
llm calls with their messages sent as log events (one input, one output) instead of span
attributes. As an SDK's batch exporter does, the root of each trace — it ends last — is
written with the next chunk, so most calls' parent is not in the calls' own batch.

Then times, through the gateway, ``SELECT agent, count(*) FROM llm_calls GROUP BY agent``,
one trace's llm_calls, the agent_runs aggregate and a few more: on the fresh files, then
after ``Lake.compact`` (which fills ``spans.resolved_agent``, so llm_calls skips its
joins). Each figure: median and fastest wall time of --repeat runs after a warm-up, and
the median CPU time (the machine may be shared: CPU time / cores is the wall time an
idle machine would show, at best).

Chunks of --chunk spans (default 500,000) make sorted files with several row groups; the
collector's own flushes are smaller.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from otelbench.storage.compaction import MEMORY_MIB  # noqa: E402
from otelbench.storage.queries import reports  # noqa: E402
from otelbench.storage.duckdb import Gateway, open_lake  # noqa: E402
from otelbench.storage.lake import Lake  # noqa: E402
from otelbench.storage.schema import LOGS, SPANS  # noqa: E402

SPANS_PER_TRACE = 10
# position in a trace → (span_type, parent position); position 6 is a workflow step
# (or, in one trace in ten, a sub-agent), and 7-8 sit under it.
SHAPE = [
    ("agent", -1), ("llm", 0), ("tool", 0), ("llm", 0), ("tool", 0),
    ("llm", 0), ("other", 0), ("llm", 6), ("tool", 6), ("llm", 0),
]
AGENTS = [f"{n}-agent" for n in ("triage", "research", "coder", "planner", "writer", "critic",
                                   "support", "billing", "search", "sql", "review", "summarize")]
MODELS = ["gpt-4o-mini", "gpt-4o", "claude-sonnet-4", "llama-3.1-8b", "qwen2.5-7b", "SmolLM2-135M"]
PROVIDERS = ["openai", "openai", "anthropic", "ollama", "llama.cpp", "llama.cpp"]
TOOLS = ["web_search", "read_file", "run_sql", "python", "http_get", "calculator"]
SERVICES = ["agent-api", "worker", "batch-eval", "notebook"]
DAY_US = 86_400_000_000
START_US = 1_735_689_600_000_000  # 2025-01-01T00:00:00Z


def _hex(rng: np.random.Generator, n: int, nbytes: int) -> pa.Array:
    """n random lowercase hex ids of 2*nbytes chars, without a Python loop."""
    table = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    raw = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
    chars = np.empty((n, nbytes * 2), dtype=np.uint8)
    chars[:, 0::2] = table[raw >> 4]
    chars[:, 1::2] = table[raw & 15]
    return pa.array(chars.view(f"S{nbytes * 2}").ravel()).cast(pa.string())


def _messages(rng: np.random.Generator, k: int) -> tuple[list[str], list[str]]:
    topics = ["refund policy", "a failing test", "quarterly revenue", "the flight to Oslo",
              "a slow SQL query", "GPU prices", "the onboarding doc", "a flaky CI job"]
    ins, outs = [], []
    for i in range(k):
        t = topics[i % len(topics)]
        ins.append(json.dumps([
            {"role": "system", "parts": [{"type": "text", "content": "You are a helpful agent. Use tools when needed."}]},
            {"role": "user", "parts": [{"type": "text", "content": f"Question {i}: help me with {t}. " * int(rng.integers(1, 6))}]},
        ]))
        outs.append(json.dumps([{"role": "assistant", "finish_reason": "stop",
                                 "parts": [{"type": "text", "content": f"Here is what I found about {t}. " * int(rng.integers(1, 12))}]}]))
    return ins, outs


def _pick(rng: np.random.Generator, pool: list[str], idx: np.ndarray | None = None, n: int = 0) -> pa.Array:
    choice = idx if idx is not None else rng.integers(0, len(pool), n)
    return pa.DictionaryArray.from_arrays(pa.array(choice, pa.int32()), pa.array(pool)).cast(pa.string())


def make_chunk(rng: np.random.Generator, first_trace: int, n_traces: int, total_traces: int,
               days: int, msg_pool: tuple[list[str], list[str]]) -> tuple[dict, dict]:
    n = n_traces * SPANS_PER_TRACE
    pos = np.tile(np.arange(SPANS_PER_TRACE), n_traces)
    trace_ix = np.repeat(np.arange(n_traces), SPANS_PER_TRACE)
    types = np.array([t for t, _ in SHAPE], dtype=object)[pos]
    sub_agent = np.repeat(rng.random(n_traces) < 0.1, SPANS_PER_TRACE) & (pos == 6)
    types[sub_agent] = "agent"
    is_llm, is_tool, is_agent = types == "llm", types == "tool", types == "agent"

    trace_id = _hex(rng, n_traces, 16).take(pa.array(trace_ix))
    span_id = _hex(rng, n, 8)
    parent_pos = np.array([p for _, p in SHAPE])[pos]
    parent_ix = np.where(parent_pos >= 0, trace_ix * SPANS_PER_TRACE + parent_pos, 0)
    parent = span_id.take(pa.array(parent_ix))
    parent = pc.if_else(pa.array(parent_pos < 0), pa.nulls(n, pa.string()), parent)

    # traces spread evenly over `days`, chunk after chunk, as a collector would flush them
    trace_start = START_US + ((first_trace + np.arange(n_traces)) * (days * DAY_US // total_traces))
    start = np.repeat(trace_start, SPANS_PER_TRACE) + pos * 700_000
    duration = np.where(is_agent, 9_000.0, rng.gamma(2.0, 400.0, n))
    agent_ix = np.repeat(rng.integers(0, len(AGENTS), n_traces), SPANS_PER_TRACE)
    sub_ix = (agent_ix + 1) % len(AGENTS)
    agent_name = _pick(rng, AGENTS, np.where(sub_agent, sub_ix, agent_ix))
    agent_name = pc.if_else(pa.array(is_agent), agent_name, pa.nulls(n, pa.string()))
    model_ix = rng.integers(0, len(MODELS), n)
    in_tok = np.where(is_llm, rng.integers(50, 8000, n), 0)
    out_tok = np.where(is_llm, rng.integers(5, 1500, n), 0)
    errors = rng.random(n) < 0.02
    from_logs = is_llm & (rng.random(n) < 1 / 3)
    msg_ix = rng.integers(0, len(msg_pool[0]), n)
    with_msgs = is_llm & ~from_logs

    def only(mask: np.ndarray, values: pa.Array) -> pa.Array:
        return pc.if_else(pa.array(mask), values, pa.nulls(n, values.type))

    name = pc.binary_join_element_wise(
        _pick(rng, ["invoke_agent", "chat", "execute_tool", "workflow"],
              np.select([is_agent, is_llm, is_tool], [0, 1, 2], 3)),
        _pick(rng, AGENTS + MODELS + TOOLS + ["step"], np.select(
            [is_agent, is_llm, is_tool],
            [np.where(sub_agent, sub_ix, agent_ix), len(AGENTS) + model_ix,
             len(AGENTS) + len(MODELS) + model_ix % len(TOOLS)],
            len(AGENTS) + len(MODELS) + len(TOOLS))), " ")
    spans: dict[str, object] = {c: pa.nulls(n, SPANS.schema.field(c).type) for c in SPANS.columns}
    spans.update(
        trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=name,
        kind=_pick(rng, ["internal", "client"], is_llm.astype(int)),
        service_name=_pick(rng, SERVICES, np.repeat(rng.integers(0, len(SERVICES), n_traces), SPANS_PER_TRACE)),
        scope_name=_pick(rng, ["opentelemetry.instrumentation.openai_v2"], n=n),
        start_time=start, end_time=start + (duration * 1000).astype(np.int64), duration_ms=duration,
        status_code=_pick(rng, ["unset", "error"], errors.astype(int)),
        resource_attributes=_pick(rng, ['{"service.name":"agent-api","telemetry.sdk.language":"python"}'], n=n),
        attributes=_pick(rng, [json.dumps({"gen_ai.operation.name": op, "gen_ai.request.model": m})
                                for op in ("chat", "execute_tool", "invoke_agent") for m in MODELS], n=n),
        events=_pick(rng, ["[]"], n=n), links=_pick(rng, ["[]"], n=n),
        span_type=pa.array(types.astype(str)),
        operation=_pick(rng, ["invoke_agent", "chat", "execute_tool", None],
                        np.select([is_agent, is_llm, is_tool], [0, 1, 2], 3)),
        provider=only(is_llm, _pick(rng, PROVIDERS, model_ix)),
        agent_name=agent_name,
        request_model=only(is_llm, _pick(rng, MODELS, model_ix)),
        response_model=only(is_llm, _pick(rng, MODELS, model_ix)),
        input_tokens=only(is_llm, pa.array(in_tok)), output_tokens=only(is_llm, pa.array(out_tok)),
        total_tokens=only(is_llm, pa.array(in_tok + out_tok)),
        cost_usd=only(is_llm, pa.array(in_tok * 2.5e-6 + out_tok * 1e-5)),
        cost_source=only(is_llm, _pick(rng, ["computed"], n=n)),
        tool_name=only(is_tool, _pick(rng, TOOLS, n=n)),
        tool_call_id=only(is_tool, _hex(rng, n, 6)),
        error_message=only(errors, _pick(rng, ["rate limited", "timeout", "invalid json"], n=n)),
        input_messages=only(with_msgs, _pick(rng, msg_pool[0], msg_ix)),
        output_messages=only(with_msgs, _pick(rng, msg_pool[1], msg_ix)),
    )
    # the other third of the calls: one input and one output event each (openai-v2 style)
    rows = np.flatnonzero(from_logs)
    m = len(rows) * 2
    logs: dict[str, object] = {c: pa.nulls(m, LOGS.schema.field(c).type) for c in LOGS.columns}
    both = np.repeat(rows, 2)
    direction = np.tile([0, 1], len(rows))
    logs.update(
        time=start[both] + direction * 500_000, trace_id=trace_id.take(pa.array(both)),
        span_id=span_id.take(pa.array(both)),
        event_name=_pick(rng, ["gen_ai.user.message", "gen_ai.choice"], direction),
        message_direction=_pick(rng, ["input", "output"], direction),
        messages=pc.if_else(pa.array(direction == 0), _pick(rng, msg_pool[0], msg_ix[both]),
                                    _pick(rng, msg_pool[1], msg_ix[both])),
    )
    return spans, logs, parent_pos < 0


def generate(lake: Lake, rows: int, chunk: int, days: int, seed: int = 7) -> float:
    rng = np.random.default_rng(seed)
    pool = _messages(rng, 200)
    total_traces = rows // SPANS_PER_TRACE
    per_chunk = max(1, chunk // SPANS_PER_TRACE)
    t0 = time.perf_counter()
    held: pa.Table | None = None  # the previous chunk's roots: exported after their children
    i = 0
    for i, first in enumerate(range(0, total_traces, per_chunk)):
        spans, logs, is_root = make_chunk(rng, first, min(per_chunk, total_traces - first), total_traces, days, pool)
        table = pa.table(spans)
        roots = pa.array(is_root)
        out = table.filter(pc.invert(roots))
        if held is not None:
            out = pa.concat_tables([held, out])
        held = table.filter(roots)
        lake.write_batch(f"{i:024d}", {"spans": _columns(out), "logs": logs})
    if held is not None:
        lake.write_batch(f"{i + 1:024d}", {"spans": _columns(held)})
    return time.perf_counter() - t0


def _columns(table: pa.Table) -> dict[str, pa.ChunkedArray]:
    return dict(zip(table.column_names, table.columns))


def compact(lake: Lake, memory_mib: int) -> dict[str, float]:
    """Compact every partition of every table until no small files are left to merge (one
    run merges up to one target's worth per partition, as the collector's worker does every
    interval); seconds per table."""
    took = {}
    for table in ("spans", "logs"):
        t0 = time.perf_counter()
        while lake.compact(table, below_batch_id="9" * 24, min_files=2, memory_mib=memory_mib):
            pass
        took[table] = time.perf_counter() - t0
    return took


@dataclass
class Timing:
    median_ms: float
    min_ms: float
    cpu_ms: float  # median process CPU time (all DuckDB threads): robust to a busy machine

    def __str__(self) -> str:
        return f"{self.median_ms:.0f} ms median (min {self.min_ms:.0f} ms, {self.cpu_ms:.0f} ms CPU)"


def timed(gw: Gateway, sql: str, repeat: int, params: dict | None = None) -> tuple[Timing, list[tuple]]:
    rows = gw.query(sql, params).rows  # warm-up: file metadata and OS cache
    wall, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        gw.query(sql, params)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return Timing(statistics.median(wall) * 1e3, min(wall) * 1e3, statistics.median(cpu) * 1e3), rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="spans to generate (default 10M)")
    ap.add_argument("--chunk", type=int, default=500_000, help="spans per write_batch")
    ap.add_argument("--days", type=int, default=14, help="days the traces spread over")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lake", type=Path, help="lake folder (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the lake; reuse it if it has --rows spans")
    ap.add_argument("--no-compact", action="store_true", help="time the fresh files only")
    ap.add_argument("--no-fresh", action="store_true", help="time the compacted lake only")
    ap.add_argument("--compaction-memory", type=int, default=MEMORY_MIB, metavar="MIB",
                    help=f"exporters.parquet.compaction.memory_mib (default {MEMORY_MIB}): the row groups' size")
    args = ap.parse_args(argv)

    root = args.lake or Path(tempfile.mkdtemp(prefix="otelbench-lake-"))
    lake = Lake(root)
    lake.init()
    try:
        with open_lake(root, memory_limit=None) as gw:  # timing big scans: DuckDB's own limit
            have = gw.query(reports.COUNT_SPANS).rows[0][0]
        if have != args.rows - args.rows % SPANS_PER_TRACE:
            if have:
                sys.exit(f"{root} already holds {have} spans; pass an empty --lake")
            secs = generate(lake, args.rows, args.chunk, args.days)
            print(f"generated {args.rows:,} spans in {secs:.1f} s ({_size(lake)})")
            have = args.rows - args.rows % SPANS_PER_TRACE
        compacted = any(p.name.startswith("compact-") for p in lake.files("spans"))
        if not compacted and not args.no_fresh:
            report(root, args.repeat, "fresh files")
        if not args.no_compact:
            if not compacted:
                took = compact(lake, args.compaction_memory)
                print(f"compacted spans in {took['spans']:.1f} s ({took['spans'] / have * 1e6:.1f} s per "
                      f"million spans), logs in {took['logs']:.1f} s ({_size(lake)})")
            report(root, args.repeat, "after compaction")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def _size(lake: Lake) -> str:
    files = lake.files("spans")
    return f"{len(files)} span files, {sum(p.stat().st_size for p in files) / 1e6:.0f} MB"


def report(root: Path, repeat: int, label: str) -> None:
    print(f"-- {label}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with open_lake(root, memory_limit=None) as gw:  # timing big scans: DuckDB's own limit
        n_llm = gw.query(reports.COUNT_LLM_CALLS).rows[0][0]
        unresolved = gw.query(reports.UNRESOLVED_CALLS).rows[0][0]
        print(f"llm/tool spans whose agent is not resolved yet: {unresolved:,}")
        t, rows = timed(gw, reports.LLM_CALLS_BY_AGENT, repeat)
        print(f"llm_calls GROUP BY agent ({n_llm:,} calls, {len(rows)} agents): {t}")
        (trace,) = gw.query(reports.SOME_TRACE_WITH_LOG_MESSAGES).rows[0]
        t, _ = timed(gw, reports.LLM_CALLS_OF_TRACE, repeat, {"trace_id": trace})
        print(f"one trace's llm_calls (SELECT * ... WHERE trace_id = ?): {t}")
        t, _ = timed(gw, reports.AGENT_RUNS_BY_AGENT, repeat)
        print(f"agent_runs by agent (runs, cost, llm calls, errors): {t}")
        t, _ = timed(gw, reports.AGENT_RUN, repeat, {"trace_id": trace})
        print(f"one trace's agent_runs row: {t}")
        t, _ = timed(gw, reports.TOOL_CALLS_BY_AGENT, repeat)
        print(f"tool_calls GROUP BY agent: {t}")
        t, _ = timed(gw, reports.LLM_CALL_MESSAGES_COUNT, repeat)
        print(f"llm_calls messages (span, else log events): {t}")
        t, _ = timed(gw, reports.SPANS_BY_TYPE, repeat)
        print(f"spans GROUP BY span_type (no join, for scale): {t}")


if __name__ == "__main__":
    sys.exit(main())
