"""/measured's figure: what one round costs against what it yields, per draft and mode.
Data in (views.measured.summary_rows), go.Figure out."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from .chartkit import col, layout
from .palette import BLACK, ORANGE, PURPLE


def round_cost_figure(rows: Sequence[dict]) -> go.Figure:
    """Stacked bars: k c (the drafts) and t(k+1)/t(1) (the verification), in one-position
    target passes; a diamond at tokens per call. Speculation pays where the diamond stands
    above its bar."""
    names = [f"{r['draft']} {r['mode']}" for r in rows]
    drafts = [r["k"] * (r["c"] or 0.0) for r in rows]
    verify = [r["verify_ratio"] or 1.0 for r in rows]
    fig = go.Figure([
        go.Bar(name="drafting: k c", x=names, y=drafts, marker_color=ORANGE),
        go.Bar(name="verifying: t(k+1) / t(1)", x=names, y=verify, marker_color=PURPLE),
        go.Scatter(name="tokens per call (pays above its bar)", x=names,
                   y=col(rows, "tokens_per_call"), mode="markers",
                   marker=dict(symbol="diamond", size=12, color=BLACK)),
    ])
    fig.update_layout(barmode="stack", yaxis_title="one-position target passes per round",
                      xaxis_tickangle=-30)
    return layout(fig, "One round's measured cost against the tokens it yields")
