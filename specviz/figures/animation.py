"""Pure builders for the /round page: one frame of one traced round, as Plotly and HTML.

Every builder takes a narrated round (views.narration) and a step index into its steps, and
draws only what a viewer has been shown by that step: a draft appears at its draft
step, its coin at its verify step, the residual (or bonus) draw at the step that makes
it. Nothing here draws a random number; the trace holds every draw.

The bars and the residual take `top`: None draws every token (the tables' V = 6), a
number draws the most likely tokens only (a text vocabulary holds thousands), always with
the token in focus, and the rest of the vocabulary as one bar. Colours come from
figures.palette, and each status also has a symbol and a word, so no meaning rests on
colour alone. Token names are HTML-escaped wherever
they enter markup.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..core.rules import get_rule
from ..core.trace import RoundTrace
from ..views.narration import prob
from ..views.stepping import (
    Chip,
    SiblingResidual,
    chips,
    coin_at,
    last_step,
    sibling_residual,
    step_label,
    view,
)
from .chartkit import TEMPLATE  # named at construction: most of building a figure otherwise
from .frame import svg_text
from .palette import BLACK, GREY, LAW_COLOUR, LEGEND_STATUSES, MARKS, P_COLOUR, Q_COLOUR

FIGURE_DECIMALS = 6  # bars carry 6 decimals to the browser (the hover shows 4 digits)
STAGE_HEIGHT = 320  # pixels: the three charts of a step side by side, on the first screen
TICK_CHARS = 10  # a slanted tick's longest name: a longer one ends in an ellipsis (its bar's
# hover and the chips keep it whole); "<start_of_image>" took the bars' plot to 27 px at
# 1280x720 in presenter mode, its slanted name pushing the axis up
LABEL_TOP_PX = 100  # the top margin: a two-line title, then the marked token's label clear
# of it (Plotly centres the title in the margin, so the label's room is held on both sides)
HEADROOM = 1.12  # the y axis reaches this far over the tallest bar (room for the arrow)
NOTE_WRAP = 22  # characters per line of a placeholder's note: the coin's column at 1280
# px in presenter type holds about 24
FLUSHED_BG = "repeating-linear-gradient(135deg, #ffffff 0 6px, #d9d9d9 6px 9px)"  # hatched
CHIP_LINES = 2  # small lines under a chip's name and status: q, then p and u once checked
FLUSHED_OPACITY = 0.75  # a flushed chip recedes: thrown away, though paid for

REST_LABEL = "the rest"  # the bar of every token not shown
PLACEHOLDER_PX = 14  # the grey note of an empty chart
COIN_LAWS = {"block": "h = S/(S + 1 − w)"}  # the coin's threshold where it is not min(1, p/q)
COIN_REGIONS = (("keep: u < t", "accepted", "keep if u < %{x:.4f}<extra></extra>"),
                ("reject: u ≥ t", "rejected", "reject if u ≥ %{base:.4f}<extra></extra>"))


def step_html(trace: RoundTrace, step: int, rnd: int) -> str:
    """The step counter ('Round r · step s · kind', which does not tell how many steps
    are left), then the step's caption, in one box. Written with p = target; escaped."""
    cur = trace.steps[step]
    label = html.escape(step_label(trace, step))
    counter = (f"<b>Round {rnd}</b> · step {step} · <i>{label}</i> · rule "
               f"<code>{html.escape(trace.rule)}</code> · k = {trace.k}")
    return (f'<div class="sv-step" role="status" aria-live="polite" style="padding:6px 12px;'
            f'border-radius:8px;background:#E8F1F8;border-left:5px solid {P_COLOUR};'
            f'color:{BLACK};line-height:1.45"><span class="sv-counter">{counter}</span>'
            f'<br><span class="sv-caption">{html.escape(cur.caption)}</span></div>')


def rule_note(trace: RoundTrace) -> str | None:
    """A warning line when the round was played under a broken rule."""
    rule = get_rule(trace.rule)
    if rule.lossless:
        return None
    return (f"Rule '{rule.name}' is switched on: {rule.description}. Its output is not "
            "distributed as the target's (compare on the exactness page).")


