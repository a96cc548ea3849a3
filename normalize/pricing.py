"""Model prices and the cost of one call, from the table kept in ``prices.json``.

Matching a model id (case-insensitive) to a price:

1. an exact id in the table wins (``gpt-4o-2024-05-13`` has its own price);
2. else the longest table id that is a prefix of the model id *and ends at a
   separator* (``-``, ``:``, ``@``, ``_``), so ``gpt-4o-2024-08-06`` → ``gpt-4o`` and
   ``gpt-4o-mini-2024-07-18`` → ``gpt-4o-mini``, while ``gpt-4`` never prices
   ``gpt-4o`` and ``gpt-4`` never prices ``gpt-4.5-preview``;
3. routing prefixes are dropped first: anything up to the last ``/``
   (OpenRouter ``openai/gpt-4o``, Gemini ``models/gemini-2.5-pro``) and a Bedrock
   ``[region.]anthropic.`` prefix.

An unknown model has no price and so no computed cost (``None``), never a guess.

Token accounting follows the GenAI semantic conventions: ``input_tokens`` is gross
and already includes cache reads and cache writes
(https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/ ,
``gen_ai.usage.input_tokens``), reasoning tokens are part of ``output_tokens``.
So cached tokens are moved from the input price to the cache price, never added
on top.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PRICES_FILE = Path(__file__).with_name("prices.json")
PER_TOKEN = 1e-6  # the table is in USD per 1M tokens
_SEPARATORS = frozenset("-:@_")


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens; a missing cache price means the input price applies."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


def load_prices(path: Path = PRICES_FILE) -> dict[str, Price]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {name.lower(): Price(**fields) for name, fields in doc["models"].items()}


PRICES: dict[str, Price] = load_prices()
# Longest first, so the first separator-bounded prefix found is the longest one.
_BY_LENGTH = sorted(PRICES, key=len, reverse=True)


def _strip_routing(model: str) -> str:
    m = model.strip().lower().rsplit("/", 1)[-1]
    i = m.find("anthropic.")  # Bedrock: "anthropic.claude-…", "us.anthropic.claude-…"
    return m[i + len("anthropic.") :] if i != -1 else m


@lru_cache(maxsize=4096)
def lookup(model: str) -> Price | None:
    """The price of ``model``, or None when the table does not know it."""
    if not model:
        return None
    m = _strip_routing(model)
    price = PRICES.get(m)
    if price is not None:
        return price
    for known in _BY_LENGTH:
        if len(m) > len(known) and m[len(known)] in _SEPARATORS and m.startswith(known):
            return PRICES[known]
    return None


def cost(
    price: Price,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_tokens: int | None = None,
    cache_write_tokens: int | None = None,
) -> float:
    """USD for one call; missing counts are 0.

    ``input_tokens`` is gross. Some instrumentations report it net of cache
    reads (Anthropic's raw ``input_tokens``); when the cached counts exceed it,
    it is treated as the uncached part instead of going negative.
    """
    gross = input_tokens or 0
    read = (cache_read_tokens or 0) if price.cache_read is not None else 0
    write = (cache_write_tokens or 0) if price.cache_write is not None else 0
    uncached = gross - read - write
    if uncached < 0:
        uncached = gross
    total = uncached * price.input + (output_tokens or 0) * price.output
    if read:
        total += read * price.cache_read  # type: ignore[operator]
    if write:
        total += write * price.cache_write  # type: ignore[operator]
    return total * PER_TOKEN


def compute_cost(
    model: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_tokens: int | None = None,
    cache_write_tokens: int | None = None,
) -> float | None:
    """USD for one call of ``model``; None for an unknown model or no token counts."""
    if input_tokens is None and output_tokens is None:
        return None
    price = lookup(model) if model else None
    if price is None:
        return None
    return cost(price, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
