"""What the chart builders share: the page chart height, log-decade axes, a colour per
rule, labelled reference lines and the common layout."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..core.rules import RULES
from ..views.demos import Row
from .frame import legend_below, unclipped_text
from .palette import (
    GREY,
    OTHER_RULE_COLOURS,
    RULE_COLOURS,
)

HEIGHT = 420
TEMPLATE = "none"  # every chart's Plotly template: Streamlit's theme styles them (ui.chart sets
# it on each; a builder that names it at construction spares Plotly a deep copy of its default)
# log axes: a label at each decade only (Plotly's minor labels read "5, 2, 0.1, 5, 2, 0.01")
LOG_DECADES = dict(type="log", dtick=1)


def rule_colour(rule: str) -> str:
    """A fixed colour per rule: the first paper's rule and its three broken variants by name,
    the others in turn."""
    if rule in RULE_COLOURS:
        return RULE_COLOURS[rule]
    names = [r for r in RULES if r not in RULE_COLOURS]
    return (OTHER_RULE_COLOURS[names.index(rule) % len(OTHER_RULE_COLOURS)] if rule in names
            else GREY)


def vline(fig: go.Figure, x: float, text: str, colour: str, dash: str, log_x: bool,
           y_text: float = 1.0, anchor: str = "left") -> None:
    """A vertical line with a label, a space away from it on the anchor's side. Shapes take
    data values on log axes, annotations take log10 of them, so the label is placed by hand
    (add_vline's own label is not)."""
    text = f" {text}" if anchor == "left" else f"{text} "
    fig.add_vline(x=x, line_dash=dash, line_color=colour)
    fig.add_annotation(x=float(np.log10(x)) if log_x else x, y=y_text, yref="paper", text=text,
                       showarrow=False, xanchor=anchor, yanchor="top", font=dict(color=colour))


def hline(fig: go.Figure, y: float, text: str, colour: str, dash: str, log_y: bool,
           x_text: float = 0.0, anchor: str = "left") -> None:
    """A horizontal line with a label above it (see vline on log axes)."""
    if log_y and not y > 0:
        return  # not on a log axis
    fig.add_hline(y=y, line_dash=dash, line_color=colour)
    fig.add_annotation(y=float(np.log10(y)) if log_y else y, x=x_text, xref="paper", text=text,
                       showarrow=False, xanchor=anchor, yanchor="bottom",
                       font=dict(color=colour))


MARGIN_L, MARGIN_R = 60, 20  # px beside the plot area: the y axis's ticks and title, air


def layout(fig: go.Figure, title: str, height: int = HEIGHT, *, top: int = 60) -> go.Figure:
    """Title, height and margins (`top` px over the plot: 90 holds two-line panel titles
    under the figure's); the legend in its own strip, labels unclipped."""
    fig.update_layout(title=title, height=height,
                      margin=dict(l=MARGIN_L, r=MARGIN_R, t=top, b=50),
                      hovermode="closest")
    return unclipped_text(legend_below(fig))


def tip(*lines: str) -> str:
    """A hover text of these lines, without the trace's name beside it (Plotly's <extra>)."""
    return "<br>".join(lines) + "<extra></extra>"


def col(rows: Sequence[Row], key: str) -> list:
    """One column of a list of rows."""
    return [r[key] for r in rows]


def signed(v: float) -> str:
    """A difference to 4 decimals with its sign; '0' where it rounds to zero (never
    '+0.0000' or '-0.0000')."""
    return "0" if abs(v) < 5e-5 else f"{v:+.4f}"
