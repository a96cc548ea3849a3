"""Which agent a span's work belongs to: the one rule behind ``spans.resolved_agent``.

The lake applies it when it writes a batch (``storage.lake``) and when it compacts
(``storage.compaction``); the views apply it at query time only to the rows neither could
resolve yet (``storage/queries/views.py``, ``_agent_ctes``). docs/schema.md states it:

- a span that names an agent (``agent_name``) belongs to it;
- else it belongs to its parent's agent, at any depth: the nearest span above it that
  names one (LangGraph nodes, workflow tasks and chains sit between an agent and its
  calls);
- a root that names none belongs to the agent its ingest request named
  (``request_agent``: the ``X-Bench-Agent`` header or the key's default), else to its
  service (``service_name``), and so does every span below it that has no agent span in
  between;
- a span whose chain of parents is broken (an ancestor not received yet) stays NULL,
  to be resolved later.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

MAX_DEPTH = 64  # levels walked per call; deeper chains finish at the next compaction

_NULL = pa.scalar(None, pa.string())


def resolve(trace: Any, span: Any, parent: Any, agent: Any, service: Any, given: Any = None,
            request_agent: Any = None) -> pa.Array:
    """``resolved_agent`` of each row, from these rows alone (string arrays of one length;
    ``given``: values already known, kept; ``request_agent``: the rows' request agents)."""
    trace, span, parent, agent, service = (_flat(a) for a in (trace, span, parent, agent, service))
    fallback = service if request_agent is None else pc.coalesce(_flat(request_agent), service)
    resolved = pc.coalesce(*([_flat(given)] if given is not None else []), agent,
                           pc.if_else(pc.is_null(parent), fallback, _NULL))
    if resolved.null_count == 0:
        return resolved
    # "trace/span" keys: ids are hex, so the separator keeps the pair unambiguous
    keys = pc.binary_join_element_wise(trace, span, "/")
    at = pc.index_in(pc.binary_join_element_wise(trace, parent, "/"), value_set=keys)
    for _ in range(MAX_DEPTH):
        filled = pc.coalesce(resolved, resolved.take(at))
        if filled.null_count == resolved.null_count:
            break
        resolved = filled
    return resolved


def resolve_columns(data: pa.Table) -> pa.Array:
    """``resolve`` over a table with the spans columns it needs (``resolved_agent`` given)."""
    names = data.column_names
    return resolve(data.column("trace_id"), data.column("span_id"), data.column("parent_span_id"),
                   data.column("agent_name"), data.column("service_name"),
                   data.column("resolved_agent") if "resolved_agent" in names else None,
                   data.column("request_agent") if "request_agent" in names else None)


def _flat(values: Any) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values if values.type == pa.string() else values.cast(pa.string())
