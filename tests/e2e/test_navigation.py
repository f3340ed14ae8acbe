"""The navigation on a cold server: the very first request of a fresh server, a deep link,
opens its page (not "Page not found") and shows the app's own page titles (views.site),
never names made from file names; Streamlit's own file-named list is not drawn."""

from __future__ import annotations

import re

from harness import start_server
from playwright.sync_api import expect

from specviz.views import site


def test_a_cold_deep_link_shows_the_navigation_titles(browser):
    server = start_server()
    try:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(server.url + "/round")
        page.locator(".sv-counter").first.wait_for(timeout=90_000)
        links = page.locator(".st-key-sv_nav a")
        expect(links.first).to_contain_text(site.PAGES[0].title)
        texts = links.all_inner_texts()
        assert [t.split("\n")[-1] for t in texts] == [p.title for p in site.PAGES], texts
        assert page.locator("[data-testid='stSidebarNav']").count() == 0
        links.nth(3).click()  # a page link switches the page in the same session
        expect(page).to_have_url(re.compile(rf"/{site.PAGES[3].path}(\?|$)"))
        page.get_by_role("heading", level=1).first.wait_for()
        page.close()
    finally:
        server.stop()