# ----------------------------------------------------------------------------- chips
def _chip(c: Chip) -> str:
    m = MARKS[c.status]
    dashed, flushed = c.status == "pending", c.status == "flushed"
    deco = "line-through" if flushed else "none"
    border = "dashed" if dashed else "dotted" if flushed else "solid"
    bg = ("#ffffff" if dashed else FLUSHED_BG if flushed else f"{m.colour}22")
    lines = [html.escape(s) for s in c.lines]
    lines += ["&nbsp;"] * (CHIP_LINES - len(lines))  # the room a later verdict needs, held
    small = "".join(f"<br><small>{s}</small>" for s in lines)
    data_pos = f' data-pos="{c.slot}"' if c.status != "context" else ""
    return (
        f'<span class="sv-chip" data-status="{c.status}"{data_pos} '
        f'title="{html.escape(m.label)}" '
        f'style="display:inline-block;min-width:4.2em;padding:4px 8px;margin:2px;'
        f"border:2px {border} {m.colour};border-radius:8px;background:{bg};"
        f"opacity:{FLUSHED_OPACITY if flushed else 1};"
        f'text-align:center;line-height:1.25;vertical-align:top;font-family:monospace">'
        f'<b style="font-size:1.15em;text-decoration:{deco}">{html.escape(c.name)}</b> '
        f'<span aria-hidden="true">{m.symbol}</span>'
        f"<br><small><i>{html.escape(m.label)}</i></small>{small}</span>"
    )


def _room() -> str:
    """An empty chip that holds the place of the round's last token until it is drawn, so
    that the row of chips (and all below it) keeps its size from the first step."""
    return _chip(Chip(0, True, "plain", "", ())).replace(
        'class="sv-chip" data-status="plain"', 'class="sv-chip-room" aria-hidden="true"', 1
    ).replace("display:inline-block;", "display:inline-block;visibility:hidden;", 1)


def chips_html(trace: RoundTrace, step: int) -> str:
    """The context, then each draft slot as a chip with its q (and p, u once checked); the
    redrawn or bonus token once drawn; later drafts struck through once flushed. Every chip
    holds CHIP_LINES lines from the start, and an empty one the last token's place."""
    shown = chips(trace, step)
    body = "".join(_chip(c) for c in shown) + ("" if any(c.final for c in shown) else _room())
    return ('<div class="sv-chips" style="display:flex;flex-wrap:wrap;align-items:flex-start;'
            'gap:2px">' + body + "</div>")


def legend_html() -> str:
    """One small chip per status: colour, symbol and word together."""
    items = [
        f'<span style="margin-right:14px;white-space:nowrap"><span style="color:'
        f'{MARKS[k].colour};font-weight:bold">{MARKS[k].symbol}</span> '
        f"{html.escape(MARKS[k].label)}</span>"
        for k in LEGEND_STATUSES
    ]
    return '<div class="sv-legend" style="font-size:0.9em">' + "".join(items) + "</div>"


# ----------------------------------------------------------------------------- figures
def _empty(title: str, note: str, x_range=None) -> go.Figure:
    """A placeholder: the title and a grey note, wrapped to short lines so that no width
    clips it."""
    text = "<br>".join(textwrap.wrap(note, NOTE_WRAP))
    return go.Figure(layout=dict(
        title=dict(text=title), height=STAGE_HEIGHT, margin=dict(l=40, r=20, t=50, b=40),
        template=TEMPLATE,
        annotations=[dict(text=text, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                          font=dict(size=PLACEHOLDER_PX, color=GREY))],
        xaxis=dict(range=x_range, visible=x_range is not None), yaxis=dict(visible=False)))


def _top(x: np.ndarray, m: int) -> np.ndarray:
    """np.argsort(-x, kind="stable")[:m] (ties: the lower index first) without sorting all
    of x: a partition finds the m-th largest value, then only what is above it and the first
    ties at it are sorted (a real model's row holds 262,144 entries)."""
    if m >= len(x):
        return np.argsort(-x, kind="stable")
    if m <= 0:
        return np.zeros(0, dtype=np.int64)
    edge = x[np.argpartition(-x, m - 1)[m - 1]]  # the m-th largest value
    above = np.flatnonzero(x > edge)
    picked = np.concatenate([above, np.flatnonzero(x == edge)[: m - len(above)]])
    return picked[np.lexsort((picked, -x[picked]))]


