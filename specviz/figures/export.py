"""Exports for sharing: one round's animation as a standalone HTML file.

The HTML file is one Plotly figure with one frame per step of the round (its steps,
views.narration): the round's tokens as markers (a shape, a colour and a word per status),
p and q at the position in focus with the law of the last token, and the coin; under it,
for a token tree, the tree as the /round page shows it at the same step. Play, pause and
a step slider drive the frames in the browser, and so do the stage's keys (← → step, space
plays and pauses), playing on from the step shown; its text is at the stage's presenter
sizes. plotly.js is written into the file, so it opens offline, with no server. Pure: a
narrated round in, text or bytes out.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.rules import get_rule
from ..core.trace import RoundTrace
from ..views.narration import prob
from ..views.stepping import Chip, coin_at, last_step, sibling_residual, view
from ..views.stepping import chips as stepping_chips
from . import treeview
from .animation import COIN_REGIONS
from .frame import svg_text
from .palette import BLACK, LAW_COLOUR, LEGEND_STATUSES, MARKS, P_COLOUR, Q_COLOUR

FRAME_MS = 900  # play speed: milliseconds per step
HEIGHT = 900  # pixels; the figure stretches to the window's width
TEXT_PX = 18  # the smallest text in the export: the stage's presenter size
TITLE_PX = 22  # the step's counter in the title
CAPTION_WRAP = 110  # characters per line of the per-step caption in the title

# Marker shapes (plotly symbol names) per status, so no status rests on colour alone; each
# status also keeps animation.MARKS' symbol and word in its label.
SHAPES = {
    "context": "square", "pending": "circle-open", "drafted": "circle-open-dot",
    "accepted": "circle", "rejected": "x", "resampled": "triangle-up", "bonus": "star",
    "plain": "hexagon", "flushed": "line-ew-open", "unverified": "diamond",
}
STATUSES = tuple(SHAPES)  # one chip trace per status, in this order
ROW_DRAFTS, ROW_FINAL = 1.0, -0.25  # chip rows: the drafts, and the redrawn or bonus token


@dataclass(frozen=True)
class Marker:
    """One token on the chip row of a frame."""

    x: float  # slot: 0 = context, i = draft position i, k + 1 = bonus
    y: float
    status: str
    text: str  # the label drawn under the marker
    hover: str


def _hover(trace: RoundTrace, c: Chip) -> str:
    if c.status == "context":
        return "the context token"
    if c.status == "pending":
        return f"{c.name}: not drafted yet"
    if c.final:
        return f"{MARKS[c.status].label} {', '.join(c.lines)}"
    pos = trace.positions[c.slot - 1]
    hover = f"x{c.slot} = {svg_text(c.name)}, q = {prob(pos.q)}"
    if c.coin:
        hover += f", p = {prob(pos.p)}, u = {prob(pos.u)}, t = {prob(pos.threshold)}"
    elif c.status == "accepted":
        hover += f", p = {prob(pos.p)}, kept with the block"
    return hover


def chips(trace: RoundTrace, step: int) -> list[Marker]:
    """The chips a viewer has been shown by `step`: views.stepping.chips, the same as the
    /round page's, as markers."""
    out = []
    for c in stepping_chips(trace, step):
        m = MARKS[c.status]
        if c.status == "pending":
            text = f"{c.name}<br>·"
        elif c.status == "context":
            text = f"{svg_text(c.name)}<br>context"
        else:
            text = f"{svg_text(c.name)}<br>{m.symbol} {m.label}"
        out.append(Marker(c.slot, ROW_FINAL if c.final else ROW_DRAFTS, c.status, text,
                          svg_text(_hover(trace, c))))
    return out


def _bars(trace: RoundTrace, step: int) -> tuple[list[float], list[float], list[float], str]:
    """p, q and the last token's law over the vocabulary at this step (zeros until shown),
    and the bars' x-axis title."""
    v = view(trace, step)
    V = len(trace.vocab)
    zero = [0.0] * V
    p, q, law, where = zero, zero, zero, "next token (the bars appear with the first draft)"
    if v.focus is not None:
        pos = trace.positions[v.focus - 1]
        q = [float(x) for x in pos.q_row]
        if v.scored:
            p = [float(x) for x in pos.p_row]
        where = f"next token after '{svg_text(trace.name(pos.context))}' (position {pos.i})"
    sib = sibling_residual(trace, v)
    if sib is not None:  # a token tree, sibling by sibling: the residual each one leaves
        law = [float(x) for x in sib.row]
    if v.final:
        row = trace.rejection_row if trace.rejected_at is not None else trace.bonus_row
        law = [float(x) for x in row]
    return p, q, law, where


