"""Exports for sharing: one round's animation as a standalone HTML file.

The HTML file is one Plotly figure with one frame per step of the round (specviz.round's
trace.steps): the round's tokens as markers (a shape, a colour and a word per status),
p and q at the position in focus with the law of the last token, and the coin; under it,
for a token tree, the tree as the /round page shows it at the same step. Play, pause and
a step slider drive the frames in the browser; plotly.js is written into the file, so it
opens offline, with no server. Pure: a RoundTrace in, text or bytes out.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.rules import get_rule
from ..core.trace import RoundTrace
from ..views.stepping import Chip, coin_at, last_step, sibling_residual, view
from ..views.stepping import chips as stepping_chips
from . import treeview
from .frame import svg_text
from .palette import BLACK, LAW_COLOUR, LEGEND_STATUSES, MARKS, P_COLOUR, Q_COLOUR

FRAME_MS = 900  # play speed: milliseconds per step
HEIGHT = 780  # pixels; the figure stretches to the window's width
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
    hover = f"x{c.slot} = {svg_text(c.name)}, q = {pos.q:.4f}"
    if c.coin:
        hover += f", p = {pos.p:.4f}, u = {pos.u:.4f}, t = {pos.threshold:.4f}"
    elif c.status == "accepted":
        hover += f", p = {pos.p:.4f}, kept with the block"
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
    return float(t), float(u), f"u = {u:.4f} {m.symbol} {m.label}"


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
            f"<br><span style='font-size:13px'>{cap}</span>")


def round_figure(trace: RoundTrace, rnd: int = 0, frame_ms: int = FRAME_MS, *,
                 start: int = 0) -> go.Figure:
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
    for status, tr in zip(STATUSES, first[: len(STATUSES)], strict=True):
        m = MARKS[status]
        tr.update(name=f"{m.symbol} {m.label}", mode="markers+text", textposition="bottom center",
                  marker=dict(symbol=SHAPES[status], size=24, color=m.colour,
                              line=dict(color=m.colour, width=3)),
                  textfont=dict(size=13), hovertemplate="%{hovertext}<extra></extra>",
                  showlegend=False)
        fig.add_trace(tr, row=1, col=1)
    p_bar, q_bar, law_bar, keep, reject, coin = first[len(STATUSES):]
    law_name = svg_text(get_rule(trace.rule).reject_law if trace.rejected_at is not None
                           else "p (bonus)" if trace.k else "p (plain decoding)")
    if trace.tree:
        law_name = f"the residual p_j after each sibling, then {law_name}"
    for bar, name, colour in ((p_bar, "p (target)", P_COLOUR), (q_bar, "q (draft)", Q_COLOUR),
                              (law_bar, f"last token's law: {law_name}", LAW_COLOUR)):
        bar.update(name=name, marker_color=colour, legendgroup="bars",
                   marker_line=dict(color=BLACK, width=1),
                   hovertemplate=f"%{{x}}: {name} = %{{y:.4f}}<extra></extra>")
        fig.add_trace(bar, row=2, col=1)
    keep.update(name="keep: u < t", orientation="h", marker_color=MARKS["accepted"].colour,
                opacity=0.45, width=0.5, showlegend=False, offsetgroup="coin",
                hovertemplate="keep if u < %{x:.4f}<extra></extra>")
    reject.update(name="reject: u ≥ t", orientation="h", marker_color=MARKS["rejected"].colour,
                  opacity=0.45, width=0.5, showlegend=False, offsetgroup="coin",
                  hovertemplate="reject if u ≥ %{base:.4f}<extra></extra>")
    coin.update(name="coin u", mode="markers+text", textposition="top center", showlegend=False,
                marker=dict(symbol="triangle-down", size=18, color=BLACK),
                textfont=dict(size=14), hovertemplate="u = %{x:.4f}<extra></extra>")
    for tr in (keep, reject, coin):
        fig.add_trace(tr, row=2, col=2)

    names = [str(s) for s in range(n)]
    frames = []
    for s in range(n):
        _, _, _, where = _bars(trace, s)
        frames.append(go.Frame(name=names[s], data=_frame_data(trace, s),
                               traces=list(range(len(first))),
                               layout=dict(title=dict(text=_title(trace, s, rnd)),
                                           xaxis2=dict(title=dict(text=where)))))
    fig.frames = frames
    _add_key(fig, trace.k)
    _, _, _, where = _bars(trace, start)
    play = dict(frame=dict(duration=frame_ms, redraw=True), fromcurrent=True,
                transition=dict(duration=0), mode="immediate")
    fig.update_layout(
        title=dict(text=_title(trace, start, rnd), x=0.0, xanchor="left", font=dict(size=16)),
        height=HEIGHT, barmode="group", margin=dict(l=50, r=30, t=110, b=170),
        legend=dict(orientation="h", x=0.0, y=-0.28, yanchor="top"),
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=-0.13, xanchor="left",
                          yanchor="top", pad=dict(t=0, r=10), showactive=False, buttons=[
                              dict(label="▶ play", method="animate", args=[None, play]),
                              dict(label="❚❚ pause", method="animate",
                                   args=[[None], dict(frame=dict(duration=0, redraw=False),
                                                      mode="immediate",
                                                      transition=dict(duration=0))]),
                          ])],
        sliders=[dict(active=start, x=0.16, len=0.84, y=-0.11, yanchor="top", pad=dict(t=0),
                      currentvalue=dict(prefix="step ", visible=True, xanchor="left"),
                      steps=[dict(label=names[s], method="animate",
                                  args=[[names[s]], dict(frame=dict(duration=0, redraw=True),
                                                         mode="immediate",
                                                         transition=dict(duration=0))])
                             for s in range(n)])],
    )
    fig.update_xaxes(range=[-0.7, trace.k + 1.7], visible=False, row=1, col=1)
    fig.update_yaxes(range=[-1.55, 1.45], visible=False, row=1, col=1)
    top = max(float(trace.positions[0].p_row.max()), max(float(p.q_row.max())
                                                            for p in trace.positions))
    for row in (trace.rejection_row, trace.bonus_row):
        if row is not None:
            top = max(top, float(row.max()))
    fig.update_yaxes(range=[0.0, 1.15 * top], title_text="probability", row=2, col=1)
    fig.update_xaxes(title_text=where, row=2, col=1)
    fig.update_xaxes(range=[0.0, 1.0], dtick=0.1, title_text="u (keep iff u < t)", row=2, col=2)
    fig.update_yaxes(range=[-0.6, 1.1], visible=False, row=2, col=2)
    return fig


KEY_STATUSES = LEGEND_STATUSES
KEY_Y = -1.3  # the key's row in the chip panel, under the redrawn / bonus row


def _add_key(fig: go.Figure, k: int) -> None:
    """A fixed key under the chips: every status's shape, colour, symbol and word, whether or
    not the current frame shows it (a legend would list only the statuses on screen)."""
    lo, hi = -0.5, k + 1.5
    xs = [lo + (hi - lo) * (j + 0.5) / len(KEY_STATUSES) for j in range(len(KEY_STATUSES))]
    for x, status in zip(xs, KEY_STATUSES, strict=True):
        m = MARKS[status]
        fig.add_trace(go.Scatter(
            x=[x], y=[KEY_Y], mode="markers+text", text=[f"{m.symbol} {m.label}"],
            textposition="middle right", textfont=dict(size=12, color=BLACK),
            marker=dict(symbol=SHAPES[status], size=13, color=m.colour,
                        line=dict(color=m.colour, width=2)),
            name=f"key: {m.label}", showlegend=False, hoverinfo="skip"), row=1, col=1)


def _captions_html(trace: RoundTrace, rnd: int) -> str:
    items = "".join(f"<li><b>{html.escape(s.kind)}</b>: {html.escape(s.caption)}</li>"
                    for s in trace.steps)
    return (f'<section class="sv-steps" style="font-family:sans-serif;max-width:60em;'
            f'margin:1em 2em"><h2 style="font-size:1.1em">Round {rnd}, step by step</h2>'
            f'<ol start="0">{items}</ol><p style="color:#444;font-size:0.9em">Made with '
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
    fig = round_figure(trace, rnd, frame_ms, start=start)
    page = fig.to_html(include_plotlyjs=True, full_html=True, auto_play=False,
                       div_id="sv-round", config={"displaylogo": False, "responsive": True},
                       post_script=[QUIET_PAUSE_JS] + ([TREE_STEP_JS] if trace.tree else []))
    title = f"specviz · round {rnd} (k = {trace.k}, rule {html.escape(trace.rule)})"
    page = page.replace("<html>", '<html lang="en">', 1)
    page = page.replace("<head>", f"<head><title>{title}</title>", 1)
    start = min(max(int(start), 0), len(trace.steps) - 1)
    return page.replace("</body>", _tree_html(trace, start) + _captions_html(trace, rnd)
                        + "</body>", 1)


def round_html_bytes(trace: RoundTrace, rnd: int = 0, frame_ms: int = FRAME_MS, *,
                     start: int = 0) -> bytes:
    """round_html as UTF-8 bytes (for a download button)."""
    return round_html(trace, rnd, frame_ms, start=start).encode("utf-8")
