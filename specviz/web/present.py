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
    """The style sheet of presenter mode: no sidebar, header or toolbar; large black type."""
    return f"""
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stSidebarCollapseButton"], [data-testid="stExpandSidebarButton"],
[data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"],
[data-testid="stStatusWidget"], header.stAppHeader {{ display: none !important; }}
.stApp, [data-testid="stAppViewContainer"], [data-testid="stMain"] {{
  background: {PAPER} !important; color: {INK} !important; }}
[data-testid="stMainBlockContainer"], .block-container {{
  padding: 0.6rem 2rem 2rem 2rem !important; max-width: 100% !important; }}
.stElementContainer:has(> .stHtml > .{MARKER}), .stElementContainer > .stHtml:has(> .{MARKER}),
.{MARKER}, [data-testid="stLayoutWrapper"]:has(> .st-key-{PAGES_KEY}) {{ display: contents; }}
html {{ font-size: clamp(16px, 1.1vw, {BASE_PX}px) !important; }}
.stApp, .stMarkdown, .stMarkdown p, .stMarkdown li, [data-testid="stMarkdownContainer"] {{
  font-size: 1rem !important; line-height: 1.45 !important; color: {INK} !important; }}
h1, .stMarkdown h1 {{ font-size: {TITLE_REM}rem !important; font-weight: 800 !important;
  color: {INK} !important; padding: 0.1rem {CORNER_PX}px 0.2rem 0 !important; }}
[data-testid="stMain"]:has(.st-key-{BAR_KEY}) h1 {{ padding-right: 0 !important; }}
h2, .stMarkdown h2 {{ font-size: 2.1rem !important; color: {INK} !important; }}
h3, .stMarkdown h3 {{ font-size: 1.7rem !important; color: {INK} !important; }}
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p, .stCaption {{
  font-size: max({MIN_PX}px, {CAPTION_REM}rem) !important; color: #1a1a1a !important;
  opacity: 1 !important; }}
[data-testid="stMetricValue"], [data-testid="stMetricValue"] div {{
  font-size: {METRIC_VALUE_REM}rem !important; font-weight: 700 !important;
  color: {INK} !important; }}
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] p {{
  font-size: {METRIC_LABEL_REM}rem !important; color: {INK} !important; }}
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] * {{ white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; }}
[data-testid="stWidgetLabel"], [data-testid="stWidgetLabel"] p, label p {{
  font-size: 1rem !important; color: {INK} !important; }}
[data-testid="stAlertContainer"] p, [data-testid="stAlert"] p {{
  font-size: 1rem !important; color: {INK} !important; }}
.sv-step {{ font-size: max({MIN_PX}px, 1.05rem) !important; color: {INK} !important; }}
.stButton button, .stDownloadButton button, .stLinkButton a {{
  font-size: 1rem !important; min-height: 2.6rem !important;
  border: 2px solid {INK} !important; color: {INK} !important; }}
.stButton button p, .stDownloadButton button p, .stLinkButton a p {{
  font-size: 1rem !important; }}
.stMarkdown a {{ color: {LINK} !important; text-decoration: underline !important; }}
[data-testid="stBaseButton-primary"], [data-testid="stBaseLinkButton-primary"] {{
  background: {INK} !important; border-color: {INK} !important; }}
[data-testid="stBaseButton-primary"], [data-testid="stBaseButton-primary"] p,
[data-testid="stBaseLinkButton-primary"], [data-testid="stBaseLinkButton-primary"] p {{
  color: {PAPER} !important; }}
:focus-visible {{ outline: 4px solid {FOCUS} !important; outline-offset: 2px !important; }}
.sv-chip, .sv-chip-room {{ font-size: 1.05rem !important; border-width: 3px !important; }}
.sv-legend {{ display: none !important; }}
.st-key-{BAR_KEY} {{ padding: {BAR_TOP_REM}rem {CORNER_PX}px 0 0; }}
[data-testid="stMain"] [data-testid="stVerticalBlock"] {{ gap: {GAP_REM}rem !important; }}
.st-key-{PAGES_KEY} {{ position: fixed; top: 8px; right: {MENU_RIGHT_PX}px; z-index: 1000;
  width: auto !important; }}
.st-key-{PAGES_KEY} button {{ border: 3px solid {INK} !important; background: {PAPER}; }}
.st-key-{PAGES_KEY} button p, .st-key-{PAGES_KEY} button span {{
  font-size: {EXIT_PX}px !important; font-weight: 700; color: {INK} !important; }}
.st-key-{BAR_KEY} [data-testid="stSliderThumbValue"],
.st-key-{BAR_KEY} [data-testid="stSliderTickBar"],
.st-key-{BAR_KEY} [data-testid="stSliderTickBar"] div, .st-key-{BAR_KEY} input,
.st-key-{BAR_KEY} [data-testid="stWidgetLabel"] p, .st-key-{BAR_KEY} button p,
.st-key-{BAR_KEY} [data-testid="stMarkdownContainer"], .st-key-{BAR_KEY} p,
.st-key-{BAR_KEY} span, [data-testid="stPopoverBody"] [data-testid="stMarkdownContainer"],
[data-testid="stPopoverBody"] a p, [data-testid="stPopoverBody"] a span {{
  font-size: max({MIN_PX}px, 1rem) !important; color: {INK} !important; }}
.st-key-{BAR_KEY} [data-testid="stSlider"] {{ padding: 0 0.6rem; }}
[data-testid="stNumberInputContainer"] input, [data-baseweb="input"] input,
[data-baseweb="select"] [value], [data-baseweb="select"] div, [data-testid="stSelectbox"] div,
[data-testid="stSelectbox"] input, [data-testid="stSelectbox"] span,
[data-testid="stSliderThumbValue"] p,
[data-testid="stSliderTickBar"] p {{ font-size: max({MIN_PX}px, 1rem) !important;
  color: {INK} !important; }}
[data-testid="stMain"]:focus, [data-testid="stMainBlockContainer"]:focus,
[data-testid="stAppViewContainer"]:focus, [data-testid="stMain"] section:focus {{
  outline: none !important; }}
.{PROMPT_CLASS} {{ font-size: max({MIN_PX}px, 1rem) !important; color: {INK} !important; }}
.{TABLE_CLASS} {{ border-collapse: collapse; width: 100%; }}
.{TABLE_CLASS} th, .{TABLE_CLASS} td {{ font-size: max({MIN_PX}px, 1rem) !important;
  color: {INK} !important; padding: 0.25rem 0.7rem; border-bottom: 1px solid #999;
  text-align: right; }}
.{TABLE_CLASS} th {{ border-bottom: 2px solid {INK}; font-weight: 700; text-align: right; }}
.{TABLE_CLASS} td.sv-text, .{TABLE_CLASS} th.sv-text {{ text-align: left; }}
.sv-table-wrap {{ overflow-x: auto; max-width: 100%; }}
.{MARKER} {{ position: relative; height: 0; }}
.{MARKER}-bar {{ position: fixed; top: 8px; right: 12px; z-index: 1000;
  font-size: {EXIT_PX}px; font-weight: 700; background: {PAPER}; border: 3px solid {INK};
  border-radius: 8px; padding: 6px 14px; }}
.{MARKER}-bar a {{ color: {INK} !important; text-decoration: none !important; }}
"""


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


EXIT_JS = f"""
(function () {{
  // The corner link keeps every other parameter of the page: it drops present only.
  for (const a of document.querySelectorAll('a.{MARKER}-exit')) {{
    const url = new URL(window.location.href);
    url.searchParams.delete('present');
    a.href = url.pathname + url.search + url.hash;
  }}
}})();
"""

