"""Figures and HTML of /text: the round's bars over the top tokens of a large vocabulary,
the coloured output text, and the draft-order and drafter comparisons. Data in, figure out.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.round import RoundTrace
from ..core.rules import get_rule
from ..text.pair import TextDecoder
from ..views.stepping import view
from ..views.textpage import DRAFTER_LABELS, TOP_BARS, Row
from ..views.transcript import RoundTranscript
from .animation import GREY, LAW_COLOUR, MARKS, OKABE_ITO, P_COLOUR, Q_COLOUR


# ----------------------------------------------------------------------------- text HTML
def _token_span(piece: str, origin: str) -> str:
    m = MARKS[origin]
    text = html.escape(piece).replace("\n", "⏎<br>")
    return (f'<span data-origin="{origin}" title="{html.escape(m.label)}" '
            f'style="background:{m.colour}33;border-bottom:2px solid {m.colour};'
            f'white-space:pre-wrap">{text}</span>')


def text_html(dec: TextDecoder, tr: RoundTranscript, step: int, prompt_chars: int = 400) -> str:
    """The prompt (grey, its tail), then the output of every round so far, each token
    coloured by origin (kept, redrawn, bonus, unchecked); the current round once done."""
    tok = dec.counts.tokenizer
    prompt = tr.context[: tr.prompt_len]
    ptext = tok.decode(prompt)
    cut = len(ptext) > prompt_chars
    ptext = ("…" if cut else "") + ptext[-prompt_chars:]
    out = [f'<span style="color:{GREY};white-space:pre-wrap">'
           f'{html.escape(ptext).replace(chr(10), "⏎<br>")}</span>']
    rounds = list(tr.earlier) + ([tr.current] if view(tr.current, step).done else [])
    start = tr.context[tr.prompt_len - 1]
    if tr.first > 0:
        skipped = tr.context[tr.prompt_len:len(tr.context) - sum(len(r.emitted)
                                                                  for r in tr.earlier)]
        if skipped:
            text = "".join(tok.pieces(skipped, after=start))
            out.append(f'<span style="color:{GREY};white-space:pre-wrap" title="earlier '
                       f'rounds">{html.escape(text).replace(chr(10), "⏎<br>")}</span>')
            start = skipped[-1]
    prev = start
    for r in rounds:
        ids = [e.token for e in r.emitted]
        for e, piece in zip(r.emitted, tok.pieces(ids, after=prev), strict=True):
            out.append(_token_span(piece, e.origin))
        prev = ids[-1]
    return ('<div class="sv-text" style="font-family:monospace;line-height:1.8;'
            'padding:8px;border:1px solid #ddd;border-radius:6px">' + "".join(out) + "</div>")


# ----------------------------------------------------------------------------- figures
def top_tokens(rows: Sequence[np.ndarray], m: int = TOP_BARS,
               must: Sequence[int] = ()) -> list[int]:
    """The m most likely tokens over the rows (by the largest entry among them), plus the
    tokens in must, most likely first."""
    stacked = np.max(np.stack([np.asarray(r) for r in rows]), axis=0)  # (V,)
    order = [int(x) for x in np.argsort(-stacked, kind="stable")[:m]]
    for x in must:
        if int(x) not in order:
            order.append(int(x))
    return sorted(order, key=lambda x: -stacked[x])


def _bar(name: str, labels: list[str], y: Sequence[float], colour: str, what: str,
         marked: list[bool], opacity: float = 1.0) -> go.Bar:
    return go.Bar(
        name=name, x=labels, y=[float(v) for v in y], marker_color=colour, opacity=opacity,
        marker_line_color=OKABE_ITO["black"], marker_line_width=[3 if b else 0 for b in marked],
        hovertemplate=f"%{{x}}<br>{what} = %{{y:.4f}}<extra></extra>",
    )


def _labels(trace: RoundTrace, toks: list[int]) -> list[str]:
    """Bar labels: a token's name, made unique (two tokens may share a display name)."""
    seen: dict[str, int] = {}
    out = []
    for x in toks:
        name = trace.name(x)
        seen[name] = seen.get(name, 0) + 1
        out.append(html.escape(name) + ("\u200b" * (seen[name] - 1)))
    return out


def _empty(title: str, note: str, height: int = 320) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=height, margin=dict(l=40, r=20, t=50, b=40),
                      annotations=[dict(text=note, showarrow=False, xref="paper", yref="paper",
                                        x=0.5, y=0.5, font=dict(size=14, color=GREY))])
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


_LEGEND = dict(orientation="h", x=0.0, y=-0.35, yanchor="top")  # below slanted tick labels


def text_bars_figure(trace: RoundTrace, step: int, top: int = TOP_BARS) -> go.Figure:
    """q at the draft position in focus, and p once the target has scored it: the top
    tokens only (a text vocabulary is too big for a bar each)."""
    v = view(trace, step)
    if v.focus is None:
        return _empty("p and q", "The bars appear with the first draft.")
    pos = trace.positions[v.focus - 1]
    checked = v.verified >= pos.i
    rows = [pos.q_row] + ([pos.p_row] if checked else [])
    toks = top_tokens(rows, top, must=(pos.token,))
    labels = _labels(trace, toks)
    mark = [x == pos.token for x in toks]
    fig = go.Figure()
    if checked:
        fig.add_trace(_bar("p target", labels, pos.p_row[toks], P_COLOUR, "p", mark))
    fig.add_trace(_bar("q draft", labels, pos.q_row[toks], Q_COLOUR, "q", mark))
    shown = float(pos.q_row[toks].sum())
    what = "p and q" if checked else "q only (the target has not been called yet)"
    fig.update_layout(
        title=(f"Position {pos.i}: {what}, top {len(toks)} of {len(trace.vocab):,} tokens "
               f"(they hold {shown:.0%} of q)"),
        barmode="group", height=380, margin=dict(l=40, r=20, t=50, b=110), legend=_LEGEND,
    )
    fig.update_yaxes(title="probability", rangemode="tozero")
    fig.update_xaxes(type="category", tickangle=-40)  # words are long: slanted, no title
    return fig