def _coin(trace: RoundTrace, step: int) -> tuple[float, float | None, str]:
    """(threshold t, coin u, its label) at the position in focus; (0, None, '') before any
    coin is shown."""
    coin = coin_at(trace, view(trace, step))
    if coin is None:
        return 0.0, None, ""
    _, t, u, kept = coin
    m = MARKS["accepted" if kept else "rejected"]
    return float(t), float(u), f"u = {prob(u)} {m.symbol} {m.label}"


def _frame_data(trace: RoundTrace, step: int) -> list[go.BaseTraceType]:
    """Every trace of the figure at one step, always in the same order and number."""
    data: list[go.BaseTraceType] = []
    shown = chips(trace, step)
    for status in STATUSES:
        mine = [c for c in shown if c.status == status]
        data.append(go.Scatter(x=[c.x for c in mine], y=[c.y for c in mine],
                               text=[c.text for c in mine],
                               hovertext=[c.hover for c in mine]))
    p, q, law, _ = _bars(trace, step)
    names = [svg_text(v) for v in trace.vocab]  # tick labels read tags: escape them
    data += [go.Bar(x=names, y=p), go.Bar(x=names, y=q), go.Bar(x=names, y=law)]
    t, u, text = _coin(trace, step)
    data += [go.Bar(x=[t], base=[0.0], y=[0]), go.Bar(x=[1.0 - t if u is not None else 0.0],
                                                      base=[t], y=[0]),
             go.Scatter(x=[u], y=[0.45], text=[text])]
    return data


def _title(trace: RoundTrace, step: int, rnd: int) -> str:
    cap = "<br>".join(textwrap.wrap(svg_text(trace.steps[step].caption), CAPTION_WRAP))
    return (f"<b>Round {rnd} · step {step} of {last_step(trace)} · "
            f"{trace.steps[step].kind}</b> · rule {svg_text(trace.rule)} · k = {trace.k}"
            f"<br><span style='font-size:{TEXT_PX}px'>{cap}</span>")


def round_figure(trace: RoundTrace, rnd: int = 0, *, start: int = 0) -> go.Figure:
    """The round as an animated figure: one frame per step, play / pause and a slider; it
    opens at step `start` (the step on screen when it was exported)."""
    n = len(trace.steps)
    start = min(max(int(start), 0), n - 1)
    fig = make_subplots(rows=2, cols=2, specs=[[{"colspan": 2}, None], [{}, {}]],
                        row_heights=[0.46, 0.54], vertical_spacing=0.16,
                        horizontal_spacing=0.1,
                        subplot_titles=("The round's tokens", "p and q at the position in "
                                        "focus; the last token's law", "The coin"))
    first = _frame_data(trace, start)
    _add_tokens(fig, first[: len(STATUSES)])
    _add_bars(fig, trace, first[len(STATUSES): len(STATUSES) + 3])
    _add_coin(fig, *first[len(STATUSES) + 3:])
    names = [str(s) for s in range(n)]
    fig.frames = [go.Frame(name=names[s], data=_frame_data(trace, s),
                           traces=list(range(len(first))),
                           layout=dict(title=dict(text=_title(trace, s, rnd)),
                                       xaxis2=dict(title=dict(text=_bars(trace, s)[3]))))
                  for s in range(n)]
    _add_key(fig, trace.k)
    fig.update_layout(
        title=dict(text=_title(trace, start, rnd), x=0.0, xanchor="left",
                   font=dict(size=TITLE_PX)),
        font=dict(size=TEXT_PX, color=BLACK),
        height=HEIGHT, barmode="group", margin=dict(l=70, r=30, t=130, b=200),
        legend=dict(orientation="h", x=0.0, y=-0.3, yanchor="top", font=dict(size=TEXT_PX)),
        **_player(names, start))
    _set_axes(fig, trace, start)
    return fig


