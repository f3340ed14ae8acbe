"""Charts on a narrow screen (a phone) as data: style sheets (assets/), a chart title in HTML
and the charts' Plotly config.

Plotly writes a title on one line and cuts it at the figure's edge, and its mode bar sits
over the title's right end. Below NARROW_PX the page therefore shows each chart's title as
text above the chart, where it wraps, and hides the drawn one, so the figure's top margin
is left to the mode bar. Wider screens show the drawn title only; a PNG downloaded from
the mode bar has its title at any width.
"""

from __future__ import annotations

import html
import re

from ..figures.animation import STAGE_HEIGHT
from . import assets

NARROW_PX = 640  # Streamlit stacks columns below this width too
TITLE_CLASS = "sv-chart-title"
TITLE_LINE = 1.3  # a text title's line height (em)
# the mode bar keeps zoom, pan, reset and the PNG download; selecting points does nothing here
CHART_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def narrow_css() -> str:
    """The text titles hidden on wide screens; on narrow ones shown, the drawn ones hidden."""
    return assets.css("narrow.css", title_class=TITLE_CLASS, narrow_px=NARROW_PX,
                      title_line=TITLE_LINE)


def min_width_css(key: str, px: int) -> str:
    """The element keyed `key` at least px wide, however narrow the screen: the block
    holding it scrolls sideways instead (a chart whose labels need the room)."""
    return assets.css("min_width.css", key=key, px=int(px))


STEP_LINES = 4  # the counter and the step's caption on a phone: room held for this many lines
PHONE_BARS_PX = 290  # a phone's bar charts (full width): a plot of 120 px under the marked
# token's label, over the token names and the legend (each chart's margins take ~170 px)
PHONE_SLANTED_PX = 320  # ... over slanted names (the top tokens of a text vocabulary)
PHONE_COIN_PX = 190  # ... and its coin (full width: a bar and one label)
SHORT_SCREEN_PX = 800  # a screen this short or shorter (a 1280x720 projector)...
SHORT_CHART_PX = 260  # ...draws the stage's charts this tall (320 elsewhere), so it fits
PRESENT_SHORT_CHART_PX = 290  # ... and in presenter mode, with no sidebar or header, this
TALL_SCREEN_PX = 1000  # a screen this tall or taller (a 1920x1080 projector), in presenter
PRESENT_TALL_CHART_PX = 420  # mode, draws them this tall: the bars' plot over their names was
# 54 px at 320 (1920x1080); at 420 the stage still ends ~120 px above the screen's edge


def stage_css(stage: str, *, present: bool = False, slanted: bool = False) -> str:
    """A stage on a phone: the transport in three short rows (the buttons side by side,
    then autoplay and speed, then the step slider), compact chips, and the three charts
    one under the other at full width (PHONE_BARS_PX, or PHONE_SLANTED_PX where the token
    names are slanted, and PHONE_COIN_PX tall), without the
    mode bar, each text title laid over its chart's top margin, where the hidden drawn
    title was (Streamlit's chart fills the height its element is given). So that a step
    changes no height, the counter and caption have room for STEP_LINES lines, and the
    chips sit three a row, each line on one line (a longer one ends in an ellipsis). On a
    wide but short screen (a 1280x720 projector) the charts are SHORT_CHART_PX tall, or
    PRESENT_SHORT_CHART_PX in presenter mode; on a tall one in presenter mode
    PRESENT_TALL_CHART_PX (elsewhere the figures' own height, STAGE_HEIGHT)."""
    return assets.css("stage_narrow.css", stage=stage, narrow_px=NARROW_PX,
                      wide_px=NARROW_PX + 1, short_screen_px=SHORT_SCREEN_PX,
                      bars_px=PHONE_SLANTED_PX if slanted else PHONE_BARS_PX,
                      coin_px=PHONE_COIN_PX,
                      short_chart_px=PRESENT_SHORT_CHART_PX if present else SHORT_CHART_PX,
                      tall_screen_px=TALL_SCREEN_PX,
                      tall_chart_px=PRESENT_TALL_CHART_PX if present else STAGE_HEIGHT,
                      title_class=TITLE_CLASS, step_em=STEP_LINES * 1.45)


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
