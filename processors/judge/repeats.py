"""Re-judging: which judged runs the judge scores again, and the ``judge_repeats`` rows
that keep the second opinion apart from ``evals``.

A repeat is its own row (``storage.schema.JUDGE_REPEATS``) beside the score it repeats,
never a new ``evals`` row: a run keeps one score per judge, so every figure over
``agent_runs.eval_score`` counts it once. The noise figures over the pairs:
``storage/queries/judge_noise.py``; what they mean: docs/judge.md, "Judge noise".
"""

from __future__ import annotations

import zlib
from typing import Any

import polars as pl

REPEATS_SCHEMA: dict[str, Any] = {
    "trace_id": pl.String,
    "agent": pl.String,
    "judge_model": pl.String,
    "judge_version": pl.String,
    "repeat": pl.Int64,
    "first_score": pl.Float64,
    "score": pl.Float64,
    "reasoning": pl.String,
    "method": pl.String,
    "error": pl.String,
    "judged_at": pl.Datetime("us", "UTC"),
}


def rejudge_sample(candidates: pl.DataFrame, n: int) -> pl.DataFrame:
    """``n`` of ``candidates`` (``trace_id``, ``repeats``: how often each was judged again
    so far), the same ones whoever asks: the least repeated first, then by a hash of the
    trace id (crc32, as ``pipeline.sample``). Asking twice for n repeats 2n runs once
    each before any run is repeated twice."""
    if n <= 0 or candidates.height == 0:
        return candidates.clear()
    order = [zlib.crc32(t.encode()) for t in candidates["trace_id"]]
    return (candidates.with_columns(pl.Series("_hash", order, dtype=pl.Int64))
            .sort(["repeats", "_hash", "trace_id"]).head(n).drop("_hash"))


def as_repeats(evals: pl.DataFrame, chosen: pl.DataFrame) -> pl.DataFrame:
    """The ``judge_repeats`` rows of ``evals`` (``judge_runs``' rows for the runs of
    ``chosen``: ``trace_id``, ``first_score``, ``repeats``): each the run's next repeat."""
    before = chosen.select("trace_id", "first_score", (pl.col("repeats") + 1).cast(pl.Int64).alias("repeat"))
    return (evals.join(before, on="trace_id", how="inner")
            .select(list(REPEATS_SCHEMA)).cast(REPEATS_SCHEMA))  # type: ignore[arg-type]
