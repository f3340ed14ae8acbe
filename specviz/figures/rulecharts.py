"""Plotly figures of /rules, /draft-length's policies and the batch view: the rules
gallery, production metrics, draft-length policies, throughput by batch. Data in,
go.Figure out."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.audit import BIAS_MIN
from ..analysis.metrics import MetricsReport
from ..core.dynamic import PolicyRun
from ..views.demos import Row
from ..views.pagedata import BatchCurve
from . import labels
from .chartkit import LOG_DECADES, MARGIN_L, MARGIN_R, col, hline, layout, tip, vline
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
GALLERY_HEIGHT = 640  # px: room for a label per rule, clear of one another
GALLERY_LABEL_PX = 12  # a rule's name on the chart (presenter mode draws it larger)
# the narrowest the chart may be drawn with its names clear (a phone scrolls it sideways)
GALLERY_MIN_PX = math.ceil(labels.clear_width(GALLERY_LABEL_PX)) + MARGIN_L + MARGIN_R
X_RANGE = (-0.02, 1.08)  # acceptance axis


def _notes(fig: go.Figure, zero_y: float, threshold: float, n: int,
           frac: Callable[[float, float], tuple[float, float]]) -> list[labels.Box]:
    """The two lines' notes (exact TV = 0 at the right under its line, the threshold at the
    left over its line); returns their boxes and the lines' for the labels to keep clear of."""
    zero_text, thr_text = "exact TV = 0 (exact rule)", f"threshold at n = {n:,}"
    fig.add_annotation(x=1.0, xref="paper", y=float(np.log10(zero_y)), yanchor="top",
                       xanchor="right", showarrow=False, text=zero_text,
                       font=dict(color=FAMILY_COLOURS["lossless"]))
    fig.add_annotation(x=0.0, xref="paper", y=float(np.log10(threshold)), yanchor="bottom",
                       xanchor="left", showarrow=False, text=thr_text, font=dict(color=FLOOR))
    h = labels.LINE_H * labels.LABEL_PX
    zy = (1 - frac(0.0, zero_y)[1]) * labels.PLOT_H
    ty = (1 - frac(0.0, threshold)[1]) * labels.PLOT_H
    zw, tw = (labels.CHAR_W * labels.LABEL_PX * len(t) for t in (zero_text, thr_text))
    lines = [(0.0, y - 1, float(labels.PLOT_W), y + 1) for y in (zy, ty)]  # no name on a line
    return [(labels.PLOT_W - zw, zy, labels.PLOT_W, zy + h), (0.0, ty - h, tw, ty), *lines]


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

    def frac(x: float, y: float) -> tuple[float, float]:  # data -> axis fractions
        return ((x - X_RANGE[0]) / (X_RANGE[1] - X_RANGE[0]),
                (np.log10(y) - y_lo) / (y_hi - y_lo))
    fig = go.Figure()
    fig.add_hline(y=zero_y, line_color=FAMILY_COLOURS["lossless"], line_width=2)
    fig.add_hline(y=threshold, line_dash="dash", line_color=FLOOR)
    fixed = _notes(fig, zero_y, threshold, n, frac)
    at = [frac(x, y) for x, y in zip(xs, ys, strict=True)]
    places = labels.place([a[0] for a in at], [a[1] for a in at], names, fixed=fixed)
    notes = []  # one annotation per rule, added at once (one by one revalidates them all)
    for fam, colour in FAMILY_COLOURS.items():
        idx = [i for i, r in enumerate(rows) if r["family"] == fam]
        if not idx:
            continue
        sel = [rows[i] for i in idx]
        exact_here = [r["exact_tv"] <= BIAS_MIN for r in sel]
        fig.add_scatter(
            x=[xs[i] for i in idx], y=[ys[i] for i in idx], mode="markers", name=fam,
            text=[names[i] for i in idx],
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
        notes += [_label(places[i], xs[i], ys[i], names[i], colour, (y_lo, y_hi))
                  for i in idx]
    fig.update_layout(annotations=[*fig.layout.annotations, *notes])
    ticks = [10.0 ** e for e in range(int(np.log10(zero_y)) + 1, int(np.floor(y_hi)) + 1)]
    fig.update_yaxes(**LOG_DECADES, range=[y_lo, y_hi], title="exact TV from the target (log)",
                     tickvals=[zero_y, *ticks],
                     ticktext=["0", *[f"{t:g}" for t in ticks]])
    fig.update_xaxes(range=list(X_RANGE), title="acceptance: accepted / drafted "
                                                "(exact, long run)")
    return layout(fig, "What each rule buys: acceptance against exactness", GALLERY_HEIGHT)


def _label(at: labels.Place, x: float, y: float, name: str, colour: str,
           y_range: tuple[float, float]) -> dict:
    """A rule's name at its place (labels.place), with a leader line to its point when it
    is not next to it: the annotation. Annotations on a log axis take log10 of y."""
    lx = X_RANGE[0] + at.x * (X_RANGE[1] - X_RANGE[0])
    ly = y_range[0] + at.y * (y_range[1] - y_range[0])
    common = dict(text=name, font=dict(color=colour, size=GALLERY_LABEL_PX), xanchor="center",
                  yanchor="middle", name=f"label {name}")
    if at.leader:
        return dict(x=x, y=float(np.log10(y)), ax=lx, ay=ly, axref="x", ayref="y",
                    showarrow=True, arrowhead=0, arrowwidth=1.5, arrowcolor=colour, standoff=8,
                    **common)
    return dict(x=lx, y=ly, showarrow=False, **common)


def production_figure(rep: MetricsReport) -> go.Figure:
    """Left: per-position acceptance rate, measured, exact, and alpha^i (i.i.d. theory).
    Right: the acceptance histogram, measured bars, exact markers and the capped geometric
    alpha^j (1 - alpha), alpha^k at j = k (Leviathan et al. 2022, Sec. 3.3)."""
    k = rep.k
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        "per-position<br>acceptance rate", "acceptance histogram<br>(drafts kept per round)"))
    pos, acc = list(range(1, k + 1)), list(range(k + 1))
    pp, hist = rep.per_position, rep.histogram
    where = ("position %{x}", "%{x} accepted")  # each panel's x, in the hover

    def add(panel: int, source: str, name: str, what: str, **look) -> None:
        """One source's values (measured, exact, theory) on a panel, grouped by source."""
        x, y = (pos, pp[source]) if panel == 1 else (acc, hist[source])
        fig.add_scatter(x=x, y=list(y), name=name, legendgroup=source[0], row=1, col=panel,
                        hovertemplate=tip(where[panel - 1], f"{what} = %{{y:.4f}}"), **look)

    add(1, "measured", "measured (long decode)", "measured", mode="markers",
        marker=dict(color=MEASURED, size=9))
    add(1, "exact", "exact (long run)", "exact", mode="lines", line=dict(color=EXACT, width=2))
    add(1, "theory", f"i.i.d. theory at alpha = {rep.alpha:.3f}: alpha^i, capped geometric",
        "alpha^i", mode="lines", line=dict(color=THEORY, dash="dash"))
    fig.add_bar(x=acc, y=list(hist["measured"]), name="measured", marker_color=MEASURED,
                opacity=0.75, legendgroup="m", showlegend=False, row=1, col=2,
                hovertemplate=tip(where[1], "measured share = %{y:.4f}"))
    add(2, "exact", "exact", "exact share", mode="markers", showlegend=False,
        marker=dict(symbol="diamond", size=10, color=EXACT, line=dict(color="#000", width=1)))
    add(2, "theory", "theory", "capped geometric", mode="lines+markers", showlegend=False,
        line=dict(color=THEORY, dash="dash"), marker=dict(size=6))
    fig.update_xaxes(title_text="draft position i", dtick=1 if k <= 16 else None, row=1, col=1)
    fig.update_xaxes(title_text="drafts accepted in the round j", dtick=1 if k <= 16 else None,
                     row=1, col=2)
    fig.update_yaxes(title_text="share of rounds with position i kept", range=[0, 1.05],
                     row=1, col=1)
    fig.update_yaxes(title_text="share of rounds", row=1, col=2)
    return layout(fig, f"Production metrics at k = {k}: measured, exact and i.i.d. theory",
                  460, top=90)


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
    return layout(fig, "Draft length k, round by round", 160 + 140 * len(names), top=80)


