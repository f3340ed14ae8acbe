"""Figures of /plan: data in (a Plan, an AcceptanceReport), go.Figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..analysis.acceptance import AcceptanceReport
from ..analysis.planner import Plan
from .chartkit import layout, tip
from .palette import BLACK, MEASURED, THEORY, VERMILLION, series

PLAIN, BEST, IID = BLACK, VERMILLION, THEORY
DASHES = ("solid", "dot", "dash", "longdash", "dashdot", "longdashdot")  # k = 1, 2, ...
HEIGHT = 440


def frontier_figure(p: Plan, *, every_k: bool = True) -> go.Figure:
    """Tokens/s per user (y) against tokens/s per GPU (x), one point per batch size: no
    speculation, each k (every_k) and the best-k envelope. Up and right is better."""
    fig = go.Figure()
    B = p.batches
    G = B / p.gpus  # sequences per GPU: tokens/s per user x G = tokens/s per GPU
    hover = "B = %{customdata}<br>per GPU %{x:,.0f} tok/s<br>per user %{y:,.1f} tok/s"
    fig.add_scatter(x=p.plain_user * G, y=p.plain_user, customdata=B, mode="lines",
                    name="no speculation", line=dict(color=PLAIN, width=3, dash="dash"),
                    hovertemplate=hover + "<extra>no speculation</extra>")
    if every_k:
        for i, k in enumerate(p.ks):
            u = p.per_user[i]
            fig.add_scatter(x=u * G, y=u, customdata=B, mode="lines", name=f"k = {k}",
                            line=dict(color=series(i), width=1.5, dash=DASHES[i % len(DASHES)]),
                            opacity=0.8, hovertemplate=hover + f"<extra>k = {k}</extra>")
    best = p.best_user()
    fig.add_scatter(x=best * G, y=best, customdata=np.stack([B, p.best_k], axis=-1),
                    mode="lines+markers", name="best k at each batch",
                    line=dict(color=BEST, width=3), marker=dict(size=4),
                    hovertemplate="B = %{customdata[0]}, k = %{customdata[1]}<br>per GPU "
                                  "%{x:,.0f} tok/s<br>per user %{y:,.1f} tok/s<extra></extra>")
    fig.update_xaxes(title="tokens/s per GPU (throughput)", rangemode="tozero")
    fig.update_yaxes(title="tokens/s per user (latency)", rangemode="tozero")
    return layout(fig, "Latency against throughput: every batch size, with and without "
                       "speculation", HEIGHT)


def best_k_figure(p: Plan) -> go.Figure:
    """Best k (steps, left axis) and its speedup (right axis) against batch size."""
    fig = go.Figure()
    k = np.where(p.best_k > 0, p.best_k, np.nan)
    fig.add_scatter(x=p.batches, y=k, mode="lines", line=dict(color=MEASURED, width=3,
                    shape="hv"), name="best k", hovertemplate=tip("B = %{x}", "best k = %{y}"))
    fig.add_scatter(x=p.batches, y=p.best_speedup, mode="lines", yaxis="y2",
                    line=dict(color=BEST, width=2), name="speedup at the best k",
                    hovertemplate="B = %{x}<br>%{y:.3f}x<extra></extra>")
    fig.add_scatter(x=[p.batches[0], p.batches[-1]], y=[1, 1], mode="lines", yaxis="y2",
                    line=dict(color=PLAIN, dash="dot"), name="speedup = 1", hoverinfo="skip")
    if p.loses_from is not None:
        fig.add_vrect(x0=p.loses_from, x1=p.batches[-1], fillcolor=BEST, opacity=0.08,
                      line_width=0)
    top = float(np.nanmax(np.append(p.best_speedup, 1.0)))
    step = 0.5 if top < 4 else 1.0  # round ticks: 0, 0.5, 1, 1.5, ... on the speedup axis
    fig.update_layout(yaxis=dict(title="best k", rangemode="tozero", dtick=1),
                      yaxis2=dict(title="speedup (x)", overlaying="y", side="right",
                                  range=[0, top * 1.15], tick0=0, dtick=step,
                                  tickformat=".1f", showgrid=False))
    fig.update_xaxes(title="batch size B (sequences)")
    return layout(fig, "Best draft length by batch size", HEIGHT)


def acceptance_figure(rep: AcceptanceReport) -> go.Figure:
    """Per-position and conditional acceptance with 95 % Wilson intervals; alpha^i dashed."""
    rows = rep.rows
    i = [r["position"] for r in rows]
    fig = go.Figure()
    if rows and rows[0]["rate_lo"] is not None:
        for key, band, mode, name, colour, size in (
                ("rate", "rate", "markers", "P(draft i kept), measured", MEASURED, 9),
                ("conditional", "cond", "markers+lines", "P(kept | drafts before kept)", BEST,
                 8)):
            fig.add_scatter(x=i, y=[r[key] for r in rows], mode=mode, name=name,
                            marker=dict(color=colour, size=size),
                            error_y=dict(type="data", symmetric=False,  # the 95 % interval
                                         array=[r[f"{band}_hi"] - r[key] for r in rows],
                                         arrayminus=[r[key] - r[f"{band}_lo"] for r in rows]))
    fig.add_scatter(x=i, y=[r["iid_rate"] for r in rows], mode="lines",
                    name=f"i.i.d.: alpha^i, alpha = {rep.alpha:.3f}",
                    line=dict(color=IID, dash="dash"))
    fig.update_xaxes(title="draft position i", dtick=1)
    fig.update_yaxes(title="acceptance", range=[0, 1.05])
    return layout(fig, f"Acceptance by position ({rep.shape})", HEIGHT)
