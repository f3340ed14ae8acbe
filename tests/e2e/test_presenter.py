"""Presenter mode, keyboard and sharing in a real browser against the real server: the
sidebar and header gone at 1280x720, large type, the way out, the tour's arrow keys, the
copy-link button, space for play / pause (never while typing), and a phone-width check."""

from __future__ import annotations

import re

import pytest
from harness import IDLE, OVERFLOW_JS, SETTLED_JS
from playwright.sync_api import Page, expect

CAPTION_RE = re.compile(r"Round (\d+) · step (\d+) ·")


def settle(page: Page) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=30_000)
    page.wait_for_function(SETTLED_JS, timeout=30_000)


def open_page(page: Page, url: str, text: str | re.Pattern) -> None:
    page.goto(url)
    page.get_by_text(text).first.wait_for()
    settle(page)


def no_errors(page: Page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0
    assert "Traceback" not in page.locator("body").inner_text()


def no_horizontal_overflow(page: Page) -> None:
    main_sw, main_cw, doc_sw, doc_cw = page.evaluate(OVERFLOW_JS)
    assert main_sw <= main_cw + 1 and doc_sw <= doc_cw + 1, (main_sw, main_cw, doc_sw, doc_cw)


@pytest.fixture
def screen(tabs):
    """New warm tabs at 1280x720, a projector's resolution."""
    return lambda: tabs.open(1280, 720, timeout_ms=30_000)


def test_presenter_mode_on_the_tour(server, screen):
    page = screen()
    open_page(page, server.url + "/tour?present=1&chapter=2", "A guided tour")
    expect(page.locator("[data-testid='stSidebar']")).to_be_hidden()
    expect(page.locator("[data-testid='stHeader']")).to_be_hidden()
    size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector("
                         "'[data-testid=stMarkdownContainer] p')).fontSize)")
    assert size >= 16, size  # 1.1 vw at 1280 px wide, held at 16 px (21 px at 1920)
    expect(page.get_by_role("heading", name="3 · Acceptance")).to_be_visible()
    # the way out keeps the chapter and drops present
    href = page.locator("a.sv-present-exit").get_attribute("href")
    assert "chapter=2" in href and "present" not in href, href
    # the arrow keys page through the chapters; the links keep presenter mode
    page.locator("h1").first.click()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("heading", name="4 · Draft length")).to_be_visible()
    expect(page).to_have_url(re.compile(r"chapter=3"))
    settle(page)
    link = page.get_by_role("link", name=re.compile("Open the answer"))
    assert link.get_attribute("href").endswith("present=1")
    no_horizontal_overflow(page)
    no_errors(page)


def test_presenter_mode_on_the_round(server, screen):
    page = screen()
    open_page(page, server.url + "/round?present=1&k=5&seed=3&step=2", CAPTION_RE)
    expect(page.locator("[data-testid='stSidebar']")).to_be_hidden()
    expect(page.locator("[data-testid='stToolbar']")).to_be_hidden()
    title = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('h1'))"
                          ".fontSize)")
    assert title >= 32, title
    no_horizontal_overflow(page)
    page.keyboard.press("ArrowRight")
    expect(page.get_by_text(CAPTION_RE).first).to_contain_text("step 3 ·")
    expect(page).to_have_url(re.compile(r"present=1"))
    no_errors(page)


def test_copy_link_copies_the_current_state(server, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page = ctx.new_page()
    try:
        open_page(page, server.url + "/cost?k=7&c=0.2", "Cost: when a draft")
        button = page.locator("[data-testid='stSidebar'] .sv-copy-link")
        button.scroll_into_view_if_needed()
        button.focus()
        page.keyboard.press("Enter")  # reachable and usable from the keyboard
        expect(page.locator("[data-testid='stSidebar'] .sv-copy-status")).to_have_text("Copied.")
        copied = page.evaluate("() => navigator.clipboard.readText()")
        assert copied == page.url and "k=7" in copied and "c=0.2" in copied, copied
        shown = page.locator("[data-testid='stSidebar'] .sv-share-url").inner_text()
        assert shown.strip() == page.url
        loaded = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
        assert not [u for u in loaded if "SyntaxHighlighter" in u]  # 1.5 MB of JS for nothing
    finally:
        ctx.close()


def test_space_plays_and_pauses_but_not_while_typing(server, screen):
    page = screen()
    open_page(page, server.url + "/round?k=8&seed=5", CAPTION_RE)
    toggle = page.locator(".st-key-round_autoplay input")
    expect(toggle).not_to_be_checked()
    # typing a space into a text field never starts the animation
    field = page.locator(".st-key-w_seed input")
    field.click()
    page.keyboard.press("Space")
    page.keyboard.press("Escape")
    page.wait_for_timeout(300)
    expect(toggle).not_to_be_checked()
    # space on a focused button presses that button, nothing else
    page.get_by_role("button", name=re.compile(r"^next")).focus()
    page.keyboard.press("Space")
    expect(page.get_by_text(CAPTION_RE).first).to_contain_text("step 1 ·")
    settle(page)
    expect(toggle).not_to_be_checked()
    # space on the page plays, and again pauses
    page.locator("h1").first.click()
    page.keyboard.press("Space")
    expect(toggle).to_be_checked()
    expect(page.get_by_text(CAPTION_RE).first).to_contain_text("step 3 ·", timeout=15_000)
    page.locator("h1").first.click()
    page.keyboard.press("Space")
    expect(toggle).not_to_be_checked()
    no_errors(page)


@pytest.mark.parametrize("path,text", [("/tour", "A guided tour"),
                                       ("/round?k=5&seed=3&step=7", CAPTION_RE),
                                       ("/cost", "Cost: when a draft")])
def test_phone_width_has_no_horizontal_scroll(server, tabs, path, text):
    page = tabs.open(phone=True)
    open_page(page, server.url + path, text)
    no_horizontal_overflow(page)
    no_errors(page)


# per chart: its drawn title's box and the boxes of its other texts (subplot titles, labels)
TITLE_CLASH_JS = """() => [...document.querySelectorAll('[data-testid=stPlotlyChart]')].map(c => {
  const box = e => { const r = e.getBoundingClientRect();
                     return [r.left, r.top, r.right, r.bottom]; };
  const t = c.querySelector('.gtitle');
  return {title: t && t.textContent.trim() ? box(t) : null,
          others: [...c.querySelectorAll('.annotation-text')].map(box)};
})"""


@pytest.mark.parametrize("path", ["/acceptance?present=1", "/draft-length?present=1"])
def test_presenter_chart_titles_clear_their_subplot_titles(server, tabs, path):
    """At 1920x1080 the larger type must not push a chart's title onto the titles of its
    panels (it did: 'Against draft quality alpha' ran through 'acceptance')."""
    page = tabs.open(1920, 1080)
    page.goto(server.url + path)
    page.locator(".stPlotlyChart .main-svg").first.wait_for(timeout=60_000)
    settle(page)
    charts = [c for c in page.evaluate(TITLE_CLASH_JS) if c["title"] and c["others"]]
    assert charts, "no chart with a title and panel titles"
    for c in charts:
        (l1, t1, r1, b1) = c["title"]
        for (l2, t2, r2, b2) in c["others"]:
            assert r1 <= l2 or r2 <= l1 or b1 <= t2 or b2 <= t1, (path, c)
