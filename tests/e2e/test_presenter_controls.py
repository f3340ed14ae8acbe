"""Presenter mode's controls and tables in a real browser: on /cost and /acceptance the
bar at the top holds k and c at presenter type and moving them redraws the page; its
pages menu keeps presenter mode; the tables of /rules and /exactness read at 18 px or
more (computed font sizes), at 1920x1080 and 1280x720."""

from __future__ import annotations

import re

import pytest
from harness import IDLE, SETTLED_JS
from playwright.sync_api import Page, expect

from specviz.web.present import MIN_PX
from specviz.web.rulesui import GALLERY_TABLE
from specviz.web.show import fold_name

SIZES = {"1920x1080": (1920, 1080), "1280x720": (1280, 720)}
BAR = ".st-key-sv_present_bar"
MENU = ".st-key-sv_present_pages_menu"
# (text, font size) of every visible text node under a selector
TEXT_SIZES_JS = """(sel) => {
  const out = [];
  for (const root of document.querySelectorAll(sel)) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const el = n.parentElement;
      if (!n.textContent.trim() || !el) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      out.push([n.textContent.trim(), parseFloat(getComputedStyle(el).fontSize)]);
    }
  }
  return out;
}"""


def settle(page: Page) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=60_000)
    page.wait_for_function(SETTLED_JS, timeout=60_000)


@pytest.fixture(params=list(SIZES))
def screen(request, tabs):
    w, h = SIZES[request.param]
    return tabs.open(w, h)


def small(page: Page, sel: str) -> list:
    sizes = page.evaluate(TEXT_SIZES_JS, sel)
    assert sizes, f"no text under {sel}"
    return [(t, px) for t, px in sizes if px < MIN_PX - 0.01]


def open_present(page: Page, url: str) -> None:
    page.goto(url)
    page.locator(BAR).wait_for(timeout=60_000)
    settle(page)
    expect(page.locator("[data-testid='stSidebar']")).to_be_hidden()


def step_slider(page: Page, label: str, key: str) -> None:
    thumb = page.locator(BAR).get_by_role("slider", name=re.compile(label))
    thumb.focus()
    page.keyboard.press(key)
    settle(page)


@pytest.mark.parametrize("path", ["/cost", "/acceptance"])
def test_presenter_mode_has_the_story_controls(server, screen, path):
    page = screen
    open_present(page, server.url + path + "?present=1")
    bar = page.locator(BAR)
    for label in ("k: drafted tokens per round", "c: draft cost per token"):
        expect(bar.get_by_role("slider", name=re.compile(label))).to_be_attached()
    for thumb in ("k = 4", "c = 0.10"):  # the thumbs name their values
        expect(bar.get_by_text(thumb, exact=True)).to_be_visible()
    assert not small(page, BAR), small(page, BAR)
    step_slider(page, "^k:", "ArrowRight")
    expect(page).to_have_url(re.compile(r"[?&]k=5\b"))
    if path == "/cost":
        expect(page.get_by_text("tokens per call (exact, k = 5)")).to_be_visible()
    else:
        expect(page.locator(".js-plotly-plot .gtitle").first).to_contain_text("k = 5")
    step_slider(page, "^c:", "ArrowRight")
    expect(page).to_have_url(re.compile(r"[?&]c=0.11\b"))
    assert "present=1" in page.url


def test_the_pages_menu_keeps_presenter_mode(server, screen):
    page = screen
    open_present(page, server.url + "/acceptance?present=1")
    expect(page.locator(MENU)).to_be_visible()
    assert not small(page, MENU), small(page, MENU)
    page.locator(MENU).get_by_role("button", name=re.compile("pages")).click()
    menu = page.locator("[data-testid='stPopoverBody']")
    expect(menu.get_by_role("link", name="Cost")).to_be_visible()
    assert not small(page, "[data-testid='stPopoverBody']")
    menu.get_by_role("link", name="Cost").click()
    expect(page.get_by_role("heading", name=re.compile("Cost: when a draft"))).to_be_visible()
    settle(page)
    expect(page.locator(BAR)).to_be_visible()
    expect(page.locator(MENU)).to_be_visible()
    expect(page.locator("[data-testid='stSidebar']")).to_be_hidden()
    expect(page).to_have_url(re.compile(r"/cost\?.*present=1"))


@pytest.mark.parametrize("path", [f"/rules?open={fold_name(GALLERY_TABLE)}&", "/exactness?"])
def test_presenter_tables_read_at_18_px_or_more(server, screen, path):
    page = screen
    page.goto(server.url + path + "present=1")
    page.locator("h1").first.wait_for(timeout=60_000)
    settle(page)
    main = "[data-testid='stMain']"
    expect(page.locator(f"{main} [data-testid='stDataFrame']")).to_have_count(0)
    cells = page.locator(f"{main} table td")
    assert cells.count() >= 20, cells.count()
    tables = small(page, f"{main} table")
    assert not tables, tables[:10]


CUT_LABELS_JS = """() => [...document.querySelectorAll('[data-testid=stMetricLabel]')]
  .flatMap(l => [l, ...l.querySelectorAll('*')])
  .filter(e => e.getBoundingClientRect().width > 0 && e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent.trim())"""


@pytest.mark.parametrize("path", ["/roofline", "/cost", "/draft-length"])
def test_metric_labels_are_never_cut_in_presenter_mode(server, screen, path):
    """A metric's label wraps at presenter type instead of ending in an ellipsis (/roofline
    at 1280x720 read 'verify k + 1 = 5 tokens (x a decode st...')."""
    open_present(screen, server.url + path + "?present=1")
    assert screen.locator("[data-testid=stMetricLabel]").count() >= 3
    cut = screen.evaluate(CUT_LABELS_JS)
    assert not cut, cut
