"""Run search (storage/search_index.py, storage/run_search.py) against a brute-force filter
of the same rollup rows: any runs, any query, every page — no run counted twice, none
missing, in the order asked; the index kept equal to the rollup through incremental
updates (new runs, changed runs, runs gone, a rewritten base), and rebuilt when the
``hide_io`` rules change."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelbench.storage import rollups, search_index
from otelbench.storage.privacy import Privacy
from otelbench.storage.run_search import SORTS, Query, Reader, words
from otelbench.testing import runs_rollup

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
VOCAB = ["whale", "ledger", "timeout", "blue", "Fetch", "plan", "x1", "zeta"]
AGENTS = ["alpha", "beta", "gamma", "delta"]
MODELS = ["gpt-4o", "smollm2", "qwen3"]


def messages(role: str, text: str | None) -> str | None:
    return None if text is None else json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


texts = st.one_of(st.none(), st.lists(st.sampled_from(VOCAB + ["<b>", "-", "a_b"]), max_size=6).map(" ".join))
runs = st.lists(st.fixed_dictionaries({
    "agent": st.sampled_from(AGENTS), "owner": st.sampled_from([None, "team", "hush"]),
    "status": st.sampled_from(["ok", "error"]), "minute": st.integers(0, 60 * 24 * 10),
    "duration_ms": st.one_of(st.none(), st.floats(1, 1e5)), "cost_usd": st.one_of(st.none(), st.floats(0, 2)),
    "eval_score": st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
    "task": texts, "answer": texts, "models": st.lists(st.sampled_from(MODELS), max_size=2, unique=True),
}), max_size=40)
queries = st.fixed_dictionaries({
    "words": st.lists(st.sampled_from([w.lower() for w in VOCAB] + ["nothing"]), max_size=2).map(tuple),
    "agent": st.one_of(st.none(), st.sampled_from(AGENTS)), "status": st.one_of(st.none(), st.sampled_from(["ok", "error"])),
    "model": st.one_of(st.none(), st.sampled_from(MODELS)),
    "since": st.one_of(st.none(), st.integers(0, 60 * 24 * 10)), "until": st.one_of(st.none(), st.integers(0, 60 * 24 * 10)),
    "min_score": st.one_of(st.none(), st.sampled_from([0.25, 0.5])), "max_score": st.one_of(st.none(), st.just(0.75)),
    "min_cost": st.one_of(st.none(), st.just(0.5)), "max_cost": st.one_of(st.none(), st.just(1.5)),
    "min_ms": st.one_of(st.none(), st.just(100.0)), "max_ms": st.one_of(st.none(), st.just(5e4)),
    "sort": st.sampled_from(list(SORTS)), "per_page": st.integers(1, 7),
    "private_agents": st.sampled_from([(), ("beta",)]), "private_owners": st.sampled_from([(), ("hush",)]),
    "hidden_agents": st.sampled_from([(), ("gamma",)]), "hidden_owners": st.sampled_from([(), ("team",)]),
})


def table(rows: list[dict], first: int = 0, ids: list[str] | None = None) -> pa.Table:
    return pa.table({
        "trace_id": ids if ids is not None else [f"{first + i:032x}" for i in range(len(rows))], "agent": [r["agent"] for r in rows],
        "owner": [r["owner"] for r in rows], "status": [r["status"] for r in rows],
        "start_time": pa.array([T0 + dt.timedelta(minutes=r["minute"]) for r in rows], pa.timestamp("us", tz="UTC")),
        "duration_ms": pa.array([r["duration_ms"] for r in rows], pa.float64()),
        "cost_usd": pa.array([r["cost_usd"] for r in rows], pa.float64()),
        "eval_score": pa.array([r["eval_score"] for r in rows], pa.float64()),
        "input_preview": [messages("user", r["task"]) for r in rows],
        "output_preview": [messages("assistant", r["answer"]) for r in rows],
        "models": pa.array([r["models"] for r in rows], pa.list_(pa.string())),
        **{f.name: pa.nulls(len(rows), f.type) for f in rollups.RUNS_SCHEMA
           if f.name in ("cost_reported", "cost_computed", "calls_reported", "calls_computed", "input_tokens",
                         "output_tokens", "llm_calls", "tool_calls", "date")},
    }).select(rollups.RUNS_SCHEMA.names).cast(rollups.RUNS_SCHEMA)


def expected(rows: dict[str, dict], q: Query, hide: Privacy) -> set[str]:
    """The brute force: every rule written out over the rows."""
    def at(minute: int | None) -> dt.datetime | None:
        return None if minute is None else T0 + dt.timedelta(minutes=minute)

    out = set()
    for tid, r in rows.items():
        owner = r["owner"] or ""
        start = at(r["minute"])
        text_hidden = (r["agent"] in hide.hide_io_agents or owner in hide.hide_io_owners
                       or r["agent"] in q.hidden_agents or owner in q.hidden_owners)
        said = set(words(r["task"] or "")) | set(words(r["answer"] or ""))
        checks = [r["agent"] not in q.private_agents, owner not in q.private_owners,
                  not q.words or (not text_hidden and all(w in said for w in q.words)),
                  q.agent is None or r["agent"] == q.agent, q.status is None or r["status"] == q.status,
                  q.model is None or q.model in r["models"], q.since is None or start >= q.since,
                  q.until is None or start < q.until,
                  q.trace_ids is None or tid in q.trace_ids]
        for name, low, high in (("eval_score", q.min_score, q.max_score), ("cost_usd", q.min_cost, q.max_cost),
                                ("duration_ms", q.min_ms, q.max_ms)):
            v = r[name]
            checks.append((low is None and high is None) or (v is not None and (low is None or v >= low)
                                                             and (high is None or v <= high)))
        if all(checks):
            out.add(tid)
    return out


def every_page(reader: Reader, q: Query) -> tuple[int, list[dict]]:
    found, offset, total = [], 0, None
    while True:
        page = reader.search(Query(**{**vars(q), "offset": offset}))
        total = page.total if total is None else total
        assert page.total == total
        found += page.runs
        if len(page.runs) < q.limit:
            return total, found
        offset += q.limit


def query_of(qd: dict) -> Query:
    at = {k: None if qd[k] is None else T0 + dt.timedelta(minutes=qd[k]) for k in ("since", "until")}
    limit = qd.pop("per_page")
    return Query(**{**qd, **at, "limit": limit})


def check(reader: Reader, rows: dict[str, dict], q: Query, hide: Privacy) -> None:
    total, found = every_page(reader, q)
    ids = [r["trace_id"] for r in found]
    assert len(ids) == len(set(ids)), "a run found twice"
    assert set(ids) == expected(rows, q, hide) and total == len(ids)
    field = {"newest": "start_time", "oldest": "start_time", "slowest": "duration_ms", "fastest": "duration_ms",
             "costliest": "cost_usd", "cheapest": "cost_usd", "best": "eval_score", "worst": "eval_score"}
    sort = "newest" if q.sort == "relevance" and not q.words else q.sort
    if sort in field:
        keys = [r[field[sort]] for r in found]
        present = [k for k in keys if k is not None]
        assert keys == present + [None] * (len(keys) - len(present)), "runs without the value come last"
        assert present == sorted(present, reverse=SORTS[sort][1])
    for r in found:  # what a hit carries is its row's
        row = rows[r["trace_id"]]
        assert (r["agent"], r["status"], r["eval_score"]) == (row["agent"], row["status"], row["eval_score"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=runs, later=runs, changed=st.data(), qs=st.lists(queries, min_size=1, max_size=4),
       hide=st.sampled_from([Privacy(), Privacy(hide_io_agents=("alpha",)), Privacy(hide_io_owners=("team",))]))
def test_search_equals_a_brute_force_filter_of_the_same_runs(tmp_path_factory, base, later, changed, qs,
                                                             hide) -> None:
    root = tmp_path_factory.mktemp("search")
    try:
        runs_rollup.write(root, table(base), 1)
        assert search_index.update(root, hide).rebuilt
        reader = Reader(root)
        rows = {f"{i:032x}": r for i, r in enumerate(base)}
        for qd in qs:
            check(reader, rows, query_of(dict(qd)), hide)

        # a fold: new runs, some changed (another agent, other words), some gone
        ids = list(rows)
        before = {t: r["agent"] for t, r in rows.items()}
        moved = changed.draw(st.lists(st.sampled_from(ids), unique=True, max_size=5)) if ids else []
        gone = changed.draw(st.lists(st.sampled_from(ids), unique=True, max_size=3)) if ids else []
        gone = [t for t in gone if t not in moved]
        edits = [{**rows[t], "agent": changed.draw(st.sampled_from(AGENTS)), "task": changed.draw(texts)} for t in moved]
        fresh = table(later, first=10_000)
        edited = table(edits, ids=moved)
        runs_rollup.write_delta(root, pa.concat_tables([fresh, edited, runs_rollup.tombstones(gone)]), 2)
        done = search_index.update(root, hide)
        assert not done.rebuilt
        rows.update({f"{10_000 + i:032x}": r for i, r in enumerate(later)})
        rows.update(dict(zip(moved, edits)))
        for t in gone:
            rows.pop(t)
        for qd in qs:
            check(reader, rows, query_of(dict(qd)), hide)

        # the delta merged into new base files of the agents it touches, the others' kept
        # (what a fold does once the delta is big)
        touched = {r["agent"] for r in later + edits} | {before[t] for t in moved + gone}
        runs_rollup.merge(root, table(list(rows.values()), ids=list(rows)), 3, touched)
        assert not search_index.update(root, hide).rebuilt
        for qd in qs:
            check(reader, rows, query_of(dict(qd)), hide)

        # and a fold after the merge: a new delta over the new base
        extra = [{**rows[t], "status": "error", "answer": "relapsed whale"} for t in list(rows)[:3]]
        runs_rollup.write_delta(root, table(extra, ids=list(rows)[:3]), 4)
        assert not search_index.update(root, hide).rebuilt
        rows.update(dict(zip(list(rows)[:3], extra)))
        for qd in qs:
            check(reader, rows, query_of(dict(qd)), hide)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_other_hide_io_rules_rebuild_the_index_and_its_texts(tmp_path: Path) -> None:
    r = {"agent": "alpha", "owner": None, "status": "ok", "minute": 1, "duration_ms": 5.0, "cost_usd": None,
         "eval_score": None, "task": "find the whale", "answer": None, "models": []}
    runs_rollup.write(tmp_path, table([r]), 1)
    reader = Reader(tmp_path)
    search_index.update(tmp_path, Privacy())
    assert reader.search(Query(words=("whale",))).total == 1
    hidden = Privacy(hide_io_agents=("alpha",))
    assert search_index.pending(tmp_path, hidden)
    assert search_index.update(tmp_path, hidden).rebuilt
    assert reader.search(Query(words=("whale",))).total == 0  # not indexed: no reader can match it
    found = reader.search(Query(agent="alpha"))
    assert found.total == 1 and found.runs[0]["task"] is None
    assert not search_index.pending(tmp_path, hidden)


def test_a_lost_index_is_rebuilt_from_the_rollup(tmp_path: Path) -> None:
    r = {"agent": "alpha", "owner": None, "status": "ok", "minute": 1, "duration_ms": 5.0, "cost_usd": None,
         "eval_score": None, "task": "find the whale", "answer": None, "models": []}
    runs_rollup.write(tmp_path, table([r, {**r, "task": "count sheep"}]), 1)
    search_index.update(tmp_path, Privacy())
    shutil.rmtree(search_index.folder(tmp_path))
    assert search_index.pending(tmp_path, Privacy())
    assert search_index.update(tmp_path, Privacy()).rebuilt
    assert Reader(tmp_path).search(Query(words=("sheep",))).total == 1
