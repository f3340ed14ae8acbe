"""The speedup surface over k and c: a heatmap, and a 3D view drawn in plain SVG.

The 3D view is oblique: c runs across (log axis), speedup up, k into the depth (each row
shifted right and up). The rows are filled ribbons drawn from the back (largest k) to the
front, so a nearer row hides what lies behind it (the painter's algorithm): no WebGL, whose
scene a browser without a GPU draws in software, slowly (an empty scene took 2.3x the time of
a whole page with one SVG chart in headless chromium).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ..views.demos import Row, Surface
from .chartkit import LOG_DECADES, col, layout, tip
from .frame import legend_below
from .palette import BEST, BLACK, BREAK_EVEN

DEPTH_X, DEPTH_Y = 0.30, 0.42  # plot units a row moves from the front (k min) to the back
AXIS, GRID = "#444444", "#DDDDDD"
TINT = 0.22  # a ribbon's fill: this share of its line's colour on white (opaque: it hides)
SURFACE_TIP = tip("k = %{customdata[0]}", "c = %{customdata[1]:.4f}",
                  "speedup = %{customdata[2]:.4f}x")  # points carry (k, c, speedup)
HEATMAP_TIP = tip("k = %{y}", "c = %{x:.4f}", "speedup = %{z:.4f}x")
DIAMOND = dict(symbol="diamond", size=14, color="#FFFFFF",
               line=dict(color="#000000", width=2))  # the current (k, c), on both views


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
                    hovertemplate=HEATMAP_TIP)
    if break_even:
        fig.add_scatter(x=col(break_even, "c"), y=col(break_even, "k"), mode="lines",
                        name="speedup = 1 (break-even c*)", line=dict(color=BREAK_EVEN, width=3),
                        hovertemplate="k = %{y}<br>c* = %{x:.4f}<extra></extra>")
    fig.add_scatter(x=cs, y=surface.best_k, mode="lines", name="best k (ridge)",
                    line=dict(color=BEST, width=3, shape="hv"),
                    hovertemplate="c = %{x:.4f}<br>best k = %{y}<extra></extra>")
    if point is not None:
        fig.add_scatter(x=[point["c"]], y=[point["k"]], mode="markers", name=_point_label(point),
                        marker=DIAMOND,
                        hovertemplate="k = %{y}<br>c = %{x:.4f}<br>speedup = "
                                      f"{point['speedup']:.4f}x<extra></extra>")
    fig.update_xaxes(**LOG_DECADES, title="c: draft cost per token (log)")
    fig.update_yaxes(title="k", range=[float(ks[0]) - 0.5, float(ks[-1]) + 0.5])
    return layout(fig, f"Speedup over k and c at alpha = {surface.alpha:.4f}", 460)


@dataclass(frozen=True)
class Oblique:
    """The view: u = where c lies on the log axis (0..1), d = where k lies in the depth
    (0 front .. 1 back), h = speedup / top (0..1); x = u + DEPTH_X d, y = h + DEPTH_Y d."""

    log_c: tuple[float, float]  # log10 of the c axis' ends
    k: tuple[int, int]  # the front and the back row
    top: float  # the speedup at the top of the axis

    def at(self, c, k, s) -> tuple[np.ndarray, np.ndarray]:
        """Plot coordinates (x, y) of the points (c, k, speedup), broadcast together."""
        lo, hi = self.log_c
        u = (np.log10(np.asarray(c, dtype=float)) - lo) / (hi - lo)
        d = (np.asarray(k, dtype=float) - self.k[0]) / max(self.k[1] - self.k[0], 1)
        x, y = u + DEPTH_X * d, np.asarray(s, dtype=float) / self.top + DEPTH_Y * d
        return np.broadcast_arrays(x, y)


def speedup_ticks(top: float) -> np.ndarray:
    """The speedup axis' ticks: 0, 0.5 or 1 apart, at most 7."""
    step = next(s for s in (0.5, 1.0, 2.0, 5.0) if top / s <= 6)
    return np.arange(0.0, top + 1e-9, step)


def view_of(surface: Surface) -> Oblique:
    """The view that holds the surface: its c and k ranges, the top at the next tick."""
    top = float(np.ceil(surface.speedup.max() * 2) / 2)
    return Oblique((float(np.log10(surface.cs[0])), float(np.log10(surface.cs[-1]))),
                   (int(surface.ks[0]), int(surface.ks[-1])), max(top, 1.0))


