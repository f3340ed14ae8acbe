"""Presenter mode as data: the CSS, the palette and the key hints for a projected screen.

Pure strings (no Streamlit): specviz.ui injects them when the URL says present=1. What a
projector does to a page: it washes out pale colours and thin strokes, and the back row
reads nothing under about 20 px. So the theme is black on white, with large type, thick
focus rings, and a palette of the Okabe & Ito (2008) colours that keep their contrast on
white (their yellow and sky blue do not, so they are left out of the line palette).
"""

from __future__ import annotations

import html

from ..figures import palette

PROJECTOR_PALETTE = palette.PROJECTOR  # the colours that keep their contrast projected
INK = palette.BLACK  # body text
PAPER = "#FFFFFF"  # background
LINK = "#0050A0"  # links: a darker blue than the palette's, underlined
FOCUS = palette.VERMILLION  # keyboard focus ring

BASE_PX = 21  # body text in presenter mode (Streamlit's default is 16)
TITLE_REM = 2.2  # h1
METRIC_VALUE_REM = 2.6
METRIC_LABEL_REM = 1.15
CAPTION_REM = 0.95  # of BASE_PX
FIGURE_FONT_PX = 20  # the figures' base font in presenter mode (axis titles, annotations)
FIGURE_TITLE_PX = 22  # their titles
FIGURE_TICK_PX = 18  # axis tick labels, legend entries: the smallest chart text projected
FIGURE_MARGIN_PX = 70  # left and bottom margins that hold the larger ticks
EXIT_PX = 20  # the "leave presenter mode" button
TITLE_PAD_PX = 8  # between the figure's top edge and its title, and under the subplot titles
LINE_HEIGHT = 1.3  # a line of chart text, in multiples of its font size
DEFAULT_TOP_PX = 100  # Plotly's top margin when a figure sets none
LEGEND_DROP = 0.08  # a legend under the axis moves this much further down (of the plot)
MARKER = "sv-present"  # class of the element that marks presenter mode in the page
BAR_KEY = "sv_present_bar"  # the key of the bar of the story's controls
PAGES_KEY = "sv_present_pages_menu"  # the key of the pages menu, pinned beside the way out
MENU_RIGHT_PX = 125  # the menu's place from the right edge: left of the way out
CORNER_PX = 300  # the room the menu and the way out take at the top right
TABLE_CLASS = "sv-table"  # presenter mode's tables (HTML, so that their type can grow)
MIN_PX = 18  # the smallest text on a presenter page, at any screen size

KEY_HINTS = (("←", "one step back"), ("→", "one step on"), ("space", "play / pause"),
             ("N", "new round"))


