"""The web's pages as plain data, one module per page: each page is a function over a
``Site`` as its reader sees it (web/site.py: the one gateway, the caches per rollup
version, the reader's privacy) and the page's own arguments, returning a dict. The route
(web/app.py) renders it with its template or as its JSON twin (``/api/...``); the MCP
tools (web/mcp_server.py) answer from the same functions. Every statement is one of
``storage/queries/``; a page only picks, ranks, pairs and withholds rows.

What the figures are is said on every page and answer: ``TELEMETRY`` (what agents' own
spans said) or ``EVIDENCE`` (what the bench runner measured); no figure mixes the two.
"""

from __future__ import annotations

EVIDENCE = "benchmark evidence"
TELEMETRY = "self-reported telemetry"
# Of a reply, reason or error, the characters shown (the runner keeps 4,000 of a reply);
# the full length comes beside, so a page can say what it left out.
TEXT_CHARS = 1000
