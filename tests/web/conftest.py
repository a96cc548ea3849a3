"""Fixtures for the browser tests: one headless Chromium per session, and ``browse``, which
opens a watched page on a running ``otelbench web`` (otelbench/testing/browser.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from otelbench.testing.browser import NO_BROWSER_ENV, SCREENSHOTS_ENV, Watch, chromium, missing


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Chromium; a test that needs it fails (with how to install it) when it is missing,
    unless OTELBENCH_NO_BROWSER=1 asks to leave the browser tests out."""
    if os.environ.get(NO_BROWSER_ENV) == "1":
        pytest.skip(f"{NO_BROWSER_ENV}=1: browser tests left out")
    if why := missing():
        pytest.fail(why, pytrace=False)
    with chromium() as b:
        yield b


@pytest.fixture
def browse(browser: Any) -> Iterator[Callable[..., tuple[Any, Watch]]]:
    """``browse(base_url, bypass_csp=False)`` -> ``(page, watch)``: a fresh context per call
    (1280×800), closed after the test."""
    contexts = []

    def open_page(base_url: str, *, bypass_csp: bool = False) -> tuple[Any, Watch]:
        context = browser.new_context(base_url=base_url, bypass_csp=bypass_csp,
                                      viewport={"width": 1280, "height": 800})
        context.set_default_timeout(15_000)  # a guard against a hung test; a page loads in < 1 s
        contexts.append(context)
        watch = Watch(context)
        return watch.page(), watch

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where tests save screenshots: $OTELBENCH_SCREENSHOTS (scripts/screenshots.sh points it
    at docs/screenshots), else a temporary folder."""
    return Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path_factory.mktemp("screenshots"))


@pytest.fixture(scope="session")
def suite_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake of real agent-suite runs (tests/web/suite_lake.py), shared by the suite pages'
    tests and the browser's."""
    from tests.web.suite_lake import suite_lake as write

    return write(tmp_path_factory.mktemp("suites"))
