"""What a page answers instead of its data: the route table (web/app.py) turns these into
400 and 404, the MCP tools (web/mcp_server.py) into tool errors with the same message."""

from __future__ import annotations

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
