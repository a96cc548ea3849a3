"""The doctor: what each service's instrumentation sends, and what it leaves out, with the fix.

``report`` turns the conventions aggregates (storage/queries/conventions.py: per scope,
per attribute key, per log scope, and the runs per agent) into one report, pure: per
service, its scopes (the conventions they speak, the semconv version, the share of llm
calls with each GenAI field, the deprecated keys still sent, the keys no mapping reads)
and its runs' shares, each gap a *finding* with the fix from ``web.doctor_fixes``.
``read`` runs the statements (the rollups when built, else the views) for a site
(web/pages/doctor.py) or a plain gateway. docs/doctor.md says how to read it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from typing import Any, Callable

from otelbench.normalize import coverage
from otelbench.storage import conventions as rollup
from otelbench.storage import rollups
from otelbench.storage.queries import bind
from otelbench.storage.queries import conventions as sql
from otelbench.storage.queries.rollups import RUNS_CTE
from otelbench.storage.queries.views import BENCH_SERVICE, JUDGE_SERVICE
from otelbench.web.doctor_fixes import fix

TOP_KEYS = 10  # "not read" keys listed per scope
WINDOW = re.compile(r"^(\d+)([hdw])$")
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}
DEFAULT_WINDOW = "7d"
LABELS = {c.name: c.label for c in coverage.CONVENTIONS}
# otelbench's own traces (the judge's calls, benchmark evidence): not a user's instrumentation
OWN_SERVICES = frozenset({JUDGE_SERVICE, BENCH_SERVICE})

# the llm-call fields whose share the report gives: (name, count column)
CALL_FIELDS = (("request_model", "with_request_model"), ("response_model", "with_response_model"),
               ("tokens", "with_tokens"), ("reported_cost", "with_reported_cost"),
               ("input_messages", "with_input_messages"), ("output_messages", "with_output_messages"),
               ("finish_reasons", "with_finish_reasons"), ("ttft", "with_ttft"))
RUN_FIELDS = ("agent", "input", "output", "tokens", "cost")


class BadWindow(ValueError):
    pass


def since_date(window: str, now: dt.datetime | None = None) -> dt.date:
    """The first UTC day of ``window`` (``24h``, ``7d``, ``2w``; ``all``: every day): the
    aggregates are per day, so a window starts at the start of its first day."""
    if window == "all":
        return dt.date(1970, 1, 1)
    m = WINDOW.match(window)
    if not m:
        raise BadWindow(f"window must be like 24h, 7d, 2w or all, got {window!r}")
    now = now or dt.datetime.now(dt.timezone.utc)
    return (now - dt.timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})).date()


# -- reading -----------------------------------------------------------------------------

def statements(lake_root: Any, *, use_rollups: bool = True) -> tuple[str, dict[str, tuple[str, dict[str, Any]]]]:
    """(source, {name: (statement, its files)}): the rollups' when built (``rollup``),
    else the views' (``lake``: a full scan, for a lake no web server has rolled up yet)."""
    snap = rollup.current(lake_root) if use_rollups else None
    runs = rollups.current(lake_root) if use_rollups else None
    if snap is not None:
        files = snap.params
        out = {"scopes": (sql.SCOPES_ROLLUP_READ, files), "keys": (sql.KEYS_ROLLUP_READ, files),
               "events": (sql.EVENTS_ROLLUP_READ, files)}
    else:
        out = {"scopes": (sql.SCOPES_VIEW_READ, {}), "keys": (sql.KEYS_VIEW_READ, {}),
               "events": (sql.EVENTS_VIEW_READ, {})}
    if runs is not None:
        out["runs"] = (f"WITH {RUNS_CTE} {sql.RUNS_ROLLUP_READ_BODY}", runs.params)
    else:
        out["runs"] = (sql.RUNS_VIEW_READ, {})
    return ("rollup" if snap is not None else "lake"), out


def read(lake_root: Any, rows: Callable[..., list[dict[str, Any]]], window: str, *,
         service: str | None = None, agent: str | None = None, use_rollups: bool = True) -> dict[str, Any]:
    """The report of ``window``; ``rows(statement, **params)`` runs one statement (a site's
    ``rows``, which adds the privacy rules, or ``gateway_rows``). ``use_rollups`` false:
    the views, even where the rollups are built."""
    since = since_date(window)
    source, plan = statements(lake_root, use_rollups=use_rollups)
    got = {name: rows(stmt, **files, since=since, service=service, agent=agent) for name, (stmt, files) in plan.items()}
    return report(got["scopes"], got["keys"], got["events"], got["runs"], since=since, window=window,
                  source=source, agent=agent)