def _add_tokens(fig: go.Figure, tokens: list) -> None:
    """The token chips, one scatter trace a status (STATUSES), in the top panel."""
    for status, tr in zip(STATUSES, tokens, strict=True):
        m = MARKS[status]
        tr.update(name=f"{m.symbol} {m.label}", mode="markers+text", textposition="bottom center",
                  marker=dict(symbol=SHAPES[status], size=24, color=m.colour,
                              line=dict(color=m.colour, width=3)),
                  textfont=dict(size=TEXT_PX), hovertemplate="%{hovertext}<extra></extra>",
                  showlegend=False)
        fig.add_trace(tr, row=1, col=1)


def _add_bars(fig: go.Figure, trace: RoundTrace, bars: list) -> None:
    """p, q and the last token's law (the rule's residual, or p for the bonus), bottom left."""
    law_name = svg_text(get_rule(trace.rule).reject_law if trace.rejected_at is not None
                        else "p (bonus)" if trace.k else "p (plain decoding)")
    if trace.tree:
        law_name = f"the residual p_j after each sibling, then {law_name}"
    for bar, name, colour in zip(bars, ("p (target)", "q (draft)",
                                        f"last token's law: {law_name}"),
                                 (P_COLOUR, Q_COLOUR, LAW_COLOUR), strict=True):
        bar.update(name=name, marker_color=colour, legendgroup="bars",
                   marker_line=dict(color=BLACK, width=1),
                   hovertemplate=f"%{{x}}: {name} = %{{y:.4g}}<extra></extra>")
        fig.add_trace(bar, row=2, col=1)


def _add_coin(fig: go.Figure, keep, reject, coin) -> None:
    """The coin's keep and reject regions of [0, 1] and the coin u on them, bottom right."""
    for bar, (name, status, hover) in zip((keep, reject), COIN_REGIONS, strict=True):
        bar.update(name=name, orientation="h", marker_color=MARKS[status].colour, opacity=0.45,
                   width=0.5, showlegend=False, offsetgroup="coin", hovertemplate=hover)
    coin.update(name="coin u", mode="markers+text", textposition="top center", showlegend=False,
                marker=dict(symbol="triangle-down", size=18, color=BLACK),
                textfont=dict(size=TEXT_PX), hovertemplate="u = %{x:.4f}<extra></extra>")
    for tr in (keep, reject, coin):
        fig.add_trace(tr, row=2, col=2)


def _player(names: list[str], start: int) -> dict:
    """The layout's play / pause buttons (PLAYER_JS plays them) and the step slider, at
    step start."""
    return dict(
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=-0.13, xanchor="left",
                          yanchor="top", pad=dict(t=0, r=10), showactive=False,
                          font=dict(size=TEXT_PX), buttons=[
                              dict(label="▶ play", method="skip", args=[None]),
                              dict(label="❚❚ pause", method="skip", args=[None]),
                          ])],
        sliders=[dict(active=start, x=0.2, len=0.8, y=-0.11, yanchor="top", pad=dict(t=0),
                      font=dict(size=TEXT_PX),
                      currentvalue=dict(prefix="step ", visible=True, xanchor="left",
                                        font=dict(size=TEXT_PX)),
                      steps=[dict(label=name, method="animate",
                                  args=[[name], dict(frame=dict(duration=0, redraw=True),
                                                     mode="immediate",
                                                     transition=dict(duration=0))])
                             for name in names])])


def _set_axes(fig: go.Figure, trace: RoundTrace, start: int) -> None:
    """The panels' ranges and titles: the bars up to 1.15 x the round's largest
    probability, the coin's [0, 1]."""
    fig.update_xaxes(range=[-0.7, trace.k + 1.7], visible=False, row=1, col=1)
    fig.update_yaxes(range=[KEY_Y - KEY_ROW_H - 0.3, 1.45], visible=False, row=1, col=1)
    fig.update_annotations(font_size=TEXT_PX + 2)  # the panels' titles
    rows = [r for p in trace.positions for r in (p.p_row, p.q_row)]
    top = max(float(r.max()) for r in rows + [trace.rejection_row, trace.bonus_row]
              if r is not None)
    fig.update_yaxes(range=[0.0, 1.15 * top], title_text="probability", row=2, col=1)
    fig.update_xaxes(title_text=_bars(trace, start)[3], row=2, col=1)
    fig.update_xaxes(range=[0.0, 1.0], dtick=0.1, title_text="u (keep iff u < t)", row=2, col=2)
    fig.update_yaxes(range=[-0.6, 1.1], visible=False, row=2, col=2)


