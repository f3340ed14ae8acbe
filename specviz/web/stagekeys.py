"""The stage's keys and autoplay clock in the browser, as strings (no Streamlit): space for
play and pause, the arrow keys as a queue of steps, the autoplay marker and its clock.
specviz.web.ui and specviz.web.stage inject them."""

from __future__ import annotations

import html

# A click on the page gives the main area the focus, so that the keys reach it; after a key
# press that focus counts as visible and Streamlit draws an inset ring round the whole area
# (a box-shadow on its ::before). The area is not a control: no ring there. Controls keep
# theirs (Streamlit's, or presenter mode's thicker one).
MAIN_FOCUS_CSS = """
[data-testid="stMain"]:focus, [data-testid="stMain"]:focus-visible { outline: none; }
[data-testid="stMain"]:focus::before, [data-testid="stMain"]:focus-visible::before,
[data-testid="stMain"]:focus::after, [data-testid="stMain"]:focus-visible::after {
  box-shadow: none !important; outline: none !important; }
"""


def play_pause_js(toggle_key: str) -> str:
    """A keydown listener: space flips the toggle keyed `toggle_key` (Streamlit gives widget
    `key` the class st-key-<key>). It does nothing while the focus is in a text field, a
    select, a slider, a button or a link, where space already has a meaning, nor with a
    modifier held, nor on auto-repeat. Installed once per page load; on pages without the
    toggle it does nothing."""
    sel = f".st-key-{toggle_key} input[type=checkbox]"
    return f"""
(function () {{
  const w = window;
  w.__svPlayPause = w.__svPlayPause || {{}};
  if (w.__svPlayPause[{toggle_key!r}]) return;
  w.__svPlayPause[{toggle_key!r}] = true;
  const BUSY = 'input, textarea, select, button, a[href], summary, [contenteditable=""], ' +
    '[contenteditable="true"], [role="slider"], [role="button"], [role="combobox"], ' +
    '[role="listbox"], [role="option"], [role="textbox"], [role="spinbutton"], ' +
    '[role="switch"], [role="checkbox"], [role="radio"], [role="tab"], [role="menuitem"]';
  document.addEventListener('keydown', function (e) {{
    if (e.key !== ' ' && e.code !== 'Space') return;
    if (e.ctrlKey || e.metaKey || e.altKey || e.shiftKey || e.repeat || e.defaultPrevented)
      return;
    const t = e.target;
    if (t && t.closest && t.closest(BUSY)) return;
    if (t && t.isContentEditable) return;
    const box = document.querySelector({sel!r});
    if (!box || box.disabled) return;
    e.preventDefault();
    box.click();
  }});
}})();
"""


PLAY_MARKER = "sv-play"  # class of the element that tells the browser the frame shown
STEP_KEYS = {"ArrowRight": "next", "ArrowLeft": "prev"}  # key -> the button it presses
STEP_QUEUE_MAX = 12  # presses waiting at most: more, faster, are dropped
STEP_WAIT_MS = 3000  # a press whose rerun never shows is given up after this
STEP_POLL_MS = 25  # how often the queue looks at the page while it holds presses


