"""The web UI in a real browser: headless Chromium (Playwright) on a real ``otelbench web``
over lakes the real collector wrote from real OTel SDK spans. What a person sees must be
what SQL over the lake says; hostile span content must stay text; nothing may leave
127.0.0.1. Screenshots land in $OTELBENCH_SCREENSHOTS (scripts/screenshots.sh) or a tmp dir.

Add a page: visit it with ``browse(server.url)``, assert on ``data-figure`` cells against
``_sql``, end with ``watch.problems(page) == []``, and add it to ``_hostile_pages``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.browser import another_site, screenshot
from otelbench.testing.collector import lake_of_runs
from otelbench.testing.serve import serve_web
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake
from otelbench.web.charts import duration

# ~30 s on this 2-core machine (two lakes written by the collector, ~30 page loads): in the
# full run and CI, not in `-m "not slow"`
pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Server:
    url: str  # otelbench web, http://127.0.0.1:port
    lake: Path


def _sql(lake: Path, sql: str, params: dict[str, Any] | None = None) -> list[tuple]:
    with open_lake(lake) as gw:
        return gw.query(sql, params, max_rows=None).rows


@pytest.fixture(scope="module")
def showcase(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Three agents with realistic run times (the README's screenshots show this lake)."""
    runs = [Run("calc", f"What is {i} * 7?", str(i * 7), tool="multiply", seconds=s)
            for i, s in enumerate([1.2, 1.5, 1.9, 2.4, 2.8, 3.3])]
    runs += [Run("calc", "What is 1 / 0?", None, error="ZeroDivisionError: division by zero", tool="divide",
                 tool_error="division by zero", seconds=0.8)]
    runs += [Run("researcher", f"Summarise paper {i}", f"Paper {i} shows that …", tool="web_search",
                 tool_error="timed out after 5 s" if i == 2 else None, seconds=s)
             for i, s in enumerate([6.1, 8.4, 14.2, 9.7])]
    runs += [Run("researcher", "Summarise paper 9", None, error="no sources found", tool="web_search", seconds=4.0)]
    runs += [Run("support-bot", q, "Here is how …", seconds=s)
             for q, s in [("How do I reset my password?", 0.6), ("Where is my invoice?", 0.9), ("Cancel plan", 0.7)]]
    lake = lake_of_runs(tmp_path_factory.mktemp("showcase"), runs)
    with serve_web(lake) as url:
        yield Server(url, lake)


def _figures(scope: Any) -> dict[str, str]:
    """The visible text of every ``data-figure`` cell under ``scope`` (a page or locator)."""
    return {cell.get_attribute("data-figure"): cell.inner_text() for cell in scope.locator("[data-figure]").all()}


def _pct(ok: int, runs: int) -> str:
    return f"{ok / runs * 100:.0f}%"


def _visit(page: Any, path: str) -> Any:
    response = page.goto(path)
    assert response is not None and response.status == 200, path
    return page


FIGURES_SQL = """SELECT agent, count(*), count(*) FILTER (WHERE status <> 'error'),
       quantile_cont(duration_ms, 0.5) / 1000, quantile_cont(duration_ms, 0.95) / 1000
FROM agent_runs GROUP BY agent ORDER BY count(*) DESC, agent"""


def test_the_leaderboard_shows_what_sql_computes(showcase: Server, browse, screenshots: Path) -> None:
    page, watch = browse(showcase.url)
    _visit(page, "/leaderboard?window=all")
    expected = {agent: {"runs": str(n), "success_rate": _pct(ok, n), "p50_s": f"{p50:.1f}", "p95_s": f"{p95:.1f}"}
                for agent, n, ok, p50, p95 in _sql(showcase.lake, FIGURES_SQL)}
    rows = page.locator("#ranked tr[data-agent]").all()
    shown = {row.get_attribute("data-agent"): _figures(row) for row in rows}
    assert [row.get_attribute("data-agent") for row in rows] == list(expected)  # by runs, most first
    assert {a: {k: f[k] for k in expected[a]} for a, f in shown.items()} == expected
    assert shown["calc"]["success_rate"] == "86%" and shown["researcher"]["p95_s"] == "13.3"
    page.get_by_role("link", name="success", exact=True).click()  # rates rank only agents with ≥ 5 runs
    page.wait_for_url("**sort=success**")
    assert [r.get_attribute("data-agent") for r in page.locator("#ranked tr[data-agent]").all()] == [
        "calc", "researcher"]
    assert [r.get_attribute("data-agent") for r in page.locator("#unranked tr[data-agent]").all()] == ["support-bot"]
    page.get_by_role("link", name="runs", exact=True).click()
    page.wait_for_url("**sort=runs**")
    screenshot(page, screenshots / "leaderboard.png")
    assert watch.problems(page) == []