def top_tokens(rows: Sequence[np.ndarray], m: int, must: Sequence[int] = ()) -> list[int]:
    """The m most likely tokens over the rows (by the largest entry among them), plus the
    tokens in must, most likely first; a token no row gives any mass is never one of them
    (a one-hot q would list the first token ids, tied at 0)."""
    stacked = np.max(np.stack([np.asarray(r) for r in rows]), axis=0)  # (V,)
    order = [int(x) for x in _top(stacked, m) if stacked[x] > 0]  # ties at 0 are no top
    for x in must:
        if int(x) not in order:
            order.append(int(x))
    return sorted(order, key=lambda x: -stacked[x])


def _columns(trace: RoundTrace, rows: Sequence[np.ndarray], must: int,
             top: int | None) -> list[int]:
    """Which tokens get a bar: all of them in vocabulary order, or the top ones."""
    if top is None or top >= len(trace.vocab):
        return list(range(len(trace.vocab)))
    return top_tokens(rows, top, must=(must,))


def _rest(trace: RoundTrace, toks: Sequence[int]) -> str | None:
    """The label of the one bar that holds the rest of the vocabulary (None: all shown):
    short, so that slanted it fits under the axis at presenter type (the bars' title
    counts the tokens shown)."""
    return REST_LABEL if len(trace.vocab) > len(toks) else None


def _y(trace: RoundTrace, toks: Sequence[int], row: np.ndarray) -> np.ndarray:
    """row at the tokens shown, then the mass of the rest of the vocabulary as one bar."""
    y = np.asarray(row)[list(toks)]
    if _rest(trace, toks) is None:
        return y
    return np.append(y, max(0.0, float(np.sum(row)) - float(y.sum())))


def _labels(trace: RoundTrace, toks: Sequence[int]) -> list[str]:
    """Bar labels: a token's name, escaped and made unique (two tokens may share a name)."""
    seen: dict[str, int] = {}
    out = []
    for x in toks:
        name = trace.name(x)
        seen[name] = seen.get(name, 0) + 1
        out.append(svg_text(name) + ("\u200b" * (seen[name] - 1)))
    rest = _rest(trace, toks)
    return out if rest is None else out + [rest]


def _bar(name: str, labels: list[str], y: np.ndarray, colour: str, what: str,
         marked: list[bool], opacity: float = 1.0) -> dict:
    """One bar trace (a dict: the figure is validated once, whole)."""
    marked = list(marked) + [False] * (len(labels) - len(marked))  # the rest: never marked
    return dict(
        type="bar", name=name, x=labels, y=[round(float(t), FIGURE_DECIMALS) for t in y],
        marker=dict(color=colour, line=dict(color=BLACK, width=[3 if b else 0 for b in marked])),
        opacity=opacity, hovertemplate=f"token %{{x}}<br>{what} = %{{y:.4g}}<extra></extra>",
    )


def _tick(label: str) -> str:
    """A bar's label (escaped, perhaps with zero-width spaces) as its slanted tick: at most
    TICK_CHARS characters of the name, cut before escaping."""
    name = html.unescape(label)
    return label if len(name) <= TICK_CHARS else svg_text(name[:TICK_CHARS - 1] + "…")


def _axes(bars: list[dict], mark: dict | None, title: str, top: float,
          slanted: bool) -> go.Figure:
    """The bars, the token's mark (_mark_token) and their layout: the legend under the axis,
    head room over the tallest bar. Built in one call: Plotly's updates after construction
    cost most of a step's time on the server."""
    return go.Figure(data=bars, layout=dict(
        title=dict(text=title), barmode="group", height=STAGE_HEIGHT, showlegend=True,
        template=TEMPLATE,
        margin=dict(l=50, r=20, t=LABEL_TOP_PX, b=100 if slanted else 70),
        legend=dict(orientation="h", x=0.0, y=0.0, yref="container",
                    yanchor="bottom"),  # in the bottom margin at any height
        yaxis=dict(range=[0.0, HEADROOM * top], title=dict(text="probability")),
        xaxis=dict(type="category", tickangle=-40 if slanted else 0,  # tokens: no title
                   **({"tickvals": bars[0]["x"], "ticktext": [_tick(x) for x in bars[0]["x"]]}
                      if slanted and bars else {})),
        **({"annotations": [mark]} if mark else {})))


def _mark_token(label: str, y: float, text: str, tall: float) -> dict:
    """The token's name on the plot's top edge (the y axis ends at HEADROOM * tall), in the
    top margin under the title, its arrow down to the top of the token's own bars: it never
    covers a bar, at any type size. (An annotation.)"""
    return dict(x=label, y=y, text=svg_text(text), showarrow=True, arrowhead=2, ayref="y",
                ay=HEADROOM * tall, yanchor="bottom", font=dict(size=13))


