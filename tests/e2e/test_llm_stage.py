"""/llm in a real browser on the real model: a deep link opens the round and frame it names,
the arrow keys step it, the chips show the model's tokens with their spaces visible, the
address after stepping reopens the same round and frame in a new session, and in
presenter mode too. The server loads Gemma 3 270M on the first visit (up to a few minutes on
a loaded machine); the visits after that share it."""

from __future__ import annotations

import re

from harness import IDLE, SETTLED_JS
from playwright.sync_api import Page, expect

COUNTER_RE = re.compile(r"Round (\d+) · step (\d+) ·")
LINK = "/llm?llm_preset=fact&k=3&seed=1&rnd=1&step=1"
LOAD_MS = 400_000  # the first visit loads the model (hash, read, dequantise)


def settle(page: Page, timeout: int = 120_000) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=timeout)
    page.wait_for_function(SETTLED_JS, timeout=timeout)


def opened(page: Page, url: str) -> None:
    page.goto(url)
    page.locator(".sv-counter").first.wait_for(timeout=LOAD_MS)
    settle(page)
    expect(page.locator(".st-key-llm_stage .js-plotly-plot")).to_have_count(3)


def counter(page: Page) -> tuple[int, int]:
    m = COUNTER_RE.search(page.locator(".sv-counter").first.inner_text())
    assert m, "no step counter"
    return int(m[1]), int(m[2])


def chips(page: Page) -> str:
    return page.locator(".sv-chips").first.inner_text()


def press(page: Page, key: str) -> None:
    before = page.locator(".sv-counter").first.inner_text()
    page.locator("h1").first.click()
    page.keyboard.press(key)
    expect(page.locator(".sv-counter").first).not_to_have_text(before, timeout=120_000)
    settle(page)


def test_a_deep_link_steps_and_its_address_reopens_the_same_frame(server, tabs):
    page = tabs.open(1440, 900)
    opened(page, server.url + LINK)
    assert counter(page) == (1, 1)
    for _ in range(3):
        press(page, "ArrowRight")
    press(page, "ArrowLeft")
    assert counter(page) == (1, 3)
    shown = chips(page)
    assert "␣" in shown and "drafted" in shown, shown  # Gemma's pieces, spaces visible
    page.wait_for_function("() => new URLSearchParams(location.search).get('step') === '3'")
    address = page.url
    assert "rnd=1" in address and "k=3" in address and "llm_preset=fact" in address
    for present in ("", "&present=1"):  # a new session each (a tab's load): the link decides
        page = tabs.open(1920, 1080)
        opened(page, address + present)
        assert counter(page) == (1, 3) and chips(page) == shown, present
        if present:
            expect(page.locator(".st-key-sv_present_pages")).to_be_visible()
            press(page, "ArrowLeft")
            assert counter(page) == (1, 2)


def test_the_autoplay_speed_stays_after_a_run_without_the_stage(server, tabs):
    """'Your own' prompt, still empty, stops the page before the stage; drawn again, the
    speed slider showed its first choice (0.5 s) and the next step sent that back into the
    link. It keeps the speed it had."""
    page = tabs.open(1440, 900)
    opened(page, server.url + "/llm?llm_preset=fact&llm_kind=lookup&speed=2")
    page.get_by_text("your own").click()
    expect(page.locator(".sv-counter")).to_have_count(0, timeout=120_000)
    settle(page)
    box = page.locator("textarea").first
    box.fill("The sea was calm and the sky")
    box.press("Control+Enter")
    page.locator(".sv-counter").first.wait_for(timeout=120_000)
    settle(page)
    press(page, "ArrowRight")
    assert "2 s per step" in page.locator(".st-key-llm_speed").inner_text()
    page.wait_for_function("() => new URLSearchParams(location.search).get('step') === '1'")
    assert "speed=2" in page.url, page.url