def step_queue_js(keys: dict[str, str] = STEP_KEYS) -> str:
    """Arrow keys as a queue: each press of a key in `keys` clicks its button (widget key)
    once, and the next click waits until the app's rerun from the last one has finished.
    Streamlit merges button clicks that arrive during a rerun into one, so 50 fast presses
    would move 2 steps; queued, each press is one step, up to STEP_QUEUE_MAX waiting. It
    takes the keys before the buttons' own shortcuts (capture phase) and, like space,
    leaves them alone in text fields, sliders and other controls. A press is taken at once
    when the app is idle and nothing waits; else every STEP_POLL_MS. A press's rerun is over
    when the app is idle and either it was seen busy since the press or the stage's frame
    (its autoplay marker) is a new one: a stage's rerun can start and end between two
    looks at the page. Failing both, the press is given up after STEP_WAIT_MS."""
    return f"""
(function () {{
  const w = window;
  if (w.__svSteps) {{ w.__svSteps.keys = {keys!r}; return; }}
  const S = w.__svSteps = {{keys: {keys!r}, queue: [], waiting: false, saw: false, at: 0}};
  const BUSY = 'input, textarea, select, [contenteditable="true"], [role="slider"], ' +
    '[role="textbox"], [role="spinbutton"], [role="combobox"], [role="listbox"]';
  const button = (key) => document.querySelector('.st-key-' + key + ' button');
  const state = () => {{
    const app = document.querySelector('[data-testid="stApp"]');
    return app ? app.getAttribute('data-test-script-state') : null;
  }};
  const busy = (st) => st === 'running' || st === 'rerunRequested';
  const marks = document.getElementsByClassName('{PLAY_MARKER}');  // the frame on screen
  const frame = () => (marks[0] ? marks[0].dataset.shown : null);
  w.addEventListener('keydown', function (e) {{
    const key = S.keys[e.key];
    if (!key || e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) return;
    const t = e.target;
    if (t && t.closest && t.closest(BUSY)) return;
    if (!button(key)) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (S.queue.length < {STEP_QUEUE_MAX}) S.queue.push(key);
    pump();  // an idle app takes the press at once
  }}, true);
  function pump() {{
    if (!S.waiting && !S.queue.length) return;  // idle: no look at the page
    const st = state();
    if (S.waiting) {{
      if (busy(st)) S.saw = true;
      const ran = S.saw || frame() !== S.frame;
      if (!(ran && !busy(st)) && Date.now() - S.at < {STEP_WAIT_MS}) return;
      S.waiting = false;
    }}
    if (!S.queue.length || busy(st)) return;
    const key = S.queue.shift();
    const b = button(key);
    if (!b || b.disabled) {{ S.queue = S.queue.filter((k) => k !== key); return; }}
    S.waiting = true; S.saw = false; S.at = Date.now(); S.frame = frame();
    b.click();
  }}
  setInterval(pump, {STEP_POLL_MS});
}})();
"""


PLAY_POLL_MS = 40  # how often the autoplay clock looks at the page
PLAY_HOLD = 0.5  # a frame stays on screen at least this much of the period, however slow
PLAY_WAIT_MS = 5000  # a tick whose frame never came is pressed again after this


def autoplay_marker_html(stage: str, *, shown: str, on: bool, speed: float) -> str:
    """The stage's autoplay marker (hidden): which frame is shown ('rnd:step'), whether
    autoplay is on, the seconds per step; with the style that hides it and the tick button."""
    return (f"<style>.st-key-{stage}_tick, .stElementContainer:has(> .stHtml > .{PLAY_MARKER}) "
            f"{{ display: none !important; }}</style>"
            f'<div class="{PLAY_MARKER}" data-stage="{html.escape(stage)}" '
            f'data-shown="{html.escape(shown)}" data-on="{int(on)}" data-speed="{speed:g}">'
            "</div>")


def autoplay_js() -> str:
    """The autoplay clock, in the browser: while the marker says on, it presses the stage's
    hidden tick button once per period, only when the app is idle (the last run finished,
    nothing stale on screen) and only once per frame shown: the next press waits until a
    new frame is on screen. The frame pressed for is the one the server drew with the
    button, so a late or repeated press moves nothing (stage._ticked). The period counts
    from the last press; a slow server stretches it, each frame staying on screen at least
    PLAY_HOLD of it. Installed once per page load."""
    return f"""
(function () {{
  const w = window;
  if (w.__svPlay) return;
  const P = w.__svPlay = {{seen: null, since: 0, pressed: null, at: 0}};
  const marks = document.getElementsByClassName('{PLAY_MARKER}');  // live: no query a tick
  const idle = () => {{
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale="true"]');
  }};
  setInterval(function () {{
    const m = marks[0];
    if (!m || m.dataset.on !== '1') {{ P.seen = null; P.pressed = null; return; }}
    if (!idle()) return;
    const now = Date.now();
    const shown = m.dataset.stage + ':' + m.dataset.shown;
    if (shown !== P.seen) {{ P.seen = shown; P.since = now; }}
    const period = 1000 * parseFloat(m.dataset.speed);
    if (P.pressed === shown && now - P.at < {PLAY_WAIT_MS} + period) return;
    const due = P.pressed === null ? P.since + period
      : Math.max(P.at + period, P.since + {PLAY_HOLD} * period);
    if (now < due) return;
    const b = document.querySelector('.st-key-' + m.dataset.stage + '_tick button');
    if (!b || b.disabled) return;
    P.pressed = shown; P.at = now;
    b.click();
  }}, {PLAY_POLL_MS});
}})();
"""

