"""The exported round (specviz.export) in a real browser with the network off: it loads from
a file, plays frame after frame, pauses, and scrubs to the end with the slider."""

from __future__ import annotations

import pytest

from specviz.core.pair import TablePair
from specviz.core.scenario import Scenario
from specviz.core.tables import default_tables
from specviz.figures import export
from specviz.views import transcript


def _transcript(pair, prefix, k, *, rule="correct", seed=0, tree=(), **kw):
    sc = Scenario.on(pair, prefix, k=k, rule=rule, seed=seed, tree=tree)
    return transcript.round_transcript(sc, **kw)

FRAME_MS = 250  # a quick export, so the test sees several frames in a couple of seconds
GD = "document.getElementById('sv-round')"
ACTIVE_JS = f"() => {GD}._fullLayout.sliders[0].active"
TITLE_JS = "() => document.querySelector('.gtitle').textContent"


@pytest.fixture
def offline(browser):
    """A browser context with the network switched off, every request recorded and any
    request that is not for a local file refused."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(30_000)
    ctx.set_offline(True)
    asked: list[str] = []

    def guard(route):
        asked.append(route.request.url)
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            route.abort()

    ctx.route("**/*", guard)
    ctx.on("request", lambda r: asked.append(r.url))
    yield ctx, asked
    ctx.close()


@pytest.fixture(scope="module")
def trace():
    d = default_tables()
    return _transcript(TablePair(d.P, d.Q, d.vocab), 0, 5, rnd=0, seed=3, rule="correct").current


def test_exported_round_plays_offline(offline, trace, tmp_path):
    ctx, asked = offline
    path = tmp_path / "round.html"
    path.write_bytes(export.round_html_bytes(trace, 0, frame_ms=FRAME_MS))
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function(f"() => {GD} && {GD}._fullLayout && {GD}._fullLayout.sliders")
    last = len(trace.steps) - 1
    assert page.evaluate(ACTIVE_JS) == 0
    assert f"step 0 of {last}" in page.evaluate(TITLE_JS)

    # play: the slider and the title move on by themselves
    page.get_by_text("▶ play").click()
    page.wait_for_function(f"() => {GD}._fullLayout.sliders[0].active >= 3", timeout=15_000)
    assert f"step 0 of {last}" not in page.evaluate(TITLE_JS)

    # pause: nothing moves any more
    page.get_by_text("❚❚ pause").click()
    page.wait_for_timeout(2 * FRAME_MS)
    held, title = page.evaluate(ACTIVE_JS), page.evaluate(TITLE_JS)
    assert 3 <= held < last or held == last
    page.wait_for_timeout(4 * FRAME_MS)
    assert page.evaluate(ACTIVE_JS) == held and page.evaluate(TITLE_JS) == title

    # scrub: a click at the right end of the slider's rail jumps to the last step
    rail = page.locator(".slider-rail-rect").first.bounding_box()
    page.mouse.click(rail["x"] + rail["width"] - 2, rail["y"] + rail["height"] / 2)
    page.wait_for_function(f"() => {GD}._fullLayout.sliders[0].active === {last}")
    page.wait_for_function(f"() => document.querySelector('.gtitle').textContent"
                           f".includes('step {last} of {last}')")
    # the round's outcome is drawn at the end: the emitted tokens' labels are on the chips
    chips_text = page.locator(".scatterlayer").first.text_content()
    for e in trace.emitted:
        assert trace.name(e.token) in chips_text

    assert not errors, errors
    assert asked and all(u.startswith(("file:", "data:", "blob:")) for u in asked), asked


def test_exported_tree_round_shows_its_tree_at_the_step_on_screen(offline, tmp_path):
    """A token-tree round's export carries the tree view, and the view follows the frames
    the slider moves to."""
    ctx, asked = offline
    d = default_tables()
    tr = _transcript(TablePair(d.P, d.Q, d.vocab), 0, 3, rnd=0, seed=15,
                     rule="tree_wor").current
    last = len(tr.steps) - 1
    path = tmp_path / "tree.html"
    path.write_bytes(export.round_html_bytes(tr, 0, frame_ms=FRAME_MS, start=2))
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function(f"() => {GD} && {GD}._fullLayout && {GD}._fullLayout.sliders")
    shown = ".sv-tree-step:not([hidden])"
    assert page.locator(shown).count() == 1
    assert page.locator(shown).get_attribute("data-step") == "2"
    assert page.locator(f"{shown} [data-status='accepted']").count() == 0
    rail = page.locator(".slider-rail-rect").first.bounding_box()
    page.mouse.click(rail["x"] + rail["width"] - 2, rail["y"] + rail["height"] / 2)
    page.wait_for_function(f"() => {GD}._fullLayout.sliders[0].active === {last}")
    page.wait_for_function("() => document.querySelector('.sv-tree-step:not([hidden])')"
                           f".dataset.step === '{last}'")
    assert page.locator(f"{shown} [data-status='flushed']").count() > 0
    page.mouse.click(rail["x"] + 2, rail["y"] + rail["height"] / 2)  # back to step 0
    page.wait_for_function("() => document.querySelector('.sv-tree-step:not([hidden])')"
                           ".dataset.step === '0'")
    assert page.locator(f"{shown} .sv-node").count() == 0  # nothing drafted yet
    assert not errors, errors
    assert all(u.startswith(("file:", "data:", "blob:")) for u in asked), asked