KEY_STATUSES = LEGEND_STATUSES
KEY_Y = -1.3  # the key's first row in the chip panel, under the redrawn / bonus row
KEY_PER_ROW = 3  # statuses per row of the key: room for each label at TEXT_PX
KEY_ROW_H = 0.4  # between the key's rows, in the chip panel's y units


def _add_key(fig: go.Figure, k: int) -> None:
    """A fixed key under the chips: every status's shape, colour, symbol and word, whether or
    not the current frame shows it (a legend would list only the statuses on screen)."""
    lo, hi = -0.5, k + 1.5
    for j, status in enumerate(KEY_STATUSES):
        m = MARKS[status]
        x = lo + (hi - lo) * (j % KEY_PER_ROW) / KEY_PER_ROW
        fig.add_trace(go.Scatter(
            x=[x], y=[KEY_Y - KEY_ROW_H * (j // KEY_PER_ROW)], mode="markers+text",
            text=[f"{m.symbol} {m.label}"],
            textposition="middle right", textfont=dict(size=TEXT_PX, color=BLACK),
            marker=dict(symbol=SHAPES[status], size=13, color=m.colour,
                        line=dict(color=m.colour, width=2)),
            name=f"key: {m.label}", showlegend=False, hoverinfo="skip"), row=1, col=1)


PAGE_CSS = (f"body {{ font-family: sans-serif; font-size: {TITLE_PX}px; color: {BLACK}; }}"
            " .sv-keys kbd { border: 2px solid #000; border-radius: 4px; padding: 0 0.3em; }")
KEYS_HTML = ('<p class="sv-keys" style="margin:0.3em 2em">Keys: <kbd>←</kbd> one step back '
             '· <kbd>→</kbd> one step on · <kbd>space</kbd> play / pause · <kbd>Home</kbd> '
             "<kbd>End</kbd> first / last step</p>")


def _captions_html(trace: RoundTrace, rnd: int) -> str:
    items = "".join(f"<li><b>{html.escape(s.kind)}</b>: {html.escape(s.caption)}</li>"
                    for s in trace.steps)
    return (f'<section class="sv-steps" style="max-width:60em;margin:1em 2em">'
            f'<h2 style="font-size:1.2em">Round {rnd}, step by step</h2>'
            f'<ol start="0">{items}</ol><p style="color:#333">Made with '
            f"specviz. Speculative decoding: Leviathan, Kalman &amp; Matias 2022 "
            f"(arXiv 2211.17192); Chen et al. 2023 (arXiv 2302.01318).</p></section>")


# Pausing interrupts a running Plotly.animate, whose promise then rejects with no reason;
# the page has nothing else that rejects, so that rejection is not reported as an error.
QUIET_PAUSE_JS = ("window.addEventListener('unhandledrejection', function (e) {"
                  " if (e.reason === undefined) { e.preventDefault(); } });")
# A token tree's view follows the figure's frame: one copy per step, the step's shown.
TREE_STEP_JS = ("var gd = document.getElementById('{plot_id}');"
                " function svTree(n) { document.querySelectorAll('.sv-tree-step')"
                ".forEach(function (d) { d.hidden = d.dataset.step !== String(n); }); }"
                " gd.on('plotly_animatingframe', function (e) { svTree(e.name); });"
                " gd.on('plotly_sliderchange', function (e) { svTree(e.step.label); });")
# The player: the stage's keys and the buttons step through the frames from the one shown
# (Plotly's own play starts from its last animated frame, not the one on screen).
PLAYER_JS = """var gd = document.getElementById('{plot_id}');
var SV = {cur: __SV_START__, last: __SV_LAST__, ms: __SV_MS__, playing: false, timer: null};
var ONE = {frame: {duration: 0, redraw: true}, mode: 'immediate', transition: {duration: 0}};
function svShow(n) { SV.cur = Math.max(0, Math.min(SV.last, n));
  return Plotly.animate(gd, [String(SV.cur)], ONE); }
function svLater() { clearTimeout(SV.timer); SV.timer = SV.playing ? setTimeout(svTick, SV.ms)
  : null; }
function svTick() { if (!SV.playing) return;
  if (SV.cur >= SV.last) { svPause(); return; }
  svShow(SV.cur + 1).then(svLater, svLater); }
function svPlay() { if (SV.playing) return; SV.playing = true;
  if (SV.cur >= SV.last) { svShow(0).then(svLater, svLater); } else { svLater(); } }
function svPause() { SV.playing = false; clearTimeout(SV.timer); SV.timer = null; }
gd.on('plotly_buttonclicked', function (e) {
  if (e.button.label.indexOf('play') >= 0) { svPlay(); } else { svPause(); } });
gd.on('plotly_sliderchange', function (e) { SV.cur = +e.step.label; svLater(); });
document.addEventListener('keydown', function (e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  var moves = {ArrowRight: SV.cur + 1, ArrowLeft: SV.cur - 1, Home: 0, End: SV.last};
  if (e.key in moves) { e.preventDefault(); svShow(moves[e.key]); svLater(); }
  else if (e.key === ' ' && !e.repeat) { e.preventDefault();
    if (SV.playing) { svPause(); } else { svPlay(); } } });"""
TREE_HTML_MAX = 3_000_000  # characters of the per-step tree views; past it, the last one only


def _tree_html(trace: RoundTrace, start: int) -> str:
    """The token tree at every step (the /round page's view), the one at `start` shown; a
    tree too large to repeat per step is shown as it stands at the end."""
    if not trace.tree:
        return ""
    views = [treeview.tree_html(trace, s) for s in range(len(trace.steps))]
    if sum(map(len, views)) > TREE_HTML_MAX:
        body = ('<p style="color:#444">The tree is too large to repeat at every step here: '
                f"it is shown as it stands at the end of the round.</p>{views[-1]}")
    else:
        body = "".join(f'<div class="sv-tree-step" data-step="{s}"'
                       f'{"" if s == start else " hidden"}>{v}</div>'
                       for s, v in enumerate(views))
    return (f'<section class="sv-tree-export" style="font-family:sans-serif;max-width:60em;'
            f'margin:1em 2em"><h2 style="font-size:1.1em">The token tree</h2>{body}</section>')


def round_html(trace: RoundTrace, rnd: int = 0, frame_ms: int = FRAME_MS, *,
               start: int = 0) -> str:
    """A standalone HTML page (plotly.js inside, nothing fetched) that plays the round from
    step `start`, with every step's caption listed under the figure as text."""
    start = min(max(int(start), 0), len(trace.steps) - 1)
    fig = round_figure(trace, rnd, start=start)
    player = (PLAYER_JS.replace("__SV_START__", str(start))
              .replace("__SV_LAST__", str(last_step(trace)))
              .replace("__SV_MS__", str(int(frame_ms))))
    page = fig.to_html(include_plotlyjs=True, full_html=True, auto_play=False,
                       div_id="sv-round", config={"displaylogo": False, "responsive": True},
                       post_script=[QUIET_PAUSE_JS, player]
                       + ([TREE_STEP_JS] if trace.tree else []))
    title = f"specviz · round {rnd} (k = {trace.k}, rule {html.escape(trace.rule)})"
    page = page.replace("<html>", '<html lang="en">', 1)
    page = page.replace("<head>", f"<head><title>{title}</title><style>{PAGE_CSS}</style>", 1)
    return page.replace("</body>", KEYS_HTML + _tree_html(trace, start)
                        + _captions_html(trace, rnd) + "</body>", 1)


def round_html_bytes(trace: RoundTrace, rnd: int = 0, frame_ms: int = FRAME_MS, *,
                     start: int = 0) -> bytes:
    """round_html as UTF-8 bytes (for a download button)."""
    return round_html(trace, rnd, frame_ms, start=start).encode("utf-8")
