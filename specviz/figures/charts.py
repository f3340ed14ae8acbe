"""Plotly figures of the chart pages: pure builders, data in, go.Figure out.

No Streamlit here and no sampling: each builder draws numbers that specviz.demos computed,
with hover values on every trace. Lines for theory are dashed, exact values are solid lines,
Monte Carlo measurements are markers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis import roofline
from ..analysis.metrics import MetricsReport
from ..core.dynamic import PolicyRun
from ..core.rules import RULES
from ..views.demos import Convergence, CostModel, Exactness, Row, Surface
from ..views.pagedata import BatchCurve, RooflinePage
from .frame import legend_below, unclipped_text
from .palette import (
    ACCEL_COLOURS,
    BEST,
    BREAK_EVEN,
    EXACT,
    FAMILY_COLOURS,
    FLOOR,
    GREY,
    MEASURED,
    OTHER_RULE_COLOURS,
    PALE,
    POLICY_COLOURS,
    RULE_COLOURS,
    THEORY,
    THRESHOLD,
)

HEIGHT = 420
# log axes: a label at each decade only (Plotly's minor labels read "5, 2, 0.1, 5, 2, 0.01")
LOG_DECADES = dict(type="log", dtick=1)
BIAS_MIN = 1e-12  # exact TVs at or below this are rounding, drawn as no bias


def _colour(rule: str) -> str:
    """A fixed colour per rule: the first paper's rule and its three broken variants by name,
    the others in turn."""
    if rule in RULE_COLOURS:
        return RULE_COLOURS[rule]
    names = [r for r in RULES if r not in RULE_COLOURS]
    return (OTHER_RULE_COLOURS[names.index(rule) % len(OTHER_RULE_COLOURS)] if rule in names
            else GREY)


def _vline(fig: go.Figure, x: float, text: str, colour: str, dash: str, log_x: bool,
           y_text: float = 1.0, anchor: str = "left") -> None:
    """A vertical line with a label. Shapes take data values on log axes, annotations take
    log10 of them, so the label is placed by hand (add_vline's own label is not)."""
    fig.add_vline(x=x, line_dash=dash, line_color=colour)
    fig.add_annotation(x=float(np.log10(x)) if log_x else x, y=y_text, yref="paper", text=text,
                       showarrow=False, xanchor=anchor, yanchor="top", font=dict(color=colour))


def _hline(fig: go.Figure, y: float, text: str, colour: str, dash: str, log_y: bool,
           x_text: float = 0.0, anchor: str = "left") -> None:
    """A horizontal line with a label above it (see _vline on log axes)."""
    if log_y and not y > 0:
        return  # not on a log axis
    fig.add_hline(y=y, line_dash=dash, line_color=colour)
    fig.add_annotation(y=float(np.log10(y)) if log_y else y, x=x_text, xref="paper", text=text,
                       showarrow=False, xanchor=anchor, yanchor="bottom",
                       font=dict(color=colour))


def _layout(fig: go.Figure, title: str, height: int = HEIGHT) -> go.Figure:
    fig.update_layout(title=title, height=height, margin=dict(l=60, r=20, t=60, b=50),
                      hovermode="closest")
    return unclipped_text(legend_below(fig))


def _col(rows: Sequence[Row], key: str) -> list:
    return [r[key] for r in rows]


# ----------------------------------------------------------------------------- exactness
def tv_bars(rows: Sequence[Row], direct_tv: float | None = None) -> go.Figure:
    """Each rule's Monte Carlo TV beside its exact TV, with the floor and the threshold.

    rows: pagedata.exactness_rows (rule, mc_tv, exact_tv, floor, threshold).
    """
    rules = _col(rows, "rule")
    fig = go.Figure()
    fig.add_bar(x=rules, y=_col(rows, "mc_tv"), name="Monte Carlo TV",
                marker_color=[_colour(r) for r in rules],
                hovertemplate="%{x}<br>Monte Carlo TV = %{y:.5f}<extra></extra>")
    fig.add_bar(x=rules, y=_col(rows, "exact_tv"), name="exact TV (the rule's bias)",
                marker_color="rgba(0,0,0,0)", marker_line=dict(color="#333", width=2),
                hovertemplate="%{x}<br>exact TV = %{y:.5f}<extra></extra>")
    floor, line = rows[0]["floor"], rows[0]["threshold"]
    for y, label, colour, dash in ((line, "pass threshold", THRESHOLD, "dash"),
                                   (floor, "sampling floor", FLOOR, "dot")):
        if y > 0:  # lines as shapes across the plot, labelled in the legend (no overlap)
            fig.add_hline(y=y, line_dash=dash, line_color=colour)
            fig.add_scatter(x=[None], y=[None], mode="lines", name=f"{label} {y:.5f}",
                            line=dict(color=colour, dash=dash))
    if direct_tv is not None:
        fig.add_scatter(x=rules, y=[direct_tv] * len(rules), mode="markers",
                        marker=dict(symbol="line-ew-open", size=40, color=FLOOR),
                        name="target sampled directly",
                        hovertemplate=f"target sampled directly: TV = {direct_tv:.5f}"
                                      "<extra></extra>")
    # log axis: a lossless rule's exact TV (0 up to rounding) falls below the range
    shown = [v for v in (*_col(rows, "mc_tv"), *_col(rows, "exact_tv"), line, floor)
             if v > BIAS_MIN] or [1.0]
    lo, top = min(shown + [line]) / 4, max(shown) * 1.6
    fig.update_yaxes(**LOG_DECADES, range=[float(np.log10(lo)), float(np.log10(top))],
                     title="TV distance to the target's joint (log)")
    fig.update_layout(barmode="group", xaxis_title="rule")
    return _layout(fig, "TV of the first two tokens: Monte Carlo and exact")


def marginal_bars(rows: Sequence[Row], rule: str) -> go.Figure:
    """First emitted token: target p(x1|ctx) beside the rule's Monte Carlo and exact laws.

    rows: pagedata.marginal_rows (token, target, speculative, exact).
    """
    tokens = _col(rows, "token")
    fig = go.Figure()
    fig.add_bar(x=tokens, y=_col(rows, "target"), name="target p(x1 | ctx)",
                marker_color=PALE,
                hovertemplate="x1 = %{x}<br>target = %{y:.5f}<extra></extra>")
    fig.add_bar(x=tokens, y=_col(rows, "speculative"), name=f"speculative ({rule}, Monte Carlo)",
                marker_color=_colour(rule),
                hovertemplate="x1 = %{x}<br>speculative = %{y:.5f}<extra></extra>")
    fig.add_scatter(x=tokens, y=_col(rows, "exact"), mode="markers", name=f"exact ({rule})",
                    marker=dict(symbol="diamond", size=10, color="#222"),
                    hovertemplate="x1 = %{x}<br>exact = %{y:.5f}<extra></extra>")
    fig.update_layout(barmode="group", xaxis_title="first emitted token x1",
                      yaxis_title="probability")
    return _layout(fig, f"First-token marginal: target vs speculative ({rule})")


RULE_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star-triangle-up")


def convergence_figure(conv: Convergence, run: Exactness | None = None) -> go.Figure:
    """TV against n on log-log axes: the floor, each rule's Monte Carlo TV, and each broken
    rule's exact bias as a dashed horizontal line; run adds this page's n as big markers."""
    ns = list(conv.ns)
    floor_x, floor_y = list(ns), list(conv.floor)
    if run is not None and run.audits and run.n not in ns:
        floor_x.append(run.n)
        floor_y.append(run.audits[0].floor)
        order = np.argsort(floor_x)
        floor_x = [floor_x[i] for i in order]
        floor_y = [floor_y[i] for i in order]
    lo, hi = floor_x[0], floor_x[-1]
    fig = go.Figure()
    fig.add_scatter(x=floor_x, y=floor_y, mode="lines", name="sampling floor (~1/sqrt(n))",
                    line=dict(color=FLOOR, width=3),
                    hovertemplate="n = %{x:,}<br>floor = %{y:.5f}<extra></extra>")
    for i, (rule, tvs) in enumerate(conv.mc_tv.items()):  # a shape per rule, not only a colour
        fig.add_scatter(x=ns, y=tvs, mode="lines+markers", name=f"{rule} (Monte Carlo)",
                        line=dict(color=_colour(rule)), legendgroup=rule,
                        marker=dict(symbol=RULE_SYMBOLS[i % len(RULE_SYMBOLS)], size=8),
                        hovertemplate=f"{rule}<br>n = %{{x:,}}<br>TV = %{{y:.5f}}<extra></extra>")
    for rule, bias in conv.exact_tv.items():
        if bias <= BIAS_MIN:
            continue  # exact TV 0 up to rounding: nothing to draw on a log axis
        fig.add_scatter(x=[lo, hi], y=[bias, bias], mode="lines", name=f"{rule} exact bias",
                        line=dict(color=_colour(rule), dash="dash"), legendgroup=rule,
                        hovertemplate=f"{rule} exact TV = {bias:.5f}<extra></extra>")
    if run is not None:
        fig.add_scatter(x=[run.n] * len(run.audits), y=[a.mc_tv for a in run.audits],
                        mode="markers", name=f"this run (n = {run.n:,})",
                        text=[a.rule for a in run.audits],
                        marker=dict(symbol="star", size=14,
                                    color=[_colour(a.rule) for a in run.audits],
                                    line=dict(color="#000", width=1)),
                        hovertemplate="%{text}<br>n = %{x:,}<br>TV = %{y:.5f}<extra></extra>")
    fig.update_xaxes(**LOG_DECADES, title="decodes n")
    fig.update_yaxes(**LOG_DECADES, title="TV distance to the target's joint")
    return _layout(fig, "Convergence: exact rules follow the floor, broken ones level off", 460)


def joint_diff_heatmap(diff: np.ndarray, vocab: Sequence[str], rule: str) -> go.Figure:
    """Heatmap of the two-token joint minus the target's, diverging around 0.

    diff: (V, V), rows = first token, columns = second token (pagedata.joint_diff).
    """
    diff = np.asarray(diff)
    vmax = float(np.abs(diff).max()) or 1.0
    fig = go.Figure(go.Heatmap(
        z=diff, x=list(vocab), y=list(vocab), colorscale="RdBu", zmid=0.0,
        zmin=-vmax, zmax=vmax, text=np.vectorize(_signed)(diff),
        texttemplate="%{text}", colorbar=dict(title="Δ prob", tickformat=".4f"),
        hovertemplate="x1 = %{y}, x2 = %{x}<br>speculative − target = %{z:+.5f}"
                      "<extra></extra>"))
    fig.update_xaxes(title="second token x2", type="category")
    fig.update_yaxes(title="first token x1", type="category", autorange="reversed")
    return _layout(fig, f"Two-token joint minus the target's ({rule}, Monte Carlo)", 440)


# ----------------------------------------------------------------------------- acceptance
_PANELS = (("acceptance", "acceptance_exact", "acceptance_theory", None,
            "acceptance (accepted / drafted)"),
           ("tokens_per_call", "tokens_per_call_exact", "tokens_theory", "tokens_per_call_se",
            "tokens per target call"),
           ("speedup", "speedup_exact", "speedup_theory", None, "speedup"))
# short enough for a third of a phone's width
_PANEL_TITLES = ("acceptance<br>(accepted / drafted)", "tokens per<br>target call", "speedup")


def sweep_figure(measured: Sequence[Row], curve: Sequence[Row], x: str, x_title: str,
                 title: str, log_x: bool = False,
                 tickvals: Sequence[float] | None = None) -> go.Figure:
    """Three panels (acceptance, tokens per call, speedup) against x: measured markers,
    the exact curve (solid) and the theory curve at alpha_eff (dashed, Leviathan et al. 2022,
    eq. 1 and Thm 3.8). measured: demos.alpha_sweep / temperature_sweep rows; curve:
    pagedata.alpha_curve / temperature_curve rows; tickvals: x ticks (e.g. on a log axis)."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=_PANEL_TITLES, horizontal_spacing=0.07)
    mx, cx = _col(measured, x), _col(curve, x)
    for i, (m, e, t, se, label) in enumerate(_PANELS, start=1):
        first = i == 1
        err = dict(type="data", array=_col(measured, se), visible=True) if se else None
        fig.add_scatter(x=mx, y=_col(measured, m), mode="markers", name="measured (long decode)",
                        error_y=err, marker=dict(color=MEASURED, size=8), legendgroup="m",
                        showlegend=first, row=1, col=i,
                        hovertemplate=f"{x} = %{{x}}<br>measured {label} = %{{y:.4f}}"
                                      "<extra></extra>")
        fig.add_scatter(x=cx, y=_col(curve, e), mode="lines", name="exact (long run)",
                        line=dict(color=EXACT, width=6), opacity=0.45, legendgroup="e",
                        showlegend=first,
                        row=1, col=i,
                        hovertemplate=f"{x} = %{{x}}<br>exact {label} = %{{y:.4f}}"
                                      "<extra></extra>")
        fig.add_scatter(x=cx, y=_col(curve, t), mode="lines",
                        name="theory at alpha_eff (Leviathan et al. 2022, eq. 1, Thm 3.8)",
                        line=dict(color=THEORY, dash="dash", width=2.5), legendgroup="t",
                        showlegend=first, row=1, col=i, customdata=_col(curve, "alpha_eff"),
                        hovertemplate=f"{x} = %{{x}}<br>theory {label} = %{{y:.4f}}"
                                      "<br>alpha_eff = %{customdata:.4f}<extra></extra>")
        fig.update_xaxes(title_text=x_title if i == 2 else None,  # once, under the middle
                         type="log" if log_x else "linear", row=1, col=i,
                         tickvals=list(tickvals) if tickvals else None)
    fig.add_hline(y=1.0, line_dash="dot", line_color=FLOOR, row=1, col=3)
    fig = _layout(fig, title, 450)
    fig.update_layout(margin=dict(t=90))  # two-line panel titles under the figure's title
    return fig


# ----------------------------------------------------------------------------- draft length
def k_sweep_figure(measured: Sequence[Row], curve: Sequence[Row], best: Row,
                   best_exact: Row | None = None) -> go.Figure:
    """Left: tokens per call saturating against the cost of a round 1 + k c growing linearly
    (both in target-call units). Right: speedup = tokens / (1 + k c) with the best k marked.

    measured: demos.k_sweep rows (repriced); curve: pagedata.k_curve rows; best: the measured
    row of largest speedup (demos.best_row); best_exact: the curve's row of largest
    speedup_exact.
    """
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08, subplot_titles=(
        "tokens per round<br>against its cost", "speedup =<br>tokens / (1 + k c)"))
    mk, ck = _col(measured, "k"), _col(curve, "k")
    fig.add_scatter(x=mk, y=_col(measured, "tokens_per_call"), mode="markers",
                    error_y=dict(type="data", array=_col(measured, "tokens_per_call_se")),
                    name="tokens per call, measured", marker=dict(color=MEASURED, size=8),
                    hovertemplate="k = %{x}<br>tokens per call = %{y:.4f}<extra></extra>",
                    row=1, col=1)
    fig.add_scatter(x=ck, y=_col(curve, "tokens_per_call_exact"), mode="lines",
                    name="tokens per call, exact", line=dict(color=EXACT),
                    hovertemplate="k = %{x}<br>exact tokens = %{y:.4f}<extra></extra>",
                    row=1, col=1)
    fig.add_scatter(x=ck, y=_col(curve, "tokens_theory"), mode="lines",
                    name="(1 − alpha^(k+1)) / (1 − alpha) (Leviathan et al. 2022, eq. 1)",
                    line=dict(color=THEORY, dash="dash"),
                    hovertemplate="k = %{x}<br>theory tokens = %{y:.4f}<extra></extra>",
                    row=1, col=1)
    fig.add_scatter(x=ck, y=_col(curve, "cost"), mode="lines", name="cost of a round 1 + k c",
                    line=dict(color="#444", width=3),
                    hovertemplate="k = %{x}<br>cost = %{y:.3f} target calls<extra></extra>",
                    row=1, col=1)
    fig.add_scatter(x=mk, y=_col(measured, "speedup"), mode="markers", name="speedup, measured",
                    marker=dict(color=MEASURED, size=8, symbol="circle-open"), showlegend=False,
                    hovertemplate="k = %{x}<br>measured speedup = %{y:.4f}<extra></extra>",
                    row=1, col=2)
    fig.add_scatter(x=ck, y=_col(curve, "speedup_exact"), mode="lines", name="speedup, exact",
                    line=dict(color=EXACT), showlegend=False,
                    hovertemplate="k = %{x}<br>exact speedup = %{y:.4f}<extra></extra>",
                    row=1, col=2)
    fig.add_scatter(x=ck, y=_col(curve, "speedup_theory"), mode="lines",
                    name="speedup, theory (Thm 3.8)", line=dict(color=THEORY, dash="dash"),
                    hovertemplate="k = %{x}<br>theory speedup = %{y:.4f}<extra></extra>",
                    row=1, col=2)
    fig.add_scatter(x=[best["k"]], y=[best["speedup"]], mode="markers",
                    name=f"best k = {best['k']} (measured)",
                    marker=dict(symbol="star", size=18, color=BEST,
                                line=dict(color="#000", width=1)),
                    hovertemplate="best k = %{x}<br>speedup = %{y:.4f}<extra></extra>",
                    row=1, col=2)
    if best_exact is not None:
        fig.add_vline(x=best_exact["k"], line_dash="dot", line_color=EXACT, row=1, col=2)
        fig.add_annotation(x=best_exact["k"], y=0.02, yref="y2 domain", xref="x2",
                           text=f" best exact k = {best_exact['k']}", showarrow=False,
                           xanchor="left", yanchor="bottom", font=dict(color=EXACT))
    fig.add_hline(y=1.0, line_dash="dot", line_color=FLOOR, row=1, col=2)
    fig.update_xaxes(title_text="k (drafted tokens per round)", row=1, col=1)
    fig.update_xaxes(title_text="k", row=1, col=2)
    fig.update_yaxes(title_text="target-call units per round", row=1, col=1)
    fig.update_yaxes(title_text="speedup (x)", row=1, col=2)
    fig = _layout(fig, "Draft length k: tokens saturate, cost keeps growing", 480)
    fig.update_layout(margin=dict(t=90))  # two-line panel titles under the figure's title
    return fig


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
    cs, s = _col(cm.rows, "c"), _col(cm.rows, "speedup")
    y_max = 1.2 * max(max(s), 1.0)  # head room over the curve for the c* label
    fig = go.Figure()
    fig.add_scatter(x=cs, y=s, mode="lines", name=f"speedup at k = {cm.k}",
                    line=dict(color=EXACT, width=3),
                    hovertemplate="c = %{x:.3f}<br>speedup = %{y:.4f}x<extra></extra>")
    _hline(fig, 1.0, "speedup = 1 (no gain)", THRESHOLD, "dash", False, 1.0, "right")
    fig.add_scatter(x=[cm.break_even], y=[1.0], mode="markers", name="break-even c*",
                    marker=dict(symbol="x", size=14, color="#000"),
                    hovertemplate="break-even c* = %{x:.4f}<extra></extra>")
    if marks:
        fig.add_scatter(x=_col(marks, "c"), y=_col(marks, "speedup"), mode="markers+text",
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
    _vline(fig, cm.break_even, f" c* = {cm.break_even:.4f}: from here on<br> slower than "
           "the target alone", "#000", "dot", False)
    fig.update_xaxes(title="c: draft cost per token (x one target call)")
    fig.update_yaxes(title="speedup (x)", range=[0.0, y_max])
    return _layout(fig, f"Speedup against draft cost c (k = {cm.k}, "
                        f"{cm.tokens_per_call:.3f} tokens per call)")


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
                    hovertemplate="k = %{y}<br>c = %{x:.4f}<br>speedup = %{z:.4f}x"
                                  "<extra></extra>")
    fig.add_scatter3d(x=cs, y=surface.best_k, z=S.max(axis=0), mode="lines+markers",
                      name="best k (ridge)", line=dict(color=BEST, width=8),
                      marker=dict(size=2, color=BEST),
                      hovertemplate="best k = %{y}<br>c = %{x:.4f}<br>speedup = %{z:.4f}x"
                                    "<extra></extra>")
    if break_even:
        fig.add_scatter3d(x=_col(break_even, "c"), y=_col(break_even, "k"),
                          z=_col(break_even, "speedup"), mode="lines",
                          name="speedup = 1 (break-even)", line=dict(color=BREAK_EVEN, width=8),
                          hovertemplate="k = %{y}<br>c* = %{x:.4f}<br>speedup = 1"
                                        "<extra></extra>")
    if point is not None:
        lift = 0.04 * float(S.max() - S.min())  # above the surface, not half inside it
        fig.add_scatter3d(x=[point["c"]], y=[point["k"]], z=[point["speedup"] + lift],
                          mode="markers", name=_point_label(point),
                          marker=dict(size=9, color="#FFFFFF", symbol="diamond",
                                      line=dict(color="#000", width=3)),
                          hovertemplate="k = %{y}<br>c = %{x:.4f}<br>speedup = %{z:.4f}x"
                                        "<extra></extra>")
    c_lo, c_hi = float(np.log10(cs[0])), float(np.log10(cs[-1]))
    fig.update_scenes(xaxis=dict(**LOG_DECADES, title="c (log)",
                                 range=[c_lo - 0.05, c_hi + 0.15]),  # room for the c = 1 tick
                      yaxis=dict(title="k", dtick=8), zaxis=dict(title="speedup", nticks=5),
                      aspectmode="manual",
                      aspectratio=dict(x=1.5, y=1.3, z=0.75), domain=dict(y=[0.07, 1.0]),
                      camera=dict(eye=dict(x=1.45, y=-1.7, z=0.75),
                                  center=dict(x=0, y=0, z=-0.08)))
    fig.update_layout(title=f"Speedup surface at alpha = {surface.alpha:.4f} "
                            "(vermillion: speedup = 1; orange: best k)",
                      height=560, margin=dict(l=0, r=0, t=50, b=0))
    return legend_below(fig)


def _signed(v: float) -> str:
    """A difference to 4 decimals with its sign; '0' where it rounds to zero (never
    '+0.0000' or '-0.0000')."""
    return "0" if abs(v) < 5e-5 else f"{v:+.4f}"


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
                    hovertemplate="k = %{y}<br>c = %{x:.4f}<br>speedup = %{z:.4f}x"
                                  "<extra></extra>")
    if break_even:
        fig.add_scatter(x=_col(break_even, "c"), y=_col(break_even, "k"), mode="lines",
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
    return _layout(fig, f"Speedup over k and c at alpha = {surface.alpha:.4f}", 460)


# ----------------------------------------------------------------------------- roofline
def roofline_figure(page: RooflinePage) -> go.Figure:
    """MACs per byte against tokens in the pass (log-log): the tutorial's count and the full
    count, each accelerator's ridge (peak MACs/s / bandwidth), k + 1 and the free limit."""
    rows = page.rows
    t = _col(rows, "tokens")
    fig = go.Figure()
    fig.add_scatter(x=t, y=_col(rows, "mpb_tutorial"), mode="lines",
                    name=roofline.TUTORIAL_LABEL, line=dict(color=PALE, dash="dash"),
                    hovertemplate="tokens = %{x}<br>%{y:.3f} MACs/byte (tutorial)"
                                  "<extra></extra>")
    fig.add_scatter(x=t, y=_col(rows, "mpb_full"), mode="lines", name=roofline.FULL_LABEL,
                    line=dict(color=EXACT, width=3),
                    hovertemplate="tokens = %{x}<br>%{y:.3f} MACs/byte (full)<extra></extra>")
    fig.add_scatter(x=t, y=_col(rows, "mpb_full_kv"), mode="lines",
                    name=f"{roofline.FULL_LABEL} + KV-cache read",
                    line=dict(color=MEASURED, width=2),
                    hovertemplate="tokens = %{x}<br>%{y:.3f} MACs/byte (full + KV)"
                                  "<extra></extra>")
    for i, a in enumerate(page.accelerators):
        colour = ACCEL_COLOURS[i % len(ACCEL_COLOURS)]
        chosen = a["accelerator"] == page.accel
        fig.add_scatter(x=[t[0], t[-1]], y=[a["ridge"]] * 2, mode="lines",
                        name=f"ridge {a['accelerator']}: {a['ridge']:.1f} MACs/byte",
                        line=dict(color=colour, width=3 if chosen else 1.5,
                                  dash="solid" if chosen else "dot"),
                        customdata=[a["source"]] * 2,
                        hovertemplate=f"{a['accelerator']} ridge = {a['ridge']:.1f} MACs/byte"
                                      "<br>%{customdata}<extra></extra>")
    _vline(fig, page.k + 1, f" k + 1 = {page.k + 1}", THRESHOLD, "dash", True)
    _vline(fig, page.free_tokens, f"free up to {page.free_tokens} ({page.accel}) ", "#000",
           "dot", True, 0.08, "right")
    fig.update_xaxes(**LOG_DECADES, title="tokens in the pass (per sequence)")
    fig.update_yaxes(**LOG_DECADES, title="MACs per byte read")
    return _layout(fig, f"Roofline: {page.preset}, MACs per byte by tokens in the pass", 500)


def pass_time_figure(page: RooflinePage) -> go.Figure:
    """Pass time relative to a one-token decode step against tokens (log-log): flat while
    memory-bound, rising once compute-bound on the selected accelerator."""
    t = _col(page.rows, "tokens")
    fig = go.Figure()
    fig.add_scatter(x=t, y=_col(page.rows, "time_ratio"), mode="lines",
                    name=f"pass time / one-token pass ({page.accel})",
                    line=dict(color=EXACT, width=3),
                    hovertemplate="tokens = %{x}<br>time = %{y:.3f}x a decode step"
                                  "<extra></extra>")
    fig.add_scatter(x=[page.k + 1], y=[page.verify_ratio], mode="markers",
                    name=f"verify k + 1 = {page.k + 1}: {page.verify_ratio:.3f}x",
                    marker=dict(size=12, color=THRESHOLD, line=dict(color="#000", width=1)),
                    hovertemplate="tokens = %{x}<br>time = %{y:.3f}x<extra></extra>")
    _vline(fig, page.free_tokens, f"free up to {page.free_tokens} ", "#000", "dot", True,
           1.0, "right")
    fig.update_xaxes(**LOG_DECADES, title="tokens in the pass (per sequence)")
    fig.update_yaxes(**LOG_DECADES, title="pass time (x one-token pass)")
    return _layout(fig, "When verifying k + 1 tokens stops being free", 420)


__all__ = [
    "convergence_figure",
    "cost_curve",
    "joint_diff_heatmap",
    "k_sweep_figure",
    "marginal_bars",
    "pass_time_figure",
    "roofline_figure",
    "surface_3d",
    "surface_heatmap",
    "sweep_figure",
    "tv_bars",
]


# =============================================================================================
# Beyond the paper: the rules gallery, production metrics, dynamic k, batch size.
# =============================================================================================

FAMILY_SYMBOLS = {"lossless": "diamond", "lossy by design": "square", "broken": "circle"}
_LABEL_SPOTS = ("top center", "bottom center", "middle right", "middle left", "top right",
                "bottom right", "top left", "bottom left")


def _label_spots(xs: Sequence[float], ys: Sequence[float], texts: Sequence[str],
                 char_w: float = 0.011, line_h: float = 0.06) -> list[str]:
    """A text position per point (in axis fractions xs, ys in [0, 1]) so that labels overlap
    neither each other nor the markers, where one of the candidate spots allows it."""
    boxes: list[tuple[float, float, float, float]] = []
    pts = [(x - 0.012, y - 0.02, x + 0.012, y + 0.02) for x, y in zip(xs, ys, strict=True)]

    def box(x, y, w, spot):
        v, h = spot.split()
        x0 = {"center": x - w / 2, "right": x + 0.015, "left": x - 0.015 - w}[h]
        y0 = {"top": y + 0.025, "bottom": y - 0.025 - line_h, "middle": y - line_h / 2}[v]
        return x0, y0, x0 + w, y0 + line_h

    def hits(b, others):
        return sum(b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3] for o in others)

    out = []
    for x, y, t in zip(xs, ys, texts, strict=True):
        w = char_w * len(t)
        cands = [(spot, box(x, y, w, spot)) for spot in _LABEL_SPOTS]
        spot, b = min(cands, key=lambda sb: (
            hits(sb[1], boxes) * 10 + hits(sb[1], pts)
            + 5 * (sb[1][0] < 0 or sb[1][2] > 1 or sb[1][1] < 0 or sb[1][3] > 1)))
        boxes.append(b)
        out.append(spot)
    return out


