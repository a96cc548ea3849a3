"""Cluster ids that last across runs: a cluster that mostly keeps its members keeps its id.

HDBSCAN numbers its clusters afresh on every run. To let "first seen", "last seen" and
"growing" mean something, each new cluster is matched to the previous run's clusters by
their members (trace ids):

- a previous cluster is judged by its members still among this run's failures (older
  ones left the window; they say nothing either way);
- a new cluster inherits a previous cluster's id when it holds a strict majority of those
  members; a previous cluster can so pass its id to at most one new cluster;
- when several previous clusters pass to one new cluster (they merged), the one with the
  most shared members wins (then the lowest id, the oldest); the others' ids retire;
- every other new cluster gets a fresh id, counting on from the highest id ever issued
  for the agent (``next_id``), so a retired id is never reused for another failure.

When none of a previous cluster's members is still in the window, nothing can be matched
and a returning failure gets a new id.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping


def match_ids(new: Mapping[int, Collection[str]], previous: Mapping[int, Collection[str]],
              present: Collection[str], next_id: int) -> tuple[dict[int, int], int]:
    """Ids for the ``new`` clusters (label -> member trace ids), given the ``previous``
    run's clusters (id -> member trace ids) and the trace ids of all of this run's
    failures (``present``). Returns ({label: id}, the next fresh id)."""
    present = present if isinstance(present, (set, frozenset)) else set(present)
    owner: dict[str, int] = {}  # trace id -> new label
    for label, members in new.items():
        for trace_id in members:
            owner[trace_id] = label

    claims: list[tuple[int, int, int]] = []  # (shared members, previous id, new label)
    for old_id, members in previous.items():
        surviving = [t for t in members if t in present]
        if not surviving:
            continue
        shares: dict[int, int] = {}
        for trace_id in surviving:
            label = owner.get(trace_id)
            if label is not None:
                shares[label] = shares.get(label, 0) + 1
        for label, shared in shares.items():
            if 2 * shared > len(surviving):  # a strict majority: at most one label per old id
                claims.append((shared, old_id, label))

    ids: dict[int, int] = {}
    taken: set[int] = set()
    for shared, old_id, label in sorted(claims, key=lambda c: (-c[0], c[1])):
        if label not in ids and old_id not in taken:
            ids[label] = old_id
            taken.add(old_id)
    fresh = max([next_id, *(i + 1 for i in previous)], default=next_id)
    for label in sorted(new):
        if label not in ids:
            ids[label] = fresh
            fresh += 1
    return ids, fresh
