"""processors/clustering/clients.py: settings to an embedder, an OpenAI client to a
describer (against a scripted chat endpoint, httpx.MockTransport)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from processors.clustering import MiniLMEmbedder, OpenAIEmbedder, llm_describer, make_embedder
from processors.clustering.describe import BY_LLM, BY_TERMS, describe_cluster


def test_local_is_the_offline_minilm() -> None:
    assert isinstance(make_embedder("local", None), MiniLMEmbedder)


def test_a_url_is_an_openai_compatible_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTELBENCH_EMBEDDINGS_API_KEY", "sk-embed")
    embedder = make_embedder("http://127.0.0.1:9/v1", "nomic-embed-text")
    assert isinstance(embedder, OpenAIEmbedder) and embedder.name == "openai:nomic-embed-text"
    client = embedder._client  # noqa: SLF001 - what the endpoint will be called with
    assert str(client.base_url) == "http://127.0.0.1:9/v1/" and client.api_key == "sk-embed"
    monkeypatch.delenv("OTELBENCH_EMBEDDINGS_API_KEY")
    assert make_embedder("http://127.0.0.1:9/v1", "m")._client.api_key == "none"  # noqa: SLF001
    with pytest.raises(ValueError, match="embedding_model"):
        make_embedder("http://127.0.0.1:9/v1", None)


def _chat(requests: list[dict], answer: str | None, status: int = 200) -> openai.OpenAI:
    def handle(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(request.content))
        if status != 200:
            return httpx.Response(status, json={"error": {"message": "boom"}})
        return httpx.Response(200, json={
            "id": "c1", "object": "chat.completion", "created": 0, "model": "judge",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
    return openai.OpenAI(api_key="k", base_url="http://llm.test/v1", max_retries=0,
                         http_client=httpx.Client(transport=httpx.MockTransport(handle)))


def test_the_describer_asks_for_a_short_deterministic_answer() -> None:
    requests: list[dict] = []
    describe = llm_describer(_chat(requests, "The weather tool times out. More."), "qwen")
    assert describe("the prompt") == "The weather tool times out. More."
    assert requests == [{"model": "qwen", "messages": [{"role": "user", "content": "the prompt"}],
                         "temperature": 0, "max_tokens": 80}]
    assert describe_cluster(["x"], ["timeout"], describe) == ("The weather tool times out.", BY_LLM)


@pytest.mark.parametrize(("answer", "status"), [(None, 200), ("", 200), ("unused", 500), ("unused", 401)])
def test_an_error_or_no_text_is_none_and_the_terms_describe(answer: str | None, status: int) -> None:
    describe = llm_describer(_chat([], answer, status), "qwen")
    assert describe("the prompt") is None
    assert describe_cluster(["x"], ["timeout"], describe) == ("Failures about timeout.", BY_TERMS)


def test_an_endpoint_that_cannot_be_reached_is_none() -> None:
    client = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    assert llm_describer(client, "qwen")("the prompt") is None
