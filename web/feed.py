"""The live feed's events: span and score rows → ``(topic, message)`` pairs, each span given
the agent it belongs to, privacy applied. Pure — rows and a clock reading in, messages
out; the hub (``web.live``) runs it over its sources and sends what it returns.

Topics: ``leaderboard`` (every visible agent's runs and scores) and ``agent:<name>`` (one
agent's spans, runs and scores). Messages (docs/web.md "Live dashboard"):

- ``span``: one span as it arrives: name, type, status, start, duration, model, tool,
  tokens, cost, its error and its events' names and offsets;
- ``run``: a run's status: ``running`` at its first span, ``ok`` or ``error`` with its
  duration when its root span arrives (a trace is a run when it did llm, agent or tool
  work, as in ``agent_runs``);
- ``score``: a judge's score of a run.

A span's agent, live: the lake's rule (``storage.agents``) as far as what has arrived
allows. Exporters send a span when it ends, so an agent's calls arrive before the agent
span that holds them, often in the same request, in a long run several requests earlier:

1. the agent the span names (a lake row: its ``resolved_agent``);
2. else the nearest span above it in the same batch that names one; a chain that reaches
   its root in the batch without one: the root's request agent, else its service — rules
   1 and 2 are ``storage.agents.resolve`` itself over the batch, so a whole tree in one
   batch goes exactly where the lake puts it;
3. else its trace's agent, from a bounded map trace → agent that spans naming one fill
   (a root's name wins; a root that names none gives its request's agent, else its
   service);
4. else the agent its request named (``request_agent``: ``X-Bench-Agent`` or the key's);
5. else the span is held, at most ``HOLD_S`` and ``MAX_HELD`` spans in all, for its
   trace's agent to arrive; then it goes to its service.

Privacy: a span, run or score of a private agent or owner — and any span of a trace whose
agent (rule 3) is private — is dropped here (counted). While any agent is private, a span
whose agent came from rules 3 to 5 (a guess: a parent not arrived yet may be a private
sub-agent's) goes out without its name, model, tool, error and events. A
``hide_io`` agent's or owner's messages carry no error text; no message carries inputs,
outputs, messages or attributes.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from otelbench.storage.agents import resolve
from otelbench.storage.labels import model_label
from otelbench.storage.privacy import Privacy

LEADERBOARD = "leaderboard"
HOLD_S = 1.0  # the ack → live budget is 2 s
MAX_HELD = 10_000
MAX_TRACES = 50_000
MAX_EVENTS = 16  # per span message
MAX_TEXT = 500  # characters of a name or an error message
GENAI = frozenset({"llm", "agent", "tool"})
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
MICROSECOND = dt.timedelta(microseconds=1)

# what the feed reads of a spans row and of an evals row (the sources read only these)
SPAN_COLUMNS = ("trace_id", "span_id", "parent_span_id", "name", "service_name", "start_time", "duration_ms",
                "status_code", "owner", "request_agent", "events", "span_type", "agent_name", "request_model",
                "response_model", "input_tokens", "output_tokens", "cost_usd", "tool_name", "error_type",
                "error_message")
LAKE_SPAN_COLUMNS = (*SPAN_COLUMNS, "resolved_agent")
SCORE_COLUMNS = ("trace_id", "agent", "score", "judge_model", "judged_at", "_tombstone")

Out = tuple[str, dict[str, Any]]


def agent_topic(name: str) -> str:
    return f"agent:{name}"


@dataclass(slots=True)
class _Trace:
    agent: str | None = None
    by_root: bool = False  # the root decided it: nothing overrides it
    genai: bool = False
    errored: bool = False  # an agent span failed (so the run did, as in agent_runs)
    announced: bool = False  # "running" went out
    done: bool = False  # its root arrived


class Feed:
    def __init__(self, privacy: Privacy | None = None) -> None:
        self.privacy = privacy or Privacy()
        self.traces: OrderedDict[str, _Trace] = OrderedDict()
        self.held: dict[str, tuple[float, list[dict[str, Any]]]] = {}  # trace → (deadline, rows)
        self.deadlines: deque[tuple[float, str]] = deque()
        self.n_held = 0
        self.counts: Counter[str] = Counter()  # spans, runs, scores, private, held, fallback

    # -- spans ---------------------------------------------------------------------------
    def spans(self, rows: Sequence[dict[str, Any]], now: float) -> list[Out]:
        """Messages for a batch of span rows (one poll of a source); ``now``: a monotonic clock."""
        named = {(r["trace_id"], r["span_id"]): a for r in rows if (a := r.get("resolved_agent") or r["agent_name"])}
        rooted = {r["trace_id"] for r in rows if r["parent_span_id"] is None}
        for r in rows:  # first what the batch says of its traces' agents
            t = self._trace(r["trace_id"])
            own, root = named.get((r["trace_id"], r["span_id"])), r["parent_span_id"] is None
            if own and root:
                t.agent, t.by_root = own, True
            elif own and t.agent is None:
                t.agent = own
            elif root and t.agent is None:
                t.agent = r["request_agent"] or r["service_name"]
        out: list[Out] = []
        for r, lake in zip(rows, _lake_agents(rows)):
            t = self.traces.get(r["trace_id"])
            agent = lake or (t.agent if t is not None else None) or r["request_agent"]
            if agent is None:
                self._hold(r, now, out)
            else:
                out += self._emit(r, agent, rooted, guessed=lake is None)
        for trace in {r["trace_id"] for r in rows}:
            if trace in self.held and (t := self.traces.get(trace)) is not None and t.agent is not None:
                out += self._release(trace, rooted)
        return out

    def expire(self, now: float) -> list[Out]:
        """Held spans whose time is up go to their trace's agent if known, else their service."""
        out: list[Out] = []
        while self.deadlines and self.deadlines[0][0] <= now:
            deadline, trace = self.deadlines.popleft()
            if trace in self.held and self.held[trace][0] == deadline:
                out += self._release(trace, set())
        return out

    def _hold(self, r: dict[str, Any], now: float, out: list[Out]) -> None:
        if self.n_held >= MAX_HELD:  # bounded: the oldest trace waits no longer
            while self.deadlines and self.n_held >= MAX_HELD:
                _, oldest = self.deadlines.popleft()
                if oldest in self.held:
                    out += self._release(oldest, set())
        trace = r["trace_id"]
        if trace not in self.held:
            deadline = now + HOLD_S
            self.held[trace] = (deadline, [])
            self.deadlines.append((deadline, trace))
        self.held[trace][1].append(r)
        self.n_held += 1
        self.counts["held"] += 1

    def _release(self, trace: str, rooted: set[str]) -> list[Out]:
        _, rows = self.held.pop(trace)
        self.n_held -= len(rows)
        known = self.traces[trace].agent if trace in self.traces else None
        out: list[Out] = []
        for r in rows:
            if known is None:
                self.counts["fallback"] += 1
            out += self._emit(r, known or r["service_name"], rooted, guessed=True)
        return out

    def _trace(self, trace: str) -> _Trace:
        t = self.traces.get(trace)
        if t is None:
            t = self.traces[trace] = _Trace()
            if len(self.traces) > MAX_TRACES:
                self.traces.popitem(last=False)
        else:
            self.traces.move_to_end(trace)
        return t

    def _emit(self, r: dict[str, Any], agent: str, rooted: set[str], guessed: bool = False) -> list[Out]:
        """``guessed``: the agent is not the lake's rule over the span's chain of parents
        (rules 3 to 5): a parent not arrived yet may be a private agent's span, so while any
        agent is private such a span goes out without its names (``span_message``)."""
        t = self.traces.get(r["trace_id"]) or _Trace()
        t.genai = t.genai or r["span_type"] in GENAI
        t.errored = t.errored or (r["span_type"] == "agent" and r["status_code"] == "error")
        out: list[Out] = []
        if self.private(agent, r["owner"]) or (t.agent is not None and self.private(t.agent, None)):
            self.counts["private"] += 1  # its own agent's, or a span of a private agent's run
        else:
            self.counts["spans"] += 1
            unsure = guessed and bool(self.privacy.private_agents)
            out.append((agent_topic(agent), span_message(r, agent, self.hidden(agent, r["owner"]), unsure)))
        run_agent = t.agent or agent  # a run is its outermost agent's, as in agent_runs
        if r["parent_span_id"] is None:
            if t.genai and not t.done:
                t.done = True
                status = "error" if t.errored or r["status_code"] == "error" else "ok"
                out += self._run(run_message(r, run_agent, status, r["duration_ms"]), r["owner"])
        elif t.genai and not (t.announced or t.done or r["trace_id"] in rooted):
            t.announced = True
            out += self._run(run_message(r, run_agent, "running", None), r["owner"])
        return out

    def _run(self, run: dict[str, Any], owner: str | None) -> list[Out]:
        if self.private(run["agent"], owner):
            return []
        if run["status"] != "running":
            self.counts["runs"] += 1
        return [(agent_topic(run["agent"]), run), (LEADERBOARD, run)]

    # -- scores --------------------------------------------------------------------------
    def scores(self, rows: Iterable[dict[str, Any]], private_traces: frozenset[str] = frozenset()) -> list[Out]:
        """Messages for new ``evals`` rows; ``private_traces``: runs of a private owner
        (evals carry no owner: the caller asks the lake)."""
        out: list[Out] = []
        for r in rows:
            agent = r["agent"]
            if r.get("_tombstone") or agent is None or r["score"] is None:
                continue
            if self.private(agent, None) or r["trace_id"] in private_traces:
                self.counts["private"] += 1
                continue
            self.counts["scores"] += 1
            msg = {"type": "score", "agent": agent, "trace_id": r["trace_id"], "score": r["score"],
                   "judge_model": _label(r["judge_model"]), "judged_at_ms": _ms(r["judged_at"])}
            out += [(agent_topic(agent), msg), (LEADERBOARD, msg)]
        return out

    # -- privacy -------------------------------------------------------------------------
    def private(self, agent: str, owner: str | None) -> bool:
        p = self.privacy
        return agent in p.private_agents or (owner is not None and owner in p.private_owners)

    def hidden(self, agent: str, owner: str | None) -> bool:
        p = self.privacy
        return agent in p.hide_io_agents or (owner is not None and owner in p.hide_io_owners)


