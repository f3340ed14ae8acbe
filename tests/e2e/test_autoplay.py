"""Autoplay in a real browser under load: at every speed, until each page has moved on
WATCH_FRAMES frames, the step shown only ever moves one frame on (never back, never two),
and whenever the app is idle the slider, the counter and the URL all name the same step. A
busy process loads the machine meanwhile, so the server's runs take about as long as a
frame (the case where ticks used to race). The four speeds are watched side by side (a page
each), which loads the server more, not less; the watch ends when the slowest page has
moved on WATCH_FRAMES frames (the fast ones have moved on 2-6 times as many by then), not
after a fixed time."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from harness import IDLE, SETTLED_JS
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

SPEEDS = (0.5, 1.0, 2.0, 3.0)  # web.settings.SPEEDS, written out (the oracle is this file)
WATCH_FRAMES = 8  # frames each page must move on (at 3 s a step: 24 s)
WATCH_MAX_S = 120  # past this, a page that has not moved on WATCH_FRAMES frames fails
URL = "/round?present=1&k=5&seed=3&speed={speed:g}"
# Every 40 ms: the counter, the slider (its value and its last step), the URL's step and
# round, and whether the app is idle (its run finished) at that moment.
SAMPLER_JS = """() => {
  window.__svSeen = [];
  window.__svSampler = setInterval(() => {
    const c = document.querySelector('.sv-counter');
    const s = document.querySelector('.st-key-round_scrub input[type=range]');
    const app = document.querySelector('[data-testid=stApp]');
    if (!c || !s || !app) return;
    const q = new URLSearchParams(window.location.search);
    const idle = app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale=true]');
    window.__svSeen.push([c.textContent, +s.value, +s.max, q.get('step'), q.get('rnd'), idle,
      Date.now()]);
  }, 40);
}"""
COUNTER_RE = re.compile(r"Round (\d+) · step (\d+) ·")
# Whether the samples so far show n frames moved on (the counter's round and step changed).
MOVED_ON_JS = """(n) => {
  const re = /Round (\\d+) · step (\\d+) ·/;
  let last = null, moved = -1;
  for (const sample of window.__svSeen || []) {
    const m = re.exec(sample[0]);
    const at = m ? m[1] + ':' + m[2] : null;
    if (at !== null && at !== last) { moved++; last = at; }
  }
  return moved >= n;
}"""


@pytest.fixture
def load():
    """A busy process, for the test's length, besides the server and the browser (and, in the
    suite, the other worker's tests). Under it the code before autoplay's fix (ddb4316^)
    still fails at 0.5 s ((0, 8) -> (0, 7)) and 1 s a step, as it did under one per core;
    the second one only burned about 110 s of CPU a run that the other worker lacked."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])]
    yield
    for p in procs:
        p.kill()
        p.wait()


def frames(seen: list) -> list[tuple[int, int, int]]:
    """The distinct (rnd, step, last step of the round) shown, in order."""
    out = []
    for text, _, last, *_ in seen:
        m = COUNTER_RE.search(text)
        assert m, text
        shown = (int(m[1]), int(m[2]), last)
        if not out or out[-1][:2] != shown[:2]:
            out.append(shown)
    return out


def check_monotone(shown: list[tuple[int, int, int]]) -> None:
    """Each frame is the one after the last: the next step, or step 0 of the next round
    right after the last step of a round."""
    for (r0, s0, last0), (r1, s1, _) in zip(shown, shown[1:], strict=False):
        one_on = (r1, s1) == (r0, s0 + 1) or (s0 == last0 and (r1, s1) == (r0 + 1, 0))
        assert one_on, f"{(r0, s0)} -> {(r1, s1)} in {[f[:2] for f in shown]}"


