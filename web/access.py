"""Who reads, and what they may see: default-deny for anything not public.

A visitor without a key sees public data: the ``privacy:`` rules as configured (private
agents and owners absent, ``hide_io`` ones without inputs and outputs). A ``read`` key
(``receivers.otlp.auth.keys`` with scope ``read``, docs/config.md) sees that plus exactly
what its grants name — agents by name, or the runs of key owners, with inputs and outputs
(``io: true``) or their figures only — and nothing else. The key comes in the
``X-Bench-Key`` or ``Authorization: Bearer`` header (pages, JSON, badges, MCP over HTTP),
or, for an embed or a badge in someone else's page, as a signed short-lived link made for
one agent (``sign``/``verify``: HMAC-SHA256 keyed by the key's digest, so only the holder's
server can make or check it, and it names no key).

Every reader of the web — pages, JSON twins, badges, embeds, share images and the MCP
tools — resolves its ``Privacy`` here, so all of them enforce the same policy.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence
from typing import Any

from otelbench.storage.privacy import Privacy

MAX_LINK_TTL_S = 7 * 24 * 3600  # a signed link lives a week at most


class Denied(PermissionError):
    """A key that cannot be used to read (unknown, expired, revoked, no ``read`` scope) or
    a signed link that does not verify: the message says which, never echoing the key."""


def granted(base: Privacy, grants: Sequence[Any]) -> Privacy:
    """``base`` with what ``grants`` open: a granted agent or owner is no longer private;
    with ``io``, no longer ``hide_io`` either; without it, a formerly private one is shown
    as ``hide_io`` (its figures, never its texts)."""
    agents = {a for g in grants for a in g.agents}
    owners = {o for g in grants for o in g.owners}
    io_agents = {a for g in grants if g.io for a in g.agents}
    io_owners = {o for g in grants if g.io for o in g.owners}
    figures_only_agents = (agents - io_agents) & set(base.private_agents)
    figures_only_owners = (owners - io_owners) & set(base.private_owners)
    return Privacy(
        private_agents=tuple(a for a in base.private_agents if a not in agents),
        private_owners=tuple(o for o in base.private_owners if o not in owners),
        hide_io_agents=tuple(sorted({a for a in base.hide_io_agents if a not in io_agents} | figures_only_agents)),
        hide_io_owners=tuple(sorted({o for o in base.hide_io_owners if o not in io_owners} | figures_only_owners)))


class Access:
    """The base privacy and the configured keys; ``privacy_of`` a request's headers.

    ``keys``: the collector's ``Keyring`` (collector/keys.py), handed in by whoever starts
    the web (``otelbench web``, ``serve``, ``mcp``), so the web never imports the collector;
    None: no keys, everyone reads public data."""

    def __init__(self, privacy: Privacy, keys: Any = None, clock: Any = time.time) -> None:
        self.public = privacy
        self.keys = keys
        self._clock = clock

    def privacy_of(self, headers: Mapping[str, str], params: Mapping[str, str] | None = None,
                   name: str | None = None) -> Privacy:
        """What a request may see: public without a key, the key's grants with one, a signed
        link's for ``name`` (the agent its path names) when ``params`` carry one."""
        key = key_of(headers)
        if key:
            return granted(self.public, self._entry(key).grants)
        if params is not None and "sig" in params:
            return granted(self.public, self.verify(name or "", params).grants)
        return self.public

    def _entry(self, key: str) -> Any:
        if self.keys is None:
            raise Denied("this web has no keys: it shows public data to everyone (send no key)")
        entry, why = self.keys.lookup(key, "read")
        if entry is None:
            raise Denied(why.replace("ingest key", "key"))
        return entry

    def sign(self, key: str, name: str, ttl_s: int) -> dict[str, str]:
        """The query parameters of a link to ``name``'s embed or badge that a browser without
        the key may open for ``ttl_s`` seconds (at most a week)."""
        entry = self._entry(key)
        exp = str(int(self._clock()) + max(1, min(int(ttl_s), MAX_LINK_TTL_S)))
        return {"kid": entry.fingerprint, "exp": exp, "sig": _mac(entry.digest, name, exp)}

    def verify(self, name: str, params: Mapping[str, str]) -> Any:
        """The key entry a signed link was made with, if it verifies for ``name`` and has not
        expired; else Denied."""
        entry = self.keys.by_fingerprint(params.get("kid", "")) if self.keys is not None else None
        exp = params.get("exp", "")
        if entry is None or not exp.isdigit() or not hmac.compare_digest(_mac(entry.digest, name, exp),
                                                                         params.get("sig", "")):
            raise Denied("this signed link does not verify (made for another agent, or changed)")
        if int(exp) <= self._clock():
            raise Denied("this signed link has expired: ask for a new one")
        why = self.keys.still_usable(entry, "read")
        if why:
            raise Denied(f"the key this link was made with cannot read now: {why}")
        return entry


def _mac(secret: str, name: str, exp: str) -> str:
    return hmac.new(secret.encode(), f"{name}\n{exp}".encode(), hashlib.sha256).hexdigest()


def key_of(headers: Mapping[str, str]) -> str | None:
    """The key a request sends: ``X-Bench-Key``, else ``Authorization: Bearer``."""
    key = headers.get("x-bench-key")
    if key:
        return key
    value = headers.get("authorization", "")
    if value[:7].lower() != "bearer ":
        return None
    return value[7:].strip() or None
