"""Real-browser fixtures: one specviz server for the session, chromium, warm tabs.

The server is the Docker image's entry command (parsed from the Dockerfile by harness.py),
started from the repository root on a free port. Chromium is Debian's /usr/bin/chromium
(Playwright's own download cannot work here). Where it is missing the browser tests skip,
except under CI=true, where a missing browser fails the run.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import CHROMIUM, CHROMIUM_ARGS, Server, start_server

IN_CI = os.environ.get("CI", "").lower() == "true"
EXPECT_TIMEOUT_MS = 20_000  # Playwright's expect waits 5 s unless told: see browser()


def _browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (install Debian's chromium: apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -r requirements-dev.txt)"
    return None


def pytest_collection_modifyitems(config, items):
    """Outside CI, skip every browser test up front (no server is started for nothing)."""
    reason = _browser_missing()
    if reason is None or IN_CI:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=f"browser tests skipped: {reason}"))


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """One warm server for most browser tests."""
    srv = start_server()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def browser():
    reason = _browser_missing()
    if reason is not None:  # only reached under CI=true: there it is a failure
        pytest.fail(f"CI=true and the browser tests cannot run: {reason}", pytrace=False)
    from playwright.sync_api import expect, sync_playwright

    # With the machine loaded (three test workers on two cores, autoplay's busy processes),
    # a slider's rerun began after settle() and its URL came later than 5 s: the same
    # condition is waited for longer, as the contexts' own waits are (60 s).
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


DESKTOP = {"viewport": {"width": 1400, "height": 1000}}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
TIMEOUT_MS = 60_000  # a page's own waits: generous, CI machines are small and busy


class Tabs:
    """Tabs in one warm browser context of each kind, desktop or phone, kept for a worker's
    whole run. Each page load is its own Streamlit session (its own websocket) and the app
    keeps no cookies or storage, so what the tests share is the browser's HTTP and compiled
    code caches: a fresh context cost about 0.8 s more a load (/round 4.9 against 4.1 s,
    median of 5). A tab a test is done with goes back to the pool on about:blank and is
    lent again: a load in a tab that has loaded the app before reuses its renderer process
    and the scripts it compiled there, which took 40-50 % less of the machine's CPU for
    three chart pages than three new tabs (17-19 against 31-40 s, this host). Tests that
    attach listeners to a page ask for a fresh one, closed after them; a lent tab that comes
    back with handlers it did not have new is closed, not lent again, and routes are
    removed. Tests that need a context of their own (permissions, init scripts, the network
    off, a cold cache, pages side by side) make one."""

    def __init__(self, browser) -> None:
        self._browser, self._contexts = browser, {}
        # pooled and lent tabs, each with the handlers it had new (_handlers)
        self._idle: dict[str, list[tuple[object, dict | None]]] = {"desktop": [], "phone": []}
        self._lent: list[tuple[str, object, dict | None]] = []

    def context(self, *, phone: bool = False):
        kind = "phone" if phone else "desktop"
        if kind not in self._contexts:
            ctx = self._browser.new_context(accept_downloads=True, **(PHONE if phone else DESKTOP))
            ctx.set_default_timeout(TIMEOUT_MS)
            self._contexts[kind] = ctx
        return self._contexts[kind]

    def open(self, width: int | None = None, height: int | None = None, *, phone: bool = False,
             timeout_ms: float = TIMEOUT_MS, fresh: bool = False):
        """A tab at width x height (the context's own size when not given): one of the pool,
        or, with fresh, a new one that is closed after the test."""
        kind = "phone" if phone else "desktop"
        idle = self._idle[kind]
        if idle and not fresh:
            page, own = idle.pop()
        else:
            page = self.context(phone=phone).new_page()
            own = _handlers(page)
        if not fresh:
            self._lent.append((kind, page, own))
        size = (PHONE if phone else DESKTOP)["viewport"]
        page.set_viewport_size({"width": width or size["width"],
                                "height": height or size["height"]})
        page.set_default_timeout(timeout_ms)
        return page

    def close_pages(self) -> None:
        """Pool the lent tabs that are still open (on about:blank); close every other page."""
        lent, self._lent = self._lent, []
        for kind, page, own in lent:
            if page.is_closed():
                continue
            try:
                page.unroute_all()
                if own is None or _handlers(page) != own:
                    raise RuntimeError("the test left handlers on its tab")
                page.goto("about:blank", timeout=10_000)
            except Exception:  # a tab that cannot leave its page is not lent again
                page.close()
                continue
            self._idle[kind].append((page, own))
        pooled = {id(page) for pages in self._idle.values() for page, _ in pages}
        for ctx in self._contexts.values():
            for page in list(ctx.pages):
                if id(page) not in pooled:
                    page.close()

    def close(self) -> None:
        for ctx in self._contexts.values():
            ctx.close()


def _handlers(page) -> dict[str, int] | None:
    """How many handlers each event of a page has (Playwright's own and any a test added),
    from the emitter behind the page; None where this Playwright does not say."""
    try:
        impl = page._impl_obj
        return {e: len(impl.listeners(e)) for e in impl.event_names()}
    except Exception:
        return None


@pytest.fixture(scope="session")
def _warm_tabs(browser) -> Iterator[Tabs]:
    tabs = Tabs(browser)
    yield tabs
    tabs.close()


@pytest.fixture
def tabs(_warm_tabs) -> Iterator[Tabs]:
    """The worker's warm contexts; after a test its tabs go back to the pool (fresh ones and
    pages it opened itself are closed)."""
    yield _warm_tabs
    _warm_tabs.close_pages()


@pytest.fixture
def page(tabs):
    return tabs.open()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failed browser test, attach the server's log tail and a screenshot's path."""
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or not rep.failed:
        return
    for name in ("server", "cold_server"):
        srv = item.funcargs.get(name)
        if isinstance(srv, Server):
            rep.sections.append((f"{name} log (last 4000 characters)", srv.log()[-4000:]))
    page = item.funcargs.get("page")
    if page is not None:
        try:
            shot = Path(tempfile.mkdtemp(prefix="specviz-e2e-")) / "failure.png"
            page.screenshot(path=str(shot), full_page=True)
            rep.sections.append(("screenshot", f"{shot}\nURL: {page.url}"))
        except Exception as exc:  # the page may be gone; the log is what matters then
            rep.sections.append(("screenshot", f"not taken: {exc}"))