def gallery_figure(rows: Sequence[Row], threshold: float, n: int) -> go.Figure:
    """Acceptance (x, exact long run) against exact TV from the target (y, log) for every
    rule, coloured by family. Rules exact on these tables (TV 0 up to rounding) sit on a
    line drawn below the smallest bias, labelled 0; the dashed line is the Monte Carlo
    threshold at n: a bias under it is real but not resolvable by n decodes.

    rows: gallery.gallery_rows (family, rule, exact_tv, mc_tv, verdict, acceptance_long_run,
    tokens_per_call_long_run, n_to_resolve).
    """
    biased = [float(r["exact_tv"]) for r in rows if r["exact_tv"] > BIAS_MIN]
    lowest = min(biased + [threshold])
    zero_y = 10.0 ** (np.floor(np.log10(lowest)) - 1)  # the "exact TV = 0" line
    y_lo, y_hi = np.log10(zero_y) - 0.5, np.log10(max(biased + [threshold]) * 2.5)
    ys = [float(r["exact_tv"]) if r["exact_tv"] > BIAS_MIN else zero_y for r in rows]
    xs = [float(r["acceptance_long_run"]) for r in rows]
    names = [str(r["rule"]) for r in rows]
    spots = _label_spots([(x + 0.02) / 1.1 for x in xs],
                         [(np.log10(y) - y_lo) / (y_hi - y_lo) for y in ys], names)
    fig = go.Figure()
    fig.add_hline(y=zero_y, line_color=FAMILY_COLOURS["lossless"], line_width=2)
    fig.add_hline(y=threshold, line_dash="dash", line_color=FLOOR)
    fig.add_annotation(x=1.0, xref="paper", y=float(np.log10(zero_y)), yanchor="top",
                       xanchor="right", showarrow=False, text="exact TV = 0 (exact rule)",
                       font=dict(color=FAMILY_COLOURS["lossless"]))
    fig.add_annotation(x=1.0, xref="paper", y=float(np.log10(threshold)), yanchor="bottom",
                       xanchor="right", showarrow=False,
                       text=f"Monte Carlo threshold at n = {n:,}: lower biases go unseen",
                       font=dict(color=FLOOR))
    for fam, colour in FAMILY_COLOURS.items():
        idx = [i for i, r in enumerate(rows) if r["family"] == fam]
        if not idx:
            continue
        sel = [rows[i] for i in idx]
        exact_here = [r["exact_tv"] <= BIAS_MIN for r in sel]
        fig.add_scatter(
            x=[xs[i] for i in idx], y=[ys[i] for i in idx], mode="markers+text", name=fam,
            text=[names[i] for i in idx], textposition=[spots[i] for i in idx],
            textfont=dict(color=colour),
            marker=dict(size=13, color=colour, symbol=[
                "diamond" if e else FAMILY_SYMBOLS.get(fam, "circle") for e in exact_here],
                line=dict(color="#000", width=1)),
            customdata=[[r["label"], r["exact_tv"], r["mc_tv"], r["verdict"],
                         r["tokens_per_call_long_run"], r["n_to_resolve"]] for r in sel],
            hovertemplate="%{text}: %{customdata[0]}<br>acceptance (long run) = %{x:.4f}"
                          "<br>exact TV = %{customdata[1]:.3g}<br>Monte Carlo TV = "
                          "%{customdata[2]:.5f} (%{customdata[3]})<br>tokens per call = "
                          "%{customdata[4]:.3f}<br>n to resolve: %{customdata[5]}"
                          "<extra></extra>")
    ticks = [10.0 ** e for e in range(int(np.log10(zero_y)) + 1, int(np.floor(y_hi)) + 1)]
    fig.update_yaxes(**LOG_DECADES, range=[y_lo, y_hi], title="exact TV from the target (log)",
                     tickvals=[zero_y, *ticks],
                     ticktext=["0", *[f"{t:g}" for t in ticks]])
    fig.update_xaxes(range=[-0.02, 1.08], title="acceptance: accepted / drafted "
                                                "(exact, long run)")
    return _layout(fig, "What each rule buys: acceptance against exactness", 500)


