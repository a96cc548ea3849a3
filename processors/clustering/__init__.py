"""Failure clustering (issue #11) as pure functions: failed runs in, clusters per agent out.

- text.py      a failure as normalized text
- embed.py     the Embedder protocol; MiniLM int8 ONNX (default, offline); OpenAI-compatible
- multiset.py  HDBSCAN over distinct texts with their counts
- ids.py       cluster ids kept across runs
- terms.py     c-TF-IDF top terms
- describe.py  one sentence per cluster from an LLM, or the top terms
"""
