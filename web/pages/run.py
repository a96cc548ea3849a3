"""``/runs/{trace_id}`` (and ``/api/runs/{trace_id}``): one agent run, its spans on one
time axis, each LLM call with the tool calls it asked for, the judge's verdict and its
failure cluster. A run the rollup has not folded in yet is read from the lake (the
rollup's own rule, the same privacy), so a run in the lake is never a 404. Texts are
withheld for a ``hide_io`` run, for a sub-agent's own ``hide_io`` and for a private
sub-agent's spans (which RUN_SPANS redacts)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from otelbench.storage.labels import model_label
from otelbench.storage.lake import Lake
from otelbench.storage.queries import web as q
from otelbench.storage.queries.rollups import TRACE_AGENT
from otelbench.storage.queries.tables import table_glob
from otelbench.web.errors import NotFound
from otelbench.web.site import Site


def run(site: Site, trace_id: str) -> dict[str, Any]:
    of = site.rows(TRACE_AGENT, trace_id=trace_id)
    if of:  # the rollup's row (none: a private run, or no longer an agent run)
        read = site.rows
        found = site.rows(q.RUN, trace_id=trace_id, agent=of[0]["agent"])
    else:  # a run the rollup does not know yet: from the lake as it is now, nothing kept
        read = site.lake_rows
        found = site.lake_rows(q.RUN_IN_LAKE, trace_id=trace_id, span_files=table_glob(site.lake_root, "spans"),
                               log_files=table_glob(site.lake_root, "logs"))
    if not found:
        raise NotFound(f"no agent run with trace id {trace_id!r}")
    run = found[0]
    hidden = site.io_hidden(run["agent"], run.pop("owner"))
    run.pop("date")
    margin = dt.timedelta(hours=1)
    until = run["start_time"] + dt.timedelta(milliseconds=run["duration_ms"] or 0) + margin
    since = run["start_time"] - margin
    spans = read(q.RUN_SPANS, trace_id=trace_id, since=since, until=until,
                 span_files=_day_globs(site, "spans", since, until))
    evals = read(q.RUN_EVAL, trace_id=trace_id)
    tools = read(q.RUN_TOOL_CALLS, trace_id=trace_id, since=since, until=until,
                 span_files=_day_globs(site, "spans", since, until),
                 log_files=_day_globs(site, "logs", since, until))
    cluster = site.run_cluster(trace_id)
    for e in evals:
        e["judge_model"] = e["judge_model"] and model_label(e["judge_model"])
    if hidden:
        run["input"] = run["output"] = None
        if cluster:  # its description quotes the failures
            cluster["description"] = None
        for e in evals:  # the reasoning quotes the run
            e["reasoning"] = None
    # texts: hidden for the whole run (hide_io), for a sub-agent's own hide_io, and for a
    # private sub-agent's spans (RUN_SPANS redacts them); an error message quotes what
    # failed as much as the messages do
    shown = set()
    for s in spans:
        s["request_model"] = s["request_model"] and model_label(s["request_model"])
        if hidden or s["redacted"] or (s["agent"] != run["agent"] and site.io_hidden(s["agent"])):
            s["input_messages"] = s["output_messages"] = s["attributes"] = s["status_message"] = None
        else:
            shown.add(s["span_id"])
    named = {s["span_id"] for s in spans if not s["redacted"]}
    for t in tools:  # a tool call reads as its span does: what it was given and gave back quotes the run
        if t["span_id"] not in shown:
            t["arguments"] = t["result"] = None
        if t["span_id"] not in named:  # a private sub-agent's (or a span this page does not show)
            t["tool_name"] = t["tool_call_id"] = None
    start = min((s["start_time"] for s in spans), default=None)
    total = max((s["duration_ms"] or 0) + (s["start_time"] - start).total_seconds() * 1000
                for s in spans) if spans else 0
    asked: dict[str, list[dict[str, Any]]] = {}
    llm_spans = {s["span_id"] for s in spans if s["span_type"] == "llm"}
    for t in tools:
        asked.setdefault(t["llm_span_id"] if t["llm_span_id"] in llm_spans else None, []).append(t)
    for s in spans:
        s["offset_ms"] = (s["start_time"] - start).total_seconds() * 1000
        s["tool_calls"] = asked.get(s["span_id"], []) if s["span_id"] in llm_spans else []
    return {"run": run, "spans": spans, "total_ms": total or 1.0, "eval": evals[0] if evals else None,
            "cluster": cluster, "io_hidden": hidden, "unasked_tool_calls": asked.get(None, [])}


def _day_globs(site: Site, table: str, since: dt.datetime, until: dt.datetime) -> list[str]:
    """The globs of ``table``'s files of the UTC days from ``since`` to ``until``."""
    utc = dt.timezone.utc
    first, last = since.astimezone(utc).date(), until.astimezone(utc).date()
    return Lake(site.lake_root).day_globs(table, ((first + dt.timedelta(days=i)).isoformat()
                                                  for i in range((last - first).days + 1)))
