"""normalize.pricing: model id → price, and the cost of one call."""

from __future__ import annotations

import json
import math

import pytest

from otelbench.normalize.pricing import PRICES, PRICES_FILE, Price, compute_cost, cost, lookup

LOOKUPS = [
    # (model as reported, table entry it must price as; None = unknown)
    ("gpt-4o", "gpt-4o"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),  # an exact id beats its prefix
    ("gpt-4o-mini", "gpt-4o-mini"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # not gpt-4o
    ("GPT-4o-Mini", "gpt-4o-mini"),
    ("gpt-4.1-2025-04-14", "gpt-4.1"),
    ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
    ("gpt-4.1-nano", "gpt-4.1-nano"),
    ("gpt-4-0613", "gpt-4"),
    ("gpt-4-turbo-2024-04-09", "gpt-4-turbo"),
    ("o1-2024-12-17", "o1"),
    ("o1-mini-2024-09-12", "o1-mini"),
    ("o3-mini-2025-01-31", "o3-mini"),
    ("o3-2025-04-16", "o3"),
    ("o4-mini-2025-04-16", "o4-mini"),
    ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
    ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
    ("claude-3-7-sonnet-20250219", "claude-3-7-sonnet"),
    ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
    ("claude-sonnet-4-20250514", "claude-sonnet-4"),
    ("claude-opus-4-20250514", "claude-opus-4"),
    ("claude-opus-4-1-20250805", "claude-opus-4-1"),
    ("claude-opus-4-5-20251101", "claude-opus-4-5"),
    ("claude-3-opus@20240229", "claude-3-opus"),  # Vertex AI spelling
    ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),  # Bedrock
    ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
    ("gemini-1.5-pro-002", "gemini-1.5-pro"),
    ("gemini-1.5-flash-8b", "gemini-1.5-flash-8b"),
    ("gemini-2.0-flash-001", "gemini-2.0-flash"),
    ("gemini-2.0-flash-lite-001", "gemini-2.0-flash-lite"),
    ("models/gemini-2.5-pro", "gemini-2.5-pro"),
    ("gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"),
    ("openai/gpt-4o", "gpt-4o"),  # OpenRouter-style routing prefix
    ("mistral-large-latest", "mistral-large"),
    ("mistral-small-2503", "mistral-small"),
    ("deepseek-chat", "deepseek-chat"),
    ("text-embedding-3-small", "text-embedding-3-small"),
    # unknown: no guess
    ("gpt-4.5-preview", None),  # "." is not a version separator: not gpt-4
    ("gpt-4omni", None),
    ("o1x", None),
    ("llama-3.1-8b-instruct", None),
    ("/models/SmolLM2-135M-Instruct.Q4_1.gguf", None),
    ("", None),
]


@pytest.mark.parametrize(("model", "entry"), LOOKUPS)
def test_lookup(model: str, entry: str | None) -> None:
    assert lookup(model) == (None if entry is None else PRICES[entry])


P = Price(input=2.0, output=8.0, cache_read=0.5, cache_write=2.5)
NO_CACHE = Price(input=2.0, output=8.0)

COSTS = [
    # (price, input gross, output, cache read, cache write, USD)
    (P, 1_000_000, 0, None, None, 2.0),
    (P, 0, 1_000_000, None, None, 8.0),
    (P, None, 1_000_000, None, None, 8.0),
    (P, 1000, 100, None, None, (1000 * 2 + 100 * 8) / 1e6),
    # cache reads come out of the gross input, priced once at the cache price
    (P, 1000, 100, 800, None, (200 * 2 + 800 * 0.5 + 100 * 8) / 1e6),
    (P, 1000, 100, 800, 100, (100 * 2 + 800 * 0.5 + 100 * 2.5 + 100 * 8) / 1e6),
    (P, 1000, 100, 1000, 0, (1000 * 0.5 + 100 * 8) / 1e6),
    # no cache prices: cached tokens are charged as input
    (NO_CACHE, 1000, 100, 800, 100, (1000 * 2 + 100 * 8) / 1e6),
    # input reported net of cache reads (cached > input): not negative
    (P, 10, 100, 1000, None, (10 * 2 + 1000 * 0.5 + 100 * 8) / 1e6),
]


@pytest.mark.parametrize(("price", "inp", "out", "read", "write", "usd"), COSTS)
def test_cost(price: Price, inp: int | None, out: int | None, read: int | None, write: int | None,
              usd: float) -> None:
    assert cost(price, inp, out, read, write) == pytest.approx(usd)


@pytest.mark.parametrize(("model", "inp", "out", "read", "usd"), [
    ("gpt-4o-2024-08-06", 1000, 100, 800, (200 * 2.5 + 800 * 1.25 + 100 * 10) / 1e6),
    ("gpt-4o-mini-2024-07-18", 1000, 100, None, (1000 * 0.15 + 100 * 0.6) / 1e6),
    ("unknown-model", 1000, 100, None, None),
    (None, 1000, 100, None, None),
    ("gpt-4o", None, None, None, None),
])
def test_compute_cost(model: str | None, inp: int | None, out: int | None, read: int | None,
                      usd: float | None) -> None:
    got = compute_cost(model, inp, out, read)
    assert got == (None if usd is None else pytest.approx(usd))


def test_price_table_is_documented_and_sane() -> None:
    doc = json.loads(PRICES_FILE.read_text())
    assert doc["source"].startswith("Vendors' public list prices") and doc["as_of"]
    assert "1M" in doc["unit"]
    for name, p in PRICES.items():
        assert name == name.lower()
        values = [p.input, p.output, p.cache_read, p.cache_write]
        assert all(v is None or (math.isfinite(v) and v >= 0) for v in values), name
        if p.cache_read is not None:
            assert p.cache_read <= p.input, name
    for family in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "o1", "o3", "o4-mini", "claude-3-5-sonnet",
                   "claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4", "claude-3-5-haiku",
                   "gemini-1.5-pro", "gemini-2.0-flash", "gemini-2.5-pro", "gemini-2.5-flash", "mistral-large"):
        assert family in PRICES
