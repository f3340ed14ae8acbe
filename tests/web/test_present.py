"""Presenter mode, the key listener and the share box: the pure strings, and pages under
AppTest with present=1 (CSS injected, sidebar marked hidden, URL keeps it) or a bad value."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest
from support import run_page

from specviz.figures import palette
from specviz.web import bigtype, present, share, stagekeys, ui
from specviz.web import settings as S

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("app.py", "pages/1_round.py", "pages/5_cost.py", "pages/9_tour.py")


def run(rel: str, params: dict[str, str]) -> AppTest:
    return run_page(ROOT / rel, 60, **params)


def bodies(at: AppTest) -> list[str]:
    return [h.proto.body for h in at.html]


def presenter_css_shown(at: AppTest) -> bool:
    return any(f'id="{present.MARKER}-css"' in b for b in bodies(at))


# ----------------------------------------------------------------------------- pure
def test_settings_know_present_and_chapter():
    assert S.DEFAULTS.present == 0 and S.DEFAULTS.chapter == 0
    assert S.parse_query({"present": "1"})[0].present == 1
    s, notes = S.parse_query({"present": "banana"})
    assert s.present == 0 and len(notes) == 1 and "present='banana'" in notes[0]
    s, notes = S.parse_query({"present": "7"})
    assert s.present == 1 and "held at 1" in notes[0]
    assert S.to_query(S.DEFAULTS) == {}  # neither appears in a default URL


def test_presenter_css_hides_the_chrome_and_enlarges_the_type():
    css = present.presenter_css()
    for hidden in ('[data-testid="stSidebar"]', '[data-testid="stHeader"]',
                   '[data-testid="stToolbar"]', '[data-testid="stExpandSidebarButton"]'):
        assert hidden in css.split("display: none")[0], hidden
    assert f"font-size: clamp(16px, 1.1vw, {present.BASE_PX}px)" in css  # 21 px at 1920
    assert '[data-testid="stMetricValue"]' in css and '[data-testid="stCaptionContainer"]' in css
    assert css.count("{") == css.count("}")
    assert present.BASE_PX >= 20 and present.TITLE_REM > 1.5


def test_projector_palette_keeps_contrast_on_white():
    def luminance(hex_colour: str) -> float:
        rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    for name, colour in palette.PROJECTOR.items():
        contrast = (1.05) / (luminance(colour) + 0.05)  # against white
        assert contrast >= 2.0, (name, colour, contrast)  # graphics, WCAG 1.4.11 asks 3 for
        # UI parts; the palette's weakest (orange) is used for fills, never for text
    assert "yellow" not in palette.PROJECTOR and "sky" not in palette.PROJECTOR
    assert (1.05) / (luminance(present.INK) + 0.05) == pytest.approx(21.0)


def test_presenter_html_has_a_marker_and_a_way_out():
    h = present.presenter_html()
    assert f'class="{present.MARKER}"' in h and 'data-sidebar="hidden"' in h
    assert "leave presenter mode" in h and f"{present.MARKER}-exit" in h
    assert "searchParams.delete('present')" in present.EXIT_JS


def test_play_pause_listener_skips_typing_and_controls():
    js = stagekeys.play_pause_js("autoplay")
    assert ".st-key-autoplay input[type=checkbox]" in js
    for busy in ("input", "textarea", "select", "button", "[contenteditable", "[role=\"slider\"]"):
        assert busy in js, busy
    assert "e.repeat" in js and "e.ctrlKey" in js and "preventDefault" in js
    assert "__svPlayPause" in js  # installed once per page load


def test_play_pause_rejects_odd_keys():
    with pytest.raises(ValueError):
        ui.play_pause_shortcut("auto play'); alert(1); ('")


def test_copy_link_button_reads_the_live_address():
    h = share.copy_link_html()
    assert '<button type="button" class="sv-copy-link"' in h
    assert "window.location.href" in h and "navigator.clipboard.writeText" in h
    assert "execCommand('copy')" in h and 'role="status"' in h


def test_present_figure_enlarges_type_without_touching_the_original():
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 2]), layout=dict(title="t"))
    big = bigtype.big_figure(fig)
    assert big.layout.font.size == bigtype.FIGURE_FONT_PX
    assert big.layout.xaxis.tickfont.size == bigtype.FIGURE_TICK_PX
    assert fig.layout.font.size is None


def test_present_figure_lifts_every_text_to_18_px():
    fig = go.Figure(go.Scatter(x=[0], y=[1], mode="text", text=["u"], textfont=dict(size=12)))
    fig.add_annotation(text="x3 = a", x=0, y=1, font=dict(size=13))
    big = bigtype.big_figure(fig)
    assert bigtype.FIGURE_TICK_PX >= 18
    assert big.layout.annotations[0].font.size >= 18 and big.data[0].textfont.size >= 18
    assert big.layout.legend.font.size >= 18 and big.layout.yaxis.tickfont.size >= 18


def test_present_figure_makes_room_for_the_title_over_panel_titles():
    """The title and two-line panel titles, at presenter sizes, fit the top margin one above
    the other (the title pinned to the top); the plot area keeps its height; a
    figure without panel titles keeps its title where it was."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("tokens per<br>target call", "speedup"))
    fig.update_layout(title="Against alpha", height=400, margin=dict(t=60))
    big = bigtype.big_figure(fig)
    line = bigtype.LINE_HEIGHT
    need = 2 * bigtype.TITLE_PAD_PX + line * (bigtype.FIGURE_TITLE_PX + 2 * bigtype.FIGURE_FONT_PX)
    assert big.layout.margin.t >= need - 1 and big.layout.title.yanchor == "top"
    assert big.layout.height - big.layout.margin.t == 400 - 60  # the plot area's share
    two = go.Figure(layout=dict(title="a<br>b", margin=dict(t=60), height=300))
    two.add_annotation(text="panel", xref="paper", yref="paper", x=0.5, y=1.0,
                       yanchor="bottom", showarrow=False)
    big2 = bigtype.big_figure(two)
    title_h = 2 * line * bigtype.FIGURE_TITLE_PX  # pinned too, over the panel title
    assert big2.layout.margin.t >= title_h + line * bigtype.FIGURE_FONT_PX \
        + 2 * bigtype.TITLE_PAD_PX - 1
    assert big2.layout.title.yanchor == "top"  # Plotly lifts a title by half its extra lines:
    assert big2.layout.title.pad.t == round(bigtype.TITLE_PAD_PX + title_h / 4)  # padded back
    assert big2.layout.height - big2.layout.margin.t == 300 - 60
    plain = bigtype.big_figure(go.Figure(layout=dict(title="coin<br>at 2", margin=dict(t=70))))
    assert plain.layout.margin.t == 70 and plain.layout.title.yanchor is None


