"""The sidebar's share box in a real browser: after every step (buttons, keys, the new
round), its text is the browser's current address, the link that reopens what is shown."""

from __future__ import annotations

import re

from harness import IDLE, SETTLED_JS
from playwright.sync_api import Page, expect

COUNTER_RE = re.compile(r"Round (\d+) · step (\d+) ·")


def settle(page: Page) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=60_000)
    page.wait_for_function(SETTLED_JS, timeout=60_000)


def share_text(page: Page) -> str:
    return page.locator("[data-testid='stSidebar'] .sv-share-url").first.text_content()


def test_the_share_text_is_the_current_address_after_every_step(server, page):
    page.goto(server.url + "/round?k=5&seed=3")
    page.locator(".sv-counter").first.wait_for(timeout=90_000)
    settle(page)
    moves = ["ArrowRight"] * 4 + ["n", "ArrowRight", "ArrowRight", "ArrowLeft"]
    for i, key in enumerate(moves):
        before = page.locator(".sv-counter").first.inner_text()
        page.locator("h1").first.click()
        page.keyboard.press(key)
        expect(page.locator(".sv-counter").first).not_to_have_text(before)
        settle(page)
        expect(page).to_have_url(re.compile(r"[?&](step|rnd)="))
        m = COUNTER_RE.search(page.locator(".sv-counter").first.inner_text())
        assert m, "no counter"
        # the address names what is shown, and the box names the address
        page.wait_for_function(
            "([rnd, step]) => { const q = new URLSearchParams(location.search);"
            " return +(q.get('rnd') || 0) === rnd && +(q.get('step') || 0) === step; }",
            arg=[int(m[1]), int(m[2])], timeout=10_000)
        page.wait_for_timeout(300)
        assert share_text(page) == page.url, (i, key, share_text(page), page.url)
    page.get_by_role("button", name=re.compile("^next")).click()
    settle(page)
    page.wait_for_timeout(300)
    assert share_text(page) == page.url
