"""The ``processors:`` section of ``otel-config.yaml`` (every key: docs/config.md; the
``privacy:`` section they obey: ``storage.privacy``). ``collector/config.py`` composes it
into the one strict parse of the file; nothing here imports more than pydantic, so the
receiver stays light.
"""

from __future__ import annotations

from pydantic import Field

from otelbench.storage.config_base import Strict

DEFAULT_INTERVAL_S = 300.0
DEFAULT_WINDOW_HOURS = 24.0 * 7
DEFAULT_JUDGE_PROMPT = "judge-run"  # processors/prompts/judge-run.txt
DEFAULT_JUDGE_CONCURRENCY = 4  # requests at once to an endpoint of your own
# requests at once to the embedded server: on 2 cores one at a time judges fastest, because a
# batch of two costs what two requests cost there and more requests evict each other's cached
# prompt prefixes (docs/judge.md, "Throughput")
EMBEDDED_JUDGE_CONCURRENCY = 1
DEFAULT_JUDGE_MAX_INPUT_TOKENS = 1500
DEFAULT_JUDGE_MAX_ATTEMPTS = 3
DEFAULT_SCORE_BELOW = 0.5
DEFAULT_MERGE_COSINE = 0.4  # processors.clustering.merge.MERGE_COSINE (not imported: it loads numpy)
EMBEDDED = "embedded"  # the endpoint that starts the embedded model server for the run
LOCAL_EMBEDDER = "local"  # the ONNX sentence embedder shipped with otelbench


class Judge(Strict):
    enabled: bool = True
    # "embedded": start the embedded SmolLM2 llama.cpp server for the run and stop it
    # afterwards; else the base URL of any OpenAI-compatible server (…/v1)
    endpoint: str = EMBEDDED
    model: str | None = None  # the served model's name; embedded: a GGUF path (default: SmolLM2)
    api_key_env: str | None = None  # the environment variable holding the endpoint's key
    # the endpoint runs on a machine the operator controls: private inputs may go there
    local: bool | None = None  # default: true for "embedded" and loopback URLs
    prompt: str = DEFAULT_JUDGE_PROMPT  # processors/prompts/<prompt>…
    concurrency: int | None = Field(None, ge=1, le=64)  # default: 1 on "embedded", else 4
    max_input_tokens: int = Field(DEFAULT_JUDGE_MAX_INPUT_TOKENS, ge=64)
    max_attempts: int = Field(DEFAULT_JUDGE_MAX_ATTEMPTS, ge=1)
    sample: float = Field(1.0, gt=0, le=1)  # the share of runs judged, chosen by a hash of the trace id
    # after judging, judge this many already-judged runs again (judge_repeats: the judge's noise)
    rejudge_sample: int = Field(0, ge=0)

    @property
    def requests_at_once(self) -> int:
        if self.concurrency is not None:
            return self.concurrency
        return EMBEDDED_JUDGE_CONCURRENCY if self.endpoint == EMBEDDED else DEFAULT_JUDGE_CONCURRENCY

    @property
    def is_local(self) -> bool:
        if self.local is not None:
            return self.local
        if self.endpoint == EMBEDDED:
            return True
        host = self.endpoint.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
        return host in ("127.0.0.1", "localhost", "::1")


class Clusters(Strict):
    enabled: bool = True
    score_below: float = Field(DEFAULT_SCORE_BELOW, ge=0, le=1)  # a judged run below it counts as failed
    min_cluster_size: int | None = Field(None, ge=2)  # default: max(5, 1% of the agent's failures)
    embedder: str = LOCAL_EMBEDDER  # "local", or the base URL of an OpenAI-compatible /v1/embeddings
    embedding_model: str | None = None  # the endpoint's embedding model
    describe: bool = True  # ask the judge's endpoint for a short label per cluster
    # clusters of one cause (error type and failing tool) with centroids this alike are
    # merged; null keeps HDBSCAN's clusters as they are
    merge_cosine: float | None = Field(DEFAULT_MERGE_COSINE, ge=-1, le=1)


class Processors(Strict):
    # `otelbench serve` runs the processors every interval_s (0: only `otelbench process`)
    interval_s: float = Field(DEFAULT_INTERVAL_S, ge=0)
    window_hours: float = Field(DEFAULT_WINDOW_HOURS, gt=0)  # runs this recent are judged and clustered
    judge: Judge = Judge()
    clusters: Clusters = Clusters()
