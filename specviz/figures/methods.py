"""Figures of the newer methods: acceptance against a sampling warp's knobs."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..views.demos import Row
from .frame import legend_below
from .palette import OKABE_ITO


def warp_figure(rows: Sequence[Row]) -> go.Figure:
    """Two panels: acceptance and tokens per call against top-p, and against temperature."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("against top-p (T = 1)",
                                                        "against temperature<br>(top-p off)"))
    for col, knob in ((1, "top_p"), (2, "temperature")):
        part = [r for r in rows if r["knob"] == knob]
        xs = [r["value"] for r in part]
        fig.add_trace(go.Scatter(x=xs, y=[r["acceptance"] for r in part], name="acceptance",
                                 mode="lines+markers", marker_symbol="circle",
                                 line_color=OKABE_ITO["blue"], showlegend=col == 1), 1, col)
        fig.add_trace(go.Scatter(x=xs, y=[r["alpha"] for r in part], name="alpha",
                                 mode="lines+markers", marker_symbol="diamond",
                                 line_color=OKABE_ITO["orange"], showlegend=col == 1), 1, col)
        fig.update_xaxes(title_text=knob.replace("_", "-"), row=1, col=col)
    fig.update_yaxes(title_text="exact, long run", range=[0, 1.02])
    fig.update_layout(height=380, margin=dict(l=50, r=20, t=80, b=40),
                      title="Acceptance under a correctly verified sampling warp")
    return legend_below(fig)
