"""Per-item checks on a decoded OTLP request: count, and drop what cannot be stored.

Items that break the data model (a span without a valid trace or span id) are
rejected one by one and reported through ``partial_success``; the rest of the
request is accepted. Pure: no I/O, the request is edited in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ZERO16 = bytes(16)
_ZERO8 = bytes(8)


@dataclass(frozen=True)
class Checked:
    accepted: int
    rejected: int
    reason: str | None  # why items were rejected (first reason), for partial_success
    changed: bool  # items were removed: the request must be re-serialized


def _span_problem(span: Any) -> str | None:
    tid, sid, pid = span.trace_id, span.span_id, span.parent_span_id
    if len(tid) != 16 or tid == _ZERO16:
        return "span with an invalid trace_id (must be 16 bytes, not all zero)"
    if len(sid) != 8 or sid == _ZERO8:
        return "span with an invalid span_id (must be 8 bytes, not all zero)"
    if pid and len(pid) != 8:
        return "span with an invalid parent_span_id (must be empty or 8 bytes)"
    return None


def _log_problem(rec: Any) -> str | None:
    if rec.trace_id and len(rec.trace_id) != 16:
        return "log record with an invalid trace_id (must be empty or 16 bytes)"
    if rec.span_id and len(rec.span_id) != 8:
        return "log record with an invalid span_id (must be empty or 8 bytes)"
    return None


def _check_items(containers: list[Any], field: str, problem: Any) -> Checked:
    accepted = rejected = 0
    reason = None
    for items_holder in containers:
        items = getattr(items_holder, field)
        bad = []
        for i, item in enumerate(items):
            p = problem(item)
            if p is not None:
                bad.append(i)
                reason = reason or p
        for i in reversed(bad):
            del items[i]
        accepted += len(items)
        rejected += len(bad)
    return Checked(accepted, rejected, reason, rejected > 0)


_POINT_FIELDS = ("gauge", "sum", "histogram", "exponential_histogram", "summary")


def _points(metric: Any) -> int:
    which = metric.WhichOneof("data")
    return len(getattr(metric, which).data_points) if which else 0


def check(signal: str, request: Any) -> Checked:
    if signal == "traces":
        holders = [ss for rs in request.resource_spans for ss in rs.scope_spans]
        return _check_items(holders, "spans", _span_problem)
    if signal == "logs":
        holders = [sl for rl in request.resource_logs for sl in rl.scope_logs]
        return _check_items(holders, "log_records", _log_problem)
    # metrics: count data points; a metric without a name cannot be stored
    accepted = rejected = 0
    reason = None
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            bad = [i for i, m in enumerate(sm.metrics) if not m.name]
            for i in bad:
                rejected += _points(sm.metrics[i]) or 1
                reason = "metric without a name"
            for i in reversed(bad):
                del sm.metrics[i]
            accepted += sum(_points(m) for m in sm.metrics)
    return Checked(accepted, rejected, reason, rejected > 0)
