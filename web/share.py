"""The 1200×630 share image of an agent (``/og/{agent}.png``, what a link preview shows):
name, headline figures and a sparkline of runs over time, drawn with Pillow, no browser.

- The font ships with the package (``web/fonts/``: DejaVu Sans Bold, Bitstream Vera
  license beside it), so the image looks the same on every machine.
- Text is laid out with Pillow's basic engine: characters are drawn in the order they
  were sent, so an RTL override cannot make a name look like another one; a name is cut
  to ``MAX_NAME_CHARS`` before it is measured (a 1 MB name costs what a long one does)
  and fitted with ``textlength``, shrinking and then ending in an ellipsis.
- Drawing takes ~25 ms; ``ShareImages`` keeps the latest ``CACHE_SIZE`` images by the
  hash of what they draw, so an image is drawn again only when the agent's figures change.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from otelbench.web.charts import duration

if TYPE_CHECKING:
    from PIL.ImageDraw import ImageDraw
    from PIL.ImageFont import FreeTypeFont

SIZE = (1200, 630)
FONT_PATH = Path(__file__).parent / "fonts" / "DejaVuSans-Bold.ttf"
DRAWING_VERSION = 1  # part of the cache key: a new layout is a new image for every agent
MAX_NAME_CHARS = 200  # more never fits 1056 px, even at the smallest size
NAME_SIZES = (72, 60, 48)  # px, tried in order before the name is cut
CACHE_SIZE = 256  # images kept (~35 KB each)
MARGIN = 72
BG, INK, MUTED, LINE, FILL = "#0f172a", "#f8fafc", "#94a3b8", "#38bdf8", "#1e3a5f"
GOOD, OK, BAD = "#4ade80", "#facc15", "#f87171"
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True)
class CardFigures:
    """What the share image draws (web/pages/embeds.py reads them); equal figures draw the
    same image (its cache key)."""

    agent: str
    runs: int
    success_rate: float | None
    score: float | None
    p50_ms: float | None
    unit: str
    series: tuple[int, ...]  # runs per unit, oldest first


@lru_cache(maxsize=None)
def font(size: int) -> FreeTypeFont:
    from PIL import ImageFont

    return ImageFont.truetype(str(FONT_PATH), size, layout_engine=ImageFont.Layout.BASIC)


def fit(draw: ImageDraw, text: str, width: float, sizes: tuple[int, ...] = NAME_SIZES) -> tuple[str, int]:
    """``(text, size)``: the largest size at which ``text`` fits ``width`` px, else the
    smallest with the text cut to fit and ending in an ellipsis."""
    cut = len(text) > MAX_NAME_CHARS
    text = _UNPRINTABLE.sub(" ", text[:MAX_NAME_CHARS])
    for size in () if cut else sizes:
        if draw.textlength(text, font=font(size)) <= width:
            return text, size
    size = sizes[-1]
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits with the ellipsis
        mid = (lo + hi + 1) // 2
        if draw.textlength(text[:mid] + "…", font=font(size)) <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + "…", size


def figures_text(f: CardFigures) -> list[tuple[str, str, str]]:
    """The headline figures as ``(value, label, colour)``."""
    rate = f.success_rate
    rate_colour = INK if rate is None else GOOD if rate >= 0.9 else OK if rate >= 0.7 else BAD
    return [(f"{f.runs:,}", "runs", INK),
            ("—" if rate is None else f"{rate:.0%}", "success", rate_colour),
            ("—" if f.score is None else f"{f.score:.2f}", "judge score", INK),
            ("—" if f.p50_ms is None else duration(f.p50_ms), "latency p50", INK)]


def render(f: CardFigures) -> bytes:
    """The share image of ``f`` as PNG bytes."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", SIZE, BG)
    draw = ImageDraw.Draw(image)
    width = SIZE[0] - 2 * MARGIN
    draw.text((MARGIN, 56), "otelbench · agent", font=font(28), fill=MUTED)
    name, size = fit(draw, f.agent, width)
    draw.text((MARGIN, 170), name, font=font(size), fill=INK, anchor="ls")
    column = width / 4
    for i, (value, label, colour) in enumerate(figures_text(f)):
        x = MARGIN + i * column
        value, value_size = fit(draw, value, column - 24, (64, 48, 36))
        draw.text((x, 300), value, font=font(value_size), fill=colour, anchor="ls")
        draw.text((x, 320), label, font=font(26), fill=MUTED)
    _sparkline(draw, f.series, (MARGIN, 410, SIZE[0] - MARGIN, 540))
    draw.text((MARGIN, 556), f"runs per {f.unit}" if f.series else "no runs yet", font=font(24), fill=MUTED)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _sparkline(draw: ImageDraw, values: tuple[int, ...], box: tuple[int, int, int, int]) -> None:
    x0, y0, x1, y1 = box
    draw.line([(x0, y1), (x1, y1)], fill=FILL, width=2)
    if not values:
        return
    top = max(values) or 1
    step = (x1 - x0) / max(len(values) - 1, 1)
    points = [(x0 + i * step, y1 - (y1 - y0) * v / top) for i, v in enumerate(values)]
    if len(points) == 1:
        points.append((x1, points[0][1]))
    draw.polygon([(x0, y1), *points, (points[-1][0], y1)], fill=FILL)
    draw.line(points, fill=LINE, width=5, joint="curve")


def image_key(f: CardFigures) -> str:
    """The hash of what the image draws (and of how): its cache key and ETag."""
    payload = json.dumps({"v": DRAWING_VERSION, **asdict(f)}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


class ShareImages:
    """The latest ``size`` share images by ``image_key``; one drawn at a time (FreeType
    faces are not shared across threads, and a burst of previews should not use every
    core)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._images: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.drawn = 0  # images drawn (the rest were served from the cache)

    def get(self, f: CardFigures) -> tuple[str, bytes]:
        """``(etag key, PNG bytes)`` of ``f``'s image, drawn only when not cached."""
        key = image_key(f)
        with self._lock:
            if key in self._images:
                self._images.move_to_end(key)
                return key, self._images[key]
            png = render(f)
            self.drawn += 1
            self._images[key] = png
            while len(self._images) > self.size:
                self._images.popitem(last=False)
        return key, png