def presenter_css() -> str:
    """The style sheet of presenter mode: no sidebar, header or toolbar; large black type."""
    return f"""
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stSidebarCollapseButton"], [data-testid="stExpandSidebarButton"],
[data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"],
[data-testid="stStatusWidget"], header.stAppHeader {{ display: none !important; }}
.stApp, [data-testid="stAppViewContainer"], [data-testid="stMain"] {{
  background: {PAPER} !important; color: {INK} !important; }}
[data-testid="stMainBlockContainer"], .block-container {{
  padding: 0.6rem 2rem 2rem 2rem !important; max-width: 100% !important; }}
.stElementContainer:has(> .stHtml > .{MARKER}) {{ display: contents; }}
html {{ font-size: clamp(16px, 1.1vw, {BASE_PX}px) !important; }}
.stApp, .stMarkdown, .stMarkdown p, .stMarkdown li, [data-testid="stMarkdownContainer"] {{
  font-size: 1rem !important; line-height: 1.45 !important; color: {INK} !important; }}
h1, .stMarkdown h1 {{ font-size: {TITLE_REM}rem !important; font-weight: 800 !important;
  color: {INK} !important; padding: 0.1rem {CORNER_PX}px 0.2rem 0 !important; }}
h2, .stMarkdown h2 {{ font-size: 2.1rem !important; color: {INK} !important; }}
h3, .stMarkdown h3 {{ font-size: 1.7rem !important; color: {INK} !important; }}
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p, .stCaption {{
  font-size: {CAPTION_REM}rem !important; color: #1a1a1a !important;
  opacity: 1 !important; }}
[data-testid="stMetricValue"], [data-testid="stMetricValue"] div {{
  font-size: {METRIC_VALUE_REM}rem !important; font-weight: 700 !important;
  color: {INK} !important; }}
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] p {{
  font-size: {METRIC_LABEL_REM}rem !important; color: {INK} !important; }}
[data-testid="stWidgetLabel"], [data-testid="stWidgetLabel"] p, label p {{
  font-size: 1rem !important; color: {INK} !important; }}
[data-testid="stAlertContainer"] p, [data-testid="stAlert"] p {{
  font-size: 1rem !important; color: {INK} !important; }}
.sv-step {{ font-size: 1.05rem !important; color: {INK} !important; }}
.stButton button, .stDownloadButton button, .stLinkButton a {{
  font-size: 1rem !important; min-height: 2.6rem !important;
  border: 2px solid {INK} !important; color: {INK} !important; }}
.stButton button p, .stDownloadButton button p, .stLinkButton a p {{
  font-size: 1rem !important; }}
.stMarkdown a {{ color: {LINK} !important; text-decoration: underline !important; }}
[data-testid="stBaseButton-primary"], [data-testid="stBaseLinkButton-primary"] {{
  background: {INK} !important; border-color: {INK} !important; }}
[data-testid="stBaseButton-primary"], [data-testid="stBaseButton-primary"] p,
[data-testid="stBaseLinkButton-primary"], [data-testid="stBaseLinkButton-primary"] p {{
  color: {PAPER} !important; }}
:focus-visible {{ outline: 4px solid {FOCUS} !important; outline-offset: 2px !important; }}
.sv-chip {{ font-size: 1.05rem !important; border-width: 3px !important; }}
.sv-legend {{ display: none !important; }}
.st-key-{BAR_KEY} {{ padding-right: {CORNER_PX}px; }}
.st-key-{PAGES_KEY} {{ position: fixed; top: 8px; right: {MENU_RIGHT_PX}px; z-index: 1000;
  width: auto !important; }}
.st-key-{PAGES_KEY} button {{ border: 3px solid {INK} !important; background: {PAPER}; }}
.st-key-{PAGES_KEY} button p, .st-key-{PAGES_KEY} button span {{
  font-size: {EXIT_PX}px !important; font-weight: 700; color: {INK} !important; }}
.st-key-{BAR_KEY} [data-testid="stSliderThumbValue"],
.st-key-{BAR_KEY} [data-testid="stSliderTickBar"],
.st-key-{BAR_KEY} [data-testid="stSliderTickBar"] div, .st-key-{BAR_KEY} input,
.st-key-{BAR_KEY} [data-testid="stWidgetLabel"] p, .st-key-{BAR_KEY} button p,
.st-key-{BAR_KEY} [data-testid="stMarkdownContainer"], .st-key-{BAR_KEY} p,
.st-key-{BAR_KEY} span, [data-testid="stPopoverBody"] [data-testid="stMarkdownContainer"],
[data-testid="stPopoverBody"] a p, [data-testid="stPopoverBody"] a span {{
  font-size: max({MIN_PX}px, 1rem) !important; color: {INK} !important; }}
.st-key-{BAR_KEY} [data-testid="stSlider"] {{ padding: 0 0.6rem; }}
[data-testid="stNumberInputContainer"] input, [data-baseweb="input"] input,
[data-baseweb="select"] [value], [data-baseweb="select"] div, [data-testid="stSelectbox"] div,
[data-testid="stSelectbox"] input, [data-testid="stSelectbox"] span,
[data-testid="stSliderThumbValue"] p,
[data-testid="stSliderTickBar"] p {{ font-size: max({MIN_PX}px, 1rem) !important;
  color: {INK} !important; }}
[data-testid="stMain"]:focus, [data-testid="stMainBlockContainer"]:focus,
[data-testid="stAppViewContainer"]:focus, [data-testid="stMain"] section:focus {{
  outline: none !important; }}
.{TABLE_CLASS} {{ border-collapse: collapse; width: 100%; }}
.{TABLE_CLASS} th, .{TABLE_CLASS} td {{ font-size: max({MIN_PX}px, 1rem) !important;
  color: {INK} !important; padding: 0.25rem 0.7rem; border-bottom: 1px solid #999;
  text-align: right; }}
.{TABLE_CLASS} th {{ border-bottom: 2px solid {INK}; font-weight: 700; text-align: right; }}
.{TABLE_CLASS} td.sv-text, .{TABLE_CLASS} th.sv-text {{ text-align: left; }}
.sv-table-wrap {{ overflow-x: auto; max-width: 100%; }}
.{MARKER} {{ position: relative; height: 0; }}
.{MARKER}-bar {{ position: fixed; top: 8px; right: 12px; z-index: 1000;
  font-size: {EXIT_PX}px; font-weight: 700; background: {PAPER}; border: 3px solid {INK};
  border-radius: 8px; padding: 6px 14px; }}
.{MARKER}-bar a {{ color: {INK} !important; text-decoration: none !important; }}
"""


