"""The judge against the real embedded model server (SmolLM2-135M on llama-server) and
the real collector: the plumbing, not the model's wisdom — every run gets a score in [0, 1]
or a recorded error, the method and version are stored, logprobs are read where the server
returns them, and the judge's own traces land in the lake without becoming agent runs."""

from __future__ import annotations

from datetime import UTC, datetime

import openai
import polars as pl
import pytest

from otelbench.testing import judge_calibration as cal
from otelbench.processors.judge import EVALS_SCHEMA, check_endpoint, judge_runs, load_prompt, traced
from otelbench.storage.duckdb import open_lake

pytestmark = pytest.mark.model

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
CASES = ("arith-mul-ok", "arith-mul-wrong", "tool-weather-refusal", "tool-order-error")


def test_judges_calibration_runs_with_the_embedded_model(llama_server, collector) -> None:
    frame = cal.runs().filter(pl.col("case").is_in(CASES))
    prompt = load_prompt()
    client = openai.OpenAI(base_url=llama_server.base_url, api_key="none")
    check_endpoint(client, llama_server.model_id)
    with traced(client, f"http://127.0.0.1:{collector.http_port}") as judged_client:
        out = judge_runs(frame.drop("case", "label", "category", "kind", "clear_cut"), client=judged_client,
                         model=llama_server.model_id, prompt=prompt, now=lambda: NOW, concurrency=2,
                         max_input_tokens=1500, attempts_so_far={})
    assert out.schema == pl.Schema(EVALS_SCHEMA) and out.height == len(CASES)
    assert sorted(out["trace_id"]) == sorted(frame["trace_id"])
    for row in out.iter_rows(named=True):
        assert row["judge_version"] == prompt.version and row["judge_model"] == llama_server.model_id
        assert row["attempts"] == 1 and row["input_truncated"] is False
        if row["error"] is None:
            assert 0.0 <= row["score"] <= 1.0 and row["method"] in ("logprobs", "json", "text")
            assert row["reasoning"]
        else:
            assert row["score"] is None and row["raw_answer"] is not None
    assert "logprobs" in set(out["method"].drop_nulls())  # llama-server returns them
    by_case = dict(zip(frame["trace_id"], frame["case"]))
    caps = {by_case[t]: s for t, s in zip(out["trace_id"], out["score"]) if s is not None}
    assert caps.get("tool-weather-refusal", 0.0) <= 0.1 and caps.get("tool-order-error", 0.0) <= 0.0

    collector.wait_flushed()
    with open_lake(collector.config.exporters.parquet.path) as lake:
        spans = lake.query("SELECT service_name, operation, request_model, input_tokens, output_tokens, "
                           "json_extract_string(attributes, '$.\"otelbench.judge.run_trace_id\"') "
                           "FROM spans").rows
        runs = lake.query("SELECT count(*) FROM agent_runs").rows
    assert spans and {s[0] for s in spans} == {"otelbench-judge"}
    assert {s[1] for s in spans} == {"chat"} and {s[2] for s in spans} == {llama_server.model_id}
    assert all(s[3] and s[4] for s in spans)
    assert {s[5] for s in spans} == set(frame["trace_id"])
    assert runs == [(0,)]  # the judge's calls are not agent runs
