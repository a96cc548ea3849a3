"""Span content as people read it: the templates' ``message_text`` filter (the text of a
run's task or answer: storage/message_text.py, which run search indexes too), and
``visible`` for text whose direction controls must not reorder it (every result is still
escaped by autoescape).
"""

from __future__ import annotations

from typing import Any

from otelbench.storage.message_text import message_text

# Bidirectional controls (an RTL override makes "gnp.exe" read "exe.png") in text that
# came over the wire, shown as their code points: evidence reads the way it was sent.
_BIDI = {ord(c): f"[U+{ord(c):04X}]" for c in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"}


def visible(text: Any) -> str:
    """The ``visible`` template filter: ``text`` with its bidirectional controls shown."""
    return str(text).translate(_BIDI)


__all__ = ["message_text", "visible"]
