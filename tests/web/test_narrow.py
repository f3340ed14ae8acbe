"""Charts on a narrow screen (web.narrow): the title as wrapping text, shown only below the
breakpoint where the drawn title is hidden; every chart of a page gets one, and the same
mode bar config, which keeps the PNG download. The browser side is tests/e2e/test_layout."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import run_page

from specviz.web import narrow

ROOT = Path(__file__).resolve().parents[2]


def test_a_title_becomes_one_block_of_plain_text():
    got = narrow.title_html("Rejected at position 2:<br>redraw from norm(max(0, p - q)) "
                            "after '&lt;b&gt;'")
    assert got.startswith(f'<div class="{narrow.TITLE_CLASS}"') and got.endswith("</div>")
    inner = re.sub(r"^<div[^>]*>|</div>$", "", got)
    assert inner == ("Rejected at position 2: redraw from norm(max(0, p - q)) after "
                     "'&lt;b&gt;'")  # a token '<b>' stays text, escaped once
    assert "<" not in inner
    assert narrow.title_html("<b>bold</b> &amp; plain").endswith(">bold &amp; plain</div>")


def test_the_style_shows_text_titles_only_below_the_breakpoint():
    css = narrow.narrow_css()
    wide, _, phone = css.partition(f"@media (max-width: {narrow.NARROW_PX}px)")
    assert "display: none" in wide and ".gtitle" not in wide
    assert ".gtitle { display: none; }" in phone and "display: block" in phone
    assert css.count("{") == css.count("}")


@pytest.fixture(scope="module")
def cost():
    return run_page("pages/5_cost.py", 60,  # its surface section open: two charts
                    open="the_speedup_over_every_k_and_c_as_a_heatmap_or_a_3d_surface_chart")


def test_every_chart_has_its_text_title_and_the_mode_bar_config(cost):
    specs = [json.loads(c.proto.spec) for c in cost.get("plotly_chart")]
    shown = [h.proto.body for h in cost.html if narrow.TITLE_CLASS in h.proto.body
             and not h.proto.body.startswith("<style")]
    assert len(specs) == len(shown) == 2
    for spec, title in zip(specs, shown, strict=True):
        assert spec["layout"]["title"]["text"].split("(")[0] in title
    for c in cost.get("plotly_chart"):
        config = json.loads(c.proto.config)
        assert config["displaylogo"] is False
        assert "toImage" not in config["modeBarButtonsToRemove"]  # the PNG download stays
    assert any(narrow.narrow_css() in h.proto.body for h in cost.html)
