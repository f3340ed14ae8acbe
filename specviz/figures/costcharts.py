"""Plotly figures of /cost and /roofline: speedup against c, the speedup surface over k and
c, the roofline and pass times. Data in, go.Figure out."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from ..analysis import roofline
from ..views.demos import CostModel, Row
from ..views.pagedata import RooflinePage
from .chartkit import LOG_DECADES, col, hline, layout, tip, vline
from .palette import (
    ACCEL_COLOURS,
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
