"""The shared sidebar draws, on each page, the shared controls that page reads, and no
other; the fields it does not draw still travel in the page's link, to the pages that read
them (a share link made anywhere reopens every page's state)."""

from __future__ import annotations

import re

import pytest
from support import ROOT, run_page

from specviz.views import site
from specviz.web import settings as S

WARP = {"wT", "wtopk", "wtopp", "wminp", "wdraft"}
TOY = {"ctx", "draft", "alpha", "T", *WARP}  # the toy tables' draft, context and warp
# what each page reads, from its views (the oracle, written from the pages, not from
# settings): the home page and /round play the toy tables' round from the seed under the
# rule (and its tree); /acceptance sweeps its own drafts of P, priced at c; /measured,
# /tour and /plan read none of the sidebar's numbers
SHOWN = {
    "round": ("pages/1_round.py", {"k", "seed", "rule", "tree", *TOY}, True),
    "acceptance": ("pages/3_acceptance.py", {"k", "c", "seed", "ctx", *WARP}, True),
    "cost": ("pages/5_cost.py", {"k", "c", *TOY}, True),
    "measured": ("pages/12_measured.py", set(), False),
    "tour": ("pages/9_tour.py", set(), False),
}
WIDGETS = ("slider", "number_input", "radio", "selectbox", "text_input", "toggle")


def sidebar_fields(at) -> set[str]:
    """The URL fields whose widgets the sidebar holds."""
    keys = {w.key for kind in WIDGETS for w in at.sidebar.get(kind)}
    return {k[2:] for k in keys if k and k.startswith("w_")}


@pytest.mark.parametrize("path", SHOWN)
def test_each_page_draws_the_shared_controls_it_reads(path):
    script, reads, tables = SHOWN[path]
    at = run_page(script, 120, n="2000")
    assert sidebar_fields(at) == reads | {"notation"}, path
    assert bool(at.sidebar.get("arrow_data_frame") or at.sidebar.get("data_editor")
                or [e for e in at.sidebar.get("expander") if "Tables" in e.label]) == tables
    assert set(S.sidebar_keys(path)) - {"present"} == reads | {"notation"}


def test_a_field_a_page_does_not_draw_survives_to_the_page_that_reads_it():
    at = run_page("pages/12_measured.py", 60, k="7", c="0.3", ctx="b", tree="3-2-1",
                  wtopk="5", rule="typical", m_k="3")
    q = dict(at.query_params)
    assert {k: q.get(k) for k in ("k", "c", "ctx", "tree", "wtopk", "rule", "m_k")} == {
        "k": "7", "c": "0.3", "ctx": "b", "tree": "3-2-1", "wtopk": "5", "rule": "typical",
        "m_k": "3"}
    at.switch_page("pages/1_round.py").run()
    assert at.slider(key="w_k").value == 7 and at.selectbox(key="w_ctx").value == "b"
    assert at.query_params["c"] == "0.3"  # /round reads no c: kept for /cost
    at.slider(key="w_k").set_value(9).run()
    at.switch_page("pages/12_measured.py").run()
    assert at.query_params["k"] == "9" and at.query_params["m_k"] == "3"
    at.switch_page("pages/5_cost.py").run()
    assert at.slider(key="w_k").value == 9 and at.slider(key="w_c").value == 0.3


def test_each_page_names_its_own_site_path():
    for p in site.PAGES:
        called = re.findall(r'ui\.page\([^)]*path="([^"]*)"', (ROOT / p.script).read_text())
        assert called == [p.path], p.script