def _subset(trace: RoundTrace, toks: Sequence[int], row: np.ndarray) -> str:
    if len(toks) == len(trace.vocab):
        return ""
    return (f"<br>top {len(toks)} of {len(trace.vocab):,} tokens "
            f"({float(row[list(toks)].sum()):.0%} of q)")


def bars_figure(trace: RoundTrace, step: int, *, top: int | None = None) -> go.Figure:
    """q at the draft position in focus; once the target has scored it, p beside q; in a
    token tree the token marked is the sibling being tried."""
    v = view(trace, step)
    if v.focus is None:
        return _empty("p and q", "The bars appear with the first draft.")
    pos = trace.positions[v.focus - 1]
    checked = v.scored
    x, name = pos.token, f"x{pos.i}"
    if v.sibling is not None and v.focus == v.verified:  # a token tree: the sibling tried
        x, name = pos.tries[v.sibling].token, f"sibling {v.sibling + 1}"
    toks = _columns(trace, [pos.q_row] + ([pos.p_row] if checked else []), x, top)
    labels, mark = _labels(trace, toks), [t == x for t in toks]
    p_y, q_y = _y(trace, toks, pos.p_row), _y(trace, toks, pos.q_row)
    bars = [_bar("p target", labels, p_y, P_COLOUR, "p", mark)] if checked else []
    bars.append(_bar("q draft", labels, q_y, Q_COLOUR, "q", mark))
    tall = float(max(p_y.max(), q_y.max()) if checked else q_y.max())
    token = _mark_token(labels[toks.index(x)],
                        float(max(pos.p_row[x], pos.q_row[x]) if checked else pos.q_row[x]),
                        f"{name} = {trace.name(x)}", tall)
    subset = _subset(trace, toks, pos.q_row)  # two lines at most: the label's room holds
    what = "p and q" if checked else "q only" + ("" if subset else
                                                 "<br>(the target is not called yet)")
    title = f"Position {pos.i}, after '{svg_text(trace.name(pos.context))}': {what}{subset}"
    return _axes(bars, token, title, tall, slanted=len(toks) != len(trace.vocab))


def coin_figure(trace: RoundTrace, step: int) -> go.Figure:
    """The coin u on a 0..1 bar: keep region [0, t), reject region [t, 1), t the threshold."""
    v = view(trace, step)
    coin = coin_at(trace, v)
    if coin is None:
        return _empty("The coin", "Each draft gets a coin u ~ U[0, 1) once the target "
                      "has scored all drafts.", x_range=[0.0, 1.0])
    token, t, u, kept = coin
    pos = trace.positions[v.focus - 1]
    m = MARKS["accepted" if kept else "rejected"]
    traces = [dict(type="bar", name=name, y=[0.0], x=[width], base=[base], orientation="h",
                   marker=dict(color=MARKS[status].colour), opacity=0.35, width=0.5,
                   hovertemplate=hover)
              for (name, status, hover), width, base in zip(COIN_REGIONS, (t, 1.0 - t),
                                                            (0.0, t), strict=True)]
    traces.append(dict(type="scatter", name="threshold t", x=[t, t], y=[-0.4, 0.4],
                       mode="lines", line=dict(color=BLACK, dash="dash", width=2),
                       hovertemplate=f"t = {prob(t)}<extra></extra>"))
    traces.append(dict(
        type="scatter", name=f"u ({m.label})", x=[u], y=[0.45], mode="markers+text",
        marker=dict(symbol="triangle-down", size=18, color=m.colour,
                    line=dict(color=BLACK, width=1)),
        text=[f"u = {prob(u)}<br>{m.symbol} {m.label}"],  # two short lines: fits the panel
        textposition="top right" if u < 0.5 else "top left", cliponaxis=False,
        textfont=dict(size=14, color=m.colour), hovertemplate=f"u = {prob(u)}<extra></extra>",
    ))
    tok = svg_text(trace.name(token))
    where, how = f"position {pos.i}", COIN_LAWS.get(get_rule(trace.rule).kind, "min(1, p/q)")
    if v.sibling is not None:
        where, how = f"depth {pos.i}, sibling {v.sibling + 1}", "min(1, p_j/q_j)"
    elif trace.rule == "greedy":
        how = "[x is the target's top token]"
    return go.Figure(data=traces, layout=dict(
        title=dict(text=f"Coin at {where}: keep '{tok}'<br>iff u < t = {how} = {prob(t)}"),
        barmode="overlay", height=STAGE_HEIGHT, margin=dict(l=20, r=20, t=70, b=50),
        template=TEMPLATE,
        showlegend=False, xaxis=dict(range=[0.0, 1.0], title=dict(text="u"), dtick=0.2),
        yaxis=dict(range=[-0.6, 1.6], visible=False)))