def big_figure(fig):
    """A copy of the figure with the presenter's type: every text at least FIGURE_TICK_PX
    (titles, axis titles and ticks, legends, annotations, text on traces), black ink.
    Streamlit's chart theme sets tick and title sizes itself, so they are set here."""
    out = type(fig)(fig)
    out.update_layout(font_size=FIGURE_FONT_PX, font_color=INK, title_font_size=FIGURE_TITLE_PX,
                      legend_font_size=FIGURE_TICK_PX)
    for axes in (out.update_xaxes, out.update_yaxes):
        axes(tickfont_size=FIGURE_TICK_PX, title_font_size=FIGURE_FONT_PX,
             tickfont_color=INK, title_font_color=INK)
    if hasattr(out.layout, "scene"):
        out.update_scenes(xaxis_tickfont_size=FIGURE_TICK_PX, yaxis_tickfont_size=FIGURE_TICK_PX,
                          zaxis_tickfont_size=FIGURE_TICK_PX)
    for ann in out.layout.annotations:
        ann.font.size = max(ann.font.size or 0, FIGURE_FONT_PX)
    for tr in out.data:
        if "textfont" in tr:
            tr.textfont.size = max(tr.textfont.size or 0, FIGURE_TICK_PX)
    m, legend = out.layout.margin, out.layout.legend
    out.update_layout(margin=dict(l=max(m.l or 0, FIGURE_MARGIN_PX),
                                  b=max(m.b or 0, FIGURE_MARGIN_PX)))
    if legend.orientation == "h" and legend.y is not None and legend.y < 0:
        legend.y -= LEGEND_DROP  # under the larger tick labels, never over them
    _title_room(out)
    return out


def _lines(text) -> int:
    return str(text or "").count("<br>") + 1


def _title_room(fig) -> None:
    """A top margin that holds the title over the subplot titles (annotations just above
    the plot area) at their larger type, without overlap. A one-line title is pinned to the
    top: t >= pad + 1.3 title_px + 1.3 font_px lines + pad; a longer one stays centred in
    the margin (Plotly's place for it): t >= title height + 2 (panel titles + pad). The
    figure grows by what the margin grows, so the plot area keeps its height."""
    title = fig.layout.title
    above = [a for a in fig.layout.annotations
             if a.yref == "paper" and a.y is not None and a.y >= 1 and a.yanchor == "bottom"]
    if title is None or not title.text or not above:
        return
    heads = LINE_HEIGHT * FIGURE_FONT_PX * max(_lines(a.text) for a in above)
    tall = LINE_HEIGHT * FIGURE_TITLE_PX * _lines(title.text)
    if _lines(title.text) == 1:
        need = round(2 * TITLE_PAD_PX + tall + heads)
        fig.update_layout(title=dict(yref="container", y=1.0, yanchor="top",
                                     pad=dict(t=TITLE_PAD_PX)))
    else:
        need = round(tall + 2 * (heads + TITLE_PAD_PX))
    old = fig.layout.margin.t if fig.layout.margin.t is not None else DEFAULT_TOP_PX
    if need > old:
        fig.update_layout(margin=dict(t=need))
        if fig.layout.height:
            fig.update_layout(height=fig.layout.height + need - old)