def _lake_agents(rows: Sequence[dict[str, Any]]) -> list[str | None]:
    """Each row's agent by the lake's rule (``storage.agents.resolve``) over this batch
    alone: None where its chain of parents leaves the batch before naming one."""

    def column(name: str) -> pa.Array:
        return pa.array([r.get(name) for r in rows], pa.string())

    return resolve(column("trace_id"), column("span_id"), column("parent_span_id"), column("agent_name"),
                   column("service_name"), column("resolved_agent"), column("request_agent")).to_pylist()


UNATTRIBUTED = "(its agent not known yet)"  # the name a span without its names goes out with


def span_message(r: dict[str, Any], agent: str, hidden: bool, unnamed: bool = False) -> dict[str, Any]:
    """``unnamed``: its times, status and tokens only — no name, model, tool, error or events
    (a span whose agent is a guess while some agent is private)."""
    start = _us(r["start_time"])
    return {
        "type": "span", "agent": agent, "trace_id": r["trace_id"], "span_id": r["span_id"],
        "parent_span_id": r["parent_span_id"], "name": UNATTRIBUTED if unnamed else _clip(r["name"]),
        "span_type": r["span_type"], "status": r["status_code"], "start_ms": None if start is None else start // 1000,
        "duration_ms": r["duration_ms"],
        "model": None if unnamed else _clip(_label(r["response_model"] or r["request_model"])),
        "tool": None if unnamed else _clip(r["tool_name"]), "input_tokens": r["input_tokens"],
        "output_tokens": r["output_tokens"], "cost_usd": r["cost_usd"],
        # error texts quote what the agent was given: never for hide_io
        "error_type": None if hidden or unnamed else _clip(r["error_type"]),
        "error_message": None if hidden or unnamed else _clip(r["error_message"]),
        "events": [] if unnamed else _events(r["events"], start),
    }


