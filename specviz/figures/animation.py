"""Pure builders for the /round page: one frame of one traced round, as Plotly and HTML.

Every builder takes a RoundTrace (specviz.round) and a step index into trace.steps, and
draws only what a viewer has been shown by that step: a draft appears at its draft
step, its coin at its verify step, the residual (or bonus) draw at the step that makes
it. Nothing here draws a random number; the trace holds every draw.

Colours are the Okabe & Ito (2008) colour-blind-safe palette, and each status also has
a symbol and a word, so no meaning rests on colour alone. Token names are HTML-escaped
wherever they enter markup.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ..core.round import RoundTrace
from ..core.rules import get_rule
from ..views.stepping import last_step, view
from ..views.transcript import RoundTranscript, Totals

# Okabe & Ito (2008), "Color Universal Design"
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7",
}
GREY = "#8C8C8C"
P_COLOUR = OKABE_ITO["blue"]  # target p
Q_COLOUR = OKABE_ITO["orange"]  # draft q
LAW_COLOUR = OKABE_ITO["purple"]  # the law a rejection (or bonus) token is drawn from


@dataclass(frozen=True)
class Mark:
    """How one status of a token is drawn: colour, symbol and a word."""

    colour: str
    symbol: str
    label: str


MARKS: dict[str, Mark] = {
    "context": Mark(OKABE_ITO["black"], "▸", "context"),
    "pending": Mark(GREY, "·", "not drafted yet"),
    "drafted": Mark(GREY, "?", "drafted, not checked"),
    "accepted": Mark(OKABE_ITO["green"], "✓", "kept"),
    "rejected": Mark(OKABE_ITO["vermillion"], "✗", "rejected"),
    "resampled": Mark(OKABE_ITO["purple"], "↻", "redrawn"),
    "bonus": Mark(OKABE_ITO["sky"], "★", "bonus"),
    "flushed": Mark(GREY, "✂", "flushed"),
    "unverified": Mark(OKABE_ITO["orange"], "⚠", "unchecked"),
}


def frame_caption(trace: RoundTrace, step: int, rnd: int) -> str:
    """'Round r · step s of n · kind' (markdown)."""
    return (f"**Round {rnd}** · step {step} of {last_step(trace)} · "
            f"*{trace.steps[step].kind}* · rule `{trace.rule}` · k = {trace.k}")


def rule_note(trace: RoundTrace) -> str | None:
    """A warning line when the round was played under a broken rule."""
    rule = get_rule(trace.rule)
    if rule.lossless:
        return None
    return (f"Rule '{rule.name}' is switched on: {rule.description}. Its output is not "
            "distributed as the target's (compare on the exactness page).")


# ----------------------------------------------------------------------------- chips
def _chip(name: str, status: str, lines: Sequence[str] = (), pos: int | None = None,
          strike: bool = False, dashed: bool = False) -> str:
    m = MARKS[status]
    deco = "line-through" if strike else "none"
    border = "dashed" if dashed else "solid"
    bg = "#ffffff" if dashed else f"{m.colour}22"
    small = "".join(f"<br><small>{html.escape(s)}</small>" for s in lines)
    data_pos = f' data-pos="{pos}"' if pos is not None else ""
    return (
        f'<span class="sv-chip" data-status="{status}"{data_pos} title="{html.escape(m.label)}" '
        f'style="display:inline-block;min-width:4.2em;padding:4px 8px;margin:2px;'
        f"border:2px {border} {m.colour};border-radius:8px;background:{bg};"
        f'text-align:center;line-height:1.25;vertical-align:top;font-family:monospace">'
        f'<b style="font-size:1.15em;text-decoration:{deco}">{html.escape(name)}</b> '
        f'<span aria-hidden="true">{m.symbol}</span>'
        f"<br><small><i>{html.escape(m.label)}</i></small>{small}</span>"
    )


def chips_html(trace: RoundTrace, step: int) -> str:
    """The context, then each draft slot as a chip with its q (and p, u once checked); the
    redrawn or bonus token once drawn; later drafts struck through once flushed."""
    v = view(trace, step)
    out = [_chip(trace.name(trace.ctx), "context")]
    resampled = next((e for e in trace.emitted if e.origin == "resampled"), None)
    bonus = next((e for e in trace.emitted if e.origin == "bonus"), None)
    for pos in trace.positions:
        i = pos.i
        if i > v.drafted:
            out.append(_chip(f"x{i}", "pending", ("?",), pos=i, dashed=True))
            continue
        lines = [f"x{i}  q={pos.q:.4f}"]
        status = "drafted"
        if i <= v.verified:
            lines.append(f"p={pos.p:.4f}  u={pos.u:.4f}")
            status = "accepted" if pos.accepted else "rejected"
        elif v.settled and i in trace.flushed:
            status = "flushed"
        elif v.settled and trace.rejected_at is not None and i > trace.rejected_at:
            status = "unverified"
        out.append(_chip(trace.name(pos.token), status, lines, pos=i,
                         strike=status == "flushed"))
        if v.final and resampled is not None and i == trace.rejected_at:
            law = get_rule(trace.rule).reject_law
            out.append(_chip(trace.name(resampled.token), "resampled", (f"from {law}",), pos=i))
    if v.final and bonus is not None:
        out.append(_chip(trace.name(bonus.token), "bonus", ("from p, free",), pos=trace.k + 1))
    return ('<div class="sv-chips" style="display:flex;flex-wrap:wrap;align-items:flex-start;'
            'gap:2px">' + "".join(out) + "</div>")


def legend_html() -> str:
    """One small chip per status: colour, symbol and word together."""
    keys = ("accepted", "rejected", "resampled", "bonus", "flushed", "unverified")
    items = [
        f'<span style="margin-right:14px;white-space:nowrap"><span style="color:'
        f'{MARKS[k].colour};font-weight:bold">{MARKS[k].symbol}</span> '
        f"{html.escape(MARKS[k].label)}</span>"
        for k in keys
    ]
    return '<div class="sv-legend" style="font-size:0.9em">' + "".join(items) + "</div>"


# ----------------------------------------------------------------------------- figures
def _empty(title: str, note: str, x_range=None, height: int = 320) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=height, margin=dict(l=40, r=20, t=50, b=40),
                      annotations=[dict(text=note, showarrow=False, xref="paper", yref="paper",
                                        x=0.5, y=0.5, font=dict(size=14, color=GREY))])
    fig.update_xaxes(range=x_range, visible=x_range is not None)
    fig.update_yaxes(visible=False)
    return fig


def _bar(name: str, vocab: Sequence[str], y: np.ndarray, colour: str, label: str,
         mark: int | None = None, opacity: float = 1.0) -> go.Bar:
    width = [3 if x == mark else 0 for x in range(len(vocab))]
    return go.Bar(
        name=name, x=list(vocab), y=[float(t) for t in y], marker_color=colour,
        marker_line_color=OKABE_ITO["black"], marker_line_width=width, opacity=opacity,
        hovertemplate=f"token %{{x}}<br>{label} = %{{y:.4f}}<extra></extra>",
    )


_LEGEND = dict(orientation="h", x=0.0, y=-0.25, yanchor="top")  # below the x-axis title


def _mark_token(fig: go.Figure, vocab: Sequence[str], x: int, y: float, text: str) -> None:
    fig.add_annotation(x=vocab[x], y=y, text=html.escape(text), showarrow=True, arrowhead=2,
                       ay=-30, font=dict(size=13))


def bars_figure(trace: RoundTrace, step: int) -> go.Figure:
    """q at the draft position in focus; once the target has scored it, p beside q."""
    v = view(trace, step)
    if v.focus is None:
        return _empty("p and q", "The bars appear with the first draft.")
    pos = trace.positions[v.focus - 1]
    ctx, tok, vocab = trace.name(pos.context), trace.name(pos.token), trace.vocab
    checked = v.verified >= pos.i
    fig = go.Figure()
    if checked:
        fig.add_trace(_bar(f"p(·|{ctx}) target", vocab, pos.p_row, P_COLOUR, "p", pos.token))
    fig.add_trace(_bar(f"q(·|{ctx}) draft", vocab, pos.q_row, Q_COLOUR, "q", pos.token))
    top = float(max(pos.p_row.max(), pos.q_row.max()))
    _mark_token(fig, vocab, pos.token, float(max(pos.p, pos.q) if checked else pos.q),
                f"x{pos.i} = {tok}")
    what = "p and q" if checked else "q only (the target has not been called yet)"
    fig.update_layout(
        title=f"Position {pos.i}, after '{html.escape(ctx)}': {what}", barmode="group",
        height=360, margin=dict(l=40, r=20, t=50, b=90), legend=_LEGEND,
    )
    fig.update_yaxes(range=[0.0, 1.25 * top], title="probability")
    fig.update_xaxes(title="next token")
    return fig


def coin_figure(trace: RoundTrace, step: int) -> go.Figure:
    """The coin u on a 0..1 bar: keep region [0, t), reject region [t, 1), t the threshold."""
    v = view(trace, step)
    if v.focus is None or v.verified < v.focus:
        return _empty("The coin", "Each draft gets a coin u ~ U[0, 1) once the target "
                      "has scored all drafts.", x_range=[0.0, 1.0], height=220)
    pos = trace.positions[v.focus - 1]
    t, u = pos.threshold, float(pos.u)
    verdict = "accepted" if pos.accepted else "rejected"
    m = MARKS[verdict]
    fig = go.Figure()
    fig.add_trace(go.Bar(name="keep: u < t", y=[0.0], x=[t], base=[0.0], orientation="h",
                         marker_color=MARKS["accepted"].colour, opacity=0.35, width=0.5,
                         hovertemplate="keep if u < %{x:.4f}<extra></extra>"))
    fig.add_trace(go.Bar(name="reject: u ≥ t", y=[0.0], x=[1.0 - t], base=[t],
                         orientation="h", marker_color=MARKS["rejected"].colour, opacity=0.35,
                         width=0.5, hovertemplate="reject if u ≥ %{base:.4f}<extra></extra>"))
    fig.add_trace(go.Scatter(name="threshold t", x=[t, t], y=[-0.4, 0.4], mode="lines",
                             line=dict(color=OKABE_ITO["black"], dash="dash", width=2),
                             hovertemplate=f"t = {t:.4f}<extra></extra>"))
    fig.add_trace(go.Scatter(
        name=f"u ({m.label})", x=[u], y=[0.45], mode="markers+text",
        marker=dict(symbol="triangle-down", size=18, color=m.colour,
                    line=dict(color=OKABE_ITO["black"], width=1)),
        text=[f"u = {u:.4f} {m.symbol} {m.label}"], textposition="top center",
        textfont=dict(size=14, color=m.colour),
        hovertemplate=f"u = {u:.4f}<extra></extra>",
    ))
    tok = html.escape(trace.name(pos.token))
    how = "min(1, p/q)" if trace.rule != "greedy" else "[x is the target's top token]"
    fig.update_layout(
        title=f"Coin at position {pos.i}: keep '{tok}' iff u < t = {how} = {t:.4f}",
        barmode="overlay", height=220, margin=dict(l=20, r=20, t=50, b=40), showlegend=False,
    )
    fig.update_xaxes(range=[0.0, 1.0], title="u", dtick=0.1)
    fig.update_yaxes(range=[-0.6, 1.2], visible=False)
    return fig


def residual_figure(trace: RoundTrace, step: int | None = None) -> go.Figure:
    """The law of the round's last token, once drawn: on a rejection the residual
    norm(max(0, p - q)) (or what the rule uses instead) beside p and q; else the bonus p."""
    v = view(trace, last_step(trace) if step is None else step)
    vocab = trace.vocab
    if not v.final:
        return _empty("The last token", "Drawn from the residual at the first rejection, or "
                      "from p as a bonus when every draft is kept.")
    last = trace.emitted[-1] if trace.rejected_at is None else next(
        e for e in trace.emitted if e.origin == "resampled")
    fig = go.Figure()
    if trace.rejected_at is not None:
        pos = trace.positions[trace.rejected_at - 1]
        law_name = get_rule(trace.rule).reject_law
        row = trace.rejection_row
        fig.add_trace(_bar("p", vocab, pos.p_row, P_COLOUR, "p", opacity=0.45))
        fig.add_trace(_bar("q", vocab, pos.q_row, Q_COLOUR, "q", opacity=0.45))
        fig.add_trace(_bar(law_name, vocab, row, LAW_COLOUR, law_name, last.token))
        ctx = trace.name(pos.context)
        title = f"Rejected at position {pos.i}: redraw from {law_name} after '{ctx}'"
        top = float(max(pos.p_row.max(), pos.q_row.max(), row.max()))
    else:
        row = trace.bonus_row
        ctx = trace.name(trace.bonus_context)
        fig.add_trace(_bar(f"p(·|{ctx})", vocab, row, P_COLOUR, "p", last.token))
        title = f"All {trace.k} kept: bonus token from p(·|'{ctx}')"
        top = float(row.max())
    _mark_token(fig, vocab, last.token, float(row[last.token]),
                f"drawn: {trace.name(last.token)}")
    fig.update_layout(title=html.escape(title), barmode="group", height=360,
                      margin=dict(l=40, r=20, t=50, b=90), legend=_LEGEND, showlegend=True)
    fig.update_yaxes(range=[0.0, 1.25 * top], title="probability")
    fig.update_xaxes(title="next token")
    return fig


# ----------------------------------------------------------------------------- transcript
def listed_rounds(tr: RoundTranscript, step: int) -> tuple[RoundTrace, ...]:
    """The rounds the transcript lists at this step: the current one once it is done."""
    return tr.earlier + ((tr.current,) if view(tr.current, step).done else ())


def totals_at(tr: RoundTranscript, step: int) -> Totals:
    """Running totals at this step: the current round counts once it is done."""
    return tr.through if view(tr.current, step).done else tr.before


def totals_metrics(t: Totals) -> list[tuple[str, str]]:
    """(label, value) pairs for the running totals."""
    def num(x: float) -> str:
        return "–" if math.isnan(x) else f"{x:.3f}"

    return [
        ("rounds (target calls)", f"{t.rounds}"),
        ("tokens emitted", f"{t.tokens}"),
        ("tokens per target call", num(t.tokens_per_call)),
        ("acceptance (kept / drafted)", num(t.acceptance_rate)),
    ]


def transcript_html(traces: Sequence[RoundTrace], first: int = 0) -> str:
    """One line per round: its context, then each emitted token coloured and marked by
    origin (kept, redrawn, bonus, unchecked), then the flushed drafts struck through."""
    if not traces:
        return '<div class="sv-transcript"><i>No round finished yet.</i></div>'
    origin_mark = {"accepted": "accepted", "resampled": "resampled", "bonus": "bonus",
                   "unverified": "unverified"}
    rows = []
    for r, t in enumerate(traces, start=first):
        cells = [f'<span style="color:{GREY};display:inline-block;min-width:3.5em">r{r}</span>',
                 f"<span>{html.escape(t.name(t.ctx))} →</span>"]
        for e in t.emitted:
            m = MARKS[origin_mark[e.origin]]
            cells.append(
                f'<span data-origin="{e.origin}" title="{html.escape(m.label)}" '
                f'style="display:inline-block;margin:1px 2px;padding:0 5px;border-radius:5px;'
                f'border:2px solid {m.colour};background:{m.colour}22">'
                f"{html.escape(t.name(e.token))}{m.symbol}</span>")
        for j in t.flushed:
            cells.append(
                f'<span data-origin="flushed" title="flushed" style="color:{GREY};'
                f'text-decoration:line-through;margin:0 2px">'
                f"{html.escape(t.name(t.positions[j - 1].token))}{MARKS['flushed'].symbol}"
                "</span>")
        rows.append(f'<div class="sv-round" data-round="{r}" style="font-family:monospace;'
                    f'line-height:1.9">' + "".join(cells) + "</div>")
    return '<div class="sv-transcript">' + "".join(rows) + "</div>"