def presenter_html(exit_label: str = "✕ exit") -> str:
    """The style sheet, the marker element the tests look for, and a fixed corner link that
    reloads the page without present=1 (the sidebar is hidden, so it is the way out)."""
    return (
        f'<style id="{MARKER}-css">{presenter_css()}</style>'
        f'<div class="{MARKER}" data-present="1" data-sidebar="hidden">'
        f'<div class="{MARKER}-bar"><a href="?present=0" class="{MARKER}-exit" '
        f'aria-label="leave presenter mode" '
        f'title="Leave presenter mode: this page again at the same settings">'
        f"{html.escape(exit_label)}</a></div></div>"
    )


def table_html(headers: list[str], rows: list[list[str]], is_text: list[bool]) -> str:
    """A table as HTML at presenter type (its cells already formatted): text columns left,
    numbers right; escaped; it scrolls sideways on its own where it is too wide."""
    def cls(i: int) -> str:
        return ' class="sv-text"' if is_text[i] else ""
    head = "".join(f"<th{cls(i)}>{html.escape(h)}</th>" for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{html.escape(v)}</td>"
                                    for i, v in enumerate(row)) + "</tr>" for row in rows)
    return (f'<div class="sv-table-wrap"><table class="{TABLE_CLASS}"><thead><tr>{head}'
            f"</tr></thead><tbody>{body}</tbody></table></div>")


EXIT_JS = f"""
(function () {{
  // The corner link keeps every other parameter of the page: it drops present only.
  for (const a of document.querySelectorAll('a.{MARKER}-exit')) {{
    const url = new URL(window.location.href);
    url.searchParams.delete('present');
    a.href = url.pathname + url.search + url.hash;
  }}
}})();
"""


def key_hints_html(hints: tuple[tuple[str, str], ...] = KEY_HINTS) -> str:
    """One line of keyboard hints: each key in a <kbd>, then what it does."""
    items = " · ".join(f"<kbd>{html.escape(k)}</kbd> {html.escape(what)}" for k, what in hints)
    return (f'<div class="sv-keys" role="note" aria-label="keyboard shortcuts" '
            f'style="font-size:0.9em">Keys: {items}</div>')


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


STEP_KEYS = {"ArrowRight": "next", "ArrowLeft": "prev"}  # key -> the button it presses
STEP_QUEUE_MAX = 12  # presses waiting at most: more, faster, are dropped
STEP_WAIT_MS = 3000  # a press whose rerun never shows is given up after this


def step_queue_js(keys: dict[str, str] = STEP_KEYS) -> str:
    """Arrow keys as a queue: each press of a key in `keys` clicks its button (widget key)
    once, and the next click waits until the app's rerun from the last one has finished.
    Streamlit merges button clicks that arrive during a rerun into one, so 50 fast presses
    would move 2 steps; queued, each press is one step, up to STEP_QUEUE_MAX waiting. It
    takes the keys before the buttons' own shortcuts (capture phase) and, like space,
    leaves them alone in text fields, sliders and other controls."""
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
  w.addEventListener('keydown', function (e) {{
    const key = S.keys[e.key];
    if (!key || e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) return;
    const t = e.target;
    if (t && t.closest && t.closest(BUSY)) return;
    if (!button(key)) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (S.queue.length < {STEP_QUEUE_MAX}) S.queue.push(key);
  }}, true);
  setInterval(function () {{
    const st = state();
    if (S.waiting) {{
      if (busy(st)) S.saw = true;
      if (!(S.saw && !busy(st)) && Date.now() - S.at < {STEP_WAIT_MS}) return;
      S.waiting = false;
    }}
    if (!S.queue.length || busy(st)) return;
    const key = S.queue.shift();
    const b = button(key);
    if (!b || b.disabled) {{ S.queue = S.queue.filter((k) => k !== key); return; }}
    S.waiting = true; S.saw = false; S.at = Date.now();
    b.click();
  }}, 25);
}})();
"""


PLAY_MARKER = "sv-play"  # class of the element that tells the browser the frame shown
PLAY_POLL_MS = 40  # how often the autoplay clock looks at the page
PLAY_HOLD = 0.5  # a frame stays on screen at least this much of the period, however slow
PLAY_WAIT_MS = 5000  # a tick whose frame never came is pressed again after this


def autoplay_marker_html(stage: str, *, shown: str, on: bool, speed: float) -> str:
    """The stage's autoplay marker (hidden): which frame is shown ('rnd:step'), whether
    autoplay is on, the seconds per step; with the style that hides it and the tick button."""
    return (f"<style>.st-key-{stage}_tick, .stElementContainer:has(.{PLAY_MARKER}) "
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
  const idle = () => {{
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale="true"]');
  }};
  setInterval(function () {{
    const m = document.querySelector('.{PLAY_MARKER}');
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


# ----------------------------------------------------------------------------- sharing
COPY_LABEL = "Copy link to this state"  # text only: no emoji font is needed


def share_url_html(url: str) -> str:
    """The address as selectable text (one click selects all of it): plain HTML, so a page
    does not load the code highlighter's 1.5 MB of JavaScript for one line."""
    return (f'<code class="sv-share-url" style="display:block;user-select:all;'
            f'word-break:break-all;white-space:pre-wrap;font-size:0.8rem;padding:0.5rem;'
            f'border-radius:0.5rem;background:rgba(49,51,63,0.06)">{html.escape(url)}</code>')


