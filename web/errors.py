"""What a page answers instead of its data: the route table (web/app.py) turns these into
400 and 404, the MCP tools (web/mcp_server.py) into tool errors with the same message."""

from __future__ import annotations

import math
from typing import Any


class BadRequest(ValueError):
    """A query parameter that cannot be used; the message names it."""


class NotFound(LookupError):
    """No such agent, run, model or suite (or a private one): the message says what was not found."""


def choice(params: Any, name: str, allowed: Any, default: str) -> str:
    """A query parameter that must be one of ``allowed``: else BadRequest naming it."""
    value = params.get(name, default)
    if value not in allowed:
        raise BadRequest(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def number(params: Any, name: str) -> float | None:
    """A query parameter that must be a finite number, or absent (None): else BadRequest naming it."""
    value = params.get(name)
    if value in (None, ""):
        return None
    try:
        found = float(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(found):
        raise BadRequest(f"{name} must be a finite number, got {value!r}")
    return found


def integer(params: Any, name: str, default: int, low: int, high: int | None) -> int:
    """A query parameter that must be a whole number from ``low`` (to ``high``; None: no bound),
    ``default`` when absent: else BadRequest naming it."""
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        found = int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be a whole number, got {value!r}") from None
    if found < low or (high is not None and found > high):
        raise BadRequest(f"{name} must be from {low}{f' to {high}' if high is not None else ' up'}, got {found}")
    return found
