"""What the model and benchmark pages show, as plain data: the leaderboard's models tab,
``/models/{name}``, ``/benchmarks[/{suite}]`` and ``/vs/{a}/{b}`` for two models. Every
figure comes from the statements of ``storage/queries/web_models.py`` through
``Site.rows`` (privacy is applied there); this module only picks, ranks and pairs rows.

Benchmark evidence (what ``otelbench bench`` measured) is labelled as such and never
mixed with the agents' self-reported telemetry (``web.site``) in one number. The agent
suites (``otelbench suite run``) on the same pages are ``web.suites``'.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import unquote_to_bytes

from web.site import BadRequest, NotFound, Site, choice

EVIDENCE = "benchmark evidence"
TELEMETRY = "self-reported telemetry"
LEADERBOARD_TABS = ("agents", "models")
VS_KINDS = ("auto", "agents", "models")
# Of a reply, reason or error, the characters shown (the runner keeps 4,000 of a reply);
# the full length comes beside, so a page can say what it left out.
TEXT_CHARS = 1000
CONFIDENCE_RANK = {"LOW": 0, "MEDIUM": 1, "HIGH": 2}
# sort → (figure, which way is better); "confidence" ranks HIGH over MEDIUM over LOW
MODEL_SORTS = {"decode": ("decode_tps_median", "higher"), "ttft": ("ttft_ms_median", "lower"),
               "prefill": ("prefill_tps_median", "higher"), "ability": ("ability_score", "higher"),
               "fitness": ("agent_fitness_score", "higher"), "confidence": ("confidence", "higher")}
# the lines of /vs/{a}/{b} for two models: (figure, label, which way is better, what must
# agree for a winner: the machine for speed, the suite version and --quick for scores)
COMPARE_LINES = (
    ("decode_tps_median", "decode tok/s (medium-200, median)", "higher", "machine"),
    ("ttft_ms_median", "time to first token, ms (medium-200, median)", "lower", "machine"),
    ("prefill_tps_median", "prefill tok/s (prefill-2k, median)", "higher", "machine"),
    ("ability_score", "ability (share of tests passed)", "higher", "suite"),
    ("agent_fitness_score", "agent fitness (share of tests passed)", "higher", "suite"),
    ("tests_passed", "tests passed", "higher", "suite"),
)


# Bidirectional controls (an RTL override makes "gnp.exe" read "exe.png") in text that
# came over the wire, shown as their code points: evidence reads the way it was sent.
_BIDI = {ord(c): f"[U+{ord(c):04X}]" for c in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"}


def visible(text: Any) -> str:
    """The ``visible`` template filter: ``text`` with its bidirectional controls shown."""
    return str(text).translate(_BIDI)


def figure(row: dict[str, Any], key: str) -> Any:
    return CONFIDENCE_RANK.get(row["confidence"]) if key == "confidence" else row[key]


def rank(rows: list[dict[str, Any]], sort: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ranked by ``sort``, ties by name then machine; the rows without that figure, by name)."""
    key, better = MODEL_SORTS[sort]
    by_name = sorted(rows, key=lambda r: (r["model"], r["machine"] or ""))
    ranked = sorted((r for r in by_name if figure(r, key) is not None), key=lambda r: figure(r, key),
                    reverse=better == "higher")
    return ranked, [r for r in by_name if figure(r, key) is None]


def _runs(site: Site, sql: str, **params: Any) -> list[dict[str, Any]]:
    return site.rows(sql, chars=TEXT_CHARS, **params)


def _clipped(row: dict[str, Any], *fields: str) -> dict[str, Any]:
    """Say which of ``fields`` the query cut to TEXT_CHARS (``<field>_chars``: the full length)."""
    for f in fields:
        row[f"{f}_truncated"] = (row.get(f"{f}_chars") or 0) > TEXT_CHARS
    return row


# -- the leaderboard's models tab ----------------------------------------------------------

def leaderboard(site: Site, params: Any) -> dict[str, Any]:
    """Each model's standing run per machine (storage.queries.web_models), ranked by ``sort``."""
    from storage.queries import web_models as q

    sort = choice(params, "sort", MODEL_SORTS, "decode")
    ranked, unranked = rank(_runs(site, q.LEADERBOARD), sort)
    return {"tab": "models", "evidence": EVIDENCE, "sort": sort, "models": ranked, "unranked": unranked}


# -- one model -----------------------------------------------------------------------------

def model(site: Site, name: str) -> dict[str, Any]:
    """Every run of one model, newest first, each with its speed cases and judged tests."""
    from storage.queries import web_models as q

    runs = _runs(site, q.MODEL_RUNS, model=name)
    if not runs:
        raise NotFound(f"no model named {name!r}")
    cases, tests = defaultdict(list), defaultdict(list)
    for c in site.rows(q.SPEED_CASES, model=name):
        cases[c.pop("trace_id")].append(c)
    for t in _runs(site, q.TESTS, model=name):
        tests[t.pop("trace_id")].append(_clipped(t, "answer", "reason"))
    for run in runs:
        run["speed_cases"], run["tests"] = cases[run["trace_id"]], tests[run["trace_id"]]
    return {"model": name, "evidence": EVIDENCE, "text_chars": TEXT_CHARS, "runs": runs,
            "machines": sorted({r["machine"] or "unrecorded" for r in runs}),
            "quantizations": sorted({r["quantization"] for r in runs if r["quantization"]})}


