"""Cluster descriptions by the embedded model (SmolLM2-135M on llama.cpp's llama-server):
six planted families are six clusters, each labelled by the model, not by the fallback,
in words that name the family's subject (otelbench.testing.family_subjects)."""

from __future__ import annotations

import datetime as dt
import json

import openai
import polars as pl
import pytest

from otelbench.bench_runner.llama_server import LlamaServer
from otelbench.testing.failures import CORE, planted_failures
from otelbench.testing.family_subjects import names_subject
from otelbench.processors.clustering import MiniLMEmbedder, cluster_failures, llm_describer
from otelbench.processors.clustering.describe import BY_LLM

NOW = dt.datetime(2025, 3, 20, tzinfo=dt.timezone.utc)


@pytest.mark.model
def test_the_embedded_model_names_each_family(llama_server: LlamaServer, minilm: MiniLMEmbedder,
                                              record_property: pytest.RecordProperty) -> None:
    runs = planted_failures(CORE[:6], 40, seed=0)
    client = openai.OpenAI(base_url=llama_server.base_url, api_key="none", max_retries=0, timeout=120)
    result = cluster_failures(runs, embedder=minilm, now=NOW, describe=llm_describer(client, llama_server.model_id))
    members = result.members.join(runs.select("trace_id", "family"), on="trace_id")
    family_of = dict(members.group_by("cluster_id").agg(pl.col("family").mode().first()).iter_rows())
    said = {family_of[row["cluster_id"]]: (row["description"], json.loads(row["params"])["described_by"])
            for row in result.clusters.iter_rows(named=True)}
    for family, (description, by) in sorted(said.items()):
        print(f"{family:18s} {by:9s} {description}")
        record_property(family, f"{by}: {description}")
    assert result.clusters.height == 6 and sorted(said) == sorted(f.name for f in CORE[:6])
    assert {family: by for family, (_, by) in said.items()} == {family: BY_LLM for family in said}
    off_topic = {family: description for family, (description, _) in said.items()
                 if not names_subject(family, description)}
    assert off_topic == {}
