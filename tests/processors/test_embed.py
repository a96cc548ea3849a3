"""processors/clustering/embed.py: the real int8 MiniLM model, its pinned files, and the
OpenAI-compatible embedder against a scripted endpoint (httpx.MockTransport)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

from otelbench.testing.paraphrases import mean_similarities, ordered_triplets
from otelbench.processors.clustering.embed import (MODEL_SHA256, TOKENIZER_PATH, TOKENIZER_SHA256, Embedder, EmbedderError,
                                         MiniLMEmbedder, OpenAIEmbedder, installed_model_path)
from otelbench.processors.clustering.text import failure_parts


def _error(pair: tuple[str, str]) -> str:
    return failure_parts(pair[0], pair[1], None, None).error


def _word_counts(a: tuple[str, str], b: tuple[str, str]) -> float:
    ca, cb = (Counter(re.findall(r"[a-z]+", _error(s).lower())) for s in (a, b))
    dot = sum(ca[w] * cb[w] for w in ca)
    return dot / (np.sqrt(sum(v * v for v in ca.values())) * np.sqrt(sum(v * v for v in cb.values())))


def test_the_model_separates_paraphrases_from_lookalikes(minilm: MiniLMEmbedder) -> None:
    """The default embedder puts paraphrases of one failure closer together
    than other failures sharing its words — and does so more often than word counts.
    Measured: 31 of 36 (anchor, paraphrase, look-alike) triplets ordered right (0.86),
    mean cosine 0.61 to a paraphrase vs 0.44 to a look-alike; cosine of word counts
    orders 23 of 36."""
    cache: dict[str, np.ndarray] = {}

    def cosine(a: tuple[str, str], b: tuple[str, str]) -> float:
        for text in (_error(a), _error(b)):
            if text not in cache:
                cache[text] = minilm.embed([text])[0]
        return float(cache[_error(a)] @ cache[_error(b)])

    right, total = ordered_triplets(cosine)
    baseline, _ = ordered_triplets(_word_counts)
    assert right / total >= 0.8, (right, total)
    assert right > baseline, (right, baseline)
    for para, look in mean_similarities(cosine):  # and on average, for every anchor
        assert para > look


def test_vectors_are_unit_float32_rows_in_order(minilm: MiniLMEmbedder) -> None:
    texts = ["timed out", "a much longer text about a tool that failed with an error " * 3, "x"]
    out = minilm.embed(texts)
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out[0], minilm.embed(["timed out"])[0], atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)
    assert isinstance(minilm, Embedder) and minilm.name == "all-MiniLM-L6-v2-onnx-int8"


def test_a_text_does_not_depend_on_its_batch(minilm: MiniLMEmbedder) -> None:
    """Batches are padded to their longest text; the mask keeps padding out of the vector."""
    alone = minilm.embed(["get_weather timed out"])[0]
    batched = minilm.embed(["get_weather timed out", "a far longer neighbour " * 20])[0]
    assert float(alone @ batched) > 0.9999


def test_long_texts_are_truncated_not_refused(minilm: MiniLMEmbedder) -> None:
    assert minilm.embed(["word " * 2000]).shape == (1, 384)


def test_the_pinned_files() -> None:
    import hashlib

    assert hashlib.sha256(TOKENIZER_PATH.read_bytes()).hexdigest() == TOKENIZER_SHA256
    assert hashlib.sha256(installed_model_path().read_bytes()).hexdigest() == MODEL_SHA256


def test_an_altered_tokenizer_or_model_is_refused(tmp_path: Path) -> None:
    tokenizer = tmp_path / "tokenizer.json"
    data = json.loads(TOKENIZER_PATH.read_text(encoding="utf-8"))
    data["truncation"]["max_length"] = 64
    tokenizer.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(EmbedderError, match="tokenizer .* sha256"):
        MiniLMEmbedder(tokenizer_path=tokenizer)
    model = tmp_path / "model.onnx"
    shutil.copyfile(installed_model_path(), model)
    with open(model, "ab") as f:
        f.write(b"\0")
    with pytest.raises(EmbedderError, match="embedding model .* sha256"):
        MiniLMEmbedder(model_path=model)
    with pytest.raises(EmbedderError, match="not found"):
        MiniLMEmbedder(model_path=tmp_path / "missing.onnx")


def _endpoint(requests: list[dict]) -> httpx.MockTransport:
    """An OpenAI-compatible /v1/embeddings: vector i of a batch is (len(text), i, 1),
    answered in reverse order (clients must sort by index)."""
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        requests.append(body)
        if body["input"] == ["fail"]:
            return httpx.Response(500, json={"error": {"message": "boom"}})
        data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), float(i), 1.0]}
                for i, t in enumerate(body["input"])]
        return httpx.Response(200, json={"object": "list", "data": data[::-1], "model": body["model"],
                                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})
    return httpx.MockTransport(handle)


def test_openai_embedder_batches_orders_and_normalizes() -> None:
    requests: list[dict] = []
    client = openai.OpenAI(api_key="k", base_url="http://embed.test/v1", max_retries=0,
                           http_client=httpx.Client(transport=_endpoint(requests)))
    embedder = OpenAIEmbedder(client, "nomic-embed-text", batch_size=2)
    out = embedder.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert [r["input"] for r in requests] == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    assert all(r["model"] == "nomic-embed-text" for r in requests)
    expected = np.array([[1, 0, 1], [2, 1, 1], [3, 0, 1], [4, 1, 1], [5, 0, 1]], dtype=np.float32)
    np.testing.assert_allclose(out, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)
    assert embedder.name == "openai:nomic-embed-text"
    with pytest.raises(EmbedderError, match="nomic-embed-text"):
        embedder.embed(["fail"])
