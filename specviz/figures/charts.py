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

from ..analysis.audit import BIAS_MIN
from ..views.demos import Convergence, Exactness, Row
from .chartkit import LOG_DECADES, col, layout, rule_colour, signed, tip
from .palette import (
    BEST,
    EXACT,
    FLOOR,
    MEASURED,
    PALE,
    THEORY,
    THRESHOLD,
)


# ----------------------------------------------------------------------------- exactness
def tv_bars(rows: Sequence[Row], direct_tv: float | None = None) -> go.Figure:
    """Each rule's Monte Carlo TV beside its exact TV, with the floor and the threshold.

    rows: pagedata.exactness_rows (rule, mc_tv, exact_tv, floor, threshold).
    """
    rules = col(rows, "rule")
    fig = go.Figure()
    fig.add_bar(x=rules, y=col(rows, "mc_tv"), name="Monte Carlo TV",
                marker_color=[rule_colour(r) for r in rules],
                hovertemplate="%{x}<br>Monte Carlo TV = %{y:.5f}<extra></extra>")
    fig.add_bar(x=rules, y=col(rows, "exact_tv"), name="exact TV (the rule's bias)",
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
                        hovertemplate=tip(f"target sampled directly: TV = {direct_tv:.5f}"))
    # log axis: a lossless rule's exact TV (0 up to rounding) falls below the range
    shown = [v for v in (*col(rows, "mc_tv"), *col(rows, "exact_tv"), line, floor)
             if v > BIAS_MIN] or [1.0]
    lo, top = min(shown + [line]) / 4, max(shown) * 1.6
    fig.update_yaxes(**LOG_DECADES, range=[float(np.log10(lo)), float(np.log10(top))],
                     title="TV distance to the target's joint (log)")
    fig.update_layout(barmode="group", xaxis_title="rule")
    return layout(fig, "TV of the first two tokens: Monte Carlo and exact")


def marginal_bars(rows: Sequence[Row], rule: str, exact: str | None = None) -> go.Figure:
    """First emitted token: target p(x1|ctx) beside the rule's Monte Carlo and exact laws
    (exact: the rule whose exact law the rows' "exact" is, when not the sampled one).

    rows: pagedata.marginal_rows (token, target, speculative, exact).
    """
    tokens = col(rows, "token")
    fig = go.Figure()
    fig.add_bar(x=tokens, y=col(rows, "target"), name="target p(x1 | ctx)",
                marker_color=PALE,
                hovertemplate="x1 = %{x}<br>target = %{y:.5f}<extra></extra>")
    fig.add_bar(x=tokens, y=col(rows, "speculative"), name=f"speculative ({rule}, Monte Carlo)",
                marker_color=rule_colour(rule),
                hovertemplate="x1 = %{x}<br>speculative = %{y:.5f}<extra></extra>")
    fig.add_scatter(x=tokens, y=col(rows, "exact"), mode="markers",
                    name=f"exact ({exact or rule})",
                    marker=dict(symbol="diamond", size=10, color="#222"),
                    hovertemplate="x1 = %{x}<br>exact = %{y:.5f}<extra></extra>")
    fig.update_layout(barmode="group", xaxis_title="first emitted token x1",
                      yaxis_title="probability")
    return layout(fig, f"First-token marginal: target vs speculative ({rule})")


RULE_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star-triangle-up")


