"""Plotly figures of /cost and /roofline: speedup against c, the speedup surface over k and
c, the roofline and pass times. Data in, go.Figure out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..analysis import roofline
from ..views.demos import CostModel, Row, Surface
from ..views.pagedata import RooflinePage
from .chartkit import LOG_DECADES, col, hline, layout, tip, vline
from .frame import legend_below
from .palette import (
    ACCEL_COLOURS,
    BEST,
    BLACK,
    BREAK_EVEN,
    EXACT,
    MEASURED,
    PALE,
    THRESHOLD,
)

# ----------------------------------------------------------------------------- cost
# A value label's reach on the narrowest plot (a phone: about 45 px of a 280 px wide plot,
# 20 px of a 270 px tall one), as a share of the axis; wider screens only add room.
LABEL_REACH_X, LABEL_REACH_Y = 0.16, 0.075


def _mark_spot(c: float, s: float, c_star: float, c_max: float, y_max: float) -> str:
    """Where a point's value label goes on the falling curve speedup(c): top right or bottom
    left, the two quadrants a falling curve never enters, whichever keeps further from the
    break-even crossing (c*, 1) and its two lines (in label reaches), and inside the axes."""
    gap_x = abs(c - c_star) / (LABEL_REACH_X * c_max)  # to the c* line
    gap_y = abs(s - 1.0) / (LABEL_REACH_Y * y_max)  # to the speedup = 1 line
    # right of c* the top-right label climbs toward the speedup = 1 line and the bottom-left
    # one moves toward c*; left of c*, the other way round
    right = gap_y if c > c_star else gap_x
    left = gap_x if c > c_star else gap_y
    fits_right = c + LABEL_REACH_X * c_max <= c_max and s + LABEL_REACH_Y * y_max <= y_max
    fits_left = c - LABEL_REACH_X * c_max >= 0.0 and s - LABEL_REACH_Y * y_max >= 0.0
    if fits_right and (right >= left or not fits_left):
        return "top right"
    return "bottom left" if fits_left else "top right"


def cost_curve(cm: CostModel, marks: Sequence[Row] = ()) -> go.Figure:
    """Speedup = tokens / (1 + k c) against c, the speedup = 1 line and the break-even c*.

    cm: demos.cost_model (its rows over a grid of c); marks: points to mark on the curve
    (rows with c and speedup, e.g. pagedata.slow_cases at the sidebar's c).
    """
    cs, s = col(cm.rows, "c"), col(cm.rows, "speedup")
    y_max = 1.2 * max(max(s), 1.0)  # head room over the curve for the c* label
    fig = go.Figure()
    fig.add_scatter(x=cs, y=s, mode="lines", name=f"speedup at k = {cm.k}",
                    line=dict(color=EXACT, width=3),
                    hovertemplate="c = %{x:.3f}<br>speedup = %{y:.4f}x<extra></extra>")
    hline(fig, 1.0, "speedup = 1 (no gain)", THRESHOLD, "dash", False, 1.0, "right")
    fig.add_scatter(x=[cm.break_even], y=[1.0], mode="markers", name="break-even c*",
                    marker=dict(symbol="x", size=14, color="#000"),
                    hovertemplate="break-even c* = %{x:.4f}<extra></extra>")
    if marks:
        fig.add_scatter(x=col(marks, "c"), y=col(marks, "speedup"), mode="markers+text",
                        name="marked draft costs",
                        text=[f"{r['speedup']:.3f}x" for r in marks],
                        textposition=[_mark_spot(r["c"], r["speedup"], cm.break_even, cs[-1],
                                                 y_max) for r in marks],
                        marker=dict(size=11, color=MEASURED, line=dict(color="#000", width=1)),
                        hovertemplate="c = %{x:.3f}<br>speedup = %{y:.4f}x<extra></extra>")
    if cs and cm.break_even < cs[-1]:
        fig.add_vrect(x0=cm.break_even, x1=cs[-1], fillcolor=THRESHOLD, opacity=0.07,
                      line_width=0)
    # c* <= 1 (tokens per call <= k + 1) on a c axis to 2: its label has the right half
    vline(fig, cm.break_even, f"c* = {cm.break_even:.4f}: from here on<br> slower than "
           "the target alone", "#000", "dot", False)
    fig.update_xaxes(title="c: draft cost per token (x one target call)")
    fig.update_yaxes(title="speedup (x)", range=[0.0, y_max])
    return layout(fig, f"Speedup against draft cost c (k = {cm.k}, "
                        f"{cm.tokens_per_call:.3f} tokens per call)")


SURFACE_TIP = tip("k = %{y}", "c = %{x:.4f}", "speedup = %{z:.4f}x")
RIDGE_3D = BLACK  # the best-k ridge on the surface: apart from the vermillion break-even


def surface_3d(surface: Surface, point: Row | None = None,
               break_even: Sequence[Row] = ()) -> go.Figure:
    """Speedup surface over k and c (log axis), the break-even contour at speedup = 1 and
    the best-k ridge (Leviathan et al. 2022, Thm 3.8 at alpha). point (k, c, speedup), e.g.
    pagedata.surface_point at the sidebar's k and c, is marked; break_even (rows k, c, speedup
    = 1, pagedata.break_even_curve) is drawn as a line on the surface."""
    ks, cs, S = surface.ks, surface.cs, surface.speedup
    fig = go.Figure()
    fig.add_surface(x=cs, y=ks, z=S, colorscale="Viridis", name="speedup",
                    colorbar=dict(title="speedup", len=0.7),
                    contours=dict(z=dict(show=True, start=1.0, end=1.5, size=1.0,
                                         color=BREAK_EVEN, width=8, usecolormap=False)),
                    hovertemplate=SURFACE_TIP)
    fig.add_scatter3d(x=cs, y=surface.best_k, z=S.max(axis=0), mode="lines+markers",
                      name="best k (ridge)", line=dict(color=RIDGE_3D, width=7, dash="dash"),
                      marker=dict(size=2, color=RIDGE_3D),
                      hovertemplate=tip("best k = %{y}", "c = %{x:.4f}", "speedup = %{z:.4f}x"))
    if break_even:
        fig.add_scatter3d(x=col(break_even, "c"), y=col(break_even, "k"),
                          z=col(break_even, "speedup"), mode="lines",
                          name="speedup = 1 (break-even)", line=dict(color=BREAK_EVEN, width=8),
                          hovertemplate=tip("k = %{y}", "c* = %{x:.4f}", "speedup = 1"))
    if point is not None:
        lift = 0.04 * float(S.max() - S.min())  # above the surface, not half inside it
        fig.add_scatter3d(x=[point["c"]], y=[point["k"]], z=[point["speedup"] + lift],
                          mode="markers", name=_point_label(point),
                          marker=dict(size=9, color="#FFFFFF", symbol="diamond",
                                      line=dict(color="#000", width=3)),
                          hovertemplate=SURFACE_TIP)
    c_lo, c_hi = float(np.log10(cs[0])), float(np.log10(cs[-1]))
    fig.update_scenes(xaxis=dict(**LOG_DECADES, title="c (log)",
                                 range=[c_lo - 0.05, c_hi + 0.15]),  # room for the c = 1 tick
                      yaxis=dict(title="k", dtick=8), zaxis=dict(title="speedup", nticks=5),
                      aspectmode="manual",  # c across the width, k into the depth
                      aspectratio=dict(x=2.0, y=1.0, z=0.65), domain=dict(y=[0.0, 1.0]),
                      camera=dict(eye=dict(x=0.55, y=-1.75, z=0.75),
                                  center=dict(x=0, y=0, z=-0.34)))
    fig.update_layout(title=f"Speedup surface at alpha = {surface.alpha:.4f} "
                            "(vermillion: speedup = 1; black dashes: best k)",
                      height=560, margin=dict(l=0, r=0, t=50, b=0))
    return legend_below(fig)


def _point_label(point: Row) -> str:
    return f"current settings: k = {point['k']}, c = {point['c']:g}"


def surface_heatmap(surface: Surface, point: Row | None = None,
                    break_even: Sequence[Row] = ()) -> go.Figure:
    """The same surface as a heatmap over c (log axis) and k: the break-even line c*(k)
    drawn from its closed form (break_even rows, pagedata.break_even_curve, so it has no
    sampling kinks), the best-k ridge and the current (k, c)."""
    ks, cs, S = surface.ks, surface.cs, surface.speedup
    fig = go.Figure()
    fig.add_heatmap(x=cs, y=ks, z=np.round(S, 4), colorscale="Viridis",
                    colorbar=dict(title="speedup"), name="speedup",
                    hovertemplate=SURFACE_TIP)
    if break_even:
        fig.add_scatter(x=col(break_even, "c"), y=col(break_even, "k"), mode="lines",
                        name="speedup = 1 (break-even c*)", line=dict(color=BREAK_EVEN, width=3),
                        hovertemplate="k = %{y}<br>c* = %{x:.4f}<extra></extra>")
    fig.add_scatter(x=cs, y=surface.best_k, mode="lines", name="best k (ridge)",
                    line=dict(color=BEST, width=3, shape="hv"),
                    hovertemplate="c = %{x:.4f}<br>best k = %{y}<extra></extra>")
    if point is not None:
        fig.add_scatter(x=[point["c"]], y=[point["k"]], mode="markers", name=_point_label(point),
                        marker=dict(symbol="diamond", size=14, color="#FFFFFF",
                                    line=dict(color="#000000", width=2)),
                        hovertemplate="k = %{y}<br>c = %{x:.4f}<br>speedup = "
                                      f"{point['speedup']:.4f}x<extra></extra>")
    fig.update_xaxes(**LOG_DECADES, title="c: draft cost per token (log)")
    fig.update_yaxes(title="k", range=[float(ks[0]) - 0.5, float(ks[-1]) + 0.5])
    return layout(fig, f"Speedup over k and c at alpha = {surface.alpha:.4f}", 460)


# ----------------------------------------------------------------------------- roofline
def roofline_figure(page: RooflinePage, measured: Row | None = None) -> go.Figure:
    """MACs per byte against tokens in the pass (log-log): the tutorial's count and the full
    count, each accelerator's ridge (peak MACs/s / bandwidth), k + 1 and the free limit;
    measured (views.pagedata.measured_machine), this machine's ridge beside them."""
    rows = page.rows
    t = col(rows, "tokens")
    fig = go.Figure()
    for key, name, line, count in (
            ("mpb_tutorial", roofline.TUTORIAL_LABEL, dict(color=PALE, dash="dash"), "tutorial"),
            ("mpb_full", roofline.FULL_LABEL, dict(color=EXACT, width=3), "full"),
            ("mpb_full_kv", f"{roofline.FULL_LABEL} + KV-cache read",
             dict(color=MEASURED, width=2), "full + KV")):
        fig.add_scatter(x=t, y=col(rows, key), mode="lines", name=name, line=line,
                        hovertemplate=tip("tokens = %{x}", f"%{{y:.3f}} MACs/byte ({count})"))
    others = [a for a in page.accelerators if a["accelerator"] != page.accel]
    if others:  # the other ridges as one band (their lines crowd 76-202 MACs/byte)
        lo, hi = min(a["ridge"] for a in others), max(a["ridge"] for a in others)
        names = "<br>".join(f"{a['accelerator']}: {a['ridge']:.0f}" for a in
                            sorted(others, key=lambda a: a["ridge"]))
        fig.add_scatter(x=[t[0], t[-1], t[-1], t[0], t[0]], y=[lo, lo, hi, hi, lo],
                        fill="toself", mode="lines", line=dict(width=0),
                        fillcolor="rgba(120,120,120,0.15)",
                        name=f"ridges of the other accelerators: {lo:.0f}-{hi:.0f} MACs/byte",
                        hovertemplate=f"ridges (MACs/byte)<br>{names}<extra></extra>")
    for i, a in enumerate(page.accelerators):
        if a["accelerator"] != page.accel:
            continue
        fig.add_scatter(x=[t[0], t[-1]], y=[a["ridge"]] * 2, mode="lines",
                        name=f"ridge {a['accelerator']}: {a['ridge']:.1f} MACs/byte",
                        line=dict(color=ACCEL_COLOURS[i % len(ACCEL_COLOURS)], width=3),
                        customdata=[a["source"]] * 2,
                        hovertemplate=f"{a['accelerator']} ridge = {a['ridge']:.1f} MACs/byte"
                                      "<br>%{customdata}<extra></extra>")
    if measured is not None:
        fig.add_scatter(x=[t[0], t[-1]], y=[measured["ridge"]] * 2, mode="lines",
                        name=f"ridge {measured['accelerator']}: {measured['ridge']:.1f} "
                             "MACs/byte", line=dict(color="#000", width=2, dash="dot"),
                        hovertemplate=f"{measured['accelerator']} ridge = "
                                      f"{measured['ridge']:.1f} MACs/byte<br>"
                                      f"{measured['source']}<extra></extra>")
    vline(fig, page.k + 1, f"k + 1 = {page.k + 1}", THRESHOLD, "dash", True)
    vline(fig, page.free_tokens, f"free up to {page.free_tokens} ({page.accel})", "#000",
           "dot", True, 0.08, "right")
    fig.update_xaxes(**LOG_DECADES, title="tokens in the pass (per sequence)")
    fig.update_yaxes(**LOG_DECADES, title="MACs per byte read")
    return layout(fig, f"Roofline: {page.preset}, MACs per byte by tokens in the pass", 500)


