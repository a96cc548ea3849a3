"""What the web's live feed asks the lake (web/live.py): judge scores carry an agent but no
owner, so before a new score is pushed, the runs among them sent with a private owner's
key are looked up here (only when ``privacy.private_owners`` names any)."""

from __future__ import annotations

# The runs of $trace_ids that a private owner sent (their scores stay off the live feed).
PRIVATE_OWNER_TRACES = """SELECT DISTINCT trace_id
FROM spans
WHERE list_contains($trace_ids, trace_id) AND list_contains($private_owners, coalesce(owner, ''))"""

__all__ = ["PRIVATE_OWNER_TRACES"]