def convergence_figure(conv: Convergence, run: Exactness | None = None) -> go.Figure:
    """TV against n on log-log axes: the floor, each rule's Monte Carlo TV, and each broken
    rule's exact bias as a dashed horizontal line (one legend key for all of them, each line
    toggled with its rule); run adds this page's n as big markers."""
    ns = list(conv.ns)
    floor = dict(zip(ns, conv.floor, strict=True))  # n -> the floor at n
    if run is not None and run.audits and run.n not in ns:
        floor[run.n] = run.audits[0].audit.floor
    floor_x = sorted(floor)
    floor_y = [floor[n] for n in floor_x]
    lo, hi = floor_x[0], floor_x[-1]
    fig = go.Figure()
    fig.add_scatter(x=floor_x, y=floor_y, mode="lines", name="sampling floor (~1/sqrt(n))",
                    line=dict(color=FLOOR, width=3),
                    hovertemplate="n = %{x:,}<br>floor = %{y:.5f}<extra></extra>")
    for i, (rule, tvs) in enumerate(conv.mc_tv.items()):  # a shape per rule, not only a colour
        fig.add_scatter(x=ns, y=tvs, mode="lines+markers", name=rule,
                        line=dict(color=rule_colour(rule)), legendgroup=rule,
                        marker=dict(symbol=RULE_SYMBOLS[i % len(RULE_SYMBOLS)], size=8),
                        hovertemplate=f"{rule}<br>n = %{{x:,}}<br>TV = %{{y:.5f}}<extra></extra>")
    biased = {rule: bias for rule, bias in conv.exact_tv.items()
              if bias > BIAS_MIN}  # exact TV 0 up to rounding: nothing to draw on a log axis
    for rule, bias in biased.items():  # in the legend once, as a key: a short legend on a phone
        fig.add_scatter(x=[lo, hi], y=[bias, bias], mode="lines", name=f"{rule} exact bias",
                        line=dict(color=rule_colour(rule), dash="dash"), legendgroup=rule,
                        showlegend=False,
                        hovertemplate=f"{rule} exact TV = {bias:.5f}<extra></extra>")
    if biased:
        fig.add_scatter(x=[None], y=[None], mode="lines", name="dashed: a rule's exact TV",
                        line=dict(color=FLOOR, dash="dash"), hoverinfo="skip")
    if run is not None:
        fig.add_scatter(x=[run.n] * len(run.audits), y=[a.audit.mc_tv for a in run.audits],
                        mode="markers", name=f"this run (n = {run.n:,})",
                        text=[a.rule for a in run.audits],
                        marker=dict(symbol="star", size=14,
                                    color=[rule_colour(a.rule) for a in run.audits],
                                    line=dict(color="#000", width=1)),
                        hovertemplate="%{text}<br>n = %{x:,}<br>TV = %{y:.5f}<extra></extra>")
    fig.update_xaxes(**LOG_DECADES, title="decodes n")
    fig.update_yaxes(**LOG_DECADES, title="TV distance to the target's joint")
    return layout(fig, "Convergence: exact rules follow the floor, broken ones level off", 460)


