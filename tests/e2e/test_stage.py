"""The stage of /round and /text in a real browser: on a projector (present=1 at 1920x1080
and 1280x720) the step's counter and caption, the chips and the three charts fit the first
screen; chart text is at least 18 px at 1920x1080; the keys step the view on both pages;
and screenshots of each page at each size (written to $SPECVIZ_SHOTS when it is set)."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

import pytest
from harness import IDLE, SETTLED_JS
from playwright.sync_api import Page, expect

SHOTS = os.environ.get("SPECVIZ_SHOTS")
COUNTER_RE = re.compile(r"Round (\d+) · step (\d+) ·")
PAGES = {"round": "/round?present=1&k=5&seed=3&step=7",
         "text": "/text?present=1&k=4&step=6"}
SIZES = {"1920x1080": (1920, 1080), "1280x720": (1280, 720)}
CHART_TEXT_JS = """() => {
  const out = [];
  for (const t of document.querySelectorAll('.st-key-STAGE .js-plotly-plot text')) {
    if (!t.textContent.trim()) continue;
    const r = t.getBoundingClientRect();
    if (r.width === 0) continue;
    out.push([t.textContent.trim(), parseFloat(getComputedStyle(t).fontSize)]);
  }
  return out;
}"""


@contextmanager
def opened(tabs, url: str, width: int, height: int, *, phone: bool = False):
    """A warm tab at width x height with the stage of url open."""
    page = tabs.open(width, height, phone=phone)
    open_stage(page, url)
    yield page


def settle(page: Page) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=60_000)
    page.wait_for_function(SETTLED_JS, timeout=60_000)


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def open_stage(page: Page, url: str) -> None:
    page.goto(url)
    page.locator(".sv-counter").first.wait_for(timeout=90_000)  # /text trains its models
    settle(page)
    name = url.split("?")[0].rsplit("/", 1)[-1]
    expect(page.locator(f".st-key-{name}_stage .js-plotly-plot")).to_have_count(3)


def counter(page: Page) -> tuple[int, int]:
    m = COUNTER_RE.search(page.locator(".sv-counter").first.inner_text())
    assert m, "no step counter"
    return int(m[1]), int(m[2])


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("name", list(PAGES))
def test_the_stage_fits_the_first_screen(server, tabs, name, size):
    w, h = SIZES[size]
    with opened(tabs, server.url + PAGES[name], w, h) as page:
        assert page.evaluate("() => window.scrollY") == 0
        boxes = {"counter": page.locator(".sv-counter").first,
                 "caption": page.locator(".sv-caption").first,
                 "chips": page.locator(".sv-chips").first}
        for i in range(3):
            boxes[f"chart {i}"] = page.locator(f".st-key-{name}_stage .js-plotly-plot").nth(i)
        for what, loc in boxes.items():
            box = loc.bounding_box()
            assert box is not None, what
            assert box["y"] >= 0 and box["y"] + box["height"] <= h + 1, (what, box, h)
            assert box["x"] >= 0 and box["x"] + box["width"] <= w + 1, (what, box, w)
        exit_link = page.locator("a.sv-present-exit")
        expect(exit_link).to_be_visible()
        assert float(exit_link.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 18
        shot(page, f"{name}_present_{size}")


@pytest.mark.parametrize("name", list(PAGES))
def test_chart_text_is_at_least_18_px_on_a_projector(server, tabs, name):
    with opened(tabs, server.url + PAGES[name], 1920, 1080) as page:
        texts = page.evaluate(CHART_TEXT_JS.replace("STAGE", f"{name}_stage"))
        assert len(texts) > 10, texts  # titles, ticks, legends, annotations
        small = [(t, px) for t, px in texts if px < 18]
        assert not small, small


@pytest.mark.parametrize("name", list(PAGES))
def test_the_keys_step_the_view(server, tabs, name):
    with opened(tabs, server.url + PAGES[name].replace("present=1&", ""), 1440, 900) as page:
        rnd, step = counter(page)
        page.locator("h1").first.click()
        page.keyboard.press("ArrowRight")
        expect(page.locator(".sv-counter").first).to_contain_text(f"step {step + 1} ·")
        expect(page).to_have_url(re.compile(rf"[?&]step={step + 1}\b"))
        settle(page)
        page.keyboard.press("ArrowLeft")
        expect(page.locator(".sv-counter").first).to_contain_text(f"step {step} ·")
        settle(page)
        page.keyboard.press("n")
        expect(page.locator(".sv-counter").first).to_contain_text(f"Round {rnd + 1} · step 0")
        expect(page).to_have_url(re.compile(rf"[?&]rnd={rnd + 1}\b"))
        settle(page)
        shot(page, f"{name}_1440x900")


@pytest.mark.parametrize("name", list(PAGES))
def test_a_phone_shows_the_stage_without_clipping(server, tabs, name):
    url = server.url + PAGES[name].replace("present=1&", "")
    with opened(tabs, url, 390, 844, phone=True) as page:
        width = page.evaluate("() => document.documentElement.clientWidth")
        page.locator(f".st-key-{name}_stage .js-plotly-plot").first.scroll_into_view_if_needed()
        for i in range(3):
            box = page.locator(f".st-key-{name}_stage .js-plotly-plot").nth(i).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (i, box)
        shot(page, f"{name}_390x844")
