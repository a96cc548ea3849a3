"""What a description of each planted failure family (failures.py) should name: words a
person describing the family would use, any one of which will do (lower case, matched as
substrings: "throttl" matches "throttled"). Loose on purpose: a correct description
passes, one about another family or about nothing in particular does not. Used by the
model test of cluster descriptions and ``benchmarks/cluster_descriptions.py``."""

from __future__ import annotations

SUBJECT_WORDS: dict[str, tuple[str, ...]] = {
    "weather_timeout": ("weather", "forecast"),
    "weather_bad_json": ("json", "decode", "pars", "unreadable", "garbled", "invalid", "malformed"),
    "flight_timeout": ("flight",),
    "llm_rate_limit": ("rate", "limit", "429", "too many", "throttl"),
    "billing_quota": ("quota", "billing", "spending", "credit", "plan"),
    "file_not_found": ("file", "not found", "exist", "no such"),
    "city_unknown": ("city", "location", "place", "geocod", "coordinates"),
    "context_overflow": ("context", "token", "too long", "length"),
    "max_iterations": ("iteration", "step", "loop", "converge"),
    "hallucinated_booking": ("hotel", "booking", "book", "reserv", "confirm", "room"),
    "db_connection_refused": ("database", "connect", "refused", "postgres", "order"),
    "db_deadlock": ("deadlock", "lock", "inventory"),
    "sql_syntax": ("sql", "syntax", "query"),
    "sql_unknown_column": ("column", "schema", "sql"),
    "auth_invalid_key": ("key", "auth", "credential", "401"),
    "oauth_expired": ("token", "oauth", "expire", "calendar", "credential"),
    "email_smtp": ("email", "mail", "smtp", "recipient", "bounce"),
    "email_attachment_too_big": ("attach", "size", "large", "big"),
    "code_exec_timeout": ("time", "sandbox", "script", "execution", "too long"),
    "code_exec_import": ("module", "import", "install", "library", "pandas"),
    "code_exec_zero_div": ("division", "zero", "divid"),
    "vector_store_down": ("vector", "retrieval", "index", "503", "embedding", "unavailable", "down"),
}


def names_subject(family: str, description: str) -> bool:
    """Whether ``description`` holds one of ``family``'s subject words (none for a family not listed)."""
    text = description.lower()
    return any(word in text for word in SUBJECT_WORDS.get(family, ()))