def test_a_profile_and_its_runs_show_what_sql_has(showcase: Server, browse, screenshots: Path) -> None:
    page, watch = browse(showcase.url)
    _visit(page, "/leaderboard?window=all")
    page.get_by_role("link", name="researcher", exact=True).click()  # as a person gets there
    page.wait_for_url("**/agents/researcher")
    assert page.locator("h1").inner_text() == "researcher"
    (_, n, ok, p50, p95), = [r for r in _sql(showcase.lake, FIGURES_SQL) if r[0] == "researcher"]
    figures = _figures(page.locator("table").first)
    assert figures == {"runs": str(n), "success_rate": _pct(ok, n), "score": "—", "cost_per_run": "—",
                       "p50": duration(p50 * 1000), "p95": duration(p95 * 1000)}
    runs = _sql(showcase.lake, "SELECT trace_id, status FROM agent_runs WHERE agent = 'researcher' "
                               "ORDER BY start_time DESC, trace_id")
    rows = page.locator("#recent-runs tr[data-trace]").all()
    assert [(r.get_attribute("data-trace"), _figures(r)["status"]) for r in rows] == runs
    assert [img.evaluate("i => i.complete && i.naturalWidth > 0") for img in page.locator("img").all()] == [True] * 5
    screenshot(page, screenshots / "agent.png")

    failed = next(trace for trace, status in runs if status == "error")
    page.locator(f'#recent-runs tr[data-trace="{failed}"] a').click()
    page.wait_for_url(f"**/runs/{failed}")
    spans = _sql(showcase.lake, "SELECT span_id, name FROM spans WHERE trace_id = $t ORDER BY start_time, span_id",
                 {"t": failed})
    shown = page.locator("tr[data-span]").all()
    assert [(s.get_attribute("data-span"), _figures(s)["name"]) for s in shown] == spans
    assert page.get_by_text("no sources found").first.is_visible()
    screenshot(page, screenshots / "run.png")
    assert watch.problems(page) == []


def test_compare_says_which_is_better_on_each_line(showcase: Server, browse, screenshots: Path) -> None:
    page, watch = browse(showcase.url)
    _visit(page, "/vs/calc/researcher")
    rows = {r[0]: r for r in _sql(showcase.lake, FIGURES_SQL)}
    lines = {row.get_attribute("data-line"): {c.get_attribute("data-side"): c.inner_text()
                                              for c in row.locator("[data-side]").all()}
             for row in page.locator("tr[data-line]").all()}
    calc, researcher = rows["calc"], rows["researcher"]
    assert lines["runs"]["a"] == str(calc[1]) and lines["runs"]["b"] == str(researcher[1])
    assert lines["runs"]["better"].startswith("calc")  # more runs
    assert lines["p50_ms"]["a"] == f"{calc[3] * 1000:.4g}" and lines["p50_ms"]["better"].startswith("calc")
    assert lines["success_rate"]["a"] == f"{calc[2] / calc[1]:.4g}"
    assert lines["score"] == {"a": "—", "b": "—", "better": "— (higher is better)"}
    screenshot(page, screenshots / "compare.png")
    assert watch.problems(page) == []


FRAME_SIZES = {"sm": (200, 90), "md": (260, 150), "lg": (300, 220)}  # width, height of each embed's iframe


def _embedder(frames: dict[str, str]) -> Any:
    """Another site (its own origin) whose page frames ``frames`` (id -> URL) side by side."""
    html = "".join(f'<figure><figcaption>{name}</figcaption><iframe id="{name}" src="{src}" '
                   f'width="{FRAME_SIZES[name[-2:]][0]}" height="{FRAME_SIZES[name[-2:]][1]}" '
                   'style="border:1px solid #999"></iframe></figure>' for name, src in frames.items())
    return another_site("<!doctype html><title>another site</title><body style='display:flex;flex-wrap:wrap;"
                        f"font:14px sans-serif;background:#eef'>{html}</body>")


