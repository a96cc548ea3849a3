"""The live feed's rules as tables: which agent a span goes to as its trace arrives piece by
piece, runs and their status, privacy, hide_io, the bounds (web/feed.py)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from otelbench.storage.privacy import Privacy
from otelbench.web.feed import HOLD_S, LEADERBOARD, MAX_HELD, SPAN_COLUMNS, Feed

T = "a" * 32


def span(span_id: str, parent: str | None = None, *, agent: str | None = None, trace: str = T,
         span_type: str = "llm", **more: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(SPAN_COLUMNS)
    row.update(trace_id=trace, span_id=span_id, parent_span_id=parent, agent_name=agent, span_type=span_type,
               name=f"{span_type} {span_id}", service_name="svc", start_time=1_700_000_000_000_000,
               duration_ms=5.0, status_code="unset", events="[]")
    row.update(more)
    return row


def agents(out: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """span id → the topic its span message went to."""
    return {m["span_id"]: topic for topic, m in out if m["type"] == "span"}


ROOT = dict(span_type="agent", agent="calc")

# (batches of spans, each polled 0.1 s after the previous) → span id → topic
ATTRIBUTION = [
    pytest.param([[span("c", "r"), span("r", **ROOT)]], {"c": "agent:calc", "r": "agent:calc"},
                 id="children first, one batch"),
    pytest.param([[span("c", "r")], [span("r", **ROOT)]], {"c": "agent:calc", "r": "agent:calc"},
                 id="children first, held for the root"),
    pytest.param([[span("c", "r", request_agent="bob")]], {"c": "agent:bob"}, id="the request's agent"),
    pytest.param([[span("b", "r", span_type="agent", agent="sub")], [span("c", "x")]],
                 {"b": "agent:sub", "c": "agent:sub"}, id="the trace's agent, learnt earlier"),
    pytest.param([[span("c", "b"), span("b", "r", span_type="agent", agent="sub"), span("r", **ROOT)]],
                 {"c": "agent:sub", "b": "agent:sub", "r": "agent:calc"}, id="the nearest agent above, in the batch"),
    pytest.param([[span("c", "r")], [span("r", span_type="other")]], {"c": "agent:svc", "r": "agent:svc"},
                 id="a root naming none: its service"),
    pytest.param([[span("c", "r")], [span("r", span_type="other", request_agent="bob")]],
                 {"c": "agent:bob", "r": "agent:bob"}, id="a root naming none: its request's agent"),
    pytest.param([[span("c", "r", resolved_agent="lake", agent=None)]], {"c": "agent:lake"},
                 id="a lake row: resolved_agent"),
]


@pytest.mark.parametrize(("batches", "expected"), ATTRIBUTION)
def test_a_span_goes_to_its_agent(batches: list[list[dict[str, Any]]], expected: dict[str, str]) -> None:
    feed, out = Feed(), []
    for i, batch in enumerate(batches):
        out += feed.spans(batch, now=i * 0.1)
    assert agents(out) == expected


def test_a_held_span_waits_at_most_the_hold_then_goes_to_its_service() -> None:
    feed = Feed()
    assert feed.spans([span("c", "r")], now=0.0) == []
    assert feed.expire(HOLD_S - 0.01) == []
    assert agents(feed.expire(HOLD_S)) == {"c": "agent:svc"}
    assert feed.counts["fallback"] == 1 and feed.n_held == 0 and not feed.held


def test_what_is_held_is_bounded() -> None:
    feed = Feed()
    out = []
    for i in range(MAX_HELD + 5):
        out += feed.spans([span("c", "r", trace=f"{i:032x}")], now=0.0)
    spans = [(t, m) for t, m in out if m["type"] == "span"]
    assert feed.n_held == MAX_HELD and len(spans) == 5  # the oldest five went on, to their service
    assert {t for t, _ in spans} == {"agent:svc"}


def test_a_run_is_running_at_its_first_span_and_done_at_its_root() -> None:
    feed = Feed()
    first = feed.spans([span("b", "r", span_type="agent", agent="calc")], now=0.0)
    running = [(t, m) for t, m in first if m["type"] == "run"]
    assert [t for t, _ in running] == ["agent:calc", LEADERBOARD] and running[0][1]["status"] == "running"
    done = [(t, m) for t, m in feed.spans([span("r", **ROOT, duration_ms=42.0)], now=0.1) if m["type"] == "run"]
    assert [t for t, _ in done] == ["agent:calc", LEADERBOARD]
    assert done[0][1] == {"type": "run", "agent": "calc", "trace_id": T, "status": "ok",
                          "start_ms": 1_700_000_000_000, "duration_ms": 42.0}
    assert [m for _, m in feed.spans([span("r", **ROOT)], now=0.2) if m["type"] == "run"] == []  # once


@pytest.mark.parametrize(("failing", "status"), [("agent", "error"), ("tool", "ok")])
def test_a_run_fails_when_an_agent_span_does(failing: str, status: str) -> None:
    feed = Feed()
    out = feed.spans([span("x", "r", span_type=failing, agent="calc" if failing == "agent" else None,
                           status_code="error"), span("r", **ROOT)], now=0.0)
    assert [m["status"] for _, m in out if m["type"] == "run"] == [status, status]


def test_a_trace_without_genai_work_is_no_run() -> None:
    out = Feed().spans([span("r", span_type="other", request_agent="bob")], now=0.0)
    assert [m["type"] for _, m in out] == ["span"]


def test_a_span_message_carries_timing_and_events_but_no_attributes() -> None:
    events = json.dumps([{"name": "exception", "time_unix_nano": 1_700_000_000_002_500_000,
                          "attributes": {"exception.message": "boom"}}])
    [(topic, m), *_] = Feed().spans([span("c", "r", request_agent="bob", request_model="m1", input_tokens=3,
                                          status_code="error", error_type="E", error_message="boom",
                                          events=events, attributes='{"k": "v"}')], now=0.0)
    assert topic == "agent:bob"
    assert m == {"type": "span", "agent": "bob", "trace_id": T, "span_id": "c", "parent_span_id": "r",
                 "name": "llm c", "span_type": "llm", "status": "error", "start_ms": 1_700_000_000_000,
                 "duration_ms": 5.0, "model": "m1", "tool": None, "input_tokens": 3, "output_tokens": None,
                 "cost_usd": None, "error_type": "E", "error_message": "boom",
                 "events": [{"name": "exception", "offset_ms": 2.5}]}


def test_a_lake_row_has_datetimes() -> None:
    start = dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=dt.timezone.utc)
    [(_, m)] = Feed().spans([span("c", "r", resolved_agent="calc", start_time=start, span_type="other")], now=0.0)
    assert m["start_ms"] == int(start.timestamp() * 1000)


def test_private_agents_and_owners_are_dropped_and_hide_io_loses_error_text() -> None:
    feed = Feed(Privacy(private_agents=("payroll",), private_owners=("acme",), hide_io_agents=("quiet",)))
    assert feed.spans([span("r", span_type="agent", agent="payroll", trace="1" * 32)], now=0.0) == []
    assert feed.spans([span("r", span_type="agent", agent="calc", owner="acme", trace="2" * 32)], now=0.0) == []
    assert feed.counts["private"] == 2
    quiet = feed.spans([span("r", span_type="agent", agent="quiet", status_code="error", error_type="E",
                             error_message="the secret task")], now=0.0)
    [m] = [m for _, m in quiet if m["type"] == "span"]
    assert m["error_type"] is None and m["error_message"] is None and m["status"] == "error"


def test_hostile_text_is_clipped_and_stays_data() -> None:
    [(_, m)] = Feed().spans([span("c", "r", request_agent="x", name="<script>" + "x" * 10_000, span_type="other")],
                            now=0.0)
    assert m["name"].startswith("<script>") and len(m["name"]) == 500  # text for textContent, clipped


def test_scores() -> None:
    feed = Feed(Privacy(private_agents=("payroll",)))
    at = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    rows = [{"trace_id": "t1", "agent": "calc", "score": 0.8, "judge_model": "j", "judged_at": at, "_tombstone": False},
            {"trace_id": "t2", "agent": "payroll", "score": 0.1, "judge_model": "j", "judged_at": at},
            {"trace_id": "t3", "agent": "calc", "score": 0.4, "judge_model": "j", "judged_at": at},
            {"trace_id": "t4", "agent": "calc", "score": None, "judge_model": "j", "judged_at": at},
            {"trace_id": "t5", "agent": "calc", "score": 0.2, "judge_model": "j", "judged_at": at, "_tombstone": True}]
    out = feed.scores(rows, private_traces=frozenset({"t3"}))
    assert [(t, m["trace_id"]) for t, m in out] == [("agent:calc", "t1"), (LEADERBOARD, "t1")]
    assert out[0][1] == {"type": "score", "agent": "calc", "trace_id": "t1", "score": 0.8, "judge_model": "j",
                         "judged_at_ms": int(at.timestamp() * 1000)}
    assert feed.counts["private"] == 2


@pytest.mark.parametrize("seed", range(20))
def test_whole_trees_in_one_batch_go_where_the_lake_puts_them(seed: int) -> None:
    """Differential: the live rule against the lake's (storage.agents.resolve) on random
    span trees, each whole in one batch, in a random order (children first and not)."""
    import random

    import pyarrow as pa

    from otelbench.storage.agents import resolve

    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for t in range(rng.randint(1, 6)):
        trace, request_agent = f"{t:032x}", rng.choice([None, "from-header"])
        service = rng.choice(["svc-a", "svc-b"])
        ids: list[str] = []
        for n in range(rng.randint(1, 12)):
            parent = rng.choice(ids) if ids else None
            agent = rng.choice([None, None, "alpha", "beta"])
            ids.append(f"{t:04x}{n:012x}")
            rows.append(span(ids[-1], parent, trace=trace, agent=agent, span_type=rng.choice(["llm", "tool", "other"]),
                             request_agent=request_agent, service_name=service))
    rng.shuffle(rows)
    lake = resolve(*(pa.array([r[c] for r in rows], pa.string()) for c in
                     ("trace_id", "span_id", "parent_span_id", "agent_name", "service_name")),
                   request_agent=pa.array([r["request_agent"] for r in rows], pa.string())).to_pylist()
    live = agents(Feed().spans(rows, now=0.0))
    assert {r["span_id"]: f"agent:{a}" for r, a in zip(rows, lake)} == live


def test_a_run_is_its_outermost_agents_even_under_a_root_naming_none() -> None:
    rows = [span("c", "b"), span("b", "r", span_type="agent", agent="calc"),
            span("r", span_type="other", request_agent=None, service_name="http-svc")]
    out = Feed(Privacy(private_agents=("hidden-run",))).spans(rows, now=0.0)
    assert agents(out) == {"c": "agent:calc", "b": "agent:calc", "r": "agent:http-svc"}  # spans: the lake's rule
    assert [(t, m["agent"], m["status"]) for t, m in out if m["type"] == "run"] == [
        ("agent:calc", "calc", "ok"), (LEADERBOARD, "calc", "ok")]  # the run: agent_runs' rule


def test_a_private_agents_run_is_dropped_even_when_a_public_span_ends_it() -> None:
    rows = [span("b", "r", span_type="agent", agent="payroll"), span("r", span_type="other", request_agent="pub")]
    feed = Feed(Privacy(private_agents=("payroll",)))
    assert feed.spans(rows, now=0.0) == [] and feed.counts["private"] == 2  # the root's span is the run's too


def test_a_span_whose_agent_is_a_guess_goes_out_without_its_names_while_an_agent_is_private() -> None:
    # a private sub-agent's call, sent before its agent span by a request naming a public
    # agent: nothing yet says whose it is
    call = dict(request_model="secret-model", tool_name="secret-tool", status_code="error", error_type="E",
                error_message="secret text", events='[{"name": "secret-event", "time_unix_nano": 1}]')
    for private, shown in (((), True), (("payroll",), False)):
        feed = Feed(Privacy(private_agents=private))
        [msg] = [m for topic, m in feed.spans([span("c", "b", request_agent="pub", **call)], now=0.0)
                 if m["type"] == "span"]
        text = json.dumps(msg)
        assert msg["agent"] == "pub" and msg["duration_ms"] == 5.0 and msg["status"] == "error"
        assert ("secret" in text) == shown, text
    # once its agent span arrives with it, the lake's rule knows: dropped as private, named if public
    feed = Feed(Privacy(private_agents=("payroll",)))
    assert feed.spans([span("c", "b", request_agent="pub", **call),
                       span("b", "r", span_type="agent", agent="payroll")], now=0.0) == []
    out = feed.spans([span("d", "e", trace="3" * 32, request_agent="pub", **call),
                      span("e", "r", trace="3" * 32, span_type="agent", agent="pub")], now=0.0)
    assert any("secret-model" in json.dumps(m) for _, m in out)
