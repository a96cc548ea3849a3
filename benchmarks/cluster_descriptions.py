"""Cluster descriptions by the embedded model, against planted failure families.

For each set of families (the first six core families, which share words in pairs, and
twelve: the ten core ones and two more) and each seed, 40 failed runs a family are
clustered with the local MiniLM embedder, and each cluster is described by SmolLM2-135M
on llama.cpp's ``llama-server`` (bench_runner/llama_server.py). Printed per run: clusters
against families, how many clusters HDBSCAN found before clusters of one cause were
merged (processors/clustering/merge.py), the least pure cluster, the share of clusters
the model described (the rest fell back to their top terms), the share whose description
names its family's subject (otelbench.testing.family_subjects), the describing time, and
each description. ``--no-merge`` shows HDBSCAN's clusters as they are.

    python benchmarks/cluster_descriptions.py [--seeds 0 1] [--no-merge]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402
import polars as pl  # noqa: E402

from otelbench.bench_runner.llama_server import LlamaServer  # noqa: E402
from otelbench.testing.failures import CORE, MORE, planted_failures  # noqa: E402
from otelbench.testing.family_subjects import names_subject  # noqa: E402
from otelbench.processors.clustering import MiniLMEmbedder, cluster_failures, llm_describer  # noqa: E402
from otelbench.processors.clustering.describe import BY_LLM  # noqa: E402
from otelbench.processors.clustering.merge import MERGE_COSINE  # noqa: E402

NOW = dt.datetime(2025, 3, 20, tzinfo=dt.timezone.utc)
SETS = {"6 families": CORE[:6], "12 families": CORE + MORE[:2]}
PER_FAMILY = 40


def run(families: tuple, seed: int, embedder: MiniLMEmbedder, describe, merge: bool) -> dict:
    runs = planted_failures(families, PER_FAMILY, seed=seed)
    started = time.perf_counter()
    result = cluster_failures(runs, embedder=embedder, now=NOW, describe=describe,
                              merge_cosine=MERGE_COSINE if merge else None)
    seconds = time.perf_counter() - started
    members = result.members.join(runs.select("trace_id", "family"), on="trace_id")
    clustered = members.filter(pl.col("cluster_id") >= 0)
    purity = (clustered.group_by("cluster_id", "family").len().group_by("cluster_id")
              .agg((pl.col("len").max() / pl.col("len").sum()).alias("purity"), pl.col("family").first()))
    family_of = dict(clustered.group_by("cluster_id").agg(pl.col("family").mode().first()).iter_rows())
    rows = []
    for row in result.clusters.iter_rows(named=True):
        params = json.loads(row["params"])
        family = family_of[row["cluster_id"]]
        rows.append((family, row["size"], params["described_by"], row["description"]))
    params = json.loads(result.clusters["params"][0]) if result.clusters.height else {}
    return {"families": len(families), "clusters": result.clusters.height,
            "hdbscan": params.get("hdbscan_clusters", result.clusters.height),
            "found": clustered["family"].n_unique(), "purity": purity["purity"].min() if purity.height else 0.0,
            "by_llm": sum(by == BY_LLM for _, _, by, _ in rows),
            "named": sum(by == BY_LLM and names_subject(f, d) for f, _, by, d in rows), "seconds": seconds,
            "rows": sorted(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--no-merge", action="store_true", help="HDBSCAN's clusters, not merged")
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    with LlamaServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0, timeout=120)
        describe = llm_describer(client, server.model_id)
        print(f"model {server.model_id}; embedder {embedder.name}; {PER_FAMILY} runs a family; "
              f"merge {'off' if args.no_merge else MERGE_COSINE}")
        for name, families in SETS.items():
            for seed in args.seeds:
                r = run(families, seed, embedder, describe, not args.no_merge)
                n = max(r["clusters"], 1)
                print(f"\n{name}, seed {seed}: {r['clusters']} clusters for {r['families']} families "
                      f"({r['hdbscan']} before merging; {r['found']} families found), least pure "
                      f"{r['purity']:.0%}; described by the model {r['by_llm']}/{r['clusters']} "
                      f"({r['by_llm'] / n:.0%}), naming the family's subject {r['named']}/{r['clusters']}; "
                      f"{r['seconds']:.1f} s")
                for family, size, by, description in r["rows"]:
                    mark = "" if by != BY_LLM else ("  " if names_subject(family, description) else "? ")
                    print(f"  {family:22s} {size:4d}  {by:9s} {mark}{description}")


if __name__ == "__main__":
    main()
