"""Failure clustering as pure functions: failed runs in, clusters per agent out.

``cluster_failures`` (cluster.py) is the entry point; ``insights_json`` (result.py) the
JSON form for the web. One concept per module:

- text.py      a failure as normalized text
- embed.py     the Embedder protocol; MiniLM int8 ONNX (default, offline); OpenAI-compatible
- multiset.py  HDBSCAN over distinct texts with their counts
- merge.py     clusters of one cause (error type, failing tool) merged
- ids.py       cluster ids kept across runs
- terms.py     c-TF-IDF top terms
- label.py     the prompt asking an LLM to name a cluster's problem, and its grammar
- describe.py  a label per cluster from an LLM, or the top terms
- vectors.py   a failure's vector from its parts' vectors
- cluster.py   cluster_failures, the entry point
- result.py    ClusterResult, the table schemas, insights_json
- clients.py   make_embedder and llm_describer: settings in, the callables above out
"""

from otelbench.processors.clustering.clients import llm_describer, make_embedder
from otelbench.processors.clustering.cluster import cluster_failures, default_min_cluster_size, default_min_samples
from otelbench.processors.clustering.describe import Describe
from otelbench.processors.clustering.embed import Embedder, EmbedderError, MiniLMEmbedder, OpenAIEmbedder
from otelbench.processors.clustering.result import (CLUSTERS_SCHEMA, FAILURES_SCHEMA, MEMBERS_SCHEMA, NOISE, ClusterResult,
                                          insights_json)
from otelbench.processors.clustering.text import failure_text, normalize

__all__ = [
    "CLUSTERS_SCHEMA", "FAILURES_SCHEMA", "MEMBERS_SCHEMA", "NOISE", "ClusterResult", "Describe", "Embedder",
    "EmbedderError", "MiniLMEmbedder", "OpenAIEmbedder", "cluster_failures", "default_min_cluster_size",
    "default_min_samples", "failure_text", "insights_json", "llm_describer", "make_embedder", "normalize",
]
