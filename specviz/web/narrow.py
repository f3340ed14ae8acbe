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
TITLE_LINE = 1.3  # a text title's line height (em)
# the mode bar keeps zoom, pan, reset and the PNG download; selecting points does nothing here
CHART_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def narrow_css() -> str:
    """The text titles hidden on wide screens; on narrow ones shown, the drawn ones hidden."""
    box = f'.stElementContainer:has(> .stHtml > .{TITLE_CLASS})'  # children only: cheap
    return (f"{box} {{ display: none; }}\n"
            f"@media (max-width: {NARROW_PX}px) {{\n"
            f"  {box} {{ display: block; }}\n"
            f'  [data-testid="stPlotlyChart"] .gtitle {{ display: none; }}\n'
            f"  .{TITLE_CLASS} {{ font-weight: 700; line-height: {TITLE_LINE};\n"
            "    margin-bottom: -0.5rem; }\n"
            "}")


def min_width_css(key: str, px: int) -> str:
    """The element keyed `key` at least px wide, however narrow the screen: the block
    holding it scrolls sideways instead (a chart whose labels need the room)."""
    return (f".st-key-{key} {{ min-width: {int(px)}px !important; }}\n"
            f'[data-testid="stVerticalBlock"]:has(> .st-key-{key}) {{ overflow-x: auto; }}')


STEP_LINES = 4  # the counter and the step's caption on a phone: room held for this many lines
PHONE_BARS_PX = 290  # a phone's bar charts (full width): a plot of 120 px under the marked
# token's label, over the token names and the legend (each chart's margins take ~170 px)
PHONE_SLANTED_PX = 320  # ... over slanted names (the top tokens of a text vocabulary)
PHONE_COIN_PX = 190  # ... and its coin (full width: a bar and one label)
SHORT_SCREEN_PX = 800  # a screen this short or shorter (a 1280x720 projector)...
SHORT_CHART_PX = 260  # ...draws the stage's charts this tall (320 elsewhere), so it fits
PRESENT_SHORT_CHART_PX = 290  # ... and in presenter mode, with no sidebar or header, this


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
    PRESENT_SHORT_CHART_PX in presenter mode."""
    t, c = f".st-key-{stage}_transport", f".st-key-{stage}_charts"
    block, col = '[data-testid="stHorizontalBlock"]', '[data-testid="stColumn"]'
    title = f'{c} .stElementContainer:has(> .stHtml > .{TITLE_CLASS})'
    return (f"@media (max-width: {NARROW_PX}px) {{\n"
            f"  {t} {block}, {c} {block} {{ flex-wrap: wrap !important;\n"
            "    gap: 0.4rem !important; }\n"
            f"  {t} {col} {{ min-width: 0 !important; flex: 1 1 30% !important; }}\n"
            f"  {t} {col}:nth-child(n+4) {{ flex: 1 1 45% !important; }}\n"
            f"  {t} {col}:nth-child(6) {{ flex: 1 1 100% !important; }}\n"
            f"  {t} button {{ padding: 0.2rem 0.3rem !important; min-height: 2.2rem; }}\n"
            f"  {c} {col} {{ min-width: 0 !important; flex: 1 1 100% !important; }}\n"
            f"  {c} .modebar-container {{ display: none; }}\n"
            + _chart_height(f"{c} {col}:not(:nth-child(2))",
                            PHONE_SLANTED_PX if slanted else PHONE_BARS_PX)
            + _chart_height(f"{c} {col}:nth-child(2)", PHONE_COIN_PX) +
            f"  .st-key-{stage}_stage .sv-chips > span {{ flex: 0 0 calc(33.3% - 4px);\n"
            "    box-sizing: border-box; min-width: 0 !important; margin: 0 !important;\n"
            "    padding: 2px 3px !important; font-size: 0.7em; white-space: nowrap;\n"
            "    overflow: hidden; text-overflow: ellipsis; }\n"
            f"  {title} {{ position: relative; z-index: 1; height: 0; overflow: visible; }}\n"
            f"  {c} .{TITLE_CLASS} {{ font-size: 0.85em; }}\n"
            f"  .st-key-{stage}_stage .sv-step {{ font-size: 0.9em;\n"
            f"    padding: 4px 8px !important; min-height: {STEP_LINES * 1.45}em; }}\n"
            "}\n"
            f"@media (min-width: {NARROW_PX + 1}px) and (max-height: {SHORT_SCREEN_PX}px) {{\n"
            + _chart_height(c, PRESENT_SHORT_CHART_PX if present else SHORT_CHART_PX) + "}")


def _chart_height(charts: str, px: int) -> str:
    """The rules that make every chart under `charts` px tall (its element, frame and plot:
    Streamlit's Plotly chart draws at the height its element gets)."""
    return (f"  {charts} .stElementContainer:has(.stPlotlyChart) {{ flex: 0 0 auto !important; }}\n"
            f"  {charts} .stElementContainer:has(.stPlotlyChart),\n"
            f'  {charts} [data-testid="stFullScreenFrame"], {charts} .stPlotlyChart,\n'
            f"  {charts} .stPlotlyChart > div, {charts} .js-plotly-plot {{\n"
            f"    height: {px}px !important; }}\n")


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
