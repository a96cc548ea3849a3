"""``/vs/{a}/{b}`` (and ``/api/vs/{a}/{b}``): two agents' figures side by side
(self-reported telemetry), or two models' standing runs (benchmark evidence), with a
winner on each line where one can be said."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_to_bytes

from otelbench.storage.queries import web_models as q
from otelbench.web.errors import BadRequest, NotFound, choice
from otelbench.web.pages import EVIDENCE, TELEMETRY, models
from otelbench.web.pages.agent import agent
from otelbench.web.site import Site

KINDS = ("auto", "agents", "models")
# the lines for two agents: (figure, label, which way is better)
AGENT_LINES = (("runs", "runs", "higher"), ("success_rate", "success rate", "higher"),
               ("score", "mean judge score", "higher"), ("cost_per_run", "cost per run (USD)", "lower"),
               ("p50_ms", "latency p50 (ms)", "lower"), ("p95_ms", "latency p95 (ms)", "lower"))
# the lines for two models: (figure, label, which way is better, what must agree for a
# winner: the machine for speed, the suite version and --quick for scores)
MODEL_LINES = (
    ("decode_tps_median", "decode tok/s (medium-200, median)", "higher", "machine"),
    ("ttft_ms_median", "time to first token, ms (medium-200, median)", "lower", "machine"),
    ("prefill_tps_median", "prefill tok/s (prefill-2k, median)", "higher", "machine"),
    ("ability_score", "ability (share of tests passed)", "higher", "suite"),
    ("agent_fitness_score", "agent fitness (share of tests passed)", "higher", "suite"),
    ("tests_passed", "tests passed", "higher", "suite"),
)


def vs_names(raw_path: bytes) -> tuple[str, str]:
    """The two names of ``/vs/{a}/{b}`` (or ``/api/vs/…``) from the raw, still %-encoded
    path: a name holding a '/' is written ``%2F``, which the decoded path cannot tell apart."""
    parts = raw_path.split(b"/vs/", 1)[1].split(b"/")
    if len(parts) != 2 or not all(parts):
        raise BadRequest("/vs/{a}/{b} takes two names; write a '/' inside a name as %2F")
    a, b = (unquote_to_bytes(p).decode("utf-8", "replace") for p in parts)
    return a, b


def versus(site: Site, a: str, b: str, params: Any) -> dict[str, Any]:
    """``kind=agents|models``, or (auto, the default) two agents if both names are agents,
    else two models if both are models."""
    kind = choice(params, "kind", KINDS, "auto")
    if kind != "models":
        try:
            return {"kind": "agents", "evidence": TELEMETRY, **agents(site, a, b)}
        except NotFound:
            if kind == "agents":
                raise
    try:
        return two_models(site, a, b)
    except NotFound:
        if kind == "models":
            raise
        raise NotFound(f"no two agents and no two models named {a!r} and {b!r}") from None


def _winner(va: Any, vb: Any, better: str) -> str | None:
    if va is None or vb is None or va == vb:
        return None
    return "a" if (va > vb) == (better == "higher") else "b"


def score_winner(a: dict[str, Any], b: dict[str, Any]) -> tuple[str | None, str | None]:
    """The agent with the higher mean judge score, only where the two 95 % intervals do not
    overlap (web/intervals.py), and why there is none otherwise."""
    if a.get("score_low") is None or b.get("score_low") is None:
        return None, "fewer than two judged runs on a side: no interval, no winner"
    if a["score_low"] > b["score_high"]:
        return "a", None
    if b["score_low"] > a["score_high"]:
        return "b", None
    return None, "the 95 % intervals overlap: no winner"


def agents(site: Site, a_name: str, b_name: str) -> dict[str, Any]:
    """Two agents' figures over all their runs, and their failure clusters. The judge score
    has a winner only where its intervals do not overlap (score_winner)."""
    a, b = agent(site, a_name, recent=False), agent(site, b_name, recent=False)
    lines = [{"figure": key, "label": label, "a": a["agent"][key], "b": b["agent"][key], "better": better,
              "winner": _winner(a["agent"][key], b["agent"][key], better), "note": None}
             for key, label, better in AGENT_LINES]
    for line in lines:
        if line["figure"] == "score" and line["winner"] is not None:
            line["winner"], line["note"] = score_winner(a["agent"], b["agent"])
    return {"a": a["agent"], "b": b["agent"], "lines": lines, "clusters": {"a": a["clusters"], "b": b["clusters"]}}


def _standing(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Of runs newest first: the latest full run, else the latest --quick one."""
    return next((r for r in runs if not r["quick"]), runs[0])


def pair(runs_a: list[dict[str, Any]], runs_b: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two runs to set side by side: on a machine both models ran on (of several, the
    one with the latest such pair), else each model's standing run wherever it ran."""
    common = {r["machine"] for r in runs_a} & {r["machine"] for r in runs_b} - {None}
    pairs = [(_standing([r for r in runs_a if r["machine"] == m]), _standing([r for r in runs_b if r["machine"] == m]))
             for m in common]
    if pairs:
        return max(pairs, key=lambda p: (max(p[0]["start_time"], p[1]["start_time"]), p[0]["machine"]))
    return _standing(runs_a), _standing(runs_b)


def two_models(site: Site, a_name: str, b_name: str) -> dict[str, Any]:
    """Two models' runs side by side; a winner only where the figures are comparable."""
    a, b = pair(models.model_runs(site, a_name), models.model_runs(site, b_name))
    comparable = {"machine": a["machine"] is not None and a["machine"] == b["machine"],
                  "suite": (a["suite_version"], a["quick"]) == (b["suite_version"], b["quick"])}
    notes = []
    if not comparable["machine"]:
        notes.append("the speed figures come from different (or unrecorded) machines: no winner on speed")
    if not comparable["suite"]:
        notes.append("the scores come from different suite versions or test sets (--quick): no winner on scores")
    lines = [{"figure": key, "label": label, "a": a[key], "b": b[key], "better": better,
              "winner": _winner(a[key], b[key], better) if comparable[needs] else None}
             for key, label, better, needs in MODEL_LINES]
    verdicts: dict[str, dict[str, Any]] = {}
    if a["suite_version"] == b["suite_version"]:
        side = {a["trace_id"]: "a", b["trace_id"]: "b"}
        for v in site.rows(q.VERDICTS, trace_ids=list(side)):
            verdicts.setdefault(v["test"], {"test": v["test"], "category": v["category"], "a": None, "b": None})
            verdicts[v["test"]][side[v["trace_id"]]] = v["verdict"]
    return {"kind": "models", "evidence": EVIDENCE, "a": a, "b": b, "lines": lines, "notes": notes,
            "tests": list(verdicts.values())}