def joint_diff_heatmap(diff: np.ndarray, vocab: Sequence[str], rule: str) -> go.Figure:
    """Heatmap of the two-token joint minus the target's, diverging around 0.

    diff: (V, V), rows = first token, columns = second token (pagedata.joint_diff).
    """
    diff = np.asarray(diff)
    vmax = float(np.abs(diff).max()) or 1.0
    fig = go.Figure(go.Heatmap(
        z=diff, x=list(vocab), y=list(vocab), colorscale="RdBu", zmid=0.0,
        zmin=-vmax, zmax=vmax, text=np.vectorize(signed)(diff),
        texttemplate="%{text}", colorbar=dict(title="Δ prob", tickformat=".4f"),
        hovertemplate=tip("x1 = %{y}, x2 = %{x}", "speculative − target = %{z:+.5f}")))
    fig.update_xaxes(title="second token x2", type="category")
    fig.update_yaxes(title="first token x1", type="category", autorange="reversed")
    return layout(fig, f"Two-token joint minus the target's ({rule}, Monte Carlo)", 440)


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
    eq. 1 and Thm 3.8). measured: demos.draft_sweep rows; curve: pagedata.draft_curve
    rows; tickvals: x ticks (e.g. on a log axis)."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=_PANEL_TITLES, horizontal_spacing=0.07)
    mx, cx = col(measured, x), col(curve, x)
    for i, (m, e, t, se, label) in enumerate(_PANELS, start=1):
        first = i == 1
        err = dict(type="data", array=col(measured, se), visible=True) if se else None
        fig.add_scatter(x=mx, y=col(measured, m), mode="markers", name="measured (long decode)",
                        error_y=err, marker=dict(color=MEASURED, size=8), legendgroup="m",
                        showlegend=first, row=1, col=i,
                        hovertemplate=tip(f"{x} = %{{x}}", f"measured {label} = %{{y:.4f}}"))
        fig.add_scatter(x=cx, y=col(curve, e), mode="lines", name="exact (long run)",
                        line=dict(color=EXACT, width=6), opacity=0.45, legendgroup="e",
                        showlegend=first, row=1, col=i,
                        hovertemplate=tip(f"{x} = %{{x}}", f"exact {label} = %{{y:.4f}}"))
        fig.add_scatter(x=cx, y=col(curve, t), mode="lines",
                        name="theory at alpha_eff (Leviathan et al. 2022, eq. 1, Thm 3.8)",
                        line=dict(color=THEORY, dash="dash", width=2.5), legendgroup="t",
                        showlegend=first, row=1, col=i, customdata=col(curve, "alpha_eff"),
                        hovertemplate=tip(f"{x} = %{{x}}", f"theory {label} = %{{y:.4f}}",
                                          "alpha_eff = %{customdata:.4f}"))
        fig.update_xaxes(title_text=x_title if i == 2 else None,  # once, under the middle
                         type="log" if log_x else "linear", row=1, col=i,
                         tickvals=list(tickvals) if tickvals else None)
    fig.add_hline(y=1.0, line_dash="dot", line_color=FLOOR, row=1, col=3)
    return layout(fig, title, 450, top=90)


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
    mk, ck = col(measured, "k"), col(curve, "k")

    def add(panel: int, x: list, y: list, name: str, what: str, **look) -> None:
        fig.add_scatter(x=x, y=y, name=name, hovertemplate=tip("k = %{x}", what), row=1,
                        col=panel, **look)

    add(1, mk, col(measured, "tokens_per_call"), "tokens per call, measured",
        "tokens per call = %{y:.4f}", mode="markers", marker=dict(color=MEASURED, size=8),
        error_y=dict(type="data", array=col(measured, "tokens_per_call_se")))
    add(1, ck, col(curve, "tokens_per_call_exact"), "tokens per call, exact",
        "exact tokens = %{y:.4f}", mode="lines", line=dict(color=EXACT))
    add(1, ck, col(curve, "tokens_theory"), "(1 − alpha^(k+1)) / (1 − alpha) (Leviathan et "
        "al. 2022, eq. 1)", "theory tokens = %{y:.4f}", mode="lines",
        line=dict(color=THEORY, dash="dash"))
    add(1, ck, col(curve, "cost"), "cost of a round 1 + k c", "cost = %{y:.3f} target calls",
        mode="lines", line=dict(color="#444", width=3))
    add(2, mk, col(measured, "speedup"), "speedup, measured", "measured speedup = %{y:.4f}",
        mode="markers", marker=dict(color=MEASURED, size=8, symbol="circle-open"),
        showlegend=False)
    add(2, ck, col(curve, "speedup_exact"), "speedup, exact", "exact speedup = %{y:.4f}",
        mode="lines", line=dict(color=EXACT), showlegend=False)
    add(2, ck, col(curve, "speedup_theory"), "speedup, theory (Thm 3.8)",
        "theory speedup = %{y:.4f}", mode="lines", line=dict(color=THEORY, dash="dash"))
    fig.add_scatter(x=[best["k"]], y=[best["speedup"]], mode="markers",
                    name=f"best k = {best['k']} (measured)",
                    marker=dict(symbol="star", size=18, color=BEST,
                                line=dict(color="#000", width=1)),
                    hovertemplate=tip("best k = %{x}", "speedup = %{y:.4f}"), row=1, col=2)
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
    return layout(fig, "Draft length k: tokens saturate, cost keeps growing", 480, top=90)


