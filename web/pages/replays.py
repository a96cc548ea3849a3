"""``/replays`` and ``/replays/{replay_id}`` (and their ``/api/...`` twins, and MCP's
``get_replays``): what ``otelbench replay`` found (docs/replay.md), read from the
``replay_runs`` view by ``storage/queries/web_replay.py``, where privacy is applied.

The list gives, per replay and agent, the share of runs whose behaviour matches the
recording, the share at least as good, the share of calls with the same tool calls, and
TTFT, model time and output tokens on each side with their ratio. A replay's page puts
each recorded run (its task and final answer, from the runs rollup) beside the
candidate's answer, most divergent first, each linked to ``/runs/{trace_id}``. Texts are
withheld where the agent, the replay's sender or the recorded run's owner is ``hide_io``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from otelbench.storage.queries import web_replay as q
from otelbench.web.errors import NotFound
from otelbench.web.pages import EVIDENCE, TEXT_CHARS
from otelbench.web.site import Site

LABEL = "benchmark evidence — recorded calls sent again to a candidate model (open loop), not production telemetry"
TEXTS = ("candidate_answer", "recorded_input", "recorded_output", "errors")  # withheld for hide_io


def _rows(site: Site, sql: str, **params: Any) -> list[dict[str, Any]]:
    """``sql``'s rows, none asked for when the lake holds no replayed run (HAS_REPLAYS)."""
    return site.rows(sql, **params) if site.rows(q.HAS_REPLAYS) else []


def replay_url(replay_id: str) -> str:
    return f"/replays/{quote(replay_id, safe='')}"


def _line(r: dict[str, Any], profiles: Any) -> dict[str, Any]:
    return {**r, "url": replay_url(r["replay_id"]),
            "agent_url": f"/agents/{quote(r['agent'], safe='')}" if r["agent"] in profiles else None}


def listing(site: Site, agent: str = "") -> dict[str, Any]:
    """Every visible replay, newest first, one line per replay and agent (only ``agent``'s
    when named)."""
    profiles = site.figures("all")
    lines = [_line(r, profiles) for r in _rows(site, q.REPLAYS) if not agent or r["agent"] == agent]
    return {"evidence": EVIDENCE, "label": LABEL, "agent": agent or None, "replays": lines}


def replay(site: Site, replay_id: str) -> dict[str, Any]:
    """One replay: its lines (per agent) and every replayed run beside its recording, most
    divergent first. NotFound when no visible run of it exists."""
    runs = _rows(site, q.REPLAY_RUNS, replay_id=replay_id, chars=TEXT_CHARS)
    if not runs:
        raise NotFound(f"no replay with id {replay_id!r}")
    profiles = site.figures("all")
    for r in runs:
        owners = (r.pop("owner"), r.pop("recorded_owner"))
        r["io_hidden"] = any(site.io_hidden(r["agent"], o) for o in owners)
        if r["io_hidden"]:
            for f in TEXTS:
                r[f] = None
            r["candidate_answer_chars"] = None
        r["candidate_answer_truncated"] = (r["candidate_answer_chars"] or 0) > TEXT_CHARS
        r["link"] = f"/runs/{r['trace_id']}"
        r["agent_url"] = f"/agents/{quote(r['agent'], safe='')}" if r["agent"] in profiles else None
    lines = [_line(r, profiles) for r in _rows(site, q.REPLAYS) if r["replay_id"] == replay_id]
    return {"evidence": EVIDENCE, "label": LABEL, "replay_id": replay_id, "candidate": runs[0]["candidate"],
            "started": min(r["start_time"] for r in runs), "text_chars": TEXT_CHARS, "summaries": lines,
            "runs": runs}
