"""The exported round as a stand-in for the stage, in a real browser from a file: the
stage's keys step it (→ ←, Home, End) and space plays and pauses; play goes on from the
step shown (3 -> 4, never back); and every text in it reads at 18 px or more."""

from __future__ import annotations

import re

import pytest

from specviz.core.pair import TablePair
from specviz.core.scenario import Scenario
from specviz.core.tables import default_tables
from specviz.figures import export
from specviz.views import transcript
from specviz.web.present import MIN_PX

FRAME_MS = 400
START = 3
GD = "document.getElementById('sv-round')"
STEP_RE = re.compile(r"step (\d+) of (\d+)")
SAMPLER_JS = """() => { window.__svSeen = []; window.__svT = setInterval(() => {
  const t = document.querySelector('.gtitle'); if (t) window.__svSeen.push(t.textContent); },
  30); }"""
SIZES_JS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('text, p, li, h2, kbd, b')) {
    const r = el.getBoundingClientRect();
    if (!el.textContent.trim() || r.width === 0) continue;
    out.push([el.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(el).fontSize)]);
  }
  return out;
}"""


@pytest.fixture
def opened(browser, tmp_path):
    d = default_tables()
    pair = TablePair(d.P, d.Q, d.vocab)
    tr = transcript.round_transcript(Scenario.on(pair, 0, k=5, seed=3), rnd=0).current
    path = tmp_path / "round.html"
    path.write_bytes(export.round_html_bytes(tr, 0, frame_ms=FRAME_MS, start=START))
    ctx = browser.new_context(viewport={"width": 1920, "height": 1080})
    ctx.set_default_timeout(30_000)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function(f"() => {GD} && {GD}._fullLayout && {GD}._fullLayout.sliders")
    yield page, len(tr.steps) - 1
    assert not errors, errors
    ctx.close()


def step(page) -> int:
    return int(STEP_RE.search(page.locator(".gtitle").text_content())[1])


def wait_step(page, n: int) -> None:
    page.wait_for_function(f"() => document.querySelector('.gtitle').textContent"
                           f".includes('step {n} of')", timeout=10_000)


def test_the_export_takes_the_stage_keys(opened):
    page, last = opened
    assert step(page) == START
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")
    wait_step(page, START + 1)
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    wait_step(page, START - 1)
    page.keyboard.press("End")
    wait_step(page, last)
    page.keyboard.press("Home")
    wait_step(page, 0)
    assert page.evaluate(f"() => {GD}._fullLayout.sliders[0].active") == 0


@pytest.mark.parametrize("how", ["space", "button"])
def test_play_goes_on_from_the_step_shown(opened, how):
    page, last = opened
    page.evaluate(SAMPLER_JS)
    if how == "space":
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press(" ")
    else:
        page.get_by_text("▶ play").click()
    wait_step(page, START + 3)
    if how == "space":
        page.keyboard.press(" ")
    else:
        page.get_by_text("❚❚ pause").click()
    seen = page.evaluate("() => { clearInterval(window.__svT); return window.__svSeen; }")
    steps = [int(STEP_RE.search(t)[1]) for t in seen]
    moves = [b for a, b in zip(steps, steps[1:], strict=False) if b != a]
    assert moves[:3] == [START + 1, START + 2, START + 3], steps
    held = step(page)
    page.wait_for_timeout(3 * FRAME_MS)
    assert step(page) == held  # paused


def test_the_export_reads_at_presenter_sizes(opened):
    page, _ = opened
    sizes = page.evaluate(SIZES_JS)
    assert len(sizes) > 30
    small = [(t, px) for t, px in sizes if px < MIN_PX - 0.01]
    assert not small, small[:12]