def gateway_rows(gateway: Any) -> Callable[..., list[dict[str, Any]]]:
    """``rows`` over a plain gateway, hiding nothing (the lake's owner: ``otelbench doctor``)."""
    def run(statement: str, **params: Any) -> list[dict[str, Any]]:
        params = {"private_agents": [], "private_owners": [], **params}
        # no time limit: a lake without the rollup is one scan of every span (docs/performance.md)
        result = gateway.query(statement, bind(statement, params), max_rows=None, timeout_s=None)
        return [dict(zip(result.columns, r)) for r in result.rows]
    return run


# -- the report --------------------------------------------------------------------------

def _share(n: int, of: int) -> float | None:
    return round(n / of, 4) if of else None


def _finding(gap: str, scope: str | None, what: str) -> dict[str, Any]:
    return {"gap": gap, "scope": scope, "what": what, "fix": fix(gap, scope)}


def report(scopes: list[dict[str, Any]], keys: list[dict[str, Any]], events: list[dict[str, Any]],
           runs: list[dict[str, Any]], *, since: dt.date, window: str, source: str,
           agent: str | None = None) -> dict[str, Any]:
    """The report (see the module's docstring) of the rows of the four statements."""
    scopes, keys, events = ([r for r in rows if r["service_name"] not in OWN_SERVICES]
                            for rows in (scopes, keys, events))
    by_scope: dict[tuple[Any, ...], dict[str, Any]] = {}
    named: dict[str, bool] = defaultdict(bool)  # agent -> some span (or request) names it
    agents_of: dict[str, set[str]] = defaultdict(set)  # service -> its agents
    for r in scopes:
        k = (r["service_name"], r["scope_name"], r["scope_version"])
        s = by_scope.setdefault(k, defaultdict(int))
        for c, v in r.items():
            if isinstance(v, int) and c not in ("scope_version",):
                s[c] += v
        s.setdefault("agents", set()).add(r["agent"])
        named[r["agent"]] |= bool(r["named_spans"] or r["request_named_spans"])
        agents_of[r["service_name"]].add(r["agent"])
    # keys with their indices as N (a long conversation is one key), carried by as many
    # spans as its most carried index: indexed messages start at 0 and have no holes
    forms: dict[tuple[Any, ...], dict[str, int]] = defaultdict(dict)
    for r in keys:
        seen = forms[(r["service_name"], r["scope_name"], r["scope_version"])]
        form = coverage.key_form(r["key"])
        seen[form] = max(seen.get(form, 0), r["spans"])
    keys_of = {k: sorted(v.items()) for k, v in forms.items()}
    events_of: dict[str, dict[str, int]] = defaultdict(lambda: {"input_spans": 0, "output_spans": 0})
    for r in events:
        for side in ("input_spans", "output_spans"):
            events_of[r["service_name"]][side] += r[side] or 0
    runs_of = {r["agent"]: r for r in runs}

    services = []
    for service in sorted({k[0] for k in by_scope}, key=lambda s: (s is None, s or "")):
        left = dict(events_of.get(service, {"input_spans": 0, "output_spans": 0}))  # log events to hand out
        entries = [_scope(k, by_scope[k], keys_of.get(k, []), left)
                   for k in sorted((k for k in by_scope if k[0] == service), key=lambda k: (str(k[1]), str(k[2])))]
        services.append(_service(service, entries, sorted(agents_of[service]), runs_of, named,
                                 events_of.get(service)))
    return {"window": window, "since": since.isoformat(), "source": source, "agent": agent, "services": services}


