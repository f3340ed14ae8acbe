"""Labels on a scatter's points that never overlap: each label's box is placed, greedily,
at the first spot around its point (next to it, then further out on a leader line) that
clears every label placed before, every marker, the fixed notes of the chart and the
plot's edges.

Sizes are in pixels of a plot area of at least PLOT_W x PLOT_H at LABEL_PX text (the
presenter's size), and the places are returned in axis fractions. A label box is centred on
its place, so on a larger plot area (or at smaller type) every box only shrinks around its
centre and no two can come to overlap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LABEL_PX = 20  # the largest type a label is drawn at (presenter mode's annotations)
CHAR_W = 0.62  # a character's width, of the font size (wide enough for '_' and 'w')
LINE_H = 1.35  # a label box's height, of the font size
PLOT_W = 1000  # the smallest plot area (px) the places are made for
PLOT_H = 400
MARKER_PX = 10  # half a marker's box, border included
PAD_PX = 4  # kept clear around every box
RING_PX = 24  # how much further out each ring of spots lies
RINGS = 8
ANGLES = 16  # spots per ring beyond the first

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in px, y downwards


@dataclass(frozen=True)
class Place:
    """Where a label goes: its centre in axis fractions (0..1, y upwards) and whether it
    needs a leader line back to its point."""

    x: float
    y: float
    leader: bool


def text_box(cx: float, cy: float, text: str, px: float = LABEL_PX) -> Box:
    """The box (px) of a one-line label centred at (cx, cy) (or at arrays of centres)."""
    w, h = CHAR_W * px * len(text), LINE_H * px
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


SAMPLES = 24  # a leader line is tested for crossing a box at its points t = i / SAMPLES


def _hits(boxes: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """How many of taken (m, 4) each of boxes (S, 4) comes within PAD_PX of. (S,)"""
    a, b = boxes[:, None, :], taken[None, :, :]  # (S, 1, 4), (1, m, 4)
    near = ((a[..., 0] - PAD_PX < b[..., 2]) & (b[..., 0] - PAD_PX < a[..., 2])
            & (a[..., 1] - PAD_PX < b[..., 3]) & (b[..., 1] - PAD_PX < a[..., 3]))
    return near.sum(axis=1)


def _crossings(a: tuple[float, float], ends: np.ndarray, names: np.ndarray) -> np.ndarray:
    """How many of the boxes names (n, 4) the segment from a to each of ends (S, 2) passes
    through, sampled at t = i / SAMPLES for 0 < i < SAMPLES. (S,)"""
    t = np.arange(1, SAMPLES)[:, None] / SAMPLES  # (T, 1)
    x = a[0] + (ends[:, 0] - a[0])[:, None, None] * t[None]  # (S, T, 1)
    y = a[1] + (ends[:, 1] - a[1])[:, None, None] * t[None]
    inside = ((names[:, 0] <= x) & (x <= names[:, 2])
              & (names[:, 1] <= y) & (y <= names[:, 3]))  # (S, T, n)
    return inside.any(axis=1).sum(axis=1)


def _spots(w: float, h: float) -> list[tuple[float, float, bool]]:
    """Centre offsets (px) of a w x h box around its point, nearest first: the eight spots
    next to the marker, then rings further out (those need a leader line)."""
    gap = MARKER_PX + PAD_PX
    near = [(gap + w / 2, 0), (-gap - w / 2, 0), (0, -gap - h / 2), (0, gap + h / 2),
            (gap + w / 2, -gap - h / 2), (gap + w / 2, gap + h / 2),
            (-gap - w / 2, -gap - h / 2), (-gap - w / 2, gap + h / 2)]
    out = [(dx, dy, False) for dx, dy in near]
    for ring in range(1, RINGS + 1):
        for i in range(ANGLES):
            a = 2 * math.pi * i / ANGLES
            out.append((math.cos(a) * (gap + w / 2 + RING_PX * ring),
                        -math.sin(a) * (gap + h / 2 + RING_PX * ring), True))
    return out


def clear_width(font_px: float) -> float:
    """The narrowest plot area (px) on which labels drawn at font_px stay clear: the places
    are axis fractions and every box scales with its type, so PLOT_W font_px / LABEL_PX."""
    return PLOT_W * float(font_px) / LABEL_PX


def place(xs: Sequence[float], ys: Sequence[float], texts: Sequence[str], *,
          fixed: Sequence[Box] = ()) -> list[Place]:
    """A place per label for points at axis fractions (xs, ys in [0, 1], y upwards), clear
    of each other, of the markers and of `fixed` (boxes in px of the PLOT_W x PLOT_H area,
    y downwards). The most crowded points are placed first; where no spot is clear, the one
    with the fewest overlaps is taken."""
    pts = [(x * PLOT_W, (1 - y) * PLOT_H) for x, y in zip(xs, ys, strict=True)]
    taken: list[Box] = [*fixed]
    taken += [(x - MARKER_PX, y - MARKER_PX, x + MARKER_PX, y + MARKER_PX) for x, y in pts]
    crowd = [sum(math.hypot(px - qx, py - qy) < 150 for qx, qy in pts) for px, py in pts]
    out: list[Place | None] = [None] * len(pts)
    names: list[Box] = []  # the labels placed so far
    for i in sorted(range(len(pts)), key=lambda j: -crowd[j]):
        (px, py), w = pts[i], CHAR_W * LABEL_PX * len(texts[i])
        spots = np.array(_spots(w, LINE_H * LABEL_PX))  # (S, 3): dx, dy, leader
        ends = np.array(pts[i]) + spots[:, :2]  # (S, 2) px: the boxes' centres
        boxes = np.stack(text_box(ends[:, 0], ends[:, 1], texts[i]), axis=1)  # (S, 4)
        out_of_plot = ((boxes[:, 0] < 0) | (boxes[:, 1] < 0) | (boxes[:, 2] > PLOT_W)
                       | (boxes[:, 3] > PLOT_H))
        cost = _hits(boxes, np.array(taken).reshape(-1, 4)) + 100 * out_of_plot
        if names:  # a leader line through a placed label counts as an overlap
            cost += np.where(spots[:, 2] > 0, _crossings((px, py), ends, np.array(names)), 0)
        best = int(np.argmin(cost))  # the first clear spot, else the first with fewest overlaps
        b = tuple(float(v) for v in boxes[best])
        taken.append(b)
        names.append(b)
        out[i] = Place(float(ends[best, 0]) / PLOT_W, 1 - float(ends[best, 1]) / PLOT_H,
                       bool(spots[best, 2]))
    return out
