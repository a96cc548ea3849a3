"""The share image (``/og/{agent}.png``): a real PNG of what SQL computes, cached until the
figures change (ETag, 304), 404 for unknown and private agents, hostile names drawn as
text in bounded time; against a lake written by the real collector from real OTel SDK
spans."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from dataclasses import asdict, replace
from typing import Any
from urllib.parse import quote

import pytest
from PIL import Image, ImageDraw
from starlette.testclient import TestClient

from otelbench.testing.agent_runs import Run
from otelbench.storage.privacy import Privacy
from tests.web.lakes import collector, rows, send
from otelbench.web.app import create_app
from otelbench.web.pages.embeds import card_figures
from otelbench.web.share import MAX_NAME_CHARS, SIZE, CardFigures, ShareImages, fit, font, render
from otelbench.web.site import Site

HOSTILE_NAME = "<script>alert(1)</script>"
SECRET = "TOP-SECRET-PAYROLL-FIGURES"
HIDDEN_INPUT = "the-hidden-input-text"
PRIVACY = Privacy(private_agents=("payroll",), hide_io_agents=("quiet",))
HOSTILE_NAMES = ["\u202eevil\u202dgnp.exe", HOSTILE_NAME, '"><img src=x onerror=alert(2)>', "x" * 1_000_000,
                 "\u0301" * 5000, "名前" * 400, "a\nb\x00c\x1b[31m", "", " ", "\U0001f600" * 50]


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Iterator[dict[str, Any]]:
    runs = [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(5)]
    runs += [Run("calc", "Divide by zero", None, error="ZeroDivisionError: division by zero")]
    runs += [Run("payroll", SECRET, SECRET)] * 2 + [Run("quiet", HIDDEN_INPUT, "a hidden answer")] * 2
    runs += [Run(HOSTILE_NAME, "hi", "there")]
    with collector(tmp_path_factory.mktemp("og")) as (url, root):
        send(url, root, runs)
        yield {"root": root, "url": url}


@pytest.fixture(scope="module")
def client(lake: dict[str, Any]) -> TestClient:
    return TestClient(create_app(lake["root"], PRIVACY, figures_every_s=0))


def test_a_1200x630_png_with_an_etag_and_a_cache_lifetime(client: TestClient) -> None:
    r = client.get("/og/calc.png")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(r.content))
    assert image.format == "PNG" and image.size == (1200, 630)
    assert r.headers["cache-control"] == "max-age=300" and r.headers["etag"].startswith('"')
    again = client.get("/og/calc.png", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == r.headers["etag"]
    assert client.head("/og/calc.png").status_code == 200


def test_it_draws_what_sql_computes(lake: dict[str, Any]) -> None:
    f = card_figures(Site(lake["root"], PRIVACY), "calc")
    runs, rate, p50 = rows(lake["root"], "SELECT count(*), avg((status <> 'error')::INT), "
                                         "quantile_cont(duration_ms, 0.5) FROM agent_runs WHERE agent = 'calc'")[0]
    assert (f.agent, f.runs, f.score, f.unit) == ("calc", runs, None, "hour")
    assert f.success_rate == pytest.approx(rate) and f.p50_ms == pytest.approx(p50) and sum(f.series) == runs


def test_the_image_changes_when_the_figures_do(client: TestClient, lake: dict[str, Any]) -> None:
    before = client.get("/og/calc.png")
    send(lake["url"], lake["root"], [Run("calc", "One more", "ok"), Run("calc", "And a failure", None, error="boom")])
    after = client.get("/og/calc.png", headers={"If-None-Match": before.headers["etag"]})
    assert after.status_code == 200 and after.headers["etag"] != before.headers["etag"]
    assert after.content != before.content


def test_drawn_once_per_figures_and_the_cache_is_bounded() -> None:
    images = ShareImages(size=2)
    a, b, c = (CardFigures(n, 3, 1.0, None, 12.0, "hour", (3,)) for n in "abc")
    key, png = images.get(a)
    assert images.get(a) == (key, png) and images.drawn == 1
    assert images.get(replace(a, runs=4))[0] != key and images.drawn == 2  # a figure changed
    images.get(b), images.get(c)  # a is pushed out (size 2) ...
    images.get(a)
    assert images.drawn == 5  # ... and drawn again
    assert render(a) == render(a)  # the same figures draw the same bytes: a stable ETag means a stable image


def test_unknown_and_private_agents_are_404_alike(client: TestClient) -> None:
    private, unknown = client.get("/og/payroll.png"), client.get("/og/nobody12.png")
    assert private.status_code == unknown.status_code == 404
    assert private.text.replace("payroll", "nobody12") == unknown.text and SECRET not in private.text


def test_a_hide_io_agent_gets_an_image_drawn_from_figures_only(client: TestClient, lake: dict[str, Any]) -> None:
    assert client.get("/og/quiet.png").status_code == 200
    drawn = repr(asdict(card_figures(Site(lake["root"], PRIVACY), "quiet")))
    assert HIDDEN_INPUT not in drawn and "a hidden answer" not in drawn


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_hostile_names_are_drawn_as_text_in_bounded_time(name: str) -> None:
    started = time.perf_counter()
    png = render(CardFigures(name, 10**12, 0.5, 0.123456, 10**9, "month", tuple(range(60))))
    assert time.perf_counter() - started < 1.0
    assert Image.open(io.BytesIO(png)).size == SIZE


def test_a_hostile_agent_gets_its_image(client: TestClient) -> None:
    r = client.get(f"/og/{quote(HOSTILE_NAME, safe='')}.png")
    assert r.status_code == 200 and Image.open(io.BytesIO(r.content)).size == SIZE


@pytest.mark.parametrize("name, cut", [("calc", False), ("a" * 60, True), ("W" * 500, True), ("x" * 1_000_000, True),
                                       ("\u0301" * (MAX_NAME_CHARS + 1), True)])
def test_names_are_fitted_with_textlength(name: str, cut: bool) -> None:
    draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    text, size = fit(draw, name, 1056)
    assert draw.textlength(text, font=font(size)) <= 1056
    assert text.endswith("…") == cut and len(text) <= MAX_NAME_CHARS + 1
    assert (size == 72) == (not cut and len(name) < 30)
    assert fit(draw, "a\nb\x00c", 1056)[0] == "a b c"  # a line break or NUL would be drawn as a box, or break the line