def surface_3d(surface: Surface, point: Row | None = None,
               break_even: Sequence[Row] = ()) -> go.Figure:
    """Speedup over k and c (Leviathan et al. 2022, Thm 3.8 at alpha) in an oblique view:
    a ribbon per k, the break-even line speedup = 1 (break_even rows,
    pagedata.break_even_curve), the best-k ridge and point (k, c, speedup) marked."""
    v = view_of(surface)
    fig = go.Figure()
    _axes(fig, v, surface)
    colours = sample_colorscale("Viridis", list(np.linspace(0, 1, len(surface.ks))))
    for i in reversed(range(len(surface.ks))):  # back to front: the nearer row paints over
        x, y = np.round(v.at(surface.cs, surface.ks[i], surface.speedup[i]), 4)  # 0.1 px
        fig.add_scatter(x=[*x, x[-1], x[0], x[0]], y=[*y, *v.at(surface.cs[[-1, 0]],
                        surface.ks[i], 0.0)[1], y[0]], mode="lines", fill="toself",
                        fillcolor=_tint(colours[i]), line=dict(color=colours[i], width=1.5),
                        hoverinfo="skip", showlegend=False)
    k, c = np.meshgrid(surface.ks, surface.cs, indexing="ij")  # (K, C) each
    x, y = v.at(c, k, surface.speedup)
    hover = np.float32(np.c_[x.ravel(), y.ravel(), k.ravel(), c.ravel(), surface.speedup.ravel()])
    fig.add_scatter(x=hover[:, 0], y=hover[:, 1], customdata=hover[:, 2:], name="speedup",
                    mode="lines", line=dict(width=0), showlegend=False,
                    hovertemplate=SURFACE_TIP)  # an unseen line: one path, not K*C markers
    _line(fig, v, col(break_even, "c"), col(break_even, "k"), [1.0] * len(break_even),
          "speedup = 1 (break-even c*)", dict(color=BREAK_EVEN, width=4))
    _line(fig, v, surface.cs, surface.best_k, surface.speedup.max(axis=0), "best k (ridge)",
          dict(color=BLACK, width=3, dash="dash"))
    if point is not None:
        _line(fig, v, [point["c"]], [point["k"]], [point["speedup"]], _point_label(point),
              None)
    fig.update_layout(title=f"Speedup surface at alpha = {surface.alpha:.4f} "
                            "(vermillion: speedup = 1; black dashes: best k)",
                      height=560, margin=dict(l=20, r=20, t=50, b=10), hovermode="closest",
                      plot_bgcolor="#FFFFFF",
                      xaxis=dict(visible=False, range=[-0.16, 1.0 + DEPTH_X + 0.12]),
                      yaxis=dict(visible=False, range=[-0.14, 1.0 + DEPTH_Y + 0.04]))
    return legend_below(fig)


def _line(fig: go.Figure, v: Oblique, c, k, s, name: str, line: dict | None) -> None:
    """A line (or, with line None, the current settings' diamond) on the surface."""
    if not len(c):
        return
    x, y = v.at(c, k, s)
    fig.add_scatter(x=x, y=y, name=name, mode="lines" if line else "markers", line=line,
                    marker=None if line else DIAMOND, hovertemplate=SURFACE_TIP,
                    customdata=np.c_[np.broadcast_to(k, x.shape), np.broadcast_to(c, x.shape),
                                     np.broadcast_to(s, x.shape)])


def _axes(fig: go.Figure, v: Oblique, surface: Surface) -> None:
    """The c axis along the front, k along the right, speedup up the left with its grid on
    the left and back walls; tick labels as one batch of annotations."""
    c_lo, c_hi = surface.cs[0], surface.cs[-1]
    k0, k1 = v.k
    ticks = speedup_ticks(v.top)
    walls = [v.at([c_lo, c_lo, c_hi], [k0, k1, k1], [s] * 3) for s in ticks]
    xs, ys = _segments(walls + [v.at([c_lo, c_lo], [k1, k1], [0, v.top])])
    fig.add_scatter(x=xs, y=ys, mode="lines", line=dict(color=GRID, width=1),
                    hoverinfo="skip", showlegend=False)
    decades = 10.0 ** np.arange(np.ceil(np.log10(c_lo)), np.floor(np.log10(c_hi)) + 1)
    k_ticks = sorted({k0, *range(8, k1 + 1, 8), k1})
    xs, ys = _segments([v.at([c_lo, c_hi, c_hi], [k0, k0, k1], 0.0),
                        v.at([c_lo, c_lo], [k0, k0], [0.0, v.top])])
    fig.add_scatter(x=xs, y=ys, mode="lines", line=dict(color=AXIS, width=1.5),
                    hoverinfo="skip", showlegend=False)
    notes = [_note(v.at(c, k0, 0.0), f"{c:g}", "center", "top") for c in decades]
    notes += [_note(v.at(c_hi, k, 0.0), f"  k = {k}", "left", "middle") for k in k_ticks]
    notes += [_note(v.at(c_lo, k0, s), f"{s:g} ", "right", "middle") for s in ticks]
    x, y = v.at(np.sqrt(c_lo * c_hi), k0, 0.0)
    notes += [dict(x=float(x), y=float(y) - 0.08, text="c: draft cost per token (log)",
                   showarrow=False, yanchor="top"),
              dict(x=-0.13, y=0.5, text="speedup (x)", textangle=-90, showarrow=False)]
    fig.update_layout(annotations=notes)


def _note(xy, text: str, xanchor: str, yanchor: str) -> dict:
    x, y = xy
    return dict(x=float(x), y=float(y), text=text, showarrow=False, xanchor=xanchor,
                yanchor=yanchor)


def _segments(lines) -> tuple[list, list]:
    """Polylines [(x, y), ...] as one trace's coordinates, None between them."""
    xs, ys = [], []
    for x, y in lines:
        xs += [*map(float, x), None]
        ys += [*map(float, y), None]
    return xs, ys


def _tint(colour: str) -> str:
    """An opaque fill: TINT of colour ('rgb(r, g, b)' or '#rrggbb') on white."""
    if colour.startswith("#"):
        rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    else:
        rgb = [float(t) for t in colour[colour.index("(") + 1:-1].split(",")]
    r, g, b = (round(255 - TINT * (255 - t)) for t in rgb)
    return f"rgb({r}, {g}, {b})"