# -- suites ----------------------------------------------------------------------------------

def _suites(site: Site) -> list[dict[str, Any]]:
    """Every suite version with each model's standing result: ability suites (``core-v1``,
    …) ranked by ability, speed versions (``speed-v1``, …) by decode speed."""
    from storage.queries import web_models as q

    suites: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in _runs(site, q.SUITE_LATEST):
        suites[("ability", r["suite_version"])].append(r)
    for r in _runs(site, q.SPEED_LATEST):
        suites[("speed", r["speed_version"])].append(r)
    out = []
    for (kind, version), rows in sorted(suites.items()):
        ranked, unranked = rank(rows, "ability" if kind == "ability" else "decode")
        out.append({"suite": version, "kind": kind, "name": rows[0]["suite"] if kind == "ability" else None,
                    "models": ranked + unranked, "runs": sum(r["model_runs"] for r in rows)})
    return out


def benchmarks(site: Site) -> dict[str, Any]:
    """The models' suites, and the agents' (``agent_suites``: web/suites.py)."""
    from web import suites

    return {"evidence": EVIDENCE, "suites": _suites(site), "agent_suites": suites.listing(site)}


def benchmark(site: Site, suite: str) -> dict[str, Any]:
    """One suite version; an ability suite also with its tests × models verdicts. Else an
    agent suite of that name or version (web/suites.py)."""
    from storage.queries import web_models as q

    found = [s for s in _suites(site) if s["suite"] == suite]
    if not found:
        from web import suites

        return suites.page(site, suite)
    data = {"evidence": EVIDENCE, **found[0], "tests": []}
    if data["kind"] == "ability":
        model_of = {m["trace_id"]: m["model"] for m in data["models"]}
        tests: dict[str, dict[str, Any]] = {}
        for v in site.rows(q.VERDICTS, trace_ids=list(model_of)):
            t = tests.setdefault(v["test"], {"test": v["test"], "category": v["category"], "checker": v["checker"],
                                             "verdicts": {}})
            t["verdicts"][model_of[v["trace_id"]]] = v["verdict"]
        data["tests"] = list(tests.values())
    return data


# -- two models side by side ------------------------------------------------------------------

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


def compare(site: Site, a_name: str, b_name: str) -> dict[str, Any]:
    """Two models' runs side by side; a winner only where the figures are comparable."""
    from storage.queries import web_models as q

    runs = {}
    for name in (a_name, b_name):
        runs[name] = _runs(site, q.MODEL_RUNS, model=name)
        if not runs[name]:
            raise NotFound(f"no model named {name!r}")
    a, b = pair(runs[a_name], runs[b_name])
    comparable = {"machine": a["machine"] is not None and a["machine"] == b["machine"],
                  "suite": (a["suite_version"], a["quick"]) == (b["suite_version"], b["quick"])}
    notes = []
    if not comparable["machine"]:
        notes.append("the speed figures come from different (or unrecorded) machines: no winner on speed")
    if not comparable["suite"]:
        notes.append("the scores come from different suite versions or test sets (--quick): no winner on scores")
    lines = []
    for key, label, better, needs in COMPARE_LINES:
        va, vb = a[key], b[key]
        winner = None
        if comparable[needs] and va is not None and vb is not None and va != vb:
            winner = "a" if (va > vb) == (better == "higher") else "b"
        lines.append({"figure": key, "label": label, "a": va, "b": vb, "better": better, "winner": winner})
    verdicts: dict[str, dict[str, Any]] = {}
    if a["suite_version"] == b["suite_version"]:
        side = {a["trace_id"]: "a", b["trace_id"]: "b"}
        for v in site.rows(q.VERDICTS, trace_ids=list(side)):
            verdicts.setdefault(v["test"], {"test": v["test"], "category": v["category"], "a": None, "b": None})
            verdicts[v["test"]][side[v["trace_id"]]] = v["verdict"]
    return {"kind": "models", "evidence": EVIDENCE, "a": a, "b": b, "lines": lines, "notes": notes,
            "tests": list(verdicts.values())}


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
    kind = choice(params, "kind", VS_KINDS, "auto")
    if kind != "models":
        try:
            return {"kind": "agents", "evidence": TELEMETRY, **site.compare(a, b)}
        except NotFound:
            if kind == "agents":
                raise
    try:
        return compare(site, a, b)
    except NotFound:
        if kind == "models":
            raise
        raise NotFound(f"no two agents and no two models named {a!r} and {b!r}") from None