def run_message(r: dict[str, Any], agent: str, status: str, duration_ms: float | None) -> dict[str, Any]:
    start = _us(r["start_time"])
    return {"type": "run", "agent": agent, "trace_id": r["trace_id"], "status": status,
            "start_ms": None if start is None else start // 1000, "duration_ms": duration_ms}


def _events(raw: Any, start_us: int | None) -> list[dict[str, Any]]:
    """Each event's name and offset from the span's start (never its attributes)."""
    if not raw or raw == "[]":
        return []
    try:
        events = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except orjson.JSONDecodeError:
        return []
    out = []
    for e in events[:MAX_EVENTS]:
        at = e.get("time_unix_nano")
        offset = (at / 1000 - start_us) / 1000 if isinstance(at, int) and at and start_us is not None else None
        out.append({"name": _clip(e.get("name")), "offset_ms": offset})
    return out


def _us(v: Any) -> int | None:
    """Microseconds since the epoch: an int already (a logged row) or a datetime (a lake row)."""
    if v is None or isinstance(v, int):
        return v
    return (v - EPOCH) // MICROSECOND


def _ms(v: Any) -> int | None:
    us = _us(v)
    return None if us is None else us // 1000


def _clip(s: Any) -> Any:
    return s[:MAX_TEXT] if isinstance(s, str) else s


def _label(model: str | None) -> str | None:
    """A model as the pages name it (``model_label``: a GGUF path as its file name)."""
    return model_label(model) if model else model
