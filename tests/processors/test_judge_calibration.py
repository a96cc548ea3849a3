"""The labelled calibration set loads through the collector's write path as realistic runs,
and the agreement figures are computed right (otelbench/testing/judge_calibration.py)."""

from __future__ import annotations

import polars as pl
import pytest

from otelbench.testing import judge_calibration as cal
from otelbench.processors.judge.runs import RUNS_SCHEMA, check_runs, message_text


@pytest.fixture(scope="module")
def runs() -> pl.DataFrame:
    return cal.runs()


def test_every_labelled_run_comes_back_from_the_lake(runs: pl.DataFrame) -> None:
    labels = cal.labels()
    assert labels.height >= 60 and runs.height == labels.height
    check_runs(runs)
    assert set(RUNS_SCHEMA) <= set(runs.columns)
    assert set(labels["category"]) == {"correct", "recovered", "wrong", "refusal", "partial", "error"}
    assert {"arithmetic", "lookup", "extraction", "summary"} <= set(labels["kind"])
    assert runs.filter(pl.col("input").is_null()).height == 0  # every run has its task


def test_runs_look_like_the_lake_derives_them(runs: pl.DataFrame) -> None:
    ok = runs.filter(pl.col("case") == "tool-order-recovered").row(0, named=True)
    assert ok["status"] == "ok" and ok["tool_calls"] == 2 and ok["llm_calls"] == 3
    assert message_text(ok["input"]) == "Where is my order A1043?"
    assert "DHL" in message_text(ok["output"])
    assert "→ error: ValueError" in ok["tool_summary"] and '"carrier": "DHL"' in ok["tool_summary"]
    failed = runs.filter(pl.col("case") == "tool-order-error").row(0, named=True)
    assert failed["status"] == "error" and failed["output"] is None
    assert "connection refused" in failed["error_summary"]
    errors = runs.filter(pl.col("category") == "error")
    assert set(errors["status"]) == {"error"} and set(runs.filter(pl.col("label") == 1)["status"]) == {"ok"}


def test_roc_auc_and_confusion() -> None:
    assert cal.roc_auc([0.9, 0.8, 0.1, 0.2], [1, 1, 0, 0]) == 1.0
    assert cal.roc_auc([0.1, 0.2, 0.9, 0.8], [1, 1, 0, 0]) == 0.0
    assert cal.roc_auc([0.5, 0.5], [1, 0]) == 0.5  # a tie counts half
    assert cal.roc_auc([0.5, 0.7], [1, 1]) is None
    assert cal.confusion([0.9, 0.4, 0.6, 0.1], [1, 1, 0, 0]) == {"tp": 1, "fn": 1, "fp": 1, "tn": 1}
