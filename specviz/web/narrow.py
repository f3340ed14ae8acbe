"""Charts on a narrow screen (a phone) as data: a style sheet, a chart title in HTML and
the charts' Plotly config.

Plotly writes a title on one line and cuts it at the figure's edge, and its mode bar sits
over the title's right end. Below NARROW_PX the page therefore shows each chart's title as
text above the chart, where it wraps, and hides the drawn one, so the figure's top margin
is left to the mode bar. Wider screens show the drawn title only; a PNG downloaded from
the mode bar has its title at any width.
"""

from __future__ import annotations

import html
import re

NARROW_PX = 640  # Streamlit stacks columns below this width too
TITLE_CLASS = "sv-chart-title"
# the mode bar keeps zoom, pan, reset and the PNG download; selecting points does nothing here
CHART_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def narrow_css() -> str:
    """The text titles hidden on wide screens; on narrow ones shown, the drawn ones hidden."""
    box = f'.stElementContainer:has(.{TITLE_CLASS})'
    return (f"{box} {{ display: none; }}\n"
            f"@media (max-width: {NARROW_PX}px) {{\n"
            f"  {box} {{ display: block; }}\n"
            f'  [data-testid="stPlotlyChart"] .gtitle {{ display: none; }}\n'
            f"  .{TITLE_CLASS} {{ font-weight: 700; line-height: 1.3; margin-bottom: -0.5rem; }}\n"
            "}")


def title_html(title: str) -> str:
    """A figure's title (Plotly's HTML subset: <br>, <b>, entities) as one block of plain
    text; line breaks become spaces, so the text wraps at the screen's width."""
    text = html.unescape(_TAG.sub("", _BREAK.sub(" ", title)))
    return (f'<div class="{TITLE_CLASS}" role="heading" aria-level="4">'
            f"{html.escape(text, quote=False)}</div>")


def figure_title(fig) -> str:
    """The figure's title text, or '' when it has none."""
    title = fig.layout.title
    return str(title.text) if title is not None and title.text else ""
