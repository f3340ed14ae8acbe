"""What every chart shares so that it reads at any width, from a phone to a projector.

The server does not know how wide the reader's screen is, so nothing here depends on it:
the legend sits in the figure's own bottom strip (Plotly sizes that strip for as many rows
as the legend wraps into, and the plot area gives up the height), so it can never be
drawn over the axis title; labels on points may leave the plot area instead of being cut
at its edge.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

# under everything else: anchored to the figure's bottom edge, not to the plot area
LEGEND_BELOW = dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0,
                    xanchor="left")
LEGEND_LINE = 42  # characters of a legend entry's line: about 300 px, a phone's plot width
SPACE_PENALTY = 12  # characters a cut at a plain space must save over one at punctuation


def svg_text(t: str) -> str:
    """Text for a Plotly string (a tick, title, annotation, hover): <, > and & escaped, since
    Plotly reads tags in it; quotes left as they are, since Plotly decodes only a few named
    entities (&amp;, &lt;, &gt;, ...) and would print &quot; as it stands."""
    return html.escape(t, quote=False)


def legend_below(fig: go.Figure) -> go.Figure:
    """The figure with its legend under the plot, in a strip of its own; an entry longer
    than a phone's width (Plotly never wraps one) is written on two lines."""
    fig.update_layout(legend=LEGEND_BELOW)
    for tr in fig.data:
        if tr.name and tr.showlegend is not False:
            tr.name = wrap_line(tr.name)
    return fig


def wrap_line(text: str, width: int = LEGEND_LINE) -> str:
    """text in two lines (Plotly's <br>) where it is longer than width, cut where the longer
    line is shortest: before a bracket or after a comma or colon, else at a plain space."""
    if len(text) <= width or "<br>" in text:
        return text
    cuts = [(i, 0) for i in range(1, len(text)) if text.startswith(" (", i)]
    cuts += [(i + 1, 0) for i in range(1, len(text)) if text[i:i + 2] in (", ", ": ")]
    cuts += [(i, SPACE_PENALTY) for i in range(1, len(text)) if text[i] == " "]
    if not cuts:
        return text
    i, _ = min(cuts, key=lambda c: max(len(text[:c[0]].rstrip()),
                                       len(text[c[0]:].lstrip())) + c[1])
    return f"{text[:i].rstrip()}<br>{text[i:].lstrip()}"


def unclipped_text(fig: go.Figure) -> go.Figure:
    """Text on scatter traces drawn in full where it runs past the axes (Plotly clips it at
    the plot area by default: '2.302x' next to the left edge read '2x')."""
    for tr in fig.data:
        if tr.type == "scatter" and tr.mode and "text" in tr.mode:
            tr.cliponaxis = False
    return fig