def pass_time_figure(page: RooflinePage) -> go.Figure:
    """Pass time relative to a one-token decode step against tokens (log-log): flat while
    memory-bound, rising once compute-bound on the selected accelerator."""
    t = col(page.rows, "tokens")
    fig = go.Figure()
    fig.add_scatter(x=t, y=col(page.rows, "time_ratio"), mode="lines",
                    name=f"pass time / one-token pass ({page.accel})",
                    line=dict(color=EXACT, width=3),
                    hovertemplate=tip("tokens = %{x}", "time = %{y:.3f}x a decode step"))
    fig.add_scatter(x=[page.k + 1], y=[page.verify_ratio], mode="markers",
                    name=f"verify k + 1 = {page.k + 1}: {page.verify_ratio:.3f}x",
                    marker=dict(size=12, color=THRESHOLD, line=dict(color="#000", width=1)),
                    hovertemplate="tokens = %{x}<br>time = %{y:.3f}x<extra></extra>")
    vline(fig, page.free_tokens, f"free up to {page.free_tokens}", "#000", "dot", True,
           1.0, "right")
    fig.update_xaxes(**LOG_DECADES, title="tokens in the pass (per sequence)")
    fig.update_yaxes(**LOG_DECADES, title="pass time (x one-token pass)")
    return layout(fig, "When verifying k + 1 tokens stops being free", 420)
