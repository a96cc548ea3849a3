"""``/models/{name}``: every bench run of one model, benchmark evidence. And what every
model page shares (the leaderboard's models tab, ``/benchmarks``, ``/vs/{a}/{b}``): a model
reads as its ``model_label`` (a GGUF path as its file name) in every row, URL and answer,
and a label (or the full id it stands for) finds the model's runs."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from otelbench.storage.labels import model_label
from otelbench.storage.queries import web_models as q
from otelbench.web import charts
from otelbench.web.errors import NotFound
from otelbench.web.pages import EVIDENCE, TEXT_CHARS
from otelbench.web.site import Site

CONFIDENCE_RANK = {"LOW": 0, "MEDIUM": 1, "HIGH": 2}
# sort → (figure, which way is better); "confidence" ranks HIGH over MEDIUM over LOW
SORTS = {"decode": ("decode_tps_median", "higher"), "ttft": ("ttft_ms_median", "lower"),
         "prefill": ("prefill_tps_median", "higher"), "ability": ("ability_score", "higher"),
         "fitness": ("agent_fitness_score", "higher"), "confidence": ("confidence", "higher")}


def runs(site: Site, sql: str, **params: Any) -> list[dict[str, Any]]:
    """The rows of one statement about bench runs, each naming its model by its label."""
    found = site.rows(sql, chars=TEXT_CHARS, **params)
    for r in found:
        r["model"] = model_label(r["model"])
    return found


def ids(site: Site, name: str) -> list[str]:
    """The models' ids a name stands for: those whose label it is (one file name may be
    found at several paths), or the id itself; among benchmarked models and those with a
    goodput sweep."""
    known = [*site.rows(q.LEADERBOARD, chars=TEXT_CHARS), *site.rows(q.GOODPUT_MODELS)]
    return sorted({r["model"] for r in known if name in (r["model"], model_label(r["model"]))})


def model_runs(site: Site, name: str) -> list[dict[str, Any]]:
    """Every visible run of the model ``name`` stands for, newest first; NotFound for none."""
    found = [r for model_id in ids(site, name) for r in runs(site, q.MODEL_RUNS, model=model_id)]
    if not found:
        raise NotFound(f"no model named {name!r}")
    return sorted(found, key=lambda r: (r["start_time"], r["trace_id"]), reverse=True)


def figure(row: dict[str, Any], key: str) -> Any:
    return CONFIDENCE_RANK.get(row["confidence"]) if key == "confidence" else row[key]


def rank(rows: list[dict[str, Any]], sort: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ranked by ``sort``, ties by name then machine; the rows without that figure, by name)."""
    key, better = SORTS[sort]
    by_name = sorted(rows, key=lambda r: (r["model"], r["machine"] or ""))
    ranked = sorted((r for r in by_name if figure(r, key) is not None), key=lambda r: figure(r, key),
                    reverse=better == "higher")
    return ranked, [r for r in by_name if figure(r, key) is None]


def _clipped(row: dict[str, Any], *fields: str) -> dict[str, Any]:
    """Say which of ``fields`` the query cut to TEXT_CHARS (``<field>_chars``: the full length)."""
    for f in fields:
        row[f"{f}_truncated"] = (row.get(f"{f}_chars") or 0) > TEXT_CHARS
    return row


def goodput_sweeps(site: Site, model_ids: list[str]) -> list[dict[str, Any]]:
    """The models' goodput sweeps, newest first: each its SLO, its steps (rates, then
    concurrencies, rising) and a chart per mode of throughput and goodput over the load."""
    steps: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for model_id in model_ids:
        for step in site.rows(q.GOODPUT_STEPS, model=model_id):
            steps[step.pop("trace_id")].append(step)
    sweeps = []
    for trace_id, rows in steps.items():
        charts_by_mode = {}
        for mode, unit in (("rate", "req/s"), ("concurrency", "clients")):
            points = [(r["load"], r["throughput_rps"] or 0.0, r["goodput_rps"] or 0.0, bool(r["holds"]))
                      for r in rows if r["mode"] == mode]
            if points:
                charts_by_mode[mode] = charts.goodput_curve(points, title=f"Goodput and throughput by {mode}",
                                                            unit=unit)
        highest = {r["mode"]: r["highest_holding"] for r in rows}  # the sweep's, one per mode
        sweeps.append({"trace_id": trace_id, "start_time": min(r["start_time"] for r in rows), "highest": highest,
                       "slo": rows[0]["slo"], "min_pass": rows[0]["min_pass"], "steps": rows,
                       "charts": charts_by_mode})
    return sorted(sweeps, key=lambda s: (s["start_time"], s["trace_id"]), reverse=True)


def model(site: Site, name: str) -> dict[str, Any]:
    """Every run of one model, newest first, each with its speed cases and judged tests;
    and its goodput sweeps. NotFound for a model with neither."""
    model_ids = ids(site, name)
    found = sorted((r for m in model_ids for r in runs(site, q.MODEL_RUNS, model=m)),
                   key=lambda r: (r["start_time"], r["trace_id"]), reverse=True)
    sweeps = goodput_sweeps(site, model_ids)
    if not found and not sweeps:
        raise NotFound(f"no model named {name!r}")
    cases, tests = defaultdict(list), defaultdict(list)
    for model_id in ids(site, name):
        for c in site.rows(q.SPEED_CASES, model=model_id):
            cases[c.pop("trace_id")].append(c)
        for t in site.rows(q.TESTS, model=model_id, chars=TEXT_CHARS):
            tests[t.pop("trace_id")].append(_clipped(t, "answer", "reason"))
    for run in found:
        run["speed_cases"], run["tests"] = cases[run["trace_id"]], tests[run["trace_id"]]
    return {"model": model_label(name), "evidence": EVIDENCE, "text_chars": TEXT_CHARS, "runs": found,
            "goodput": sweeps,
            "machines": sorted({r["machine"] or "unrecorded" for r in found}),
            "quantizations": sorted({r["quantization"] for r in found if r["quantization"]})}
