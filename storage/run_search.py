"""Asking the run search index (storage/search_index.py): runs by words of their task or
answer and by filters — agent, status, judge score, model, time, cost, latency, a set of
trace ids (a failure cluster's) — sorted and paged.

Privacy is part of every query: the caller passes the agents and owners whose runs it
may not see (excluded whatever else matches) and those whose texts it may not see (a
query with words excludes their runs: besides, the index never holds a ``hide_io`` run's
text). A query's words are matched as the index tokenizes text (``words``): each must be
a word of the task or of the answer.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otelbench.storage import search_index

MAX_WORD_BYTES = 40  # tantivy's default tokenizer drops longer words (RemoveLongFilter)
# sort name -> (field ordered by, descending); "relevance" orders by the text's score
SORTS = {"relevance": (None, True), "newest": ("start_us", True), "oldest": ("start_us", False),
         "slowest": ("duration_ms", True), "fastest": ("duration_ms", False),
         "costliest": ("cost_usd", True), "cheapest": ("cost_usd", False),
         "best": ("eval_score", True), "worst": ("eval_score", False)}


def words(text: str) -> list[str]:
    """``text``'s words as the index tokenizes a task or an answer: runs of letters and
    digits, lowercased; a word of more than MAX_WORD_BYTES bytes is in no index, so it is
    kept (and matches nothing)."""
    return [w.lower() for w in re.findall(r"[^\W_]+", text)]


@dataclass(frozen=True)
class Query:
    words: tuple[str, ...] = ()
    agent: str | None = None
    status: str | None = None
    model: str | None = None
    since: dt.datetime | None = None  # start_time >= since
    until: dt.datetime | None = None  # start_time < until
    min_score: float | None = None
    max_score: float | None = None
    min_cost: float | None = None
    max_cost: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    trace_ids: tuple[str, ...] | None = None  # only these runs (a failure cluster's)
    sort: str = "newest"
    limit: int = 20
    offset: int = 0
    # privacy: runs never shown, and runs whose text is never searched
    private_agents: tuple[str, ...] = ()
    private_owners: tuple[str, ...] = ()
    hidden_agents: tuple[str, ...] = ()
    hidden_owners: tuple[str, ...] = ()


@dataclass(frozen=True)
class Found:
    total: int
    runs: list[dict[str, Any]]
    rollup_version: int | None  # the rollup version the index holds
    updated_at: str | None


class Reader:
    """The index of one lake, opened on first use and reopened when an update replaced it
    (its state file changed); thread-safe."""

    def __init__(self, root: str | Path) -> None:
        self.folder = search_index.folder(root)
        self._lock = threading.Lock()
        self._opened: tuple[Any, Any, dict[str, Any]] | None = None  # (state stamp, Index, state)

    def current(self) -> tuple[Any, dict[str, Any]] | None:
        """The index and its state now; None before the first update."""
        import tantivy

        path = self.folder / search_index.STATE
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        stamp = (st.st_mtime_ns, st.st_ino, st.st_size)
        with self._lock:
            if self._opened is None or self._opened[0] != stamp:
                found = json.loads(path.read_text())
                if found.get("format") != search_index.FORMAT:
                    return None
                if self._opened is not None and self._opened[2]["folder"] == found["folder"]:
                    index = self._opened[1]
                    index.reload()
                else:
                    index = tantivy.Index.open(str(self.folder / found["folder"]))
                self._opened = (stamp, index, found)
            return self._opened[1], self._opened[2]

    def search(self, q: Query) -> Found:
        opened = self.current()
        if opened is None:
            return Found(0, [], None, None)
        index, state = opened
        searcher = index.searcher()
        query = _query(index.schema, q)
        order_by, descending = SORTS["newest" if q.sort == "relevance" and not q.words else q.sort]
        import tantivy

        if order_by is None:
            result = searcher.search(query, q.limit, count=True, offset=q.offset)
        else:
            result = searcher.search(query, q.limit, count=True, order_by_field=order_by, offset=q.offset,
                                     order=tantivy.Order.Desc if descending else tantivy.Order.Asc)
        runs = [_run(searcher.doc(address).to_dict()) for _, address in result.hits]
        return Found(result.count or 0, runs, state["rollup_version"], state["updated_at"])


def _query(schema: Any, q: Query) -> Any:
    import tantivy

    Query_, Occur = tantivy.Query, tantivy.Occur
    must: list[Any] = []
    must_not: list[Any] = []

    def term(name: str, value: str) -> Any:
        return Query_.term_query(schema, name, value)

    def between(name: str, kind: Any, low: Any, high: Any, high_inclusive: bool = True) -> None:
        if low is not None or high is not None:
            must.append(Query_.range_query(schema, name, kind, low, high, include_lower=True,
                                           include_upper=high_inclusive or high is None))

    for w in q.words:
        must.append(Query_.boolean_query([(Occur.Should, term("task", w)), (Occur.Should, term("answer", w))]))
    if q.words:
        must_not += [Query_.term_set_query(schema, "agent", list(q.hidden_agents)),
                     Query_.term_set_query(schema, "owner", list(q.hidden_owners))]
    for name in ("agent", "status"):
        if getattr(q, name) is not None:
            must.append(term(name, getattr(q, name)))
    if q.model is not None:
        must.append(term("models", q.model))
    if q.trace_ids is not None:
        must.append(Query_.term_set_query(schema, "trace_id", list(q.trace_ids)))
    between("start_us", tantivy.FieldType.Integer, _us(q.since), _us(q.until), high_inclusive=False)
    between("eval_score", tantivy.FieldType.Float, q.min_score, q.max_score)
    between("cost_usd", tantivy.FieldType.Float, q.min_cost, q.max_cost)
    between("duration_ms", tantivy.FieldType.Float, q.min_ms, q.max_ms)
    must_not += [Query_.term_set_query(schema, "agent", list(q.private_agents)),
                 Query_.term_set_query(schema, "owner", list(q.private_owners))]
    clauses = [(Occur.Must, c) for c in must or [Query_.all_query()]]
    clauses += [(Occur.MustNot, c) for c in must_not]
    return Query_.boolean_query(clauses)


def _us(at: dt.datetime | None) -> int | None:
    if at is None:
        return None
    delta = at - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _run(doc: dict[str, list[Any]]) -> dict[str, Any]:
    def one(name: str) -> Any:
        found = doc.get(name)
        return found[0] if found else None

    start = one("start_us")
    return {"trace_id": one("trace_id"), "agent": one("agent"), "owner": one("owner") or None,
            "status": one("status"),
            "start_time": None if start is None else
            dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=start),
            "duration_ms": one("duration_ms"), "cost_usd": one("cost_usd"), "eval_score": one("eval_score"),
            "task": one("task"), "answer": one("answer")}


__all__ = ["Reader", "Query", "Found", "SORTS", "words"]
