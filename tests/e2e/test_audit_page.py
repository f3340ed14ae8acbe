"""/audit in a real browser: a built-in example's verdict and charts; on this loopback server
(a local one: views.auditpage.is_local) the code box audits pasted code; screenshots."""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, urlsplit

from playwright.sync_api import expect

SHOTS = os.environ.get("SPECVIZ_SHOTS")  # a folder: screenshots are written there when set


def _shots(page, name: str) -> None:
    if SHOTS:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.wait_for_timeout(1500)
        page.screenshot(path=f"{SHOTS}/{name}-1440.png", full_page=False)
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_timeout(1500)
        page.screenshot(path=f"{SHOTS}/{name}-390.png", full_page=False)
        page.set_viewport_size({"width": 1440, "height": 900})


def test_audit_an_example_then_pasted_code(server, page):
    page.goto(f"{server.url}/audit?a_example=no_resample")
    page.get_by_text("biased, like no_resample").first.wait_for(timeout=90_000)
    page.get_by_text("First-token marginal").locator("visible=true").first.wait_for()
    page.get_by_text("Convergence").locator("visible=true").first.wait_for()
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/audit-example-full.png", full_page=True)
    _shots(page, "audit-example")
    page.get_by_text("your code").first.click()
    box = page.get_by_label("your verify", exact=False)
    expect(box).to_have_value(re.compile(r"def verify\(drafted, q, p, rng\)"))
    page.get_by_text("your verify: lossless").first.wait_for(timeout=120_000)
    expect(page).to_have_url(re.compile(r"[?&]a_src=code"), timeout=60_000)
    q = dict(parse_qsl(urlsplit(page.url).query))
    assert q.get("a_code")  # the pasted function travels in the link (a local server)
    assert page.get_by_text("Traceback").count() == 0
    _shots(page, "audit-code")