def batch_figure(curve: BatchCurve, batch: int | None = None) -> go.Figure:
    """Speedup against batch size B (log x): flat at E[tokens] / (1 + k c) while the verify pass
    is memory-bound, then falling once B (k + 1) tokens make it compute-bound; the
    speedup = 1 line, where verifying stops being free and where speculation stops paying.
    batch: a batch size to mark (e.g. the page's)."""
    rows = curve.rows
    B = col(rows, "batch")
    fig = go.Figure()
    fig.add_scatter(x=B, y=col(rows, "speedup"), mode="lines",
                    name=f"priced by the roofline ({curve.accel}, "
                         f"{'with' if curve.kv_cache else 'without'} the KV-cache read)",
                    line=dict(color=EXACT, width=3), customdata=col(rows, "verify_ratio"),
                    hovertemplate="B = %{x}<br>speedup priced by the roofline = %{y:.3f}x"
                                  "<br>verify pass = "
                                  "%{customdata:.3f}x a decode step<extra></extra>")
    fig.add_scatter(x=[B[0], B[-1]], y=[curve.memory_bound_speedup] * 2, mode="lines",
                    name=f"memory-bound, as /cost: E[tokens] / (1 + k c) = "
                         f"{curve.memory_bound_speedup:.3f}x",
                    line=dict(color=THEORY, dash="dot"), hoverinfo="skip")
    hline(fig, 1.0, "speedup = 1 (no gain)", THRESHOLD, "dash", False, 0.0, "left")
    span = float(np.log10(B[-1] / B[0])) or 1.0

    def where(b: int) -> float:  # position of B = b across the plot, 0..1
        return float(np.log10(b / B[0])) / span

    # labels on the side with room: the free limit's to its left, the paying limit's right
    if curve.stops_free is not None:
        left = where(curve.stops_free) > 0.35
        vline(fig, curve.stops_free, f"verifying stops being free: B = {curve.stops_free}",
               "#000", "dot", True, 1.0 if left else 0.82, "right" if left else "left")
    if curve.stops_paying is not None:
        right = where(curve.stops_paying) < 0.65
        vline(fig, curve.stops_paying, f"speculation stops paying: B = {curve.stops_paying}",
               THRESHOLD, "dash", True, 1.0 if right else 0.91, "left" if right else "right")
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