def check_in_step(seen: list) -> float:
    """When idle, the URL shows the counter's step, and the slider shows it too before the
    counter moves on (the app still idle); returns the slider's longest lag in ms. Streamlit's
    slider shows a value the server set through a React effect that runs after the render
    bringing the new counter (its Slider: useEffect(() => setShown(value), [value])), and
    React's scheduler yields to timers in between, so under load a sample or two can see the
    new counter beside the old slider (one saw slider 5 beside counter 6 in two samples running).
    A slider still behind when its frame ends fails; only the frame the sampling stopped in
    may end unchecked."""
    lag = 0.0
    for i, (text, value, _, step, rnd, idle, t0) in enumerate(seen):
        if not idle:
            continue
        m = COUNTER_RE.search(text)
        assert (int(rnd or 0), int(step or 0)) == (int(m[1]), int(m[2])), (text, step, rnd)
        if value == int(m[2]):
            continue
        end = next((j for j in range(i, len(seen)) if seen[j][0] != text), len(seen))
        caught = next((s for s in seen[i + 1:end] if s[5] and s[1] == int(m[2])), None)
        assert caught or end == len(seen), (text, value, seen[i + 1:end + 1])
        lag = max(lag, caught[6] - t0 if caught else 0.0)
    return lag


def watch(server, browser, speeds: tuple[float, ...]) -> dict[float, tuple[list, bool]]:
    """Each speed's samples of autoplay, a page (and browser context) each, side by side,
    until every page has moved on WATCH_FRAMES frames (or WATCH_MAX_S has passed); and
    whether its counter was still visible at the end."""
    ctxs = [browser.new_context(viewport={"width": 1920, "height": 1080}) for _ in speeds]
    try:
        pages: list[Page] = []
        for ctx, speed in zip(ctxs, speeds, strict=True):
            ctx.set_default_timeout(60_000)
            pages.append(ctx.new_page())
            pages[-1].goto(server.url + URL.format(speed=speed))
        for page in pages:
            page.locator(".sv-counter").first.wait_for(timeout=90_000)
            page.wait_for_selector(IDLE, state="attached", timeout=60_000)
            page.wait_for_function(SETTLED_JS, timeout=60_000)
            # a hidden page's timers are throttled: every page side by side is in front
            assert page.evaluate("() => document.visibilityState") == "visible"
        for page in pages:
            page.evaluate(SAMPLER_JS)
            page.locator(".st-key-round_autoplay label").first.click()
        deadline = time.monotonic() + WATCH_MAX_S
        for page in pages:  # the slowest decides; the pages run on meanwhile
            left_ms = max(1_000, 1_000 * (deadline - time.monotonic()))
            try:
                page.wait_for_function(MOVED_ON_JS, arg=WATCH_FRAMES, timeout=left_ms,
                                       polling=500)
            except PlaywrightTimeout:
                break  # the test says which page fell short
        return {speed: (page.evaluate("() => { clearInterval(window.__svSampler); "
                                      "return window.__svSeen; }"),
                        page.locator(".sv-counter").first.is_visible())
                for speed, page in zip(speeds, pages, strict=True)}
    finally:
        for ctx in ctxs:
            ctx.close()


@pytest.fixture(scope="module")
def watched(server, browser):
    """speed -> its samples and visibility: every speed watched once, together, when the
    first of them is asked for (inside that test, under its load)."""
    done: dict[float, tuple[list, bool]] = {}

    def get(speed: float) -> tuple[list, bool]:
        if speed not in done:
            done.update(watch(server, browser, SPEEDS))
        return done[speed]
    return get


@pytest.mark.parametrize("speed", SPEEDS)
def test_autoplay_only_moves_forward_one_step_at_a_time(watched, load, speed):
    seen, visible = watched(speed)
    shown = frames(seen)
    check_monotone(shown)
    lag = check_in_step(seen)
    span_s = (seen[-1][6] - seen[0][6]) / 1000 if seen else 0.0
    print(f"speed {speed:g}: {len(shown) - 1} frames on in {span_s:.1f} s, {len(seen)} "
          f"samples, the slider at most {lag:.0f} ms behind the counter")
    assert len(shown) - 1 >= WATCH_FRAMES, (speed, span_s, [f[:2] for f in shown])
    assert visible
