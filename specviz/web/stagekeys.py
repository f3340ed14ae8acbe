"""The stage's keys and autoplay clock in the browser, as strings (no Streamlit; the scripts
are files in assets/): space for play and pause, the arrow keys as a queue of steps, the
autoplay marker and its clock. specviz.web.ui and specviz.web.stage inject them."""

from __future__ import annotations

import html

from . import assets

# No focus ring round the whole main area after a key press (assets/main_focus.css).
MAIN_FOCUS_CSS = assets.css("main_focus.css")


def play_pause_js(toggle_key: str) -> str:
    """A keydown listener: space flips the toggle keyed `toggle_key` (Streamlit gives widget
    `key` the class st-key-<key>). It does nothing while the focus is in a text field, a
    select, a slider, a button or a link, where space already has a meaning, nor with a
    modifier held, nor on auto-repeat. Installed once per page load; on pages without the
    toggle it does nothing."""
    return assets.js("play_pause.js", toggle_key=toggle_key,
                     toggle=f".st-key-{toggle_key} input[type=checkbox]")


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
    return assets.js("step_queue.js", keys=keys, marker=PLAY_MARKER, queue_max=STEP_QUEUE_MAX,
                     wait_ms=STEP_WAIT_MS, poll_ms=STEP_POLL_MS)


PLAY_POLL_MS = 40  # how often the autoplay clock looks at the page
PLAY_HOLD = 0.5  # a frame stays on screen at least this much of the period, however slow
PLAY_WAIT_MS = 5000  # a tick whose frame never came is pressed again after this


def autoplay_marker_html(stage: str, *, shown: str, on: bool, speed: float) -> str:
    """The stage's autoplay marker (hidden): which frame is shown ('rnd:step'), whether
    autoplay is on, the seconds per step; with the style that hides it and the tick button."""
    return (f"<style>{assets.css('autoplay_marker.css', stage=stage, marker=PLAY_MARKER).strip()}"
            f"</style><div class=\"{PLAY_MARKER}\" data-stage=\"{html.escape(stage)}\" "
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
    return assets.js("autoplay.js", marker=PLAY_MARKER, wait_ms=PLAY_WAIT_MS, hold=PLAY_HOLD,
                     poll_ms=PLAY_POLL_MS)

