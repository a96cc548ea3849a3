"""Span content as people read it: the text of a run's task or answer, which the views keep
as a JSON array of GenAI messages (``[{"role", "parts": [{"type": "text", "content"}]}]``).

Pure; the web's templates show it (web/text.py) and run search indexes it
(storage/search_index.py), so a search matches the words a page shows. A preview cut
mid-way (the rollup keeps 1,000 characters) is read as far as it goes; anything that is
not such an array is read as it is.
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
