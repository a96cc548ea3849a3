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

from otelbench.processors.clustering.describe import Describe
from otelbench.processors.clustering.embed import Embedder, MiniLMEmbedder, OpenAIEmbedder
from otelbench.processors.clustering.label import Prompt

if TYPE_CHECKING:
    import openai

LOCAL = "local"
API_KEY_ENV = "OTELBENCH_EMBEDDINGS_API_KEY"
# The label asked for is a dozen tokens; 48 leave room for a server that ignores the
# grammar and writes a sentence (describe.usable cuts it) without letting a chatty model
# write a paragraph.
DESCRIBE_MAX_TOKENS = 48


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
    """The ``Describe`` callable over an OpenAI-compatible chat endpoint: the prompt's
    messages, temperature 0, a short answer, its grammar in llama.cpp's ``grammar`` field.
    A server that refuses the field (an error naming it: OpenAI's "Unrecognized request
    argument") is asked again without it, and not sent it again. Any other API error, or
    an answer without text, is None, so the cluster is described by its top terms
    (describe.describe_cluster)."""
    import openai

    grammar_refused = False

    def describe(prompt: Prompt) -> str | None:
        nonlocal grammar_refused
        messages = [{"role": role, "content": content} for role, content in prompt.messages]
        while True:
            extra = {} if grammar_refused else {"extra_body": {"grammar": prompt.grammar}}
            try:
                response: Any = client.chat.completions.create(
                    model=model, messages=messages, temperature=0, max_tokens=max_tokens, **extra)
            except openai.APIStatusError as exc:
                if not grammar_refused and exc.status_code in (400, 422) and "grammar" in str(exc).lower():
                    grammar_refused = True
                    continue
                return None
            except openai.OpenAIError:
                return None
            break
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices and choices[0].message is not None else None
        return content or None

    return describe
