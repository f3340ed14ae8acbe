"""Tables and charts as a reader sees them, in a real browser.

At 1440x900 with the sidebar open every table fits: its grid does not scroll sideways and
its last column ends inside the page. On a phone (390x844) every chart on the chart pages
draws its legend over no other text, keeps its mode bar off every text, shows its title as
wrapping text above it (the drawn one hidden), and cuts no value label at an edge. On /cost
at 1440 the marked speedups stay clear of the break-even marker and its line. Screenshots
go to $SPECVIZ_SHOTS when it is set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness import IDLE, SETTLED_JS
from playwright.sync_api import Page, expect

SHOTS = os.environ.get("SPECVIZ_SHOTS")
TABLE_PAGES = ("/rules", "/roofline", "/acceptance", "/acceptance?tab=T", "/draft-length",
               "/exactness", "/cost", "/plan")
CHART_PAGES = ("/cost", "/acceptance", "/exactness", "/draft-length", "/roofline", "/rules",
               "/plan")
TABLE_EXPANDERS = ("table", "This run", "exact and theory")  # expanders that hold a table
CHART_EXPANDERS = ("(chart)",)  # expanders that hold a chart, drawn once opened


def unfold(page: Page, words: tuple[str, ...], inside: str) -> None:
    """Open each folded section whose label has one of words, as a reader would, and wait
    for what it holds (a selector) to be drawn on the rerun it asks for."""
    summaries = page.locator("[data-testid=stExpander] summary")
    for i in range(summaries.count()):
        if any(word in summaries.nth(i).inner_text() for word in words):
            summaries.nth(i).click()
            section = summaries.nth(i).locator("xpath=..")
            try:
                section.locator(inside).first.wait_for(timeout=120_000)
            except Exception as exc:  # say what the section and the app show instead
                state = page.locator("[data-testid=stApp]").get_attribute(
                    "data-test-script-state")
                raise AssertionError(
                    f"section {i} ({summaries.nth(i).inner_text()!r}) drew no {inside}: "
                    f"open={section.get_attribute('open')!r}, app {state}, "
                    f"it shows {section.inner_text()[:300]!r}") from exc

TABLES_JS = """() => {
  const main = document.querySelector('[data-testid=stMainBlockContainer]')
    .getBoundingClientRect();
  return [...document.querySelectorAll('[data-testid=stDataFrame]')].map(d => {
    const s = d.querySelector('.dvn-scroller'), r = d.getBoundingClientRect();
    return {right: r.right, main: main.right, sw: s.scrollWidth, cw: s.clientWidth,
            heads: [...d.querySelectorAll('[role=columnheader]')].map(h => h.textContent)};
  });
}"""
# per chart: boxes of its legend, mode bar, drawn title, other texts, and the value labels
CHARTS_JS = """() => {
  const box = e => { const r = e.getBoundingClientRect();
                     return [r.left, r.top, r.right, r.bottom]; };
  const shown = e => { const r = e.getBoundingClientRect();
                       return r.width > 0 && r.height > 0 && e.textContent.trim(); };
  return [...document.querySelectorAll('[data-testid=stPlotlyChart]')].map(c => {
    const legend = c.querySelector('g.legend'), bar = c.querySelector('.modebar');
    const texts = [...c.querySelectorAll('svg text')].filter(shown)
      .filter(t => !(legend && legend.contains(t)))
      .map(t => [t.textContent.trim(), box(t)]);
    const labels = [...c.querySelectorAll('g.textpoint text')].filter(shown).map(t => {
      let clipped = false;
      for (let e = t.parentElement; e && e.tagName !== 'svg'; e = e.parentElement)
        if (e.getAttribute('clip-path')) clipped = true;
      return [t.textContent.trim(), box(t), clipped];
    });
    const title = c.querySelector('.gtitle');
    return {svg: box(c.querySelector('svg.main-svg')), legend: legend && box(legend),
            bar: bar && box(bar), texts, labels,
            drawn_title: !!(title && title.getBoundingClientRect().width > 0)};
  });
}"""
HTML_TITLES_JS = """() => [...document.querySelectorAll('.sv-chart-title')]
  .filter(t => t.getBoundingClientRect().width > 0)
  .map(t => { const r = t.getBoundingClientRect();
              return [t.textContent, r.left, r.right, t.scrollWidth, t.clientWidth]; })"""


def overlap(a, b, tol: float = 1.0) -> bool:
    """Whether two boxes (left, top, right, bottom) share more than a tol-wide strip."""
    return min(a[2], b[2]) - max(a[0], b[0]) > tol and min(a[3], b[3]) - max(a[1], b[1]) > tol


def settle(page: Page) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=120_000)
    page.wait_for_function(SETTLED_JS, timeout=120_000)


def open_at(tabs, url: str, width: int, height: int, *, phone: bool = False):
    """A warm tab at width x height with url open and settled."""
    page = tabs.open(width, height, phone=phone)
    page.goto(url)
    page.locator("h1").first.wait_for(timeout=120_000)
    settle(page)
    return page


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def _name(path: str) -> str:
    return path.strip("/").replace("?", "_").replace("=", "-")


@pytest.mark.parametrize("path", TABLE_PAGES)
def test_tables_fit_at_1440(server, tabs, path):
    page = open_at(tabs, server.url + path, 1440, 900)
    unfold(page, TABLE_EXPANDERS, "[data-testid=stDataFrame]")
    settle(page)
    page.wait_for_function("() => [...document.querySelectorAll("
                           "'[data-testid=stDataFrame]')].every(d => "
                           "d.querySelector('.dvn-scroller'))", timeout=30_000)
    tables = page.evaluate(TABLES_JS)
    assert tables, "no table on the page"
    for t in tables:
        assert t["sw"] <= t["cw"] + 1, (path, "scrolls sideways", t)
        assert t["right"] <= t["main"] + 1, (path, "runs past the page", t)
        assert not [h for h in t["heads"] if "_" in h], (path, t["heads"])
    shot(page, f"tables_{_name(path)}_1440x900")


@pytest.mark.parametrize("path", CHART_PAGES)
def test_charts_read_cleanly_on_a_phone(server, tabs, path):
    page = open_at(tabs, server.url + path, 390, 844, phone=True)
    unfold(page, CHART_EXPANDERS, ".stPlotlyChart .main-svg")  # folded charts too
    page.mouse.wheel(0, 20_000)  # charts lower down are drawn too
    settle(page)
    width = page.evaluate("() => document.documentElement.clientWidth")
    charts = page.evaluate(CHARTS_JS)
    assert charts, "no chart on the page"
    for i, c in enumerate(charts):
        assert not c["drawn_title"], (path, i, "the drawn title shows on a phone")
        if c["legend"]:
            hit = [t for t, b in c["texts"] if overlap(c["legend"], b)]
            assert not hit, (path, i, "the legend covers", hit)
        if c["bar"]:
            hit = [t for t, b in c["texts"] if overlap(c["bar"], b)]
            assert not hit, (path, i, "the mode bar covers", hit)
        svg = c["svg"]
        for text, b, clipped in c["labels"]:
            assert not clipped, (path, i, text, "clipped at the plot area")
            assert svg[0] - 1 <= b[0] and b[2] <= svg[2] + 1, (path, i, text, b, svg)
    titles = page.evaluate(HTML_TITLES_JS)
    assert len(titles) >= len(charts) - 1  # a 3D view's title may be its only text
    for text, left, right, sw, cw in titles:
        assert left >= 0 and right <= width + 1 and sw <= cw + 1, (path, text)
    page.mouse.wheel(0, -20_000)
    shot(page, f"charts_{_name(path)}_390x844")


def test_cost_labels_clear_the_break_even_marker_at_1440(server, tabs):
    page = open_at(tabs, server.url + "/cost", 1440, 900)
    chart = page.locator("[data-testid=stPlotlyChart]").first
    chart.scroll_into_view_if_needed()
    info = chart.evaluate("""c => {
      const box = e => { const r = e.getBoundingClientRect();
                         return [r.left, r.top, r.right, r.bottom]; };
      const traces = [...c.querySelectorAll('g.scatterlayer g.trace')];
      const marks = traces.map(t => [...t.querySelectorAll('path.point')].map(box));
      const labels = [...c.querySelectorAll('g.textpoint text')]
        .map(t => [t.textContent, box(t)]);
      const lines = [...c.querySelectorAll('g.shapelayer path, g.layer-above path')]
        .map(box).filter(b => b[2] - b[0] < 4 && b[3] - b[1] > 40);  // vertical lines
      return {marks, labels, lines};
    }""")
    labels = info["labels"]
    assert len(labels) == 3 and all(t.endswith("x") for t, _ in labels)  # c, 0.6, 1.0
    star = info["marks"][1]  # the break-even marker (the curve has none)
    for text, b in labels:
        assert not any(overlap(b, m) for m in star), (text, "on the c* marker")
        assert not any(b[0] < (ln[0] + ln[2]) / 2 < b[2] for ln in info["lines"]), (
            text, "crossed by the c* line")
    if SHOTS:
        chart.screenshot(path=str(Path(SHOTS) / "cost_chart_1440x900.png"))


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_round_stage_labels_stay_inside_their_charts(server, tabs, width, height):
    """Step through rounds on /round: every value label (the coin's "u = ... kept" among
    them, wherever u falls) is drawn whole inside its chart, never cut at the plot area."""
    page = open_at(tabs, server.url + "/round?seed=5", width, height)
    seen = 0
    for _ in range(16):
        for i, c in enumerate(page.evaluate(CHARTS_JS)):
            svg = c["svg"]
            for text, b, clipped in c["labels"]:
                seen += text.startswith("u =")
                assert not clipped, (width, i, text, "clipped at the plot area")
                assert svg[0] - 1 <= b[0] and b[2] <= svg[2] + 1, (width, i, text, b, svg)
        before = page.locator(".sv-counter").first.inner_text()
        nxt = page.locator(".st-key-round_next button").last  # (a fragment's old copy
        # may linger beside the new one)
        page.keyboard.press("ArrowRight" if nxt.is_enabled() else "n")
        expect(page.locator(".sv-counter").first).not_to_have_text(before)
        settle(page)
    assert seen >= 3, "too few coins seen to check their labels"


def test_hidden_helpers_take_no_room_on_a_wide_screen(server, tabs):
    """At 1440 the charts' text titles (for phones) and the autoplay marker are hidden
    with their element: none shows, none leaves a gap between the stage's rows."""
    page = open_at(tabs, server.url + "/round", 1440, 900)
    page.locator(".stPlotlyChart .main-svg").first.wait_for(timeout=120_000)
    assert page.locator(".sv-chart-title").count() == 3
    assert page.evaluate(HTML_TITLES_JS) == []
    hidden = page.evaluate("""() => [...document.querySelectorAll(
        '.sv-chart-title, .sv-play')].map(e => getComputedStyle(
        e.closest('.stElementContainer')).display)""")
    assert hidden == ["none"] * 4, hidden
