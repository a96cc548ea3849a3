"""The lake as the web sees it, shared by every page: one read gateway, the rollups and
their refresher, the answers cached per rollup version, and the reader's privacy.

The pages themselves are functions over a ``Site`` (web/pages/): each reads through
``rows`` the statements of ``storage/queries/``, where privacy (``privacy:``) is applied,
and withholds ``hide_io`` texts itself (``io_hidden``). ``viewing`` gives the same site as
another reader (a read key, a signed link: web/access.py) sees it.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from otelbench.storage import conventions, is_remote, rollups, run_search, search_index
from otelbench.storage.duckdb import open_lake
from otelbench.storage.privacy import Privacy
from otelbench.storage.process import ROOT
from otelbench.storage.queries import bind
from otelbench.storage.queries import web as q
from otelbench.storage.queries import web_suites
from otelbench.storage.queries.tables import table_glob
from otelbench.web import every_agent
from otelbench.web.intervals import with_score_interval

# what ``refresh`` runs, each in a process of its own: the runs rollup, the conventions rollup,
# then the run search index over the runs rollup (INDEX_MODULE)
ROLLUP_MODULES = ("otelbench.storage.rollups", "otelbench.storage.conventions")
INDEX_MODULE = "otelbench.storage.search_index"
WINDOWS = {"24h": 24, "7d": 24 * 7, "30d": 24 * 30, "all": None}


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
        # absolute: the rollups are folded by a process started in the package's folder
        # (refresh), which would read a relative path as another lake
        self.lake_root = lake_root if is_remote(lake_root) else str(Path(lake_root).absolute())
        self.figures_every_s = figures_every_s
        self.privacy = privacy or Privacy()
        # the rules the search index is made under (the config's: a read key's view is not
        # the index's): a hide_io run's text is never indexed
        self.index_privacy = self.privacy
        self.runs_index = run_search.Reader(self.lake_root)
        self.refresh_s = refresh_s
        self._opened: list[Any] = []
        self._opening = threading.Lock()
        self._refreshing = threading.Lock()  # one fold at a time from this process
        self._stopping = threading.Event()
        self._viewers: dict[Privacy, Site] = {}  # by privacy: what read keys see (``viewing``)
        self._snapshot: tuple[Any, Any] = (None, None)  # (manifest stat, Snapshot)
        self._computed: dict[str, dict[str, Any]] = {}  # name -> version, at, as_of, value
        self._computing: dict[str, threading.Lock] = {}
        self._refresher: threading.Thread | None = None
        self.refresh_errors = 0
        self._cache: OrderedDict[tuple[Any, ...], list[dict[str, Any]]] = OrderedDict()
        self._cache_lock = threading.Lock()
        # the derived tables' files, for statements that narrow them to one run
        self._globs = {"evals_files": table_glob(self.lake_root, "evals")}

    # -- rollups --------------------------------------------------------------------------

    def snapshot(self) -> Any:
        """The rollup's files now (built on first use when the lake has none)."""
        self._start_refresher()
        key = rollups.stamp(self.lake_root)
        if key is None or self._snapshot[0] != key:
            # none yet, or of another format: build it now (or wait for whoever does)
            with self._refreshing:  # the refresher thread's fold, if one runs, ends first
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
        """Fold new lake files into the rollups, then bring the run search index up to the
        runs rollup, each in a process of its own (DuckDB's memory for a big fold goes back
        to the system with it; this process stays small)."""
        for module in ROLLUP_MODULES:
            self._run(module, str(self.lake_root))
        try:  # the pages read the rollups; only search needs the index (it retries when asked)
            self._index_if_behind()
        except RuntimeError as exc:
            logging.getLogger(__name__).warning("%s", exc)

    def index_runs(self) -> None:
        """Bring the run search index up to the runs rollup (storage/search_index.py)."""
        self._run(INDEX_MODULE, str(self.lake_root), self.index_privacy.model_dump_json())

    def _index_if_behind(self) -> None:
        """``index_runs``, only when the index is behind the rollup (two small files read):
        a fold that changed only the conventions rollup starts no process for it."""
        if search_index.pending(self.lake_root, self.index_privacy):
            self.index_runs()

    def _run(self, module: str, *args: str) -> None:
        done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT,
                              timeout=3600)
        if done.returncode != 0:
            self.refresh_errors += 1
            raise RuntimeError(f"refreshing {module} failed: {done.stderr.strip()[-2000:]}")

    def search_runs(self, query: run_search.Query) -> run_search.Found:
        """Runs as the search index has them (storage/run_search.py; ``query`` carries this
        reader's privacy). The refresher keeps the index within one refresh of the rollup;
        a lake never indexed is indexed now (the request waits, as for a first rollup)."""
        self.snapshot()
        if self.runs_index.current() is None:
            with self._refreshing:
                if self.runs_index.current() is None:
                    self.index_runs()
        return self.runs_index.search(query)

    def cluster_runs(self, agent: str, cluster_id: int) -> list[str]:
        """The trace ids of one failure cluster's runs that this reader may see."""
        import pyarrow.compute as pc

        members = self._clusters()["members"]
        mask = pc.and_(pc.equal(members["agent"], agent), pc.equal(members["cluster_id"], cluster_id))
        return members.filter(mask)["trace_id"].to_pylist()

    def _refresh_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                with self._refreshing:
                    if rollups.pending(self.lake_root) or conventions.pending(self.lake_root):
                        self.refresh()
                    else:
                        self._index_if_behind()
                self.warm()  # the new version's figures, before a request asks for them
            except Exception:  # counted; the pages keep the last good rollup
                self.refresh_errors += 1
            self._stopping.wait(self.refresh_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the refresher (letting a computation it is in finish: a thread killed inside
        DuckDB at exit aborts the process) and close the gateway."""
        self._stopping.set()
        if self._refresher is not None:
            self._refresher.join(timeout_s)
        with self._opening:
            for gateway in self._opened:
                gateway.close()
            self._opened.clear()

    def per_version(self, name: str, compute: Any) -> dict[str, Any]:
        """``compute(as_of)``'s value, computed once per rollup version, at most every
        ``figures_every_s`` (and kept until then): ``{"value", "as_of", "version", "at", "compute"}``.
        Each name has its own lock, so a long computation holds up only its own readers."""
        snap = self.snapshot()
        with self._opening:
            lock = self._computing.setdefault(name, threading.Lock())
        with lock:
            f = self._computed.get(name)
            if f is None or (f["version"] != snap.version and time.monotonic() - f["at"] >= self.figures_every_s):
                now = dt.datetime.now(dt.timezone.utc)
                self._computed[name] = f = {"version": snap.version, "at": time.monotonic(), "as_of": now,
                                            "value": compute(now), "compute": compute}
            return f

    def figures(self, window: str) -> dict[str, dict[str, Any]]:
        """Every visible agent's figures over ``window`` (a WINDOWS key), by agent."""
        return self._figures_of(window)["value"]

    def figures_as_of(self, window: str) -> dt.datetime:
        """When the figures ``figures(window)`` gives were computed."""
        return self._figures_of(window)["as_of"]

    def _figures_of(self, window: str) -> dict[str, Any]:
        return self.per_version(f"figures {window}", lambda now: self._figures(window, now))

    def _figures(self, window: str, now: dt.datetime) -> dict[str, dict[str, Any]]:
        hours = WINDOWS[window]
        since = now - dt.timedelta(hours=hours) if hours else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return {r["agent"]: with_score_interval(r) for r in self.rows(q.LEADERBOARD, since=since)}

    def agent_series(self, name: str) -> dict[str, Any]:
        """One agent's runs and failed runs per hour (``hours``: (hour, runs, failures)), runs
        per latency bucket (``latency``: bucket -> runs) and cost rows per source
        (``cost``, for web.cost.agent_cost), from every agent's (web/every_agent.py)."""
        return self.cached(("series", name), lambda: every_agent.series_of(self._series(), name))

    def agent_clusters(self, name: str) -> dict[str, list[dict[str, Any]]]:
        """One agent's failure clusters (``clusters``, biggest first), their clustered runs
        per cluster and hour (``trends``) and the example runs that may be shown
        (``examples``), from every agent's (web/every_agent.py)."""
        found = self._clusters()
        return {part: found[part].dicts(name) for part in ("clusters", "trends", "examples")}

    def run_cluster(self, trace_id: str) -> dict[str, Any] | None:
        """The failure cluster a run is in (``cluster_id``, ``description``), or None."""
        return every_agent.cluster_of(self._clusters(), trace_id)

    def _series(self) -> dict[str, Any]:
        return self.per_version("series", lambda now: every_agent.series(self.arrow))["value"]

    def _clusters(self) -> dict[str, Any]:
        return self.per_version("clusters", lambda now: every_agent.clusters(self.arrow))["value"]

    def warm(self) -> None:
        """Compute what every page shares (figures of each window, series, clusters, the
        agent suites' runs) for the current rollup version, so that requests find it ready."""
        for window in ("7d", "all", *WINDOWS):  # the leaderboard's default and the profiles' first
            self.figures(window)
        self._series()
        self._clusters()
        self.suite_runs()

    def suite_runs(self) -> list[dict[str, Any]]:
        """Every agent suite run (benchmark evidence) this reader may see, newest first per
        version and agent (web/pages/suites.py groups them).

        ``suite_runs`` joins every span by trace id (the agents' own calls, for the cost), so
        its answer is kept like the agents' figures: computed once per rollup version, at
        most every ``figures_every_s``, by the refresher right after a fold (``warm``).
        Shared: callers copy what they change."""
        def read(now: dt.datetime) -> list[dict[str, Any]]:
            return self.rows(web_suites.SUITE_RUNS) if self.rows(web_suites.HAS_SUITES) else []

        return self.per_version("suite runs", read)["value"]

    def gateway(self) -> Any:
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
        snap, given = self._bind(sql, more)

        def run() -> list[dict[str, Any]]:
            result = self.gateway().query(sql, given, max_rows=None)
            return [dict(zip(result.columns, r)) for r in result.rows]

        return [dict(r) for r in self.cached((sql, repr(sorted(given.items()))), run, snap.version)]

    def lake_rows(self, sql: str, **more: Any) -> list[dict[str, Any]]:
        """The rows of one statement as the lake is now, not cached: what the rollup does not
        know yet (a run that came in after its last fold) is answered from the lake until it
        does, and an answer kept per rollup version would outlive the lake's next files."""
        result = self.gateway().query(sql, self._bind(sql, more)[1], max_rows=None)
        return [dict(zip(result.columns, r)) for r in result.rows]

    def cached(self, key: tuple[Any, ...], compute: Any, version: Any = None) -> Any:
        """``compute()``, kept under ``key`` with the statements' answers (``rows``): what a
        page derives from them and from what ``per_version`` keeps, such as a profile. Kept
        for ``version``, by default ``version_key()``. The value is shared: callers must not
        change it."""
        version = self.version_key() if version is None else version
        full = (version, self.privacy, *key)  # what one reader may see is not another's
        with self._cache_lock:
            if full in self._cache:
                self._cache.move_to_end(full)
                return self._cache[full]
        value = compute()
        with self._cache_lock:
            self._cache[full] = value
            while len(self._cache) > self.CACHE_SIZE:
                self._cache.popitem(last=False)
        return value

    def viewing(self, privacy: Privacy) -> Site:
        """This site as a reader under ``privacy`` sees it (web/access.py: a read key's
        grants): the same rollups, gateway and answer cache (whose keys hold the privacy
        rules), figures of its own computed when first asked for. One per distinct privacy."""
        if privacy == self.privacy:
            return self
        with self._opening:
            found = self._viewers.get(privacy)
            if found is None:
                found = copy.copy(self)  # shallow: the locks, gateway, cache and viewers are shared
                found.privacy, found.refresh_s = privacy, 0.0  # this site's refresher folds for all
                found._computed, found._computing = {}, {}
                self._viewers[privacy] = found
            return found

    def version_key(self) -> tuple[Any, ...]:
        """The rollup version and the version each ``per_version`` value was computed from:
        an answer derived from both is stale when either moves (figures may lag the rollup
        by up to ``figures_every_s``, and must not be kept as the newer version's)."""
        for name, f in list(self._computed.items()):  # due ones computed anew first, or a key
            self.per_version(name, f["compute"])       # made from stale ones would be kept forever
        return (self.snapshot().version, *sorted((n, f["version"]) for n, f in list(self._computed.items())))

    def arrow(self, sql: str, **more: Any) -> Any:
        """The result of one statement as an Arrow table (not cached: for ``per_version``)."""
        return self.gateway().arrow(sql, self._bind(sql, more)[1], max_rows=None).table

    def _bind(self, sql: str, more: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The rollup snapshot and the parameters ``sql`` references: the privacy rules, the
        rollup's and the derived tables' files, and ``more``."""
        snap = self.snapshot()
        # a statement about one agent reads only its base file (storage/rollups.py)
        files = snap.params_of(more["agent"]) if isinstance(more.get("agent"), str) else snap.params
        params = {"private_agents": list(self.privacy.private_agents),
                  "private_owners": list(self.privacy.private_owners), **self._globs, **more, **files,
                  "index": snap.index}
        return snap, bind(sql, params)

    def io_hidden(self, agent: str, owner: str | None = None) -> bool:
        return agent in self.privacy.hide_io_agents or (owner is not None and owner in self.privacy.hide_io_owners)
