"""Plotly figures of /rules, /draft-length's policies and the batch view: the rules
gallery, production metrics, draft-length policies, throughput by batch. Data in,
go.Figure out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.metrics import MetricsReport
from ..core.dynamic import PolicyRun
from ..views.demos import Row
from ..views.pagedata import BatchCurve
from .chartkit import BIAS_MIN, LOG_DECADES, col, hline, layout, vline
from .palette import (
    EXACT,
    FAMILY_COLOURS,
    FLOOR,
    MEASURED,
    POLICY_COLOURS,
    THEORY,
    THRESHOLD,
)

# ----------------------------------------------------------------------------- rules gallery

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
    return layout(fig, "What each rule buys: acceptance against exactness", 500)


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
    fig = layout(fig, f"Production metrics at k = {k}: measured, exact and i.i.d. theory",
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
    fig = layout(fig, "Draft length k, round by round", 160 + 140 * len(names))
    fig.update_layout(margin=dict(l=60, r=20, t=80, b=50))
    return fig


def batch_figure(curve: BatchCurve, batch: int | None = None) -> go.Figure:
    """Speedup against batch size B (log x): flat at E[tokens] / (1 + k c) while the verify pass
    is memory-bound, then falling once B (k + 1) tokens make it compute-bound; the
    speedup = 1 line, where verifying stops being free and where speculation stops paying.
    batch: a batch size to mark (e.g. the page's)."""
    rows = curve.rows
    B = col(rows, "batch")
    fig = go.Figure()
    fig.add_scatter(x=B, y=col(rows, "speedup"), mode="lines",
                    name=f"speedup ({curve.accel}, {'with' if curve.kv_cache else 'without'} "
                         "the KV-cache read)",
                    line=dict(color=EXACT, width=3), customdata=col(rows, "verify_ratio"),
                    hovertemplate="B = %{x}<br>speedup = %{y:.3f}x<br>verify pass = "
                                  "%{customdata:.3f}x a decode step<extra></extra>")
    fig.add_scatter(x=[B[0], B[-1]], y=[curve.memory_bound_speedup] * 2, mode="lines",
                    name=f"memory-bound speedup = {curve.memory_bound_speedup:.3f}x",
                    line=dict(color=THEORY, dash="dot"), hoverinfo="skip")
    hline(fig, 1.0, "speedup = 1 (no gain)", THRESHOLD, "dash", False, 0.0, "left")
    span = float(np.log10(B[-1] / B[0])) or 1.0

    def where(b: int) -> float:  # position of B = b across the plot, 0..1
        return float(np.log10(b / B[0])) / span

    # labels on the side with room: the free limit's to its left, the paying limit's right
    if curve.stops_free is not None:
        left = where(curve.stops_free) > 0.35
        vline(fig, curve.stops_free, f"verifying stops being free: B = {curve.stops_free} "
               if left else f" verifying stops being free: B = {curve.stops_free}", "#000",
               "dot", True, 1.0 if left else 0.82, "right" if left else "left")
    if curve.stops_paying is not None:
        right = where(curve.stops_paying) < 0.65
        vline(fig, curve.stops_paying,
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
    hi = max(max(col(rows, "speedup")), 1.0)
    fig.update_xaxes(**LOG_DECADES, title="batch size B (sequences; the verify pass holds "
                                       f"B (k + 1) = B x {curve.k + 1} tokens)")
    fig.update_yaxes(range=[0.0, hi * 1.25], title="speculative speedup (x)")
    return layout(fig, f"Speedup against batch size: {curve.preset}, k = {curve.k}, "
                        f"c = {curve.c:g}, {curve.tokens_per_call:.3f} tokens per call", 460)
