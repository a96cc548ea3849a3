"""Failure clustering benchmark: 100,000 failures embedded and clustered.

Target: ≤ 60 s and ≤ 2 GB peak RSS on the 2-core development machine.

Realistic mode (default): one agent's ``--failures`` failed runs from the 75 planted
families of ``otelbench.testing.failures`` (error paraphrases, tool errors and answers with
random numbers, ids, hex, paths, timestamps, cities and dates), family sizes falling with
rank as ``rank ** -0.8`` (the largest ~14 %, the smallest ~0.5 %), plus ``--noise`` one-off
failures and successes mixed in (left out by the processor). Normalization makes many of
them one text: the run prints how many distinct texts the embedder saw.

``--all-distinct``: the worst case, every failure a text of its own (a random six-word
tail no placeholder removes), so every one is embedded; above 12,000 distinct texts the
clustering runs hdbscan's Borůvka k-d tree on PCA-48 rows instead of the exact multiset
path (processors/clustering/multiset.py).

Printed: rows, distinct texts, embed time and texts/s, the rest (texts, HDBSCAN, ids,
terms, examples), total wall time, peak RSS of this process (the model included), the
ARI against the planted families (over all failures, and over the families large enough
to be a cluster at all: a family under ``min_cluster_size`` can only be noise), and the
embedder's paraphrase separation (otelbench.testing.paraphrases).

    python benchmarks/cluster.py [--failures 100000] [--threads 2] [--all-distinct]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from otelbench.testing.failures import FAMILIES, NOISE_WORDS, planted_failures  # noqa: E402
from otelbench.testing.paraphrases import mean_similarities, ordered_triplets  # noqa: E402
from otelbench.processors.clustering import MiniLMEmbedder, cluster_failures  # noqa: E402
from otelbench.processors.clustering.text import failure_parts  # noqa: E402


class Timed:
    """The embedder, timed."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.texts = 0

    @property
    def name(self) -> str:
        return self.inner.name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return out


def workload(failures: int, noise_share: float, all_distinct: bool, seed: int) -> pl.DataFrame:
    weights = [(rank + 1) ** -0.8 for rank in range(len(FAMILIES))]
    planted = failures - int(failures * noise_share)
    sizes = [int(planted * w / sum(weights)) for w in weights]
    sizes[0] += planted - sum(sizes)
    runs = planted_failures(FAMILIES, sizes, noise=failures - planted, successes=failures // 20, seed=seed)
    if all_distinct:
        rng = random.Random(seed)
        tails = [" ".join(rng.choices(NOISE_WORDS, k=6)) for _ in range(runs.height)]
        tail = pl.Series(tails)
        runs = runs.with_columns(pl.concat_str([pl.col("error_message"), tail], separator=" while ")
                                 .fill_null(pl.col("output")).alias("error_message"),
                                 pl.when(pl.col("status") == "ok")
                                 .then(pl.concat_str([pl.col("output"), tail], separator=" "))
                                 .otherwise(pl.col("output")).alias("output"))
    return runs


def ari(truth: Sequence[str], labels: Sequence[int]) -> float:
    from sklearn.metrics import adjusted_rand_score  # scikit-learn comes with hdbscan

    return float(adjusted_rand_score(truth, labels))


def separation(embedder: MiniLMEmbedder) -> str:
    """The paraphrase triplets ordered right, and the mean cosines, as one line."""
    cache: dict[tuple[str, str], np.ndarray] = {}

    def cosine(a: tuple[str, str], b: tuple[str, str]) -> float:
        for failure in (a, b):
            if failure not in cache:
                cache[failure] = embedder.embed([failure_parts(failure[0], failure[1], None, None).error])[0]
        return float(cache[a] @ cache[b])

    right, total = ordered_triplets(cosine)
    means = mean_similarities(cosine)
    para = sum(p for p, _ in means) / len(means)
    look = sum(o for _, o in means) / len(means)
    return (f"{right} of {total} triplets ordered right ({right / total:.2f}); mean cosine to a paraphrase "
            f"{para:.2f}, to a look-alike {look:.2f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--failures", type=int, default=100_000)
    ap.add_argument("--noise", type=float, default=0.03, help="share of one-off failures")
    ap.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    ap.add_argument("--all-distinct", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    runs = workload(args.failures, args.noise, args.all_distinct, args.seed)
    embedder = Timed(MiniLMEmbedder(threads=args.threads))
    start = time.perf_counter()
    result = cluster_failures(runs, embedder=embedder, now=dt.datetime(2025, 3, 17, tzinfo=dt.timezone.utc))
    total = time.perf_counter() - start
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    members = result.members.join(runs.select("trace_id", "family"), on="trace_id")
    params = next(iter(result.params.values()))
    mcs = params["min_cluster_size"]
    sizes = runs.filter(pl.col("family").is_in([f.name for f in FAMILIES])).group_by("family").len()
    big = sizes.filter(pl.col("len") >= mcs)["family"].to_list()
    in_big = members.filter(pl.col("family").is_in(big))
    print(f"failures           {members.height:,} (+ {runs.height - members.height:,} successes left out)")
    distinct = params["distinct_texts"]
    print(f"distinct failures  {distinct:,} ({distinct / members.height:.1%} of failures)")
    print(f"embedded texts     {embedder.texts:,} (the distinct parts: errors, tool errors, answers)")
    print(f"embed              {embedder.seconds:.1f} s ({embedder.texts / max(embedder.seconds, 1e-9):.0f} texts/s, "
          f"{args.threads} thread(s))")
    print(f"texts + cluster    {total - embedder.seconds:.1f} s (method {params['method']})")
    print(f"total              {total:.1f} s")
    print(f"peak RSS           {rss_mb:.0f} MB")
    print(f"min_cluster_size   {mcs} ({len(big)} of {len(FAMILIES)} planted families reach it, "
          f"{in_big.height / members.height:.0%} of failures)")
    print(f"clusters           {result.clusters.height}, unclustered {params['unclustered']:,} "
          f"({params['unclustered'] / members.height:.1%})")
    print(f"ARI vs families    {ari(members['family'].to_list(), members['cluster_id'].to_list()):.3f} "
          f"(all failures), {ari(in_big['family'].to_list(), in_big['cluster_id'].to_list()):.3f} "
          f"(the families that reach min_cluster_size)")
    print(f"paraphrases        {separation(embedder.inner)}")


if __name__ == "__main__":
    main()
