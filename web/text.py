"""Span content as people read it: the text of a run's task or answer, which the views keep
as a JSON array of GenAI messages (``[{"role", "parts": [{"type": "text", "content"}]}]``).

Pure; the templates use it as the ``message_text`` filter, and ``visible`` for text whose
direction controls must not reorder it (every result is still escaped by autoescape). A
preview cut mid-way (the rollup keeps 1,000 characters) is read as far as it goes;
anything that is not such an array is shown as it is.
"""

from __future__ import annotations

import json
import re
from typing import Any

_CONTENT = re.compile(r'"content"\s*:\s*"((?:[^"\\]|\\.)*)', re.S)


def message_text(value: Any) -> Any:
    """The text parts of a JSON message array, joined by blank lines; ``value`` unchanged
    when it is not one (None stays None)."""
    if not isinstance(value, str) or not value.lstrip().startswith("["):
        return value
    try:
        messages = json.loads(value)
    except ValueError:  # a cut preview: the text parts that are there, the last one cut
        found = [_unescape(m) for m in _CONTENT.findall(value)]
        return "\n\n".join(found).rstrip() + " …" if found else value
    texts = [str(p.get("content", "")) for m in messages if isinstance(m, dict)
             for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "text"]
    return "\n\n".join(texts) if texts else value


def _unescape(fragment: str) -> str:
    try:
        return json.loads(f'"{fragment}"')
    except ValueError:  # cut inside an escape
        return fragment.rsplit("\\", 1)[0]


# Bidirectional controls (an RTL override makes "gnp.exe" read "exe.png") in text that
# came over the wire, shown as their code points: evidence reads the way it was sent.
_BIDI = {ord(c): f"[U+{ord(c):04X}]" for c in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"}


def visible(text: Any) -> str:
    """The ``visible`` template filter: ``text`` with its bidirectional controls shown."""
    return str(text).translate(_BIDI)