def text_residual_figure(trace: RoundTrace, step: int, top: int = TOP_BARS) -> go.Figure:
    """The law of the round's last token, once drawn: the residual beside p and q after a
    rejection, or p for the bonus token; top tokens only."""
    v = view(trace, step)
    if not v.final:
        return _empty("The last token", "Drawn from the residual at the first rejection,<br>"
                      "or from p as a bonus when every draft is kept.")
    fig = go.Figure()
    if trace.rejected_at is not None:
        last = next(e for e in trace.emitted if e.origin == "resampled")
        pos = trace.positions[trace.rejected_at - 1]
        law = get_rule(trace.rule).reject_law
        row = trace.rejection_row
        toks = top_tokens([row, pos.p_row], top, must=(last.token,))
        labels = _labels(trace, toks)
        mark = [x == last.token for x in toks]
        fig.add_trace(_bar("p", labels, pos.p_row[toks], P_COLOUR, "p", mark, 0.45))
        fig.add_trace(_bar("q", labels, pos.q_row[toks], Q_COLOUR, "q", mark, 0.45))
        fig.add_trace(_bar(law, labels, row[toks], LAW_COLOUR, law, mark))
        title = (f"Rejected at position {pos.i}: '{html.escape(trace.name(last.token))}' "
                 f"drawn from {law}")
    else:
        last = trace.emitted[-1]
        row = trace.bonus_row
        toks = top_tokens([row], top, must=(last.token,))
        labels = _labels(trace, toks)
        fig.add_trace(_bar("p", labels, row[toks], P_COLOUR, "p",
                           [x == last.token for x in toks]))
        title = f"Bonus token '{html.escape(trace.name(last.token))}' drawn from p"
    fig.update_layout(title=title, barmode="group", height=380,
                      margin=dict(l=40, r=20, t=50, b=110), legend=_LEGEND, showlegend=True)
    fig.update_yaxes(title="probability", rangemode="tozero")
    fig.update_xaxes(type="category", tickangle=-40)  # words are long: slanted, no title
    return fig


def order_figure(rows: list[Row], target_order: int) -> go.Figure:
    """Left: measured acceptance (kept / drafted) and mean beta by draft order. Right:
    tokens per target call, labelled with the speedup at the rows' c."""
    orders = [f"order {r['draft order']}" for r in rows]
    colours = [OKABE_ITO["green"] if r["smaller than target"] else GREY for r in rows]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        "acceptance (kept / drafted) and beta", "tokens per target call (speedup)"))
    fig.add_trace(go.Bar(
        name="acceptance (kept / drafted)", x=orders, y=[r["acceptance"] for r in rows],
        marker_color=colours, text=[f"{r['acceptance']:.2f}" for r in rows],
        textposition="outside", hovertemplate="%{x}<br>acceptance %{y:.3f}<extra></extra>",
    ), row=1, col=1)
    fig.add_trace(go.Scatter(
        name="mean beta = sum min(p, q)", x=orders, y=[r["beta"] for r in rows],
        mode="markers", marker=dict(symbol="diamond", size=12, color=OKABE_ITO["blue"]),
        hovertemplate="%{x}<br>beta %{y:.3f}<extra></extra>",
    ), row=1, col=1)
    fig.add_trace(go.Bar(
        name="tokens per target call", x=orders, y=[r["tokens per call"] for r in rows],
        marker_color=colours, showlegend=False,
        text=[f"{r['tokens per call']:.2f} ({r['speedup']:.2f}x)" for r in rows],
        textposition="outside",
        hovertemplate="%{x}<br>tokens per call %{y:.3f}<extra></extra>",
    ), row=1, col=2)
    k1 = max([r["tokens per call"] for r in rows] + [1.0])
    fig.update_yaxes(range=[0, 1.15], row=1, col=1)
    fig.update_yaxes(range=[0, 1.2 * k1], row=1, col=2)
    fig.update_layout(
        title=f"Draft order against a {target_order}-gram target (grey: not a smaller model)",
        height=400, margin=dict(l=40, r=20, t=80, b=90), legend=_LEGEND,
    )
    return fig


def drafter_figure(rows: list[Row]) -> go.Figure:
    """Tokens per target call and speedup, n-gram draft against prompt lookup."""
    names = [DRAFTER_LABELS[r["drafter"]] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(name="tokens per target call", x=names,
                         y=[r["tokens per call"] for r in rows], marker_color=OKABE_ITO["blue"],
                         text=[f"{r['tokens per call']:.2f}" for r in rows],
                         textposition="outside"))
    fig.add_trace(go.Bar(name="speedup", x=names, y=[r["speedup"] for r in rows],
                         marker_color=OKABE_ITO["green"],
                         text=[f"{r['speedup']:.2f}x (c = {r['c']:g})" for r in rows],
                         textposition="outside"))
    top = max([r["tokens per call"] for r in rows] + [r["speedup"] for r in rows] + [1.0])
    fig.update_layout(title="Same prompt, same target: two drafters", barmode="group",
                      height=380, margin=dict(l=40, r=20, t=50, b=90), legend=_LEGEND)
    fig.update_yaxes(range=[0, 1.2 * top])
    return fig