def production_figure(rep: MetricsReport) -> go.Figure:
    """Left: per-position acceptance rate, measured, exact, and alpha^i (i.i.d. theory).
    Right: the acceptance histogram, measured bars, exact markers and the capped geometric
    alpha^j (1 - alpha), alpha^k at j = k (Leviathan et al. 2022, Sec. 3.3)."""
    k = rep.k
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        "per-position<br>acceptance rate", "acceptance histogram<br>(drafts kept per round)"))
    pos, acc = list(range(1, k + 1)), list(range(k + 1))
    pp, hist = rep.per_position, rep.histogram
    fig.add_scatter(x=pos, y=list(pp["measured"]), mode="markers", name="measured (long decode)",
                    marker=dict(color=MEASURED, size=9), legendgroup="m", row=1, col=1,
                    hovertemplate="position %{x}<br>measured = %{y:.4f}<extra></extra>")
    fig.add_scatter(x=pos, y=list(pp["exact"]), mode="lines", name="exact (long run)",
                    line=dict(color=EXACT, width=2), legendgroup="e", row=1, col=1,
                    hovertemplate="position %{x}<br>exact = %{y:.4f}<extra></extra>")
    fig.add_scatter(x=pos, y=list(pp["theory"]), mode="lines",
                    name=f"i.i.d. theory at alpha = {rep.alpha:.3f}: alpha^i, capped geometric",
                    line=dict(color=THEORY, dash="dash"), legendgroup="t", row=1, col=1,
                    hovertemplate="position %{x}<br>alpha^i = %{y:.4f}<extra></extra>")
    fig.add_bar(x=acc, y=list(hist["measured"]), name="measured", marker_color=MEASURED,
                opacity=0.75, legendgroup="m", showlegend=False, row=1, col=2,
                hovertemplate="%{x} accepted<br>measured share = %{y:.4f}<extra></extra>")
    fig.add_scatter(x=acc, y=list(hist["exact"]), mode="markers", name="exact",
                    marker=dict(symbol="diamond", size=10, color=EXACT,
                                line=dict(color="#000", width=1)),
                    legendgroup="e", showlegend=False, row=1, col=2,
                    hovertemplate="%{x} accepted<br>exact share = %{y:.4f}<extra></extra>")
    fig.add_scatter(x=acc, y=list(hist["theory"]), mode="lines+markers", name="theory",
                    line=dict(color=THEORY, dash="dash"), marker=dict(size=6),
                    legendgroup="t", showlegend=False, row=1, col=2,
                    hovertemplate="%{x} accepted<br>capped geometric = %{y:.4f}"
                                  "<extra></extra>")
    fig.update_xaxes(title_text="draft position i", dtick=1 if k <= 16 else None, row=1, col=1)
    fig.update_xaxes(title_text="drafts accepted in the round j", dtick=1 if k <= 16 else None,
                     row=1, col=2)
    fig.update_yaxes(title_text="share of rounds with position i kept", range=[0, 1.05],
                     row=1, col=1)
    fig.update_yaxes(title_text="share of rounds", row=1, col=2)
    fig = _layout(fig, f"Production metrics at k = {k}: measured, exact and i.i.d. theory",
                  460)
    fig.update_layout(margin=dict(l=60, r=20, t=90, b=50))
    return fig


