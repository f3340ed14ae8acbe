"""Figures and HTML of /text: the coloured output text, and the draft-order and drafter
comparisons (the round itself is drawn by figures.animation with a top-k). Data in,
figure out.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..views.textpage import DRAFTER_LABELS, Row
from ..views.transcript import RoundTranscript
from .frame import LEGEND_BELOW
from .palette import BLUE, GREEN, GREY, MARKS, PALE
from .roundlist import emitted_status, listed_rounds


# ----------------------------------------------------------------------------- text HTML
def _token_span(piece: str, status: str, origin: str) -> str:
    m = MARKS[status]
    text = html.escape(piece).replace("\n", "⏎<br>")
    return (f'<span data-origin="{origin}" title="{html.escape(m.label)}" '
            f'style="background:{m.colour}33;border-bottom:2px solid {m.colour};'
            f'white-space:pre-wrap">{text}</span>')


PROMPT_CLASS = "sv-prompt"  # presenter mode sets its type (web.present)


def prompt_html(text: str) -> str:
    """A prompt shown as written: monospace, its line breaks and indents kept, long lines
    wrapped (plain HTML: Streamlit's code block loads a 1.5 MB highlighter for it)."""
    return (f'<pre class="{PROMPT_CLASS}" style="white-space:pre-wrap;overflow-wrap:anywhere;'
            'margin:0;padding:0.75rem 1rem;border-radius:0.5rem;background:#f0f2f6;'
            f'font-size:0.875rem;line-height:1.5">{html.escape(text)}</pre>')


def tokens_html(tok, tr: RoundTranscript, step: int, prompt_chars: int = 400) -> str:
    """The prompt (grey, its tail), then the output of every round so far, each token
    coloured by origin (kept, redrawn, bonus, unchecked); the current round once done. tok:
    any tokenizer with decode(ids) and pieces(ids, after=) (each token's surface text,
    spaces included): an n-gram model's, or the real model's (views.llmpage.Pieces)."""
    prompt = tr.context[: tr.prompt_len]
    ptext = tok.decode(prompt)
    cut = len(ptext) > prompt_chars
    ptext = ("…" if cut else "") + ptext[-prompt_chars:]
    out = [f'<span style="color:{GREY};white-space:pre-wrap">'
           f'{html.escape(ptext).replace(chr(10), "⏎<br>")}</span>']
    rounds = listed_rounds(tr, step)
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
            out.append(_token_span(piece, emitted_status(r, e.origin), e.origin))
        prev = ids[-1]
    return ('<div class="sv-text" style="font-family:monospace;line-height:1.8;'
            'padding:8px;border:1px solid #ddd;border-radius:6px">' + "".join(out) + "</div>")


# ----------------------------------------------------------------------------- figures
def order_figure(rows: list[Row], target_order: int) -> go.Figure:
    """Left: measured acceptance (kept / drafted) and mean beta by draft order. Right:
    tokens per target call, labelled with the speedup at the rows' c."""
    orders = [f"order {r['draft order']}" for r in rows]
    colours = [GREEN if r["smaller than target"] else PALE for r in rows]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        "acceptance (kept / drafted)<br>and beta", "tokens per target call<br>(speedup)"))
    fig.add_trace(go.Bar(
        name="acceptance (kept / drafted)", x=orders, y=[r["acceptance"] for r in rows],
        marker_color=colours, text=[f"{r['acceptance']:.2f}" for r in rows],
        textposition="outside", hovertemplate="%{x}<br>acceptance %{y:.3f}<extra></extra>",
    ), row=1, col=1)
    fig.add_trace(go.Scatter(
        name="mean beta = sum min(p, q)", x=orders, y=[r["beta"] for r in rows],
        mode="markers", marker=dict(symbol="diamond", size=12, color=BLUE),
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
        title=f"Draft order against a {target_order}-gram target" + (
            " (pale bars: not a smaller model)" if PALE in colours else ""),
        height=400, margin=dict(l=40, r=20, t=80, b=90), legend=LEGEND_BELOW,
    )
    return fig


def drafter_figure(rows: list[Row]) -> go.Figure:
    """Tokens per target call and speedup, n-gram draft against prompt lookup."""
    names = [DRAFTER_LABELS[r["drafter"]] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(name="tokens per target call", x=names,
                         y=[r["tokens per call"] for r in rows], marker_color=BLUE,
                         text=[f"{r['tokens per call']:.2f}" for r in rows],
                         textposition="outside"))
    fig.add_trace(go.Bar(name="speedup", x=names, y=[r["speedup"] for r in rows],
                         marker_color=GREEN,
                         text=[f"{r['speedup']:.2f}x (c = {r['c']:g})" for r in rows],
                         textposition="outside"))
    top = max([r["tokens per call"] for r in rows] + [r["speedup"] for r in rows] + [1.0])
    fig.update_layout(title="Same prompt, same target: two drafters", barmode="group",
                      height=380, margin=dict(l=40, r=20, t=50, b=90), legend=LEGEND_BELOW)
    fig.update_yaxes(range=[0, 1.2 * top])
    return fig