def _scope(k: tuple[Any, ...], s: dict[str, Any], keys: list[tuple[str, int]], events: dict[str, int]) -> dict[str, Any]:
    service, name, version = k
    present = {key for key, _ in keys}
    calls = s["llm_calls"]
    counts = {field: s[col] for field, col in CALL_FIELDS}
    # messages the calls sent as log events (openai-v2 & co.), handed to the service's scopes in turn
    for field, side in (("input_messages", "input_spans"), ("output_messages", "output_spans")):
        extra = min(calls - counts[field], events.get(side, 0))
        counts[field] += extra
        events[side] = events.get(side, 0) - extra
    deprecated = [{"key": key, "current": coverage.DEPRECATED[key], "spans": n}
                  for key, n in keys if key in coverage.DEPRECATED]
    unread = [{"key": key, "spans": n} for key, n in sorted(keys, key=lambda kv: (-kv[1], kv[0]))
              if not coverage.is_read(key) and not coverage.is_generic(key)]
    findings = []
    if calls:
        no_in, no_out = calls - counts["input_messages"], calls - counts["output_messages"]
        if no_in or no_out:
            findings.append(_finding("messages", name, f"of {calls} llm calls, {no_in} without their input "
                                                       f"messages, {no_out} without their output messages"))
        for field, gap, what in (("tokens", "tokens", "without token counts"),
                                 ("response_model", "response_model", "without the response's model"),
                                 ("finish_reasons", "finish_reasons", "without finish reasons"),
                                 ("ttft", "ttft", "without a time to first token")):
            missing = calls - counts[field]
            # a call that did not stream has no first token: only none at all is a gap
            if missing and (field != "ttft" or missing == calls):
                findings.append(_finding(gap, name, f"{missing} of {calls} llm calls {what}"))
    no_args, no_result = s["tool_calls"] - s["with_tool_arguments"], s["tool_calls"] - s["with_tool_result"]
    if no_args or no_result:
        findings.append(_finding("tool_io", name, f"of {s['tool_calls']} tool spans, {no_args} without their "
                                                  f"arguments, {no_result} without their result"))
    if s["tool_calls"] and s["with_tool_call_id"] < s["tool_calls"]:
        findings.append(_finding("tool_call_id", name, f"{s['tool_calls'] - s['with_tool_call_id']} of "
                                                       f"{s['tool_calls']} tool spans without the call id"))
    if deprecated:
        findings.append(_finding("deprecated", name, "deprecated GenAI attributes: "
                                 + ", ".join(f"{d['key']} (now {d['current']})" for d in deprecated)))
    return {
        "scope": name, "version": version, "agents": sorted(a for a in s["agents"] if a is not None),
        "spans": s["spans"], "conventions": coverage.conventions(name, present),
        "semconv": coverage.semconv_version(present), "llm_calls": calls,
        "shares": {field: _share(n, calls) for field, n in counts.items()},
        "tool_calls": s["tool_calls"], "tool_call_id_share": _share(s["with_tool_call_id"], s["tool_calls"]),
        "tool_arguments_share": _share(s["with_tool_arguments"], s["tool_calls"]),
        "tool_result_share": _share(s["with_tool_result"], s["tool_calls"]),
        "tool_call_requests": s["tool_call_requests"], "agent_spans": s["agent_spans"],
        "deprecated": deprecated, "unread": unread[:TOP_KEYS], "unread_keys": len(unread), "findings": findings,
    }


def _service(service: str | None, scopes: list[dict[str, Any]], agents: list[str], runs_of: dict[str, Any],
             named: dict[str, bool], events: dict[str, int] | None) -> dict[str, Any]:
    # the scope a service-wide fix is about: the one with most llm calls, else most spans
    main = max(scopes, key=lambda s: (s["llm_calls"], s["spans"]))["scope"] if scopes else None
    runs = [runs_of[a] for a in agents if a in runs_of]
    total = sum(r["runs"] for r in runs)
    counts = {"agent": sum(r["runs"] for r in runs if named.get(r["agent"])),
              "input": sum(r["with_input"] for r in runs), "output": sum(r["with_output"] for r in runs),
              "tokens": sum(r["with_tokens"] for r in runs), "cost": sum(r["with_cost"] for r in runs)}
    findings = []
    if total and counts["agent"] < total:
        findings.append(_finding("agent", main, f"{total - counts['agent']} of {total} runs name no agent "
                                                "(their agent is the service's name)"))
    if total and min(counts["input"], counts["output"]) < total:
        findings.append(_finding("run_io", main, f"of {total} runs, {total - counts['input']} without their input "
                                                 f"(the user's task), {total - counts['output']} without their output"))
    calls = sum(s["llm_calls"] for s in scopes)
    requests = sum(s["tool_call_requests"] for s in scopes)
    if requests and not sum(s["tool_calls"] for s in scopes):
        findings.append(_finding("tools", main, f"{requests} llm calls asked for a tool, and no span is a tool call"))
    if not calls and not any(s["conventions"] for s in scopes):
        findings.append(_finding("instrumentation", None, "no span speaks a GenAI convention"))
    return {"service": service, "agents": agents, "scopes": scopes, "runs": total,
            "run_shares": {f: _share(n, total) for f, n in counts.items()},
            "message_events": events or {"input_spans": 0, "output_spans": 0},
            "findings": findings}