def policy_k_figure(runs: dict[str, PolicyRun], rows: Sequence[Row],
                    shown: int = 100) -> go.Figure:
    """k drafted in each round, one panel per policy (shared round axis); the first `shown`
    rounds are in view, the rest by panning. rows: pagedata.policy_rows (labels, mean k)."""
    by = {r["policy"]: r for r in rows}
    names = list(runs)
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.11,
                        subplot_titles=[
                            f"{by[p]['label']}: mean k {by[p]['mean_k']:.2f}, "
                            f"{by[p]['target_calls']:,} target calls" for p in names])
    top = max((max(r.ks) for r in runs.values() if r.ks), default=1)
    for i, p in enumerate(names, start=1):
        ks = runs[p].ks
        fig.add_scatter(x=list(range(len(ks))), y=ks, mode="lines", name=by[p]["label"],
                        line=dict(color=POLICY_COLOURS.get(p, MEASURED), shape="hv", width=2),
                        showlegend=False, row=i, col=1,
                        hovertemplate=f"{p}<br>round %{{x}}<br>k = %{{y}}<extra></extra>")
        fig.update_yaxes(title_text="k", range=[-0.5, top + 1], row=i, col=1)
    fig.update_xaxes(range=[-0.5, shown - 0.5])
    fig.update_xaxes(title_text="round (drag to pan; double-click for all rounds)",
                     row=len(names), col=1)
    fig = _layout(fig, "Draft length k, round by round", 160 + 140 * len(names))
    fig.update_layout(margin=dict(l=60, r=20, t=80, b=50))
    return fig


