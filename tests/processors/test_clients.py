"""processors/clustering/clients.py: settings to an embedder, an OpenAI client to a
describer (against a scripted chat endpoint, httpx.MockTransport)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from otelbench.processors.clustering import MiniLMEmbedder, OpenAIEmbedder, llm_describer, make_embedder
from otelbench.processors.clustering.clients import DESCRIBE_MAX_TOKENS
from otelbench.processors.clustering.describe import BY_LLM, BY_TERMS, describe_cluster
from otelbench.processors.clustering.label import label_prompt


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


def _chat(requests: list[dict], answer: str | None, status: int = 200, refuse: str | None = None) -> openai.OpenAI:
    """A scripted chat endpoint; ``refuse``: a request field it answers 400 to, naming it."""
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        requests.append(body)
        if refuse is not None and refuse in body:
            return httpx.Response(400, json={"error": {"message": f"Unrecognized request argument supplied: {refuse}"}})
        if status != 200:
            return httpx.Response(status, json={"error": {"message": "boom"}})
        return httpx.Response(200, json={
            "id": "c1", "object": "chat.completion", "created": 0, "model": "judge",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
    return openai.OpenAI(api_key="k", base_url="http://llm.test/v1", max_retries=0,
                         http_client=httpx.Client(transport=httpx.MockTransport(handle)))


PROMPT = label_prompt(["error: Timeout Error: get_weather timed out"], ["timeout"], "get_weather", "TimeoutError")


def test_the_describer_sends_the_chat_and_its_grammar() -> None:
    requests: list[dict] = []
    describe = llm_describer(_chat(requests, "get_weather: the weather service is slow."), "qwen")
    assert describe(PROMPT) == "get_weather: the weather service is slow."
    assert requests == [{"model": "qwen", "messages": [{"role": r, "content": c} for r, c in PROMPT.messages],
                         "temperature": 0, "max_tokens": DESCRIBE_MAX_TOKENS, "grammar": PROMPT.grammar}]
    assert describe_cluster(["error: Timeout Error: get_weather timed out"], ["timeout"], describe, "get_weather",
                            "TimeoutError") == ("get_weather: the weather service is slow.", BY_LLM)


def test_a_server_that_refuses_grammars_is_asked_without() -> None:
    requests: list[dict] = []
    describe = llm_describer(_chat(requests, "The weather tool times out. More.", refuse="grammar"), "gpt")
    assert describe(PROMPT) == "The weather tool times out. More."
    assert ["grammar" in r for r in requests] == [True, False]
    describe(PROMPT)                                     # remembered: asked without at once
    assert ["grammar" in r for r in requests] == [True, False, False]


@pytest.mark.parametrize(("answer", "status"), [(None, 200), ("", 200), ("unused", 500), ("unused", 401),
                                                ("unused", 400)])
def test_an_error_or_no_text_is_none_and_the_terms_describe(answer: str | None, status: int) -> None:
    requests: list[dict] = []
    describe = llm_describer(_chat(requests, answer, status), "qwen")
    assert describe(PROMPT) is None and len(requests) == 1      # an error not naming the grammar: no retry
    assert describe_cluster(["x"], ["timeout"], describe) == ("Failures about timeout.", BY_TERMS)


def test_an_endpoint_that_cannot_be_reached_is_none() -> None:
    client = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    assert llm_describer(client, "qwen")(PROMPT) is None
