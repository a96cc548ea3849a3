"""What the normalizer reads, as the doctor (``otelbench doctor``, docs/doctor.md) needs
it: the attribute keys some mapping uses, the deprecated GenAI keys and their current
names, and how a scope's attribute keys tell its conventions and semconv version.

Derived from the tables the normalizer applies (``normalize.conventions``,
``normalize.message_sources``, ``normalize.framework_messages``), never copied: a key
the normalizer starts reading stops being reported as "not read". Pure data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from otelbench.normalize import conventions as cv
from otelbench.normalize import framework_messages as fw
from otelbench.normalize import message_sources as ms

# The indexed (flattened) message keys the readers walk: ``{prefix}{i}.…``.
INDEXED_PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.")
# A key with its indices written ``N`` (``llm.input_messages.N.message.content``): the
# doctor counts keys in this form, so a long conversation is one key, not hundreds.
INDEX = "N"
_INDEX_RE = re.compile(r"\.[0-9]+(?=\.|$)")

# Every attribute key some mapping reads (in the N form for the indexed ones).
READ_KEYS: frozenset[str] = frozenset({
    *(k for aliases in cv.ALIASES.values() for k in aliases),
    *cv.ROW_PATH_KEYS, *cv.STREAM_FLAGS, *ms.MESSAGE_KEYS,
    "input.mime_type", "output.mime_type",  # how input.value / output.value are parsed
    fw.PYDANTIC_AI_NEW_INDEX, fw.PYDANTIC_AI_RESULT, "traceloop.span.kind", "traceloop.entity.name",
    # what the exception event and service resource carry (normalize.rows)
    "service.name", "exception.type", "exception.message",
})

# OTel's generic keys (HTTP, server, code location, the SDK's own), which no GenAI view
# shows and the doctor does not list as "not read": prefixes.
GENERIC_PREFIXES = ("http.", "url.", "server.", "client.", "network.", "net.", "code.", "telemetry.",
                    "thread.", "process.", "host.", "os.", "user_agent.", "otel.", "exception.",
                    "deployment.", "service.", "rpc.", "error.")

# The GenAI keys renamed by the semantic conventions → their current name: every alias
# after a field's first that is itself a gen_ai.* key, where the first is the current one
# (the renames: gen_ai.system → gen_ai.provider.name in v1.37, prompt/completion_tokens →
# input/output_tokens in v1.27, the usage details' older spellings). TTFT's aliases are
# names of different instrumentations, not renames.
_NOT_RENAMES = frozenset({"ttft_s"})
DEPRECATED: dict[str, str] = {
    alias: aliases[0]
    for field, aliases in cv.ALIASES.items() if field not in _NOT_RENAMES and aliases[0].startswith("gen_ai.")
    for alias in aliases[1:] if alias.startswith("gen_ai.")
}
# The whole-document prompt/completion attributes that gen_ai.input.messages /
# gen_ai.output.messages replaced (the indexed gen_ai.prompt.N.* are OpenLLMetry's own).
DEPRECATED.update({"gen_ai.prompt": "gen_ai.input.messages", "gen_ai.completion": "gen_ai.output.messages"})

# Semconv versions a key tells: (key, what its presence says).
PROVIDER_NEW, PROVIDER_OLD = "gen_ai.provider.name", "gen_ai.system"
TOKENS_OLD = ("gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens")


@dataclass(frozen=True)
class Convention:
    """A convention and what marks a scope's spans as speaking it: any key equal to one
    of ``keys`` or starting with one of ``prefixes``, or a scope name starting with one
    of ``scopes``."""

    name: str
    label: str
    keys: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()


CONVENTIONS: tuple[Convention, ...] = (
    Convention("genai", "OTel GenAI (current)", keys=("gen_ai.operation.name", PROVIDER_NEW, "gen_ai.input.messages",
                                                     "gen_ai.output.messages", "gen_ai.usage.input_tokens",
                                                     "gen_ai.request.model")),
    Convention("genai_deprecated", "OTel GenAI (deprecated names)", keys=tuple(DEPRECATED)),
    Convention("openinference", "OpenInference", keys=("openinference.span.kind", "input.value", "output.value"),
               prefixes=("llm.input_messages.", "llm.output_messages.", "llm.token_count.")),
    Convention("openllmetry", "OpenLLMetry (traceloop)", keys=("llm.request.type",),
               prefixes=("traceloop.", "gen_ai.prompt.", "gen_ai.completion.", "llm.usage.")),
    Convention("openlit", "OpenLIT", keys=("gen_ai.sdk.version",), prefixes=("openlit.",), scopes=("openlit",)),
    Convention("pydantic_ai", "pydantic-ai / logfire", prefixes=("logfire.", "pydantic_ai."),
               scopes=("pydantic-ai", "pydantic_ai", "logfire")),
    Convention("ai_sdk", "Vercel AI SDK", prefixes=("ai.",), scopes=("ai",)),
    Convention("mastra", "Mastra", prefixes=("mastra.",), scopes=("mastra",)),
)


def key_form(key: str) -> str:
    """``key`` with its numeric segments written N (``gen_ai.prompt.3.content`` →
    ``gen_ai.prompt.N.content``): the form READ_KEYS and the doctor's counts use."""
    return _INDEX_RE.sub("." + INDEX, key)


def is_read(key: str) -> bool:
    """Does some mapping read ``key`` (in either form)?"""
    return key in READ_KEYS or key.startswith(INDEXED_PREFIXES)


def is_generic(key: str) -> bool:
    return key.startswith(GENERIC_PREFIXES)


def conventions(scope_name: str | None, keys: set[str] | frozenset[str]) -> list[str]:
    """The names of the conventions a scope's spans speak, in CONVENTIONS order."""
    scope = (scope_name or "").lower()
    found = []
    for c in CONVENTIONS:
        if (any(k in keys for k in c.keys) or any(k.startswith(c.prefixes) for k in keys if c.prefixes)
                or any(scope == s or scope.startswith(s + ".") for s in c.scopes)):
            found.append(c.name)
    return found


def semconv_version(keys: set[str] | frozenset[str]) -> str | None:
    """What the GenAI keys tell of the semconv version the instrumentation follows
    (None: no GenAI key that tells): the provider key was renamed in v1.37, the token
    keys in v1.27."""
    if any(k in keys for k in TOKENS_OLD):
        return "< 1.27"
    if PROVIDER_NEW in keys:
        return ">= 1.37"
    if PROVIDER_OLD in keys:
        return "1.27 – 1.36"
    return None
