"""Agent suites in the web UI, as plain data: the "Agent suites" of ``/benchmarks``,
``/benchmarks/{suite}`` for an agent suite, and an agent profile's "Benchmark evidence".
Every figure is a ``suite_runs`` row (docs/schema.md) read by
``storage/queries/web_suites.py`` through ``Site.suite_runs`` (privacy applied there);
this module only picks, ranks and groups rows, and withholds a ``hide_io`` agent's texts.

What ``otelbench suite run`` measured is benchmark evidence — fixed tasks, not production
telemetry — and is labelled so on every page and answer; no figure mixes it with the
agents' own telemetry, and results of two suite versions are never put together.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import quote

from otelbench.storage.queries import web_suites as q
from otelbench.web.errors import NotFound
from otelbench.web.pages import EVIDENCE, TEXT_CHARS
from otelbench.web.site import Site

LABEL = "benchmark evidence — fixed tasks, not production telemetry"
# what a run's line shows (its owner is used for privacy, never shown)
RUN_FIGURES = ("run_id", "suite", "suite_version", "agent", "start_time", "duration_ms", "status", "partial",
               "standing", "repeats", "cases", "trials", "passed", "failed", "errors", "timed_out", "pass_rate",
               "pass_rate_low", "pass_rate_high", "cost_usd", "cost_per_case_usd", "latency_p50_ms",
               "latency_p95_ms", "agent_runs")
TEXTS = ("input", "output", "stderr", "reason")  # a case's texts: withheld for a hide_io agent


def runs(site: Site) -> list[dict[str, Any]]:
    """Every suite run ``site``'s reader may see, newest first per version and agent, kept
    per rollup version (``Site.suite_runs``). Shared: callers copy what they change."""
    return site.suite_runs()


def declared(suite_version: str) -> str:
    """``chores-v1+3f2a9c1e`` → ``chores-v1``: the version the suite declares, without its
    content hash."""
    return suite_version.split("+", 1)[0]


def suite_url(suite_version: str) -> str:
    return f"/benchmarks/{quote(suite_version, safe='')}"


def _line(run: dict[str, Any], profiles: Any) -> dict[str, Any]:
    """A run as pages and answers show it: its figures, a link to its suite version and to
    its agent's profile (None: the agent sent no telemetry of its own, so has none)."""
    return {**{k: run[k] for k in RUN_FIGURES}, "url": suite_url(run["suite_version"]),
            "agent_url": f"/agents/{quote(run['agent'], safe='')}" if run["agent"] in profiles else None}


def _ranked(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """By pass rate, then the lower end of its interval, then name; unscored runs last."""
    return sorted(lines, key=lambda r: (r["pass_rate"] is None, -(r["pass_rate"] or 0), -(r["pass_rate_low"] or 0),
                                        r["agent"]))


def _versions(site: Site, wanted: Any = None) -> list[dict[str, Any]]:
    """Each suite version (those ``wanted`` accepts) with every visible run of it
    (``runs``: newest first) and the run that stands for each agent (``agents``, ranked)."""
    profiles = site.figures("all")
    by_version: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in runs(site):
        if wanted is None or wanted(r):
            by_version[r["suite_version"]].append(_line(r, profiles))
    out = []
    for version, lines in sorted(by_version.items(), key=lambda v: (v[1][0]["suite"], v[0])):
        out.append({"suite": lines[0]["suite"], "suite_version": version, "declared": declared(version),
                    "url": suite_url(version), "agents": _ranked([r for r in lines if r["standing"]]),
                    "runs": sorted(lines, key=lambda r: (r["start_time"], r["run_id"]), reverse=True)})
    return out


def listing(site: Site) -> dict[str, Any]:
    """``/benchmarks``' agent suites: per suite version, each agent's latest complete run of
    the whole suite (figures only, no texts: the same for ``list_benchmarks``)."""
    suites = [{**{k: v[k] for k in ("suite", "suite_version", "declared", "url", "agents")}, "runs": len(v["runs"])}
              for v in _versions(site)]
    return {"evidence": EVIDENCE, "label": LABEL, "suites": suites}


def for_agent(site: Site, name: str) -> dict[str, Any]:
    """An agent profile's benchmark evidence: its standing run on every suite version."""
    results = [r for v in _versions(site, lambda r: r["agent"] == name) for r in v["agents"]]
    return {"evidence": EVIDENCE, "label": LABEL, "results": results}


def page(site: Site, key: str) -> dict[str, Any]:
    """``/benchmarks/{key}`` for an agent suite: ``key`` is its name (every version), a
    declared version (``chores-v1``: every content hash of it) or a full version. Each
    version apart: its runs, and for each agent the cases of the run that stands for it
    (else of its latest run). NotFound when no visible run matches."""
    versions = _versions(site, lambda r: key in (r["suite"], r["suite_version"], declared(r["suite_version"])))
    if not versions:
        raise NotFound(f"no benchmark suite named {key!r}")
    shown = {}
    for v in versions:
        latest: dict[str, dict[str, Any]] = {}
        for r in v["runs"]:  # newest first: an agent's first run here is its latest
            latest.setdefault(r["agent"], r)
        standing = {r["agent"]: r for r in v["agents"]}
        v["tables"] = [standing.get(agent, run) for agent, run in sorted(latest.items())]
        shown.update((r["run_id"], r) for r in v["tables"])
    owners = {r["run_id"]: r["owner"] for r in runs(site)}
    trials: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in site.rows(q.CASES, run_ids=sorted(shown), chars=TEXT_CHARS):
        trials[t.pop("run_id")].append(t)
    for v in versions:
        v["tables"] = [_table(r, trials[r["run_id"]], site.io_hidden(r["agent"], owners[r["run_id"]]))
                       for r in v["tables"]]
    return {"evidence": EVIDENCE, "label": LABEL, "kind": "agent", "suite": key, "name": versions[0]["suite"],
            "text_chars": TEXT_CHARS, "versions": versions}


def _table(run: dict[str, Any], trials: list[dict[str, Any]], hidden: bool) -> dict[str, Any]:
    """One run's cases: per case its checker, passes of its repeats, the last repeat's
    reason, and every repeat's evidence (texts withheld when ``hidden``). A case trace is
    the runner's, not an agent run, so ``/runs/{trace_id}`` has no page for it: the
    evidence is here."""
    cases: dict[str, dict[str, Any]] = {}
    for t in trials:  # by repeat, then start: a case's first row is its first repeat
        t.pop("owner")
        for f in TEXTS:
            if hidden:
                t[f] = t[f"{f}_chars"] = None
            t[f"{f}_truncated"] = (t[f"{f}_chars"] or 0) > TEXT_CHARS
        c = cases.setdefault(t["case_id"], {"case_id": t["case_id"], "checker": t["checker"], "passed": 0,
                                            "errors": 0, "repeats": 0, "input": t["input"],
                                            "input_chars": t["input_chars"], "trials": []})
        c["passed"] += t["verdict"] == "pass"
        c["errors"] += t["verdict"] == "error"
        c["repeats"] += 1
        c["trials"].append({k: v for k, v in t.items() if not k.startswith("input")})
    for c in cases.values():
        last = max(c["trials"], key=lambda t: t["repeat"] or 0)
        c["last_reason"], c["last_reason_truncated"] = last["reason"], last["reason_truncated"]
        c["last_reason_chars"] = last["reason_chars"]
        c["input_truncated"] = (c["input_chars"] or 0) > TEXT_CHARS
    return {"run": {k: run[k] for k in (*RUN_FIGURES, "url", "agent_url")}, "io_hidden": hidden,
            "cases": list(cases.values())}
