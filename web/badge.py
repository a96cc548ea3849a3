"""Shields-style README badges: two boxes, label and value, as one small SVG.

Text width is estimated from Verdana 11px advance widths by character class (what shields
renders with), so the boxes fit their text without a font on the server. Every text is
escaped: an agent's name is span content, and span content is hostile.
"""

from __future__ import annotations

from html import escape
from typing import Any

BADGE_METRICS = ("success", "runs", "score", "cost", "latency")  # what ``badge_value`` shows
GREY = "#9f9f9f"
COLORS = {"good": "#4c1", "ok": "#dfb317", "bad": "#e05d44", "info": "#007ec6", "none": GREY}

# Verdana 11px advance widths (px), by class; the default covers most lowercase letters.
_WIDTHS = {**dict.fromkeys("iIl.,:;'|!", 3.1), **dict.fromkeys("fjrt()[] ", 4.3), **dict.fromkeys("mwMW%@", 10.0),
           **dict.fromkeys("ABCDEFGHKNOPQRSTUVXYZ023456789#$&?+=<>~_-", 7.3)}


def text_width(text: str) -> float:
    return sum(_WIDTHS.get(ch, 6.3 if ch.isascii() else 8.0) for ch in text)


def badge(label: str, value: str, color: str = "info") -> str:
    """The SVG of a badge ``label | value``; ``color`` a COLORS key."""
    lw, vw = round(text_width(label) + 10), round(text_width(value) + 10)
    fill = COLORS.get(color, GREY)
    label_e, value_e = escape(label), escape(value)
    w = lw + vw
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img" '
            f'aria-label="{label_e}: {value_e}"><title>{label_e}: {value_e}</title>'
            f'<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
            f'<stop offset="1" stop-opacity=".1"/></linearGradient>'
            f'<clipPath id="r"><rect width="{w}" height="20" rx="3" fill="#fff"/></clipPath>'
            f'<g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/>'
            f'<rect x="{lw}" width="{vw}" height="20" fill="{fill}"/><rect width="{w}" height="20" fill="url(#s)"/></g>'
            f'<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">'
            f'<text x="{lw / 2:.1f}" y="14">{label_e}</text><text x="{lw + vw / 2:.1f}" y="14">{value_e}</text></g></svg>')


def badge_value(figures: dict[str, Any], metric: str) -> tuple[str, str, str]:
    """(label, value, colour) of an agent's figure ``metric`` (BADGE_METRICS)."""
    if metric == "runs":
        return "runs", f"{figures['runs']:,}", "info"
    if metric == "success":
        rate = figures["success_rate"]
        return "success", f"{rate:.0%}", "good" if rate >= 0.9 else "ok" if rate >= 0.7 else "bad"
    if metric == "score":
        score = figures["score"]
        if score is None:
            return "judge score", "not judged", "none"
        return "judge score", f"{score:.2f}", "good" if score >= 0.75 else "ok" if score >= 0.5 else "bad"
    if metric == "cost":
        cost = figures["cost_per_run"]
        return "cost/run", "unknown" if cost is None else f"${cost:.4f}", "info"
    p50 = figures["p50_ms"]
    return "latency p50", "unknown" if p50 is None else f"{p50 / 1000:.1f}s", "info"


GATE_COLORS = {"pass": "good", "no significant change": "info", "regression": "bad"}


def gate_badge_value(verdict: str | None) -> tuple[str, str, str]:
    """(label, value, colour) of the latest gate verdict (``gate_verdicts.verdict``)."""
    if verdict is None:
        return "gate", "no verdict", "none"
    return "gate", verdict, GATE_COLORS.get(verdict, "none")