def residual_figure(trace: RoundTrace, step: int | None = None, *,
                    top: int | None = None) -> go.Figure:
    """The law of the round's last token, once drawn: on a rejection the residual
    norm(max(0, p - q)) (or what the rule uses instead) beside p and q; else the bonus p
    (plain decoding when the round drafted nothing). In a token tree, sibling by sibling
    before that: the residual each sibling's failure leaves for the next."""
    v = view(trace, last_step(trace) if step is None else step)
    sib = sibling_residual(trace, v)
    if sib is not None:
        return _sibling_figure(trace, sib, top)
    if not v.final:
        return _empty("The last token", "Drawn from the residual at the first rejection, or "
                      "from p as a bonus when every draft is kept.")
    if trace.rejected_at is not None:
        last = next(e for e in trace.emitted if e.origin == "resampled")
        pos = trace.positions[trace.rejected_at - 1]
        law, row = get_rule(trace.rule).reject_law, trace.rejection_row
        toks = _columns(trace, [row, pos.p_row], last.token, top)
        labels, mark = _labels(trace, toks), [x == last.token for x in toks]
        ys = [_y(trace, toks, r) for r in (pos.p_row, pos.q_row, row)]
        bars = [_bar("p", labels, ys[0], P_COLOUR, "p", mark, 0.45),
                _bar("q", labels, ys[1], Q_COLOUR, "q", mark, 0.45),
                _bar(law, labels, ys[2], LAW_COLOUR, law, mark)]
        title = (f"Rejected at position {pos.i}:<br>redraw from {law} after "
                 f"'{trace.name(pos.context)}'")
        tall = float(max(y.max() for y in ys))
    else:
        last, row = trace.emitted[-1], trace.bonus_row
        toks = _columns(trace, [row], last.token, top)
        labels = _labels(trace, toks)
        y = _y(trace, toks, row)
        bars = [_bar("p", labels, y, P_COLOUR, "p", [x == last.token for x in toks])]
        ctx = trace.name(trace.bonus_context)
        title = (f"All {trace.k} kept:<br>bonus token from p(·|'{ctx}')" if trace.k else
                 f"Nothing drafted: plain decoding,<br>one token from p(·|'{ctx}')")
        tall = float(y.max())
    own = max(b["y"][toks.index(last.token)] for b in bars)  # its tallest bar
    drawn = _mark_token(labels[toks.index(last.token)], own,
                        f"drawn: {trace.name(last.token)}", tall)
    return _axes(bars, drawn, svg_text(title).replace("&lt;br&gt;", "<br>"), tall,
                 slanted=len(toks) != len(trace.vocab))


def _sibling_figure(trace: RoundTrace, sib: SiblingResidual, top: int | None) -> go.Figure:
    """A token tree's verify frame: p at the node and q_j faded, and the residual after the
    sibling in focus (the one the next sibling is tried against once it failed)."""
    toks = _columns(trace, [sib.row, sib.p_row], sib.token, top)
    labels, mark = _labels(trace, toks), [x == sib.token for x in toks]
    ys = [_y(trace, toks, r) for r in (sib.p_row, sib.q_row, sib.row)]
    bars = [_bar("p", labels, ys[0], P_COLOUR, "p", mark, 0.45),
            _bar(f"q_{sib.sibling + 1}", labels, ys[1], Q_COLOUR, "q_j", mark, 0.45),
            _bar(sib.label, labels, ys[2], LAW_COLOUR, "residual", mark)]
    verdict = "kept" if sib.kept else "failed"
    title = (f"Depth {sib.depth}, sibling {sib.sibling + 1} "
             f"('{svg_text(trace.name(sib.token))}') {verdict}:<br>{svg_text(sib.label)}")
    tall = float(max(y.max() for y in ys))
    return _axes(bars, None, title, tall, slanted=len(toks) != len(trace.vocab))