# ----------------------------------------------------------------------------- AppTest
@pytest.mark.parametrize("rel", PAGES)
def test_present_1_injects_the_theme_and_hides_the_sidebar(rel):
    at = run(rel, {"present": "1"})
    assert presenter_css_shown(at)
    marker = next(b for b in bodies(at) if f'class="{present.MARKER}"' in b)
    assert 'data-sidebar="hidden"' in marker
    assert at.query_params.get("present") == "1"  # the rewritten URL keeps presenter mode
    assert not at.warning


def test_presenter_mode_survives_a_rerun_and_a_widget_change():
    at = run("pages/5_cost.py", {"present": "1"})
    assert "w_k" not in [w.key for w in at.sidebar.slider]  # in the presenter's bar
    at.slider(key="w_k").set_value(7).run()
    assert not at.exception
    assert presenter_css_shown(at)
    assert at.query_params.get("present") == "1" and at.query_params.get("k") == "7"


def test_present_banana_is_noted_and_off():
    at = run("pages/1_round.py", {"present": "banana"})
    assert not presenter_css_shown(at)
    notes = [w.value for w in at.warning if "URL parameter present=" in w.value]
    assert notes == ["URL parameter present='banana' is not an integer 0..1; using the default "
                     "present=0."]
    assert "present" not in at.query_params


def shared_urls(at: AppTest) -> list[str]:
    """The addresses the sidebar's share box shows, as text."""
    out = []
    for h in at.sidebar.html:
        parser = _Code()
        parser.feed(h.proto.body)
        out += parser.found
    return out


class _Code(HTMLParser):
    """The text of <code class="sv-share-url"> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._inside = False

    def handle_starttag(self, tag, attrs):
        self._inside = tag == "code" and ("class", "sv-share-url") in attrs
        if self._inside:
            self.found.append("")

    def handle_endtag(self, tag):
        self._inside = False

    def handle_data(self, data):
        if self._inside:
            self.found[-1] += data


def test_without_present_nothing_changes_but_the_share_box():
    at = run("pages/1_round.py", {"k": "5"})
    assert not presenter_css_shown(at)
    assert any("sv-copy-link" in b for b in (h.proto.body for h in at.sidebar.html))
    codes = shared_urls(at)
    assert codes and re.search(r"\?k=5$", codes[-1]), codes


def test_share_box_shows_the_rewritten_url():
    at = run("pages/5_cost.py", {"k": "6", "c": "0.3"})
    at.sidebar.slider(key="w_k").set_value(9).run()
    assert shared_urls(at)[-1].endswith("?k=9&c=0.3")
    assert not at.sidebar.code  # plain HTML: no code highlighter is loaded for it


def test_a_missing_number_is_a_dash_in_either_table_not_the_word_none():
    """The grid writes None (or NaN) as the word None: /measured showed it where a draft has
    no pass of its own (prompt lookup's c). Both tables now write a dash; text is blank."""
    import pandas as pd

    from specviz.web import show

    df = pd.DataFrame([{"d": "lookup", "c": None, "n": 3, "s": 1.5},
                       {"d": None, "c": 0.25, "n": 4, "s": float("nan")}])
    out, texts = show._missing_shown(df, {"d": None, "c": "%.3f", "n": "%d", "s": "%.2fx"})
    assert list(out["c"]) == [show.MISSING, "0.250"] and list(out["s"]) == ["1.50x", show.MISSING]
    assert list(out["d"]) == ["lookup", ""] and list(out["n"]) == [3, 4]  # untouched
    assert texts == ["c", "s"] and df["c"].isna().any()  # the caller's rows are not changed
    assert show._cell(None, "%.3f") == show.MISSING and show._cell(None, None) == ""