SHARE_SYNC_MS = 100  # how often the share box checks the address


def share_sync_js() -> str:
    """Keeps every share box's text equal to the browser's address: a step, a key or
    autoplay rewrites the address from inside a fragment, which never reruns the sidebar
    that drew the box. It updates on each history change and, as a backstop, every
    SHARE_SYNC_MS. Installed once per page load."""
    return f"""
(function () {{
  const w = window;
  if (w.__svShareSync) return;
  w.__svShareSync = true;
  const sync = () => {{
    for (const el of document.querySelectorAll('.sv-share-url')) {{
      if (el.textContent !== w.location.href) el.textContent = w.location.href;
    }}
  }};
  for (const name of ['pushState', 'replaceState']) {{
    const orig = w.history[name];
    w.history[name] = function () {{ const r = orig.apply(this, arguments); sync(); return r; }};
  }}
  w.addEventListener('popstate', sync);
  setInterval(sync, {SHARE_SYNC_MS});
  sync();
}})();
"""


def copy_link_html(label: str = COPY_LABEL) -> str:
    """A button that copies the page's address (every setting is in it) to the clipboard,
    read at the moment of the click, so it is always the current state. Where the
    clipboard API is refused (a page served over plain http from another host), it falls
    back to a hidden text selection; a polite live region says whether it worked."""
    return f"""
<div class="sv-share">
<button type="button" class="sv-copy-link"
 style="font:inherit;font-size:0.95rem;padding:0.35rem 0.75rem;border-radius:0.5rem;
 border:1px solid rgba(49,51,63,0.35);background:#fff;color:#000;cursor:pointer">
{html.escape(label)}</button>
<span class="sv-copy-status" role="status" aria-live="polite"
 style="margin-left:0.5rem;font-size:0.85rem"></span>
<script>
(function () {{
  const root = document.currentScript && document.currentScript.parentElement;
  if (!root) return;
  const btn = root.querySelector('.sv-copy-link');
  const out = root.querySelector('.sv-copy-status');
  if (!btn || btn.dataset.ready) return;
  btn.dataset.ready = '1';
  function fallback(text) {{
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try {{ ok = document.execCommand('copy'); }} catch (e) {{ ok = false; }}
    ta.remove();
    return ok;
  }}
  btn.addEventListener('click', async function () {{
    const url = window.location.href;
    let ok = false;
    try {{ await navigator.clipboard.writeText(url); ok = true; }}
    catch (e) {{ ok = fallback(url); }}
    btn.dataset.copied = ok ? 'yes' : 'no';
    out.textContent = ok ? 'Copied.' : 'Not copied: copy the address below.';
  }});
}})();
</script>
</div>"""