def _luminance(css_rgb: str) -> float:
    r, g, b = (int(v) for v in css_rgb[css_rgb.index("(") + 1:css_rgb.index(")")].split(",")[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_the_embed_in_both_themes_and_sizes_on_another_site(showcase: Server, browse, screenshots: Path) -> None:
    page, watch = browse(showcase.url)
    frames = {f"{theme}-{size}": f"{showcase.url}/embed/calc?theme={theme}&size={size}"
              for theme in ("light", "dark") for size in ("sm", "md", "lg")}
    with _embedder(frames) as site:
        page.goto(site)
    (_, n, ok, *_), = [r for r in _sql(showcase.lake, FIGURES_SQL) if r[0] == "calc"]
    colours = {}
    for name in frames:
        frame = page.frame_locator(f"#{name}")
        assert _figures(frame) == {"runs": str(n), "success_rate": _pct(ok, n)}
        assert frame.locator("a").inner_text() == "calc"
        assert frame.get_by_text("judge score").count() == (0 if name.endswith("sm") else 1)
        colours[name] = frame.locator("body").evaluate(
            "b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).color]")
    for size in ("sm", "md", "lg"):
        (light_bg, light_fg), (dark_bg, dark_fg) = colours[f"light-{size}"], colours[f"dark-{size}"]
        assert _luminance(dark_bg) < _luminance(dark_fg) and _luminance(light_bg) > _luminance(light_fg)
        assert _luminance(dark_bg) < _luminance(light_bg)
    screenshot(page, screenshots / "embed.png")
    assert watch.problems(page) == []


def test_only_the_embed_may_be_framed_by_another_site(showcase: Server, browse) -> None:
    page, watch = browse(showcase.url)
    with _embedder({"embed-md": f"{showcase.url}/embed/calc", "profile-lg": f"{showcase.url}/agents/calc"}) as site:
        page.goto(site)
    assert page.frame_locator("#embed-md").locator("a").inner_text() == "calc"
    profile = page.locator("#profile-lg").element_handle().content_frame()
    assert not profile.url.startswith(showcase.url)  # Chromium refused it: an error page in its place
    problems = watch.problems(page)
    assert problems and all("frame-ancestors 'none'" in p for p in problems), problems


# -- agent suites: benchmark evidence ---------------------------------------------------------------

STANDING_SQL = """SELECT run_id, pass_rate, pass_rate_low, pass_rate_high, trials FROM suite_runs
WHERE status = 'complete' AND NOT partial
QUALIFY row_number() OVER (PARTITION BY suite_version, agent ORDER BY start_time DESC) = 1"""


@pytest.fixture(scope="module")
def suites_site(suite_lake: Path) -> Iterator[Server]:
    """``otelbench web`` (no privacy rules) over real suite runs (tests/web/suite_lake.py)."""
    with serve_web(suite_lake) as url:
        yield Server(url, suite_lake)


def test_agent_suites_show_what_suite_runs_has_and_answers_stay_text(suites_site: Server, browse,
                                                                     screenshots: Path) -> None:
    from tests.web.suite_lake import MARKUP

    page, watch = browse(suites_site.url)
    _visit(page, "/benchmarks")
    section = page.locator("#agent-suites")
    assert "fixed tasks, not production telemetry" in section.inner_text()
    shown = {r.get_attribute("data-run"): _figures(r) for r in section.locator("tr[data-run]").all()}
    expected = {run: {"pass_rate": f"{rate * 100:.0f}%", "interval": f"{low * 100:.0f}%–{high * 100:.0f}%",
                      "trials": str(trials)} for run, rate, low, high, trials in _sql(suites_site.lake, STANDING_SQL)}
    assert {run: {k: f[k] for k in ("pass_rate", "interval", "trials")} for run, f in shown.items()} == expected
    screenshot(page, screenshots / "agent-suites.png")
    assert watch.problems(page) == []
    section.get_by_role("link", name="chores-v1", exact=False).first.click()  # as a person gets there
    page.wait_for_url("**/benchmarks/chores-v1*")
    case = page.locator('table.cases tr[data-case="markup"]').first
    case.locator("summary").click()
    assert MARKUP in case.locator(".trial pre").all_inner_texts()  # the agent's answer, as text
    assert watch.problems(page) == []
    # with the CSP bypassed, escaping alone keeps the answer's markup from running
    page, watch = browse(suites_site.url, bypass_csp=True)
    for path in ("/benchmarks", "/benchmarks/chores", "/agents/alpha"):
        _visit(page, path)
        page.locator("details").evaluate_all("ds => ds.forEach(d => d.open = true)")
        assert watch.problems(page) == [], path
        assert page.locator("script:not([src='/static/live.js']), img[src='x']").count() == 0, path


# -- hostile span content ---------------------------------------------------------------------------
# Each payload, were it markup, would raise a dialog and change window.__sentinel.
SCRIPT = "<script>alert('script');window.__sentinel='script'</script>"
IMG = '"><img src=x onerror="alert(\'img\');window.__sentinel=\'img\'">'
LINK = "javascript:alert('link');window.__sentinel='link'"  # text a careless linkifier would link
SVG = "<svg onload=\"alert('svg');window.__sentinel='svg'\"><circle r=9>"  # no "/": /vs/{a}/{b} takes none
RTL = "\u202eevil-agent"  # shown right to left: "tnega-live" … and whatever follows, unless isolated
HOSTILE_RUNS = [Run(SCRIPT, LINK, IMG, tool=SVG, tool_error=SCRIPT), Run(SVG, IMG, LINK, error=SVG),
                Run(RTL, RTL, RTL, tool=RTL), Run(RTL, "hi", "hello"), Run("plain", "hi", "hello")]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    lake = lake_of_runs(tmp_path_factory.mktemp("hostile"), HOSTILE_RUNS)
    with serve_web(lake) as url:
        yield Server(url, lake)


def _hostile_pages(lake: Path) -> list[str]:
    """Every page that shows span content, each with every payload the lake holds."""
    traces = [t for (t,) in _sql(lake, "SELECT trace_id FROM agent_runs WHERE agent <> 'plain' ORDER BY agent")]
    script, svg, rtl = (quote(name, safe="") for name in (SCRIPT, SVG, RTL))
    return (["/", "/leaderboard?window=all", f"/vs/{svg}/{rtl}", "/search?per_page=100", "/search?q=alert"]
            + [f"/runs/{t}" for t in traces]
            + [f"/{page}/{n}" for n in (script, svg, rtl) for page in ("agents", "embed")])


def test_hostile_span_content_renders_as_text_and_runs_nothing(hostile: Server, browse) -> None:
    # With the CSP bypassed, escaping alone stands between a payload and a running script:
    # this checks the templates, not only the header (which blocks every script anyway).
    page, watch = browse(hostile.url, bypass_csp=True)
    for path in _hostile_pages(hostile.lake):
        _visit(page, path)
        assert watch.problems(page) == [], path
        # the one script is the page's own live dashboard (/static/live.js)
        assert page.locator("script:not([src='/static/live.js']), iframe, object, embed, img[src='x']").count() == 0, path
        assert page.evaluate("""[...document.querySelectorAll('*')].flatMap(e => [...e.attributes]
            .filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))""") == [], path
        links = page.evaluate("[...document.querySelectorAll('[href], [src]')].map(e => e.href || e.src)")
        assert all(u.startswith(hostile.url + "/") for u in links), (path, links)
    _visit(page, f"/agents/{quote(SCRIPT, safe='')}")
    assert page.locator("h1").inner_text() == SCRIPT  # the name, as text, exactly
    row = page.locator("#recent-runs tr[data-trace]").inner_text()
    assert "javascript:alert('link')" in row and "<img src=x onerror=" in row  # inside the messages' JSON
    _visit(page, f"/agents/{quote(SVG, safe='')}")
    # the only SVG elements are the page's own charts: none from the name, none with a handler
    assert page.locator("h1").inner_text() == SVG and page.locator("svg[onload], svg circle[r='9']").count() == 0
    assert page.locator("svg").count() == page.locator("svg[role='img']").count()
    assert page.locator("img").count() == 5  # its badges, nothing more


def test_a_right_to_left_override_does_not_reorder_what_follows_it(hostile: Server, browse) -> None:
    page, watch = browse(hostile.url)
    _visit(page, f"/vs/{quote(RTL, safe='')}/plain")
    a, b = (page.locator("h1 a").nth(i).bounding_box() for i in (0, 1))
    assert a["x"] + a["width"] <= b["x"], (a, b)  # "‮evil-agent vs plain", not "plain sv tnega-live"
    assert page.locator("h1").inner_text() == f"{RTL} vs plain"
    name_right, note_left = page.locator('tr[data-line="runs"] [data-side="better"]').evaluate("""cell => {
        const text = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        while (text.nextNode() && !text.currentNode.data.includes("evil-agent"));
        const name = document.createRange();
        name.selectNodeContents(text.currentNode);
        return [name.getBoundingClientRect().right, cell.querySelector(".muted").getBoundingClientRect().left];
    }""")
    assert name_right <= note_left  # "‮evil-agent (higher is better)", not "(retteb si rehgih) tnega-live"
    assert watch.problems(page) == []


def test_the_watch_sees_what_it_must(hostile: Server, browse) -> None:
    """The guard above is not vacuous: a script that does all it forbids is caught."""
    page, watch = browse(hostile.url, bypass_csp=True)
    _visit(page, "/healthz")
    page.evaluate("""() => { window.__sentinel = 'changed'; console.log('hello');
        fetch('http://192.0.2.1/').catch(() => {}); setTimeout(() => { throw new Error('boom'); }); }""")
    page.once("dialog", lambda d: None)
    page.evaluate("alert('hi')")
    kinds = lambda: {p.split(" ")[0] for p in watch.problems(page)}  # noqa: E731
    wait_for(lambda: kinds() == {"console", "dialog", "page", "request", "sentinel"}, timeout_s=10,
             what="the watch recording all five")
    assert "request to http://192.0.2.1/" in watch.problems(page)


# -- while agents run ------------------------------------------------------------------------------

def test_the_live_dashboard_shows_runs_sent_after_the_page_was_opened(make_collector, browse) -> None:
    """The profile and the leaderboard, left open, show new runs and their spans by
    themselves (the WebSocket; ``otelbench web`` alone follows new lake files), no reload;
    a reload then shows them in the figures too (the rollups)."""
    collector = make_collector()
    endpoint = f"http://127.0.0.1:{collector.http_port}"
    lake = Path(collector.config.exporters.parquet.path)

    def runs_in_lake() -> int:
        return _sql(lake, "SELECT count(*) FROM agent_runs WHERE agent = 'live'")[0][0]

    send_runs(endpoint, [Run("live", "first", "1")] * 2)
    wait_for(lambda: runs_in_lake() == 2, what="the first runs in the lake")
    with serve_web(lake) as url:
        page, watch = browse(url)
        _visit(page, "/agents/live")
        assert _figures(page.locator("table").first)["runs"] == "2"
        board, board_watch = browse(url)
        _visit(board, "/leaderboard?window=all")
        for p in (page, board):
            p.locator("#live[data-state=open]").wait_for(timeout=10_000)
        send_runs(endpoint, [Run("live", "second", "2")] * 3)
        # each run's root span, and its chat call, arrive in the open page as they reach the lake
        page.locator("#live-runs li[data-type=run][data-agent=live][data-status=ok]").nth(2).wait_for(timeout=20_000)
        page.locator("#live-events li[data-type=span][data-span-type=llm]").nth(2).wait_for(timeout=20_000)
        board.locator("tr[data-agent=live] td[data-live=runs]:text-is('5')").wait_for(timeout=20_000)
        assert _figures(page.locator("table").first)["runs"] == "2"  # the page itself was not reloaded
        assert runs_in_lake() == 5
        # the rollups take the new files within refresh_s, the figures within figures_every_s
        wait_for(lambda: page.reload() and _figures(page.locator("table").first)["runs"] == "5",
                 what="the profile showing the new runs", timeout_s=30)
        assert page.locator("#recent-runs tr[data-trace]").count() == 5
        assert board_watch.problems(board) == []
        assert watch.problems(page) == []
