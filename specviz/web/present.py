"""Presenter mode as data: the CSS and the palette for a projected screen.

Pure strings (no Streamlit): specviz.ui injects them when the URL says present=1. The
figures' presenter type is web.bigtype's, the stage's keys and autoplay web.stagekeys', the
share box web.share's. What a projector does to a page: it washes out pale colours and thin
strokes, and the back row reads nothing under about 20 px. So the theme is black on white,
with large type, thick focus rings, and a palette of the Okabe & Ito (2008) colours that
keep their contrast on white (their yellow and sky blue do not, so they are left out of the
line palette).
"""

from __future__ import annotations

import html

from ..figures import palette
from ..figures.textfigs import PROMPT_CLASS
from . import assets

INK = palette.BLACK  # body text
PAPER = "#FFFFFF"  # background
LINK = "#0050A0"  # links: a darker blue than the palette's, underlined
FOCUS = palette.VERMILLION  # keyboard focus ring

BASE_PX = 21  # body text in presenter mode (Streamlit's default is 16)
TITLE_REM = 2.2  # h1
METRIC_VALUE_REM = 2.6
METRIC_LABEL_REM = 1.15
CAPTION_REM = 0.95  # of BASE_PX
EXIT_PX = 20  # the "leave presenter mode" button
MARKER = "sv-present"  # class of the element that marks presenter mode in the page
BAR_KEY = "sv_present_bar"  # the key of the bar of the story's controls
PAGES_KEY = "sv_present_pages_menu"  # the key of the pages menu, pinned beside the way out
MENU_RIGHT_PX = 125  # the menu's place from the right edge: left of the way out
CORNER_PX = 300  # the room the menu and the way out take at the top right
TABLE_CLASS = "sv-table"  # presenter mode's tables (HTML, so that their type can grow)
MIN_PX = 18  # the smallest text on a presenter page, at any screen size
BAR_TOP_REM = 1.3  # over the bar: room for its sliders' values, drawn above their thumbs
GAP_REM = 0.75  # between a page's blocks (Streamlit's is 1): the stage fits 1280x720

def presenter_css() -> str:
    """The style sheet of presenter mode (assets/presenter.css): no sidebar, header or
    toolbar; large black type."""
    return assets.css("presenter.css", paper=PAPER, ink=INK, marker=MARKER, base_px=BASE_PX,
                      title_rem=TITLE_REM, corner_px=CORNER_PX, caption_rem=CAPTION_REM,
                      metric_value_rem=METRIC_VALUE_REM, metric_label_rem=METRIC_LABEL_REM,
                      link=LINK, focus=FOCUS, bar_key=BAR_KEY, pages_key=PAGES_KEY,
                      menu_right_px=MENU_RIGHT_PX, exit_px=EXIT_PX, min_px=MIN_PX,
                      prompt_class=PROMPT_CLASS, table_class=TABLE_CLASS,
                      bar_top_rem=BAR_TOP_REM, gap_rem=GAP_REM)


def presenter_html(exit_label: str = "✕ exit") -> str:
    """The style sheet, the marker element the tests look for, and a fixed corner link that
    reloads the page without present=1 (the sidebar is hidden, so it is the way out)."""
    return (
        f'<style id="{MARKER}-css">{presenter_css()}</style>'
        f'<div class="{MARKER}" data-present="1" data-sidebar="hidden">'
        f'<div class="{MARKER}-bar"><a href="?present=0" class="{MARKER}-exit" '
        f'aria-label="leave presenter mode" '
        f'title="Leave presenter mode: this page again at the same settings">'
        f"{html.escape(exit_label)}</a></div></div>"
    )


def table_html(headers: list[str], rows: list[list[str]], is_text: list[bool]) -> str:
    """A table as HTML at presenter type (its cells already formatted): text columns left,
    numbers right; escaped; it scrolls sideways on its own where it is too wide."""
    def cls(i: int) -> str:
        return ' class="sv-text"' if is_text[i] else ""
    head = "".join(f"<th{cls(i)}>{html.escape(h)}</th>" for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{html.escape(v)}</td>"
                                    for i, v in enumerate(row)) + "</tr>" for row in rows)
    return (f'<div class="sv-table-wrap"><table class="{TABLE_CLASS}"><thead><tr>{head}'
            f"</tr></thead><tbody>{body}</tbody></table></div>")


# The corner link keeps every other parameter of the page: it drops present only.
EXIT_JS = assets.js("presenter_exit.js", marker=MARKER)
