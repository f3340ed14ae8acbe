"""The warm tabs (conftest.Tabs): a tab a test is done with is lent again, on about:blank and
at the size asked for; a tab left with a test's handler on it, a fresh tab and a page a test
opened itself are closed instead."""

from __future__ import annotations

from conftest import Tabs


def test_a_clean_tab_is_lent_again_and_a_tab_with_a_handler_is_not(browser):
    tabs = Tabs(browser)
    try:
        first = tabs.open(800, 600)
        first.goto("data:text/html,<h1>one</h1>")
        tabs.close_pages()
        again = tabs.open(640, 480)
        assert again is first and again.url == "about:blank"
        assert again.viewport_size == {"width": 640, "height": 480}
        again.on("console", lambda m: None)  # left on it by the "test"
        fresh = tabs.open(fresh=True)
        stray = tabs.context().new_page()
        tabs.close_pages()
        assert first.is_closed() and fresh.is_closed() and stray.is_closed()
        assert tabs.open() is not first
    finally:
        tabs.close()
