"""``/benchmarks`` and ``/benchmarks/{suite}``: every suite version with each model's
standing result (an ability suite also with its tests × models verdicts), and the agent
suites (web/pages/suites.py). Benchmark evidence only, never mixed with telemetry."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from otelbench.storage.queries import web_models as q
from otelbench.web.pages import EVIDENCE, models, suites
from otelbench.web.site import Site


def _suites(site: Site) -> list[dict[str, Any]]:
    """Every suite version with each model's standing result: ability suites (``core-v1``,
    …) ranked by ability, speed versions (``speed-v1``, …) by decode speed."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in models.runs(site, q.SUITE_LATEST):
        found[("ability", r["suite_version"])].append(r)
    for r in models.runs(site, q.SPEED_LATEST):
        found[("speed", r["speed_version"])].append(r)
    out = []
    for (kind, version), rows in sorted(found.items()):
        ranked, unranked = models.rank(rows, "ability" if kind == "ability" else "decode")
        out.append({"suite": version, "kind": kind, "name": rows[0]["suite"] if kind == "ability" else None,
                    "models": ranked + unranked, "runs": sum(r["model_runs"] for r in rows)})
    return out


def benchmarks(site: Site) -> dict[str, Any]:
    """The models' suites, and the agents' (``agent_suites``: web/pages/suites.py)."""
    return {"evidence": EVIDENCE, "suites": _suites(site), "agent_suites": suites.listing(site)}


def benchmark(site: Site, suite: str) -> dict[str, Any]:
    """One suite version; an ability suite also with its tests × models verdicts. Else an
    agent suite of that name or version (web/pages/suites.py)."""
    found = [s for s in _suites(site) if s["suite"] == suite]
    if not found:
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