def batch_figure(curve: BatchCurve, batch: int | None = None) -> go.Figure:
    """Speedup against batch size B (log x): flat at Thm 3.8's value while the verify pass
    is memory-bound, then falling once B (k + 1) tokens make it compute-bound; the
    speedup = 1 line, where verifying stops being free and where speculation stops paying.
    batch: a batch size to mark (e.g. the page's)."""
    rows = curve.rows
    B = _col(rows, "batch")
    fig = go.Figure()
    fig.add_scatter(x=B, y=_col(rows, "speedup"), mode="lines",
                    name=f"speedup ({curve.accel}, {'with' if curve.kv_cache else 'without'} "
                         "the KV-cache read)",
                    line=dict(color=EXACT, width=3), customdata=_col(rows, "verify_ratio"),
                    hovertemplate="B = %{x}<br>speedup = %{y:.3f}x<br>verify pass = "
                                  "%{customdata:.3f}x a decode step<extra></extra>")
    fig.add_scatter(x=[B[0], B[-1]], y=[curve.memory_bound_speedup] * 2, mode="lines",
                    name=f"memory-bound speedup (Thm 3.8) = {curve.memory_bound_speedup:.3f}x",
                    line=dict(color=THEORY, dash="dot"), hoverinfo="skip")
    _hline(fig, 1.0, "speedup = 1 (no gain)", THRESHOLD, "dash", False, 0.0, "left")
    span = float(np.log10(B[-1] / B[0])) or 1.0

    def where(b: int) -> float:  # position of B = b across the plot, 0..1
        return float(np.log10(b / B[0])) / span

    # labels on the side with room: the free limit's to its left, the paying limit's right
    if curve.stops_free is not None:
        left = where(curve.stops_free) > 0.35
        _vline(fig, curve.stops_free, f"verifying stops being free: B = {curve.stops_free} "
               if left else f" verifying stops being free: B = {curve.stops_free}", "#000",
               "dot", True, 1.0 if left else 0.82, "right" if left else "left")
    if curve.stops_paying is not None:
        right = where(curve.stops_paying) < 0.65
        _vline(fig, curve.stops_paying,
               f" speculation stops paying: B = {curve.stops_paying}" if right
               else f"speculation stops paying: B = {curve.stops_paying} ", THRESHOLD, "dash",
               True, 1.0 if right else 0.91, "left" if right else "right")
        fig.add_vrect(x0=curve.stops_paying, x1=B[-1], fillcolor=THRESHOLD, opacity=0.07,
                      line_width=0)
    if batch is not None and B[0] <= batch <= B[-1]:
        r = rows[B.index(batch)] if batch in B else None
        if r is not None:
            fig.add_scatter(x=[batch], y=[r["speedup"]], mode="markers",
                            name=f"this page's batch B = {batch}: {r['speedup']:.3f}x",
                            marker=dict(size=12, color=MEASURED, line=dict(color="#000",
                                                                           width=1)),
                            hovertemplate="B = %{x}<br>speedup = %{y:.3f}x<extra></extra>")
    hi = max(max(_col(rows, "speedup")), 1.0)
    fig.update_xaxes(**LOG_DECADES, title="batch size B (sequences; the verify pass holds "
                                       f"B (k + 1) = B x {curve.k + 1} tokens)")
    fig.update_yaxes(range=[0.0, hi * 1.25], title="speculative speedup (x)")
    return _layout(fig, f"Speedup against batch size: {curve.preset}, k = {curve.k}, "
                        f"c = {curve.c:g}, alpha = {curve.alpha:.3f}", 460)


__all__ += [
    "batch_figure",
    "gallery_figure",
    "policy_k_figure",
    "production_figure",
]
