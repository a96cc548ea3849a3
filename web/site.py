"""What each page shows, as plain data: the web's one reader of the lake. Every page and
its JSON twin (and, later, MCP) answer from these methods, which answer from the
statements of ``storage/queries/web.py`` through the lake's read gateway; privacy
(``privacy:``) is applied in those statements and, for ``hide_io``, here.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from processors.config import Privacy
from storage.queries import bind

_ROOT = str(Path(__file__).resolve().parent.parent)  # where ``python -m storage.rollups`` imports from
BADGE_METRICS = ("success", "runs", "score", "cost", "latency")
WINDOWS = {"24h": 24, "7d": 24 * 7, "30d": 24 * 30, "all": None}
SORTS = {"runs": "runs", "success": "success_rate", "score": "score", "cost": "cost_per_run", "latency": "p50_ms"}
MIN_RUNS_RANKED = 5  # agents with fewer runs are listed, not ranked by a rate
# the lines of /vs/{a}/{b}: (figure, label, which way is better)
COMPARE_LINES = (("runs", "runs", "higher"), ("success_rate", "success rate", "higher"),
                 ("score", "mean judge score", "higher"), ("cost_per_run", "cost per run (USD)", "lower"),
                 ("p50_ms", "latency p50 (ms)", "lower"), ("p95_ms", "latency p95 (ms)", "lower"))


class BadRequest(ValueError):
    """A query parameter that cannot be used; the message names it."""


class NotFound(LookupError):
    """No such agent (or a private one): the message says what was not found."""


def choice(params: Any, name: str, allowed: Any, default: str) -> str:
    """A query parameter that must be one of ``allowed``: else BadRequest naming it."""
    value = params.get(name, default)
    if value not in allowed:
        raise BadRequest(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


class Site:
    """The lake as the web sees it: one gateway, opened by the first request (thread-safe),
    the privacy rules, and the rollups.

    Figures and run lists come from the ``runs`` rollup (storage/rollups.py), which a
    thread of this process folds new lake files into every ``refresh_s`` (one refresher
    per lake: another process holding it — a second web — does it for both). Per-window
    figures of every agent are computed from the rollup once per rollup version, at most
    every ``FIGURES_EVERY_S`` (so a leaderboard, a profile, a badge and an embed show the
    same numbers); run lists per request.
    """

    FIGURES_EVERY_S = 5.0
    CACHE_SIZE = 2048

    def __init__(self, lake_root: str | Path, privacy: Privacy | None = None, *, refresh_s: float = 2.0,
                 figures_every_s: float = FIGURES_EVERY_S) -> None:
        self.lake_root = lake_root
        self.figures_every_s = figures_every_s
        self.privacy = privacy or Privacy()
        self.refresh_s = refresh_s
        self._opened: list[Any] = []
        self._opening = threading.Lock()
        self._snapshot: tuple[Any, Any] = (None, None)  # (manifest stat, Snapshot)
        self._figures: dict[str, dict[str, Any]] = {}  # window -> version, at, as_of, agents
        self._figuring = threading.Lock()
        self._refresher: threading.Thread | None = None
        self.refresh_errors = 0
        self._cache: OrderedDict[tuple[Any, ...], list[dict[str, Any]]] = OrderedDict()
        self._cache_lock = threading.Lock()
        from storage.queries.tables import table_glob

        self._evals_glob = table_glob(lake_root, "evals")

    # -- rollups --------------------------------------------------------------------------

    def snapshot(self) -> Any:
        """The rollup's files now (built on first use when the lake has none)."""
        import os

        from storage import rollups

        self._start_refresher()
        manifest = Path(self.lake_root, *rollups.FOLDER, rollups.MANIFEST)
        try:
            st = os.stat(manifest)
        except FileNotFoundError:
            st = None
        key = (st.st_mtime_ns, st.st_size, st.st_ino) if st else None
        if key is None or self._snapshot[0] != key:
            # none yet, or of another format: build it now (or wait for whoever does)
            while (snap := rollups.current(self.lake_root)) is None:
                self.refresh()
            self._snapshot = (key, snap)
        return self._snapshot[1]

    @property
    def last_snapshot(self) -> Any:
        """The rollup as the last request saw it (None before any)."""
        return self._snapshot[1]

    def _start_refresher(self) -> None:
        if self._refresher is not None or self.refresh_s <= 0:
            return
        with self._opening:
            if self._refresher is None:
                self._refresher = threading.Thread(target=self._refresh_loop, name="rollups", daemon=True)
                self._refresher.start()

    def refresh(self) -> None:
        """Fold new lake files into the rollup, in a process of its own (DuckDB's memory
        for a big fold goes back to the system with it; this process stays small)."""
        import subprocess
        import sys

        done = subprocess.run([sys.executable, "-m", "storage.rollups", str(self.lake_root)],
                              capture_output=True, text=True, cwd=_ROOT, timeout=3600)
        if done.returncode != 0:
            self.refresh_errors += 1
            raise RuntimeError(f"refreshing the rollups failed: {done.stderr.strip()[-2000:]}")

    def _refresh_loop(self) -> None:
        import time

        from storage import rollups

        while True:
            time.sleep(self.refresh_s)
            try:
                if rollups.pending(self.lake_root):
                    self.refresh()
            except Exception:  # counted; the pages keep the last good rollup
                self.refresh_errors += 1

    def figures(self, window: str) -> dict[str, dict[str, Any]]:
        """Every visible agent's figures over ``window`` (a WINDOWS key), by agent:
        computed once per rollup version and window, at most every ``figures_every_s``."""
        import time

        from storage.queries import web as q

        snap = self.snapshot()
        with self._figuring:
            f = self._figures.get(window)
            if f is None or (f["version"] != snap.version and time.monotonic() - f["at"] >= self.figures_every_s):
                now = dt.datetime.now(dt.timezone.utc)
                hours = WINDOWS[window]
                since = now - dt.timedelta(hours=hours) if hours else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
                rows = {r["agent"]: r for r in self.rows(q.LEADERBOARD, since=since)}
                self._figures[window] = f = {"version": snap.version, "at": time.monotonic(), "as_of": now,
                                             "agents": rows}
            return f["agents"]

    def gateway(self) -> Any:
        from storage.duckdb import open_lake

        with self._opening:
            if not self._opened:
                self._opened.append(open_lake(self.lake_root))
        return self._opened[0]

    def rows(self, sql: str, **more: Any) -> list[dict[str, Any]]:
        """The rows of one statement; only the parameters it references are passed.

        Answers are cached per rollup version (``CACHE_SIZE`` statements, least recently
        used first out): a version changes whenever runs, scores or clusters do
        (storage.rollups.WATCHED), so no answer outlives what it read by more than one
        refresh. Callers copy before changing a row."""
        snap = self.snapshot()
        # a statement about one agent reads only its base file (storage/rollups.py)
        files = snap.params_of(more["agent"]) if isinstance(more.get("agent"), str) else snap.params
        params = {"private_agents": list(self.privacy.private_agents),
                  "private_owners": list(self.privacy.private_owners), **more, **files, "index": snap.index,
                  "evals": self._evals_glob}
        given = bind(sql, params)
        key = (snap.version, sql, repr(sorted(given.items())))
        with self._cache_lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return [dict(r) for r in hit]
        result = self.gateway().query(sql, given, max_rows=None)
        found = [dict(zip(result.columns, r)) for r in result.rows]
        with self._cache_lock:
            self._cache[key] = found
            while len(self._cache) > self.CACHE_SIZE:
                self._cache.popitem(last=False)
        return [dict(r) for r in found]

    def io_hidden(self, agent: str, owner: str | None = None) -> bool:
        return agent in self.privacy.hide_io_agents or (owner is not None and owner in self.privacy.hide_io_owners)

    # -- agents -----------------------------------------------------------------------------

    def leaderboard(self, params: Any) -> dict[str, Any]:
        window = choice(params, "window", WINDOWS, "7d")
        sort = choice(params, "sort", SORTS, "runs")
        agents = [dict(a) for a in self.figures(window).values()]
        key = SORTS[sort]
        ranked = [a for a in agents if sort == "runs" or (a["runs"] >= MIN_RUNS_RANKED and a[key] is not None)]
        ranked.sort(key=lambda a: (a[key] if sort not in ("cost", "latency") else -a[key], a["agent"]), reverse=True)
        unranked = sorted((a for a in agents if a not in ranked), key=lambda a: a["agent"])
        return {"window": window, "sort": sort, "min_runs_ranked": MIN_RUNS_RANKED, "agents": ranked,
                "unranked": unranked, "as_of": self._figures[window]["as_of"]}

    def agent(self, name: str) -> dict[str, Any]:
        from storage.queries import web as q

        figures = self.figures("all").get(name)
        if figures is None:
            raise NotFound(f"no agent named {name!r}")
        found = [dict(figures)]
        recent = self.rows(q.RECENT_RUNS, agent=name, limit=20)
        for r in recent:
            if self.io_hidden(name, r.pop("owner")):
                r["input"] = r["output"] = None
        clusters = self.rows(q.CLUSTERS, agent=name)
        hidden = self.io_hidden(name)
        if hidden:  # descriptions and terms quote the failures
            for c in clusters:
                c["description"], c["top_terms"] = None, []
        return {"agent": found[0], "recent_runs": recent, "clusters": clusters, "io_hidden": hidden}

    def insights(self, name: str) -> dict[str, Any]:
        data = self.agent(name)
        return {"agent": data["agent"]["agent"], "clusters": data["clusters"]}

    def run(self, trace_id: str) -> dict[str, Any]:
        from storage.queries import web as q

        from storage.queries.rollups import TRACE_AGENT

        of = self.rows(TRACE_AGENT, trace_id=trace_id)
        found = self.rows(q.RUN, trace_id=trace_id, agent=of[0]["agent"]) if of else []
        if not found:
            raise NotFound(f"no agent run with trace id {trace_id!r}")
        run = found[0]
        hidden = self.io_hidden(run["agent"], run.pop("owner"))
        run.pop("date")
        margin = dt.timedelta(hours=1)
        until = run["start_time"] + dt.timedelta(milliseconds=run["duration_ms"] or 0) + margin
        spans = self.rows(q.RUN_SPANS, trace_id=trace_id, since=run["start_time"] - margin, until=until)
        evals = self.rows(q.RUN_EVAL, trace_id=trace_id)
        if hidden:
            run["input"] = run["output"] = None
            for s in spans:
                s["input_messages"] = s["output_messages"] = s["attributes"] = None
            for e in evals:  # the reasoning quotes the run
                e["reasoning"] = None
        start = min((s["start_time"] for s in spans), default=None)
        total = max((s["duration_ms"] or 0) + (s["start_time"] - start).total_seconds() * 1000
                    for s in spans) if spans else 0
        for s in spans:
            s["offset_ms"] = (s["start_time"] - start).total_seconds() * 1000
        return {"run": run, "spans": spans, "total_ms": total or 1.0, "eval": evals[0] if evals else None,
                "cluster": (self.rows(q.RUN_CLUSTER, trace_id=trace_id) or [None])[0], "io_hidden": hidden}

    def compare(self, a_name: str, b_name: str) -> dict[str, Any]:
        a, b = self.agent(a_name), self.agent(b_name)
        lines = []
        for key, label, better in COMPARE_LINES:
            va, vb = a["agent"][key], b["agent"][key]
            winner = None
            if va is not None and vb is not None and va != vb:
                winner = "a" if (va > vb) == (better == "higher") else "b"
            lines.append({"figure": key, "label": label, "a": va, "b": vb, "better": better, "winner": winner})
        return {"a": a["agent"], "b": b["agent"], "lines": lines,
                "clusters": {"a": a["clusters"], "b": b["clusters"]}}
