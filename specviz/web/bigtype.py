"""A figure at presenter type: every chart text at least FIGURE_TICK_PX, black ink, the
margins and the title's room grown to hold the larger type (pure Plotly, no Streamlit)."""

from __future__ import annotations

from ..figures import palette

INK = palette.BLACK  # chart text
FIGURE_FONT_PX = 20  # the figures' base font in presenter mode (axis titles, annotations)
FIGURE_TITLE_PX = 22  # their titles
FIGURE_TICK_PX = 18  # axis tick labels, legend entries: the smallest chart text projected
FIGURE_MARGIN_PX = 70  # left and bottom margins that hold the larger ticks
TITLE_PAD_PX = 8  # between the figure's top edge and its title, and under the subplot titles
LINE_HEIGHT = 1.3  # a line of chart text, in multiples of its font size
DEFAULT_TOP_PX = 100  # Plotly's top margin when a figure sets none
LEGEND_DROP = 0.08  # a legend under the axis moves this much further down (of the plot)


def big_figure(fig):
    """A copy of the figure with the presenter's type: every text at least FIGURE_TICK_PX
    (titles, axis titles and ticks, legends, annotations, text on traces), black ink.
    Streamlit's chart theme sets tick and title sizes itself, so they are set here."""
    out = type(fig)(fig)
    out.update_layout(font_size=FIGURE_FONT_PX, font_color=INK, title_font_size=FIGURE_TITLE_PX,
                      legend_font_size=FIGURE_TICK_PX)
    for axes in (out.update_xaxes, out.update_yaxes):
        axes(tickfont_size=FIGURE_TICK_PX, title_font_size=FIGURE_FONT_PX,
             tickfont_color=INK, title_font_color=INK)
    for ann in out.layout.annotations:
        ann.font.size = max(ann.font.size or 0, FIGURE_FONT_PX)
    for tr in out.data:
        if "textfont" in tr:
            tr.textfont.size = max(tr.textfont.size or 0, FIGURE_TICK_PX)
    m, legend = out.layout.margin, out.layout.legend
    out.update_layout(margin=dict(l=max(m.l or 0, FIGURE_MARGIN_PX),
                                  b=max(m.b or 0, FIGURE_MARGIN_PX)))
    if legend.orientation == "h" and legend.y is not None and legend.y < 0:
        legend.y -= LEGEND_DROP  # under the larger tick labels, never over them
    _title_room(out)
    return out


def _lines(text) -> int:
    return str(text or "").count("<br>") + 1


def _over_the_plot(fig, a) -> bool:
    """An annotation whose text stands on the plot's top edge: a subplot title, or a label
    whose arrow starts at the top of the y axis (a marked token's)."""
    if a.yanchor != "bottom":
        return False
    if a.showarrow and a.ayref == "y":
        top = fig.layout.yaxis.range
        return top is not None and a.ay is not None and a.ay >= top[1]
    return a.yref == "paper" and a.y is not None and a.y >= 1


def _title_room(fig) -> None:
    """A top margin that holds the title over the subplot titles (annotations just above
    the plot area) at their larger type, without overlap. A one-line title is pinned to the
    top: t >= pad + 1.3 title_px + 1.3 font_px lines + pad; a longer one stays centred in
    the margin (Plotly's place for it): t >= title height + 2 (panel titles + pad). The
    figure grows by what the margin grows, so the plot area keeps its height."""
    title = fig.layout.title
    above = [a for a in fig.layout.annotations if _over_the_plot(fig, a)]
    if title is None or not title.text or not above:
        return
    heads = LINE_HEIGHT * FIGURE_FONT_PX * max(_lines(a.text) for a in above)
    tall = LINE_HEIGHT * FIGURE_TITLE_PX * _lines(title.text)
    need = round(2 * TITLE_PAD_PX + tall + heads)
    lift = (_lines(title.text) - 1) * LINE_HEIGHT * FIGURE_TITLE_PX / 2  # Plotly centres a
    # title's lines on its anchor: a top-anchored one rises by half its extra lines
    fig.update_layout(title=dict(yref="container", y=1.0, yanchor="top",
                                 pad=dict(t=round(TITLE_PAD_PX + lift))))
    old = fig.layout.margin.t if fig.layout.margin.t is not None else DEFAULT_TOP_PX
    if need > old:
        fig.update_layout(margin=dict(t=need))
        if fig.layout.height:
            fig.update_layout(height=fig.layout.height + need - old)

