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


HEAD_JS = """() => [...document.querySelectorAll('head script:not([src])')]
    .map(s => ({module: s.type === 'module', text: s.textContent}))"""


def test_the_document_names_the_base_and_leaves_the_element_code_to_streamlit(server, tabs):
    """The page's document (web.basehref) sets the server's base in its head, in a classic
    script, and imports none of Streamlit's element code (a page's chunks come when its
    elements do); a chart page opened first draws, and so does one reached from a page
    without charts."""
    page = tabs.open(fresh=True)  # its listeners go with it
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for path in ("cost", "tour"):
        page.goto(f"{server.url}/{path}")
        page.get_by_role("heading", level=1).first.wait_for(timeout=90_000)
        inline = page.evaluate(HEAD_JS)
        assert [s for s in inline if "BACKEND_BASE_URL" in s["text"]
                and not s["module"]], inline
        assert not any(s["module"] or "static/js/" in s["text"] for s in inline), inline
        assert page.evaluate("window.__streamlit.BACKEND_BASE_URL") == server.url + "/"
        if path == "cost":
            page.locator(".stPlotlyChart .main-svg").first.wait_for(timeout=60_000)
    links = page.locator(".st-key-sv_nav a")
    links.nth(site.PAGES.index(site.BY_PATH["cost"])).click()
    expect(page).to_have_url(re.compile(r"/cost(\?|$)"))
    page.locator(".stPlotlyChart .main-svg").first.wait_for(timeout=60_000)
    assert not errors, errors


def _first_load(browser, url: str) -> tuple[list[tuple[str, int]], list[str]]:
    """Open url in a fresh tab until its first heading: the answers to /_stcore/ requests
    (url, status) and the websockets' URLs, in order."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    asked: list[tuple[str, int]] = []
    sockets: list[str] = []
    page.on("response", lambda r: asked.append((r.url, r.status)) if "/_stcore/" in r.url
            else None)
    page.on("websocket", lambda ws: sockets.append(ws.url))
    page.goto(url)
    page.get_by_role("heading", level=1).first.wait_for(timeout=90_000)  # came by the socket
    page.close()
    return asked, sockets


def test_a_deep_link_asks_the_server_at_its_base_first(server, browser):
    """Opened on a page's path (under a base URL path too; with a trailing slash, which
    Streamlit redirects), the frontend's first health check, host config and websocket go
    to the app's base (web.basehref.base_href): never to the page's path, answered 404 and
    tried again."""
    based = start_server(base="sub")
    try:
        for root, path in ((server.url, "/roofline"), (server.url, "/cost/"),
                           (server.url, "/"), (based.url + "/sub", "/cost"),
                           (based.url + "/sub", "/")):
            asked, sockets = _first_load(browser, root + path)
            assert asked, path
            assert all(url.startswith(f"{root}/_stcore/") and status == 200
                       for url, status in asked), (path, asked)
            assert sockets == [root.replace("http://", "ws://") + "/_stcore/stream"], sockets
    finally:
        based.stop()
