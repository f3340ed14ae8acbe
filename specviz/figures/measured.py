"""/measured's figure: what one round costs against what it yields, per draft and mode.
Data in (views.measured.summary_rows), go.Figure out."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from .chartkit import col, layout
from .palette import BLACK, ORANGE, PURPLE

ROW_PX = 26  # height of one bar's row


def round_cost_figure(rows: Sequence[dict]) -> go.Figure:
    """Stacked bars: k c (the drafts) and t(k+1)/t(1) (the verification), in one-position
    target passes; a diamond at tokens per call. Speculation pays where the diamond lies
    right of its bar."""
    names = [f"{r['draft']} {r['mode']}" for r in rows][::-1]  # the first row on top
    drafts = [r["k"] * (r["c"] or 0.0) for r in rows][::-1]
    verify = [r["verify_ratio"] or 1.0 for r in rows][::-1]
    fig = go.Figure([
        go.Bar(name="drafting: k c", y=names, x=drafts, orientation="h", marker_color=ORANGE),
        go.Bar(name="verifying: t(k+1) / t(1)", y=names, x=verify, orientation="h",
               marker_color=PURPLE),
        go.Scatter(name="tokens per call (pays right of its bar)", y=names,
                   x=col(rows, "tokens_per_call")[::-1], mode="markers",
                   marker=dict(symbol="diamond", size=12, color=BLACK)),
    ])
    fig.update_layout(barmode="stack", xaxis_title="one-position target passes per round")
    fig.update_yaxes(automargin=True)
    return layout(fig, "One round's measured cost against the tokens it yields",
                  height=max(300, ROW_PX * len(rows) + 170))
