"""/llm's stage as a speaker and a phone see it, in a real browser on the real model (and
/round beside it where the rule is shared): in presenter mode at 1280x720 and 1920x1080 the
step's counter, caption, chips and the three charts are on the first screen at every step of
a round, with plot areas one can read, and captions are at least 18 px; at
1440x900 a chart's plot area is on the first screen and no chart's title runs into the token
label over its plot or past its chart; on a 390 px phone every stage chart has a plot area
one can read, its ticks apart and its legend clear of the token names. Screenshots go to
$SPECVIZ_SHOTS when it is set. The server loads Gemma 3 270M on the first visit (minutes
on a loaded machine); the visits after share it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from harness import IDLE, SETTLED_JS
from playwright.sync_api import Page, expect

from specviz.web import present

SHOTS = os.environ.get("SPECVIZ_SHOTS")
COUNTER_RE = re.compile(r"Round (\d+) · step (\d+) ·")
LINK = "/llm?llm_preset=fact&k=3&seed=1&rnd=1"
LOAD_MS = 400_000  # the first visit loads the model
PLOT_MIN_PX = 100  # a bar chart's plot area on a phone: the ticks 0, 0.5, 1 well apart
COIN_MIN_PX = 50  # the coin's: one bar and its label
# per stage chart: its box, the plot area, the drawn title, the labels over the plot, the
# ticks and the legend (boxes: left, top, right, bottom)
CHARTS_JS = """(stage) => {
  const box = e => { if (!e) return null; const r = e.getBoundingClientRect();
                     return [r.left, r.top, r.right, r.bottom]; };
  const shown = e => { const r = e.getBoundingClientRect();
                       return r.width > 0 && r.height > 0 && e.textContent.trim(); };
  return [...document.querySelectorAll('.st-key-' + stage + '_charts .stPlotlyChart')].map(c => {
    const title = c.querySelector('.gtitle');
    return {chart: box(c.querySelector('.js-plotly-plot')),
            svg: box(c.querySelector('svg.main-svg')), plot: box(c.querySelector('rect.nsewdrag')),
            title: title && shown(title) ? box(title) : null,
            labels: [...c.querySelectorAll('.annotation-text')].filter(shown)
              .map(e => [e.textContent, box(e)]),
            yticks: [...c.querySelectorAll('.ytick text')].filter(shown).map(box),
            xticks: [...c.querySelectorAll('.xtick text')].filter(shown)
              .map(e => [e.textContent, box(e)]),
            legend: box(c.querySelector('g.legend'))};
  });
}"""
TITLES_JS = """(stage) => [...document.querySelectorAll(
    '.st-key-' + stage + '_charts .sv-chart-title')]
  .filter(t => t.getBoundingClientRect().width > 0)
  .map(t => { const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"""
CAPTIONS_JS = """() => [...document.querySelectorAll(
    '[data-testid=stCaptionContainer], .sv-step')]
  .filter(e => e.getBoundingClientRect().width > 0 && e.textContent.trim())
  .map(e => [e.textContent.trim().slice(0, 40),
             parseFloat(getComputedStyle(e.querySelector('p') || e).fontSize)])"""


def overlap(a, b, tol: float = 1.0) -> bool:
    """Whether two boxes (left, top, right, bottom) share more than a tol-wide strip."""
    return min(a[2], b[2]) - max(a[0], b[0]) > tol and min(a[3], b[3]) - max(a[1], b[1]) > tol


def settle(page: Page, timeout: int = 120_000) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=timeout)
    page.wait_for_function(SETTLED_JS, timeout=timeout)


def opened(tabs, url: str, width: int, height: int, *, phone: bool = False) -> Page:
    page = tabs.open(width, height, phone=phone)
    page.goto(url)
    page.locator(".sv-counter").first.wait_for(timeout=LOAD_MS)
    settle(page)
    stage = url.split("?")[0].rsplit("/", 1)[-1]
    expect(page.locator(f".st-key-{stage}_stage .js-plotly-plot")).to_have_count(3)
    page.wait_for_function(f"() => document.querySelectorAll('.st-key-{stage}_charts "
                           "rect.nsewdrag').length >= 1")
    return page


def counter(page: Page) -> tuple[int, int]:
    m = COUNTER_RE.search(page.locator(".sv-counter").first.inner_text())
    assert m, "no step counter"
    return int(m[1]), int(m[2])


def step_on(page: Page) -> None:
    before = page.locator(".sv-counter").first.inner_text()
    page.locator("h1").first.click()
    page.keyboard.press("ArrowRight")
    expect(page.locator(".sv-counter").first).not_to_have_text(before, timeout=120_000)
    settle(page)


def each_step_of_the_round(page: Page):
    """Yields at every step of the round on screen, from the one shown to its last."""
    rnd, _ = counter(page)
    while counter(page)[0] == rnd:
        yield counter(page)[1]
        step_on(page)


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_presenter_llm_stage_fits_the_first_screen_at_every_step(server, tabs, size):
    """It ended at 814 px at 1280x720: the charts cut off under the screen's edge."""
    w, h = size
    page = opened(tabs, server.url + LINK + "&present=1", w, h)
    steps = 0
    for step in each_step_of_the_round(page):
        assert page.evaluate("() => window.scrollY") == 0
        boxes = {"counter": page.locator(".sv-counter").first,
                 "caption": page.locator(".sv-caption").first,
                 "chips": page.locator(".sv-chips").first}
        for i in range(3):
            boxes[f"chart {i}"] = page.locator(".st-key-llm_stage .js-plotly-plot").nth(i)
        for what, loc in boxes.items():
            box = loc.bounding_box()
            assert box is not None, (step, what)
            assert 0 <= box["y"] and box["y"] + box["height"] <= h + 1, (step, what, box, h)
            assert 0 <= box["x"] and box["x"] + box["width"] <= w + 1, (step, what, box, w)
        if step == 5:
            shot(page, f"llm_present_{w}x{h}")
        steps += 1
    assert steps >= 6, steps  # k = 3: start, drafts, score, a coin at least, the end


@pytest.mark.parametrize("path", [LINK + "&step=5", "/round?k=4&seed=3&step=5"])
def test_presenter_captions_are_at_least_18_px_on_a_projector(server, tabs, path):
    """present.MIN_PX is the smallest presenter text; captions were 0.95 rem: 15.2 px where
    the root type is 16 px (1280 wide)."""
    page = opened(tabs, server.url + path + "&present=1", 1280, 720)
    sizes = page.evaluate(CAPTIONS_JS)
    assert len(sizes) >= 2, sizes  # the step's caption and a page caption at least
    small = [(text, px) for text, px in sizes if px < present.MIN_PX - 0.01]
    assert not small, small


PLOTS_JS = """(stage) => [...document.querySelectorAll(
    '.st-key-' + stage + '_charts rect.nsewdrag')]
  .map(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"""


@pytest.mark.parametrize("path", [LINK + "&step=1", "/llm?step=1"])
def test_a_stage_chart_is_on_the_first_screen_at_1440x900(server, tabs, path):
    """The stage's charts started at 970 px of a 900 px screen (the page's text and the
    controls over them): a reader saw none. Now at least one chart's plot area lies whole
    on the first screen, unscrolled, at the round's first draft (step 1: the bars drawn, the
    marked token's label over them), for the fact and the default prompt (one line each)."""
    page = opened(tabs, server.url + path, 1440, 900)
    page.wait_for_function("() => document.querySelectorAll('.st-key-llm_charts "
                           "rect.nsewdrag').length >= 3")
    assert page.evaluate("() => window.scrollY") == 0
    plots = page.evaluate(PLOTS_JS, "llm")
    whole = [b for b in plots if b[1] >= 0 and b[3] <= 900 and b[3] - b[1] >= 50]
    assert whole, ("no stage chart's plot area on the first screen", plots)
    shot(page, f"llm_first_screen_1440x900_{len(path)}")


@pytest.mark.parametrize("path", [LINK + "&step=5", "/round?k=4&seed=3&step=5"])
@pytest.mark.parametrize(("size", "least"), [((1920, 1080), PLOT_MIN_PX),
                                             ((1280, 720), COIN_MIN_PX)])
def test_presenter_plots_are_readable(server, tabs, path, size, least):
    """In presenter mode the bars' plot area on /llm was 54 px tall at 1920x1080 (with 200
    px of the screen unused under the stage) and 27 px at 1280x720 (Gemma's slanted
    '<start_of_image>' pushing the axis up). Each bar chart's plot area is now at least
    PLOT_MIN_PX tall at 1920x1080, COIN_MIN_PX at 1280x720 (the coin's COIN_MIN_PX at
    both), and the stage still ends on the first screen."""
    stage, (w, h) = path.split("?")[0].strip("/"), size
    page = opened(tabs, server.url + path + "&present=1", w, h)
    plots = page.evaluate(PLOTS_JS, stage)
    assert len(plots) == 3, plots
    for i, b in enumerate(plots):
        assert b[3] - b[1] >= (COIN_MIN_PX if i == 1 else least), (size, i, b)
    for i in range(3):
        box = page.locator(f".st-key-{stage}_stage .js-plotly-plot").nth(i).bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= h + 1, (size, i, box)


def test_chart_titles_clear_the_token_labels_at_every_step(server, tabs):
    """At 1440x900 a chart's title (three lines while only q was drawn) ran into the marked
    token's label over the plot; each title stays inside its chart too."""
    page = opened(tabs, server.url + LINK, 1440, 900)
    for step in each_step_of_the_round(page):
        for i, c in enumerate(page.evaluate(CHARTS_JS, "llm")):
            if c["title"] is None:
                continue
            for text, b in c["labels"]:
                assert not overlap(c["title"], b), (step, i, text, c["title"], b)
            assert c["svg"][0] - 1 <= c["title"][0] and c["title"][2] <= c["svg"][2] + 1, (
                step, i, c["title"], c["svg"])


@pytest.mark.parametrize("path", [LINK + "&step=99", "/round?k=4&seed=3&step=99"])
def test_stage_charts_are_readable_on_a_phone(server, tabs, path):
    """390 px: the charts' plot areas were 20-30 px tall, their y ticks on one another, the
    slanted token names under the legend. Now each chart has the width, its plot the
    height, and nothing of its text lies on other text."""
    stage = path.split("?")[0].strip("/")
    page = opened(tabs, server.url + path, 390, 844, phone=True)
    width = page.evaluate("() => document.documentElement.clientWidth")
    charts = page.evaluate(CHARTS_JS, stage)
    assert len(charts) == 3 and all(c["plot"] for c in charts), charts
    for i, c in enumerate(charts):
        tall = c["plot"][3] - c["plot"][1]
        assert tall >= (COIN_MIN_PX if i == 1 else PLOT_MIN_PX), (i, tall)
        assert c["chart"][0] >= -1 and c["chart"][2] <= width + 1, (i, c["chart"])
        ys = c["yticks"]
        for a in range(len(ys)):
            for b in range(a + 1, len(ys)):
                assert not overlap(ys[a], ys[b]), (i, "y ticks overlap", ys[a], ys[b])
        if c["legend"]:
            hit = [t for t, b in c["xticks"] if overlap(b, c["legend"])]
            assert not hit, (i, "the legend covers", hit)
        if i:
            assert charts[i - 1]["chart"][3] <= c["chart"][1] + 1, (i, "charts overlap")
    for title, c in zip(page.evaluate(TITLES_JS, stage), charts, strict=True):
        assert title[3] <= c["plot"][1] + 1, ("a title over the plot area", title, c["plot"])
        for text, b in c["labels"]:  # the marked token's label, under the title
            assert not overlap(title, b), (text, title, b)
    page.locator(f".st-key-{stage}_charts").scroll_into_view_if_needed()
    shot(page, f"{stage}_charts_390x844")
