"""From the processors' settings to the two callables clustering takes: the embedder and the
describer.

``cluster_failures`` (cluster.py) is pure: it is handed an ``Embedder`` and a ``Describe``
callable. This is where the caller's configuration (``processors.clusters.embedder`` and
``embedding_model``, the judge's endpoint for descriptions) becomes them, so that the
pipeline does not need to know the classes behind them. The only environment read of
the package is here: the API key of an embeddings server, ``OTELBENCH_EMBEDDINGS_API_KEY``
("none" when unset, which local servers accept).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from processors.clustering.describe import Describe
from processors.clustering.embed import Embedder, MiniLMEmbedder, OpenAIEmbedder

if TYPE_CHECKING:
    import openai

LOCAL = "local"
API_KEY_ENV = "OTELBENCH_EMBEDDINGS_API_KEY"
# One sentence is asked for; 80 tokens leave room for a lead-in the describer cuts away
# (describe.one_sentence) without letting a chatty model write a paragraph.
DESCRIBE_MAX_TOKENS = 80


def make_embedder(embedder: str, embedding_model: str | None) -> Embedder:
    """``"local"``: the offline int8 MiniLM (``MiniLMEmbedder``). Anything else is the base
    URL of an OpenAI-compatible server (``http://host:port/v1``), whose ``embedding_model``
    must then be named."""
    if embedder == LOCAL:
        return MiniLMEmbedder()
    if not embedding_model:
        raise ValueError(f"embedder {embedder!r} is an embeddings endpoint: name its model (embedding_model)")
    import openai

    client = openai.OpenAI(base_url=embedder, api_key=os.environ.get(API_KEY_ENV, "none"))
    return OpenAIEmbedder(client, embedding_model)


def llm_describer(client: openai.OpenAI, model: str, *, max_tokens: int = DESCRIBE_MAX_TOKENS) -> Describe:
    """The ``Describe`` callable over an OpenAI-compatible chat endpoint: the prompt as one
    user message, temperature 0, a short answer. Any API error, or an answer without text,
    is None, so the cluster is described by its top terms (describe.describe_cluster)."""
    import openai

    def describe(prompt: str) -> str | None:
        try:
            response: Any = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=max_tokens)
        except openai.OpenAIError:
            return None
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices and choices[0].message is not None else None
        return content or None

    return describe
