"""Which llm call asked for each tool call: the link ``tool_calls`` carries (SQL builders).

A tool span and the llm call whose answer requested it are separate spans, often
siblings. ``tool_links_ctes`` adds CTEs ending in ``tool_links``: one row per tool span
(``trace_id``, ``span_id``) with

- ``llm_span_id``: the asking call. By id where the tool span sends one and an llm
  call's output messages hold a ``tool_call`` part with that id, or a span under the
  call carries it (Mastra's ``model_chunk`` spans: the chat span's output holds only its
  text, the streamed tool call's id is its chunk's); else by order: the llm
  call that ended last before the tool span started, under the same parent (LangGraph,
  the Agents SDK, CrewAI, pydantic-ai, OpenLLMetry...), else under the same grandparent
  (frameworks that put each step in a span of its own: LlamaIndex's ``run_agent_step`` /
  ``call_tool``, LangGraph's ``model`` / ``tools`` nodes). A call whose output is known
  and asks for no tool asked for none of them.
- ``named``, ``position``, ``same_name``: the asking call's ``tool_call`` parts of the
  tool's name, and the tool span's place among the tool spans of that name linked to
  the call (by start time) and their number. ``asked_id`` reads the id from them: the
  k-th tool span takes the k-th part, only when the two counts are equal (exactly one
  reading), for a tool span that sends no id of its own.

Everything joins on the plain ``trace_id`` strings, so a ``WHERE trace_id = ?`` on the
view reaches every scan. The llm calls come from ``llm_calls`` (its messages from span
attributes or log events); nothing here joins into ``llm_calls`` itself. Cost: the output
messages of the llm calls of its traces are parsed twice (``link_named`` joins itself),
and ``link_chunks`` reads the spans' ``tool_call_id`` (NULL but on tool spans and
Mastra's chunks, so few rows reach its GROUP BY); cheap for one run, a scan of every call's output over a whole lake: so the link is the
``tool_call_links`` view, not columns of ``tool_calls``, and the run page reads it over
the run's own rows (storage.queries.web.RUN_TOOL_CALLS).
"""

from __future__ import annotations

# the ids of a call's tool_call parts, and those the spans under it carry
_IDS = "list_concat(list_transform(a.asked, lambda p: json_extract_string(p, '$.id')), a.chunk_ids)"
# the tool_call parts of a messages JSON array, in order (malformed JSON: none)
_ASKED = ("list_filter(CAST(json_extract(TRY_CAST({m} AS JSON), '$[*].parts[*]') AS JSON[]), "
          "lambda p: json_extract_string(p, '$.type') = 'tool_call')")


def tool_links_ctes() -> str:
    """CTEs (to follow others in a WITH) ending in ``tool_links``; they read the
    ``spans`` and ``llm_calls`` views."""
    asked = _ASKED.format(m="l.output_messages")
    return f"""link_tools AS NOT MATERIALIZED (
    SELECT t.trace_id, t.span_id, t.parent_span_id, g.parent_span_id AS grandparent_span_id,
           epoch_us(t.start_time) AS started, t.tool_name, t.tool_call_id
    FROM spans AS t
    LEFT JOIN spans AS g ON g.trace_id = t.trace_id AND g.span_id = t.parent_span_id
    WHERE t.span_type = 'tool'
),
link_chunks AS NOT MATERIALIZED (
    -- the tool call ids that spans other than tool spans carry, by their parent
    SELECT c.trace_id, c.parent_span_id AS span_id, list(c.tool_call_id) AS ids
    FROM spans AS c
    WHERE c.tool_call_id IS NOT NULL AND c.span_type IS DISTINCT FROM 'tool'
    GROUP BY c.trace_id, c.parent_span_id
),
link_asks AS NOT MATERIALIZED (
    SELECT l.trace_id, l.span_id, l.parent_span_id, g.parent_span_id AS grandparent_span_id,
           epoch_us(l.start_time) + coalesce(l.duration_ms, 0) * 1000 AS ended, {asked} AS asked,
           coalesce(k.ids, []) AS chunk_ids
    FROM llm_calls AS l
    LEFT JOIN spans AS g ON g.trace_id = l.trace_id AND g.span_id = l.parent_span_id
    LEFT JOIN link_chunks AS k ON k.trace_id = l.trace_id AND k.span_id = l.span_id
),
link_best AS NOT MATERIALIZED (
    -- per tool span, the best candidate: by id, then same parent, then same grandparent;
    -- of those, the one that ended last
    SELECT t.trace_id, t.span_id, any_value(t.tool_name) AS tool_name, any_value(t.started) AS started,
           arg_max({{'span_id': a.span_id, 'asked': a.asked}},
                   (CASE WHEN list_contains({_IDS}, t.tool_call_id) THEN 3
                         WHEN a.parent_span_id IS NOT DISTINCT FROM t.parent_span_id THEN 2 ELSE 1 END, a.ended)) AS best
    FROM link_tools AS t
    JOIN link_asks AS a ON a.trace_id = t.trace_id AND (
        list_contains({_IDS}, t.tool_call_id)
        OR (a.ended <= t.started AND coalesce(len(a.asked), 1) > 0
            AND (a.parent_span_id IS NOT DISTINCT FROM t.parent_span_id
                 OR (a.grandparent_span_id IS NOT NULL AND a.grandparent_span_id = t.grandparent_span_id))))
    GROUP BY t.trace_id, t.span_id
),
link_named AS NOT MATERIALIZED (
    SELECT b.trace_id, b.span_id, b.tool_name, b.started, b.best.span_id AS llm_span_id,
           list_filter(b.best.asked, lambda p: json_extract_string(p, '$.name') = b.tool_name) AS named
    FROM link_best AS b
),
tool_links AS (
    -- the tool spans of one name linked to one call, in start order: which one this is
    -- (a self-join, not a window function: DuckDB drops the view's join to a GROUP BY on
    -- its keys when no linked column is read, not to a window's output)
    SELECT n.trace_id, n.span_id, any_value(n.llm_span_id) AS llm_span_id, any_value(n.named) AS named,
           count(*) FILTER (WHERE m.started < n.started OR (m.started = n.started AND m.span_id <= n.span_id))
               AS position,
           count(*) AS same_name
    FROM link_named AS n
    JOIN link_named AS m ON m.trace_id = n.trace_id AND m.llm_span_id = n.llm_span_id
                        AND m.tool_name IS NOT DISTINCT FROM n.tool_name
    GROUP BY n.trace_id, n.span_id
)"""


def asked_id(k: str) -> str:
    """The id ``tool_links`` (alias ``k``) finds for a tool span that sends none: the
    matching ``tool_call`` part's, when there are as many parts of the name as tool spans."""
    return f"CASE WHEN {k}.same_name = len({k}.named) THEN json_extract_string({k}.named[{k}.position], '$.id') END"
